"""The LLM rubric on the embedded model (local:smollm2-135m): the rubric's schema once became a llama.cpp
grammar 1200 groups deep that segfaulted the whole `tasks audit` (exit 139). Now every task ends as a
verdict or a reject, and a grammar llama.cpp cannot hold is the task's model_error, never the run's death."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dataclaw.core.store import RunStore
from dataclaw.envcraft.quality.rubric import RUBRIC_SCHEMA, gate
from dataclaw.envcraft.quality.runs import rubric_tasks
from envcraft.rollout.rollout_helpers import example_claw_task

pytest.importorskip("llama_cpp", reason="the embedded model needs dataclaw[local]")

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "claw_tasks"


def test_the_rubric_schema_fits_a_grammar():
    from dataclaw.core.ids import canonical_json
    from dataclaw.models.backends.local import _checked_grammar
    from dataclaw.models.schema import grammar_schema

    assert _checked_grammar(canonical_json(RUBRIC_SCHEMA))  # as written, too deep for llama.cpp
    assert _checked_grammar(canonical_json(grammar_schema(RUBRIC_SCHEMA))) is None
    scores = grammar_schema(RUBRIC_SCHEMA)["properties"]["scores"]["properties"]
    assert all(s["enum"] == [0, 1, 2, 3] for s in scores.values())


def test_a_grammar_llama_cpp_cannot_hold_is_the_tasks_model_error(tmp_path, monkeypatch):
    from dataclaw.models import get_model
    from dataclaw.models.backends import local

    monkeypatch.setattr(local, "GRAMMAR_MAX_DEPTH", 5)  # every rubric grammar is now "too deep"
    local._checked_grammar.cache_clear()
    store = RunStore(tmp_path / "run")
    tasks = [example_claw_task("smart_home_energy_cost"), example_claw_task("logistics_manager_review")]
    model = get_model("local:smollm2-135m", cache=False)
    try:
        rows = asyncio.run(rubric_tasks(model, tasks, store))
    finally:
        local._checked_grammar.cache_clear()
    assert rows == []
    rejects = [json.loads(line) for line in (tmp_path / "run" / "rejects.jsonl").read_text().splitlines()]
    assert {r["reason"] for r in rejects} == {"model_error"} and len(rejects) == 2
    assert all("levels deep" in r["message"] for r in rejects)


@pytest.mark.slow
def test_tasks_audit_with_the_embedded_model_scores_every_task_and_exits_0(tmp_path):
    exe = shutil.which("dataclaw", path=str(Path(sys.executable).parent))
    assert exe
    out = tmp_path / "audit"
    done = subprocess.run(
        [exe, "tasks", "audit", str(EXAMPLES), "--model", "local:smollm2-135m", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    scored_file = out / "rubric.jsonl"
    verdicts = [json.loads(x) for x in scored_file.read_text().splitlines()] if scored_file.exists() else []
    rejects = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    rubric_rejects = [r for r in rejects if r["stage"] == "rubric"]
    scored = {v["id"] for v in verdicts}
    errored = {r["record_id"] for r in rubric_rejects if r["reason"] == "model_error"}
    assert scored | errored == {"smart_home_energy_cost", "logistics_manager_review"}
    for v in verdicts:  # the full schema holds: every score 0-3, the gate recomputed here
        assert all(s in range(4) for s in v["scores"].values())
        assert v["qualified"] == gate(v["scores"])
    assert "rubric" in done.stdout


def test_an_answer_in_the_right_shape_but_out_of_range_is_a_model_error_not_a_verdict(tmp_path):
    """Gaming the gate with the right shape: scores of 7, or analyses past 1200 characters, fail the full
    schema (whatever the grammar sent to the server allowed) and the task is a model_error reject; the
    request leaves room for the longest answer the schema allows."""
    from dataclaw.envcraft.quality.rubric import RUBRIC_MAX_TOKENS
    from dataclaw.models import get_model
    from support.openai_server import OpenAIServer, Reply

    steps = {f"dimension_{i}_analysis": "fine" for i in (1, 2, 3)}
    too_high = {"reasoning_steps": steps, "scores": dict.fromkeys(("task_solvability", "validation_integrity",
                "data_consistency"), 7), "is_qualified": True}  # fmt: skip
    too_long = {**too_high, "scores": dict.fromkeys(too_high["scores"], 3)}
    too_long["reasoning_steps"] = {**steps, "dimension_2_analysis": "x" * 1201}
    store = RunStore(tmp_path / "run")
    tasks = [example_claw_task("smart_home_energy_cost"), example_claw_task("logistics_manager_review")]
    with OpenAIServer() as server:
        server.enqueue(Reply.json(too_high), Reply.json(too_long))
        model = get_model(f"{server.base_url}::judge", cache=False)
        rows = asyncio.run(rubric_tasks(model, tasks, store))
        bodies = server.chat_bodies()
    assert rows == [] and all(b["max_tokens"] == RUBRIC_MAX_TOKENS for b in bodies)
    rejects = [json.loads(line) for line in (tmp_path / "run" / "rejects.jsonl").read_text().splitlines()]
    assert [r["reason"] for r in rejects] == ["model_error", "model_error"]
    assert "scores" in rejects[0]["message"] and "reasoning_steps" in rejects[1]["message"]
