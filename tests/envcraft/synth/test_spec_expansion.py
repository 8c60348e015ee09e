"""Specification expansion driven by recorded model answers (record once from a scripted server, replay
through ``replay:``): a good answer passes, a broken one is repaired in round two, one that never becomes
valid ends as a reject with reasons; the stage writes records and rejects through the store and resumes;
one slow test runs the real embedded model."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from dataclaw.core.store import RunStore
from dataclaw.envcraft.scenarios import load_catalogue
from dataclaw.envcraft.synth import IssueCode, SpecStage, check_spec, expand_scenario, scenario_record
from dataclaw.envcraft.synth.expand import SpecResult
from dataclaw.models import get_model
from dataclaw.pipeline import run_stage
from dataclaw.pipeline.executors import LocalExecutor
from support.openai_server import OpenAIServer, Reply

SCENARIO = load_catalogue().get("support_ticketing")


def _record(path: Path, replies: list[Any], repair_rounds: int = 2) -> tuple[SpecResult, list[dict]]:
    """Run expansion live against a scripted server, recording every answer to ``path``."""
    with OpenAIServer() as server:
        server.enqueue(*[r if isinstance(r, Reply) else Reply.json(r) for r in replies])
        live = get_model(f"{server.base_url}::writer", cache=False, record_to=path)
        result = asyncio.run(expand_scenario(live, SCENARIO, repair_rounds=repair_rounds))
        bodies = server.chat_bodies()
    return result, bodies


def _replay(path: Path, repair_rounds: int = 2) -> SpecResult:
    return asyncio.run(expand_scenario(get_model(f"replay:{path}"), SCENARIO, repair_rounds=repair_rounds))


def _same(a: SpecResult, b: SpecResult) -> None:
    assert (a.valid, a.repairs, a.calls, a.history) == (b.valid, b.repairs, b.calls, b.history)
    assert a.issues == b.issues and a.e_spec == b.e_spec and a.t_spec == b.t_spec


def test_good_answers_pass_first_time(
    tmp_path: Path, e_answer: dict, t_answer: dict, split, tool_answer
) -> None:
    record = tmp_path / "answers.jsonl"
    live, bodies = _record(record, [*split(e_answer), tool_answer(t_answer)])
    assert live.valid and (live.repairs, live.calls) == (0, 3)
    assert live.e_spec.environment_name == "support_ticketing"  # the framework's name, not the model's
    assert [t["name"] for t in (x.unified_schema() for x in live.t_spec.tools)] == [
        "list_tickets",
        "assign_ticket",
    ]
    # every call was schema-constrained by what the one before declared
    ent_schema, state_schema, t_schema = (b["response_format"]["json_schema"]["schema"] for b in bodies)
    assert set(ent_schema["properties"]) == {"domains", "entities"}
    scen = state_schema["properties"]["scenarios"]["items"]["properties"]
    assert scen["entities"]["items"] == {"enum": ["agent", "ticket"]}
    item = t_schema["properties"]["tools"]["items"]["properties"]["state_fields_affected"]["items"]
    assert item == {"enum": ["agents", "audit_log", "tickets"]}
    assert "Support Ticketing" in bodies[0]["messages"][1]["content"]
    assert "- ticket (id ticket_id): ticket_id, title, status" in bodies[1]["messages"][1]["content"]
    assert "- tickets (collection of ticket: ticket_id, title" in bodies[2]["messages"][1]["content"]
    _same(_replay(record), live)


def test_broken_answer_is_repaired_in_round_two(
    tmp_path: Path, e_answer: dict, t_answer: dict, split, tool_answer
) -> None:
    ents, state = split(e_answer)
    broken = copy.deepcopy(ents)
    broken["entities"][0]["id_field"] = "id"
    record = tmp_path / "answers.jsonl"
    live, bodies = _record(record, [broken, ents, state, tool_answer(t_answer)])
    assert live.valid and (live.repairs, live.calls) == (1, 4)
    assert live.history[0] == {"part": "entities", "call": 1, "issues": [IssueCode.UNKNOWN_ATTRIBUTE]}
    assert [h["part"] for h in live.history] == ["entities", "entities", "state", "tools"]
    repair = bodies[1]["messages"][1]["content"]
    assert "unknown_attribute at entities[0].id_field: id field 'id' is not declared (declared: " in repair
    assert '"id_field":"id"' in repair  # the previous answer is shown
    # first answers greedy; the repair sampled with a seed from the scenario and call (reruns agree)
    assert [b["temperature"] for b in bodies] == [0.0, 0.7, 0.0, 0.0]
    assert "seed" not in bodies[0] and isinstance(bodies[1]["seed"], int)
    _same(_replay(record), live)


def test_never_valid_ends_as_a_reject_with_reasons(
    tmp_path: Path, e_answer: dict, t_answer: dict, split, tool_answer
) -> None:
    no_write = tool_answer({"tools": [t_answer["tools"][0], dict(t_answer["tools"][0], name="get_ticket")]})
    record = tmp_path / "answers.jsonl"
    live, _ = _record(record, [*split(e_answer), Reply.json({"tools": "list_tickets"}), no_write, no_write])
    assert not live.valid and (live.repairs, live.calls) == (2, 5)
    assert [h["issues"] for h in live.history] == [
        [],
        [],
        [IssueCode.SCHEMA],
        [IssueCode.NO_WRITE_TOOL],
        [IssueCode.NO_WRITE_TOOL],
    ]
    assert [i.code for i in live.issues] == [IssueCode.NO_WRITE_TOOL]
    _same(_replay(record), live)


def test_stage_writes_specs_and_rejects_and_resumes(
    tmp_path: Path, e_answer: dict, t_answer: dict, split, tool_answer
) -> None:
    other = load_catalogue().get("scheduling_reminders")
    record = tmp_path / "answers.jsonl"
    ents, state = split(e_answer)
    broken = copy.deepcopy(state)
    broken["scenarios"][0]["scoring_rules"][0]["weight"] = 0

    def answer(req: Any) -> Reply:  # support_ticketing gets good answers; scheduling_reminders never valid
        prompt = req.body["messages"][1]["content"]
        if "State fields:" in prompt:
            return Reply.json(tool_answer(t_answer))
        if "Entities:" in prompt:
            return Reply.json(broken if "Scheduling & Reminders" in prompt else state)
        return Reply.json(ents)

    with OpenAIServer(responder=answer) as server:  # records run concurrently: answer by prompt
        stage = SpecStage("unused", repair_rounds=2)
        stage._model = get_model(f"{server.base_url}::writer", cache=False, record_to=record)
        items = [scenario_record(SCENARIO), scenario_record(other)]
        with RunStore(tmp_path / "run") as store:
            stats = run_stage(stage, items, store, LocalExecutor(workers=1))
            assert (stats.outputs, stats.rejects) == (1, 1)
    with RunStore(tmp_path / "run") as store:
        (spec,) = store.records("specs")
        (reject,) = store.rejects("specs")
        assert spec["scenario_id"] == "support_ticketing" and spec["id"].startswith(items[0]["id"] + "/spec-")
        assert spec["t_spec"][1]["state_fields_affected"] == ["tickets", "audit_log"]
        assert spec["archetypes"][0]["name"] == "transactional_workspace"
        assert all(not Path(p).is_absolute() for a in spec["archetypes"] for p in a["reference_files"])
        assert reject["record_id"] == items[1]["id"] and reject["reason"] == "invalid_spec"
        assert reject["detail"]["issues"][0]["code"] == "bad_weight" and reject["detail"]["repairs"] == 2
        # a rerun (replaying the recording) skips both scenarios: resume is per record
        stats = run_stage(SpecStage(f"replay:{record}"), items, store, LocalExecutor(workers=1))
        assert (stats.skipped, stats.processed) == (2, 0)
    json.dumps(spec)  # records are plain JSON


def test_unreachable_model_is_a_model_error_reject(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    with RunStore(tmp_path / "run") as store:
        stats = run_stage(
            SpecStage(f"replay:{empty}"), [scenario_record(SCENARIO)], store, LocalExecutor(workers=1)
        )
        assert stats.rejects == 1
        assert store.rejects("specs")[0]["reason"] == "model_error"


@pytest.mark.slow
def test_embedded_model_gives_a_valid_spec_or_a_clean_reject() -> None:
    pytest.importorskip("llama_cpp")
    model = get_model("local:smollm2-135m", cache=False)
    result = asyncio.run(expand_scenario(model, SCENARIO, repair_rounds=1))
    assert result.repairs <= 1 and result.calls <= 3 + result.repairs
    assert result.history[0]["part"] == "entities"
    if result.valid:
        assert result.t_spec.reads() and result.t_spec.writes()
        assert check_spec(result.e_spec, result.t_spec) == []
    else:
        assert result.issues and all(isinstance(i.code, IssueCode) and i.message for i in result.issues)
