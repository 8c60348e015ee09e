"""Code generation driven by recorded model answers: each case is recorded once from a scripted
OpenAI-compatible server (``record_to``) and then replayed through ``replay:``, which must give the same
outcome. A good answer passes; a contract violation fails the static audit and is repaired in round two;
one that never becomes valid, one that is not the output schema, one importing forbidden modules and one
that hangs at import end failed with clear reasons, and the call returns (the run goes on)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from dataclaw.envcraft.audit import DynamicOptions
from dataclaw.envcraft.synth.codegen import generate_package, generation_messages
from dataclaw.envcraft.synth.heal import SynthOutcome
from dataclaw.models import get_model
from support.openai_server import OpenAIServer, Reply

_spec = importlib.util.spec_from_file_location(
    "codegen_answers", Path(__file__).parent / "fixtures" / "codegen" / "answers.py"
)
answers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(answers)

SPEC = answers.spec_record()
FAST = DynamicOptions(timeout_s=60.0, tests_timeout_s=60.0)


def _record(
    tmp: Path, replies: list[Any], rounds: int, options: DynamicOptions = FAST
) -> tuple[SynthOutcome, Path, list[dict]]:
    """Run generation live against a scripted server, recording every answer."""
    record = tmp / "answers.jsonl"
    with OpenAIServer() as server:
        server.enqueue(*[r if isinstance(r, Reply) else Reply.json(r, prompt_tokens=900) for r in replies])
        live = get_model(f"{server.base_url}::writer", cache=False, record_to=record)
        out = asyncio.run(generate_package(live, SPEC, tmp / "live", repair_rounds=rounds, options=options))
        bodies = server.chat_bodies()
    return out, record, bodies


def _replay(tmp: Path, record: Path, rounds: int, options: DynamicOptions = FAST) -> SynthOutcome:
    model = get_model(f"replay:{record}")
    return asyncio.run(generate_package(model, SPEC, tmp / "replay", repair_rounds=rounds, options=options))


def _same(a: SynthOutcome, b: SynthOutcome) -> None:
    assert (a.passed, a.rounds, a.calls, a.history, a.stripped) == (
        b.passed,
        b.rounds,
        b.calls,
        b.history,
        b.stripped,
    )
    assert [r["code"] for r in a.reasons] == [r["code"] for r in b.reasons]


def _codes(out: SynthOutcome) -> set[str]:
    return {r["code"] for r in out.reasons}


@pytest.mark.slow
def test_good_answer_passes_first_time(tmp_path: Path) -> None:
    live, record, bodies = _record(tmp_path, [answers.good()], rounds=2)
    assert live.passed and (live.rounds, live.calls) == (0, 1), live.reasons
    assert live.path == "codegen" and live.reasons == [] and live.tokens["prompt"] == 900
    pkg = live.package
    assert pkg == (tmp_path / "live" / "crm_customer_management").resolve()
    # the model's env.py came with a package-root prefix: written where it belongs; the skeleton is ours
    assert (pkg / "env.py").is_file() and (pkg / "README.md").is_file() and (pkg / "SKILL.md").is_file()
    assert "ENVIRONMENT = CrmCustomerManagement" in (pkg / "__init__.py").read_text()
    assert "dataclaw.envcraft.runtime.cli import main" in (pkg / "__main__.py").read_text()
    checks = {c["name"]: c["status"] for c in live.audit["checks"]}
    assert checks["package_tests"] == "passed" and checks["workflow_scores_and_penalties"] == "passed"
    # one schema-constrained call whose prompt unifies spec, archetype blueprint + code, runtime contract
    assert len(bodies) == 1
    schema = bodies[0]["response_format"]["json_schema"]["schema"]
    assert set(schema["required"]) == {"environment_name", "documentation", "skill_md", "files"}
    prompt = bodies[0]["messages"][1]["content"]
    for part in ('"activate_customer"', "Archetype 1", "archetypes/transactional_workspace/env.py", "@tool("):
        assert part in prompt, part
    _same(_replay(tmp_path, record, rounds=2), live)


@pytest.mark.slow
def test_contract_violation_fails_static_audit_and_is_repaired_in_round_two(tmp_path: Path) -> None:
    live, record, bodies = _record(tmp_path, [answers.wall_clock(), answers.repair_of_wall_clock()], rounds=2)
    assert live.passed and (live.rounds, live.calls) == (1, 2), live.reasons
    first_audit = live.history[1]
    assert first_audit == {"step": "audit", "round": 0, "passed": False, "codes": ["static_audit"]}
    assert live.history[2]["written"] == ["customers.py"]
    repair = bodies[1]["messages"][1]["content"]
    assert "S020 wall-clock customers.py" in repair and "time.time()" in repair  # findings + current code
    assert "time.time" not in (live.package / "customers.py").read_text()
    _same(_replay(tmp_path, record, rounds=2), live)


def test_answer_that_never_becomes_valid_ends_failed_with_reasons(tmp_path: Path) -> None:
    bad = answers.wall_clock()
    still_bad = {"files": [answers.file_of(bad, "customers.py")]}
    live, record, _ = _record(tmp_path, [bad, still_bad, still_bad], rounds=2)
    assert not live.passed and (live.rounds, live.calls) == (2, 3)
    assert _codes(live) == {"static_audit"}
    assert any(r.get("rule") == "S020" and "customers.py" in r["message"] for r in live.reasons)
    assert live.package is not None and live.package.is_dir()  # kept for inspection
    _same(_replay(tmp_path, record, rounds=2), live)


def test_answer_not_in_the_output_schema_is_a_failed_round(tmp_path: Path) -> None:
    not_json = Reply.text("Sure! Here is your environment: class CrmEnv(Environment): ...")
    wrong_shape = {"environment_name": "crm", "files": "env.py"}
    live, record, bodies = _record(tmp_path, [not_json, wrong_shape], rounds=1)
    assert not live.passed and live.package is None and (live.rounds, live.calls) == (1, 2)
    assert _codes(live) == {"not_output_schema"}
    assert "not JSON of the output schema" in live.reasons[0]["message"]
    assert "could not be used" in bodies[1]["messages"][1]["content"]
    _same(_replay(tmp_path, record, rounds=1), live)


def test_package_importing_forbidden_modules_fails_without_running(tmp_path: Path) -> None:
    live, record, _ = _record(tmp_path, [answers.forbidden_imports()], rounds=0)
    assert not live.passed and live.rounds == 0
    rules = {r.get("rule") for r in live.reasons}
    assert rules == {"S050"} and all("outreach.py" in r["message"] for r in live.reasons)
    assert live.audit["checks"] == []  # the static audit failed: its code never ran
    _same(_replay(tmp_path, record, rounds=0), live)


@pytest.mark.slow
def test_package_that_hangs_at_import_is_a_timeout(tmp_path: Path) -> None:
    short = DynamicOptions(timeout_s=6.0, tests_timeout_s=6.0)
    record = tmp_path / "answers.jsonl"
    with OpenAIServer() as server:  # recorded, not audited: the replayed run below is the one that waits
        server.enqueue(Reply.json(answers.hangs_at_import()))
        live = get_model(f"{server.base_url}::writer", cache=False, record_to=record)
        asyncio.run(
            live.complete(
                generation_messages(SPEC, "crm_customer_management"),
                schema=_schema(),
                max_tokens=16384,
                temperature=0.0,
            )
        )
    out = _replay(tmp_path, record, rounds=0, options=short)
    assert not out.passed
    timeout = [r for r in out.reasons if r["code"] == "timeout"]
    assert timeout and timeout[0]["check"] == "instantiate_from_s0", out.reasons


def _schema() -> dict[str, Any]:
    from dataclaw.envcraft.synth.heal import answer_schema

    return answer_schema()


def test_spec_record_without_a_spec_is_a_reason_not_an_exception(tmp_path: Path) -> None:
    out = asyncio.run(generate_package(None, {"scenario_id": "x"}, tmp_path))
    assert not out.passed and out.calls == 0 and _codes(out) == {"invalid_spec"}
    assert json.loads(json.dumps(out.to_dict()))["package"] is None


def test_a_claw_scenario_gets_the_bash_tool_wired_in_and_passes_the_audit(tmp_path: Path) -> None:
    """The claw extension (§3.2): a claw scenario's generated package gets dataclaw's ``bash`` tool over
    its state as files (``claw_bash.py``, never model-written), audited like the rest and run in the
    package's env worker."""
    from dataclaw.envcraft.worker import open_environment

    spec = {**SPEC, "scenario": {**SPEC["scenario"], "category": "claw"}}
    with OpenAIServer() as server:
        server.enqueue(Reply.json(answers.good(), prompt_tokens=900))
        model = get_model(f"{server.base_url}::writer", cache=False)
        out = asyncio.run(generate_package(model, spec, tmp_path / "claw", repair_rounds=0, options=FAST))
        prompt = server.chat_bodies()[0]["messages"][1]["content"]
    assert "claw-specific scenario" in prompt and out.passed, out.reasons
    pkg = out.package
    assert (pkg / "claw_bash.py").is_file() and "from .claw_bash import bash" in (
        pkg / "__init__.py"
    ).read_text()
    handle = open_environment(pkg)
    tools = {t["name"]: t for t in handle.tools()}
    assert tools["bash"]["side_effect"] == "read"
    session = handle.session(sorted(handle.env_cls.scenarios())[0])
    listing = session.call("bash", command="ls; cat README.md")
    assert listing["status"] == "ok" and "Workspace" in listing["data"]["output"], listing
    handle.close()
