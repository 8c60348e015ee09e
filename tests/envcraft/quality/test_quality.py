"""Rubric gate, difficulty calibration (0 < p < 1), verifier defects routed to repair (≤ 2 attempts), and
one-pass claw task generation from recorded model answers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from dataclaw.envcraft.quality import (
    CalibrationConfig,
    CalibrationVerdict,
    audit_verifier,
    calibrate_task,
    gate,
    inspect_task,
    judge,
    repair_verifier,
)
from dataclaw.envcraft.rollout import Trajectory
from dataclaw.envcraft.tasks.claw.audit import audit_task
from dataclaw.envcraft.tasks.claw.generate import (
    GENERATION_SCHEMA,
    GenerationError,
    GenerationReason,
    generate_workspace_task,
)
from dataclaw.envcraft.tasks.claw.workspace import WorkspaceTask, load_task
from dataclaw.models import get_model
from envcraft.quality.quality_helpers import guarded_tool_task
from envcraft.rollout.rollout_helpers import example_claw_task, scripted_agent, tool_task
from support.openai_server import OpenAIServer, Reply

BROKEN = Path(__file__).resolve().parents[1] / "tasks" / "claw" / "fixtures" / "broken_tasks"


def _broken(tid: str) -> WorkspaceTask:
    task = load_task(BROKEN, tid)
    assert isinstance(task, WorkspaceTask)
    return task


@pytest.mark.parametrize(
    ("sol", "val", "con", "kept"),
    [
        (3, 3, 3, True),
        (3, 3, 2, True),
        (3, 3, 1, False),
        (2, 3, 3, False),
        (3, 2, 3, False),
        (0, 0, 0, False),
    ],
)
def test_the_gate_is_equation_5(sol: int, val: int, con: int, kept: bool) -> None:
    scores = {"task_solvability": sol, "validation_integrity": val, "data_consistency": con}
    assert gate(scores) is kept


def _rubric_answer(sol: int, val: int, con: int, qualified: bool) -> dict:
    return {
        "reasoning_steps": {
            "dimension_1_analysis": "The ticket exists and the tools allow resolving it.",
            "dimension_2_analysis": "The assertions check the final ticket status.",
            "dimension_3_analysis": "Ids agree across state, request and verifier.",
        },
        "scores": {"task_solvability": sol, "validation_integrity": val, "data_consistency": con},
        "is_qualified": qualified,
    }


def test_the_inspector_sees_the_four_inputs_and_the_gate_decides() -> None:
    task = tool_task()
    with OpenAIServer() as server:
        server.enqueue(Reply.json(_rubric_answer(3, 2, 3, True)))
        model = get_model(f"{server.base_url}::judge", cache=False)
        verdict = asyncio.run(inspect_task(model, task))
        body = server.chat_bodies()[0]
    prompt = body["messages"][-1]["content"]
    for section in ("Environment Code", "Initial State", "User Intents", "Validation Protocol"):
        assert f"## {section}" in prompt
    assert "def resolve_ticket" in prompt and "T-1001" in prompt
    assert body["temperature"] == 0
    assert verdict.scores["validation_integrity"] == 2
    assert verdict.model_says_qualified and not verdict.qualified
    assert verdict.notes


def _traj(reward: float, *, defect: bool = False, error: str | None = None) -> Trajectory:
    t = Trajectory(id=f"r{reward}", task_id="t", kind="tool", model="m", sample=0, reward=reward)
    t.defect = defect
    if error:
        t.error = {"boundary": error, "message": f"{error} failed"}
    return t


def test_judge_keeps_only_intermediate_pass_rates() -> None:
    assert judge("t", [_traj(1.0), _traj(0.0)]).verdict is CalibrationVerdict.KEEP
    assert judge("t", [_traj(1.0), _traj(1.0)]).verdict is CalibrationVerdict.TOO_EASY
    hard = judge("t", [_traj(0.0), _traj(0.0, error="timeout"), _traj(0.0, error="timeout")])
    assert hard.verdict is CalibrationVerdict.TOO_HARD and hard.errors == {"timeout": 2}
    partial = judge("t", [_traj(0.9), _traj(0.4)])
    assert partial.p == 0.0  # claw rewards below full score are not successes
    defect = judge("t", [_traj(1.0), _traj(0.0, defect=True, error="verifier")])
    assert defect.verdict is CalibrationVerdict.DEFECT and defect.p is None and defect.defects == 1
    assert defect.errors == {}  # a verifier defect is not counted as an agent failure


def test_calibration_runs_k_seeded_rollouts_and_keeps_a_task_solved_half_the_time() -> None:
    task = tool_task()
    gold = [(c["tool"], c["params"]) for c in task["gold_chain"]]
    solve, give_up = scripted_agent(gold), scripted_agent([])

    def by_seed(req):  # even seeds solve the task, odd seeds give up at once
        return solve(req) if req.body["seed"] % 2 == 0 else give_up(req)

    with OpenAIServer(responder=by_seed) as server:
        model = get_model(f"{server.base_url}::agent", cache=False)
        cal, trajs = asyncio.run(calibrate_task(model, task, CalibrationConfig(k=4, concurrency=4)))
        bodies = server.chat_bodies()
    assert sorted({b["seed"] for b in bodies}) == [0, 1, 2, 3]
    assert {b["temperature"] for b in bodies} == {0.7} and {b["top_p"] for b in bodies} == {0.95}
    assert cal.verdict is CalibrationVerdict.KEEP and cal.p == 0.5
    assert sorted(cal.outcomes) == [0, 0, 1, 1] and len(trajs) == 4


def test_a_crashing_verifier_leaves_calibration_as_a_defect_not_an_agent_failure() -> None:
    task = _broken("crashing_verifier")
    with OpenAIServer(responder=scripted_agent([("finish", {})])) as server:
        model = get_model(f"{server.base_url}::agent", cache=False)
        cal, trajs = asyncio.run(calibrate_task(model, task, CalibrationConfig(k=2)))
    assert cal.verdict is CalibrationVerdict.DEFECT
    assert all(t.defect and t.error["boundary"] == "verifier" for t in trajs)


def test_repair_replaces_a_crashing_verifier_and_reaudits_it() -> None:
    task = _broken("crashing_verifier")
    fixed = _broken("good_reorder").verifier
    with OpenAIServer() as server:
        server.enqueue(
            Reply.json(
                {
                    "verify_workplace_py": "import sys\n"
                    "raise SystemExit('still broken: ' + 'x' * 60)  # a second try"
                }
            )
        )
        server.enqueue(Reply.json({"verify_workplace_py": fixed}))
        model = get_model(f"{server.base_url}::repair", cache=False)
        result = asyncio.run(repair_verifier(model, task, "verifier crashed: KeyError", audit_verifier))
        prompts = [b["messages"][-1]["content"] for b in server.chat_bodies()]
    assert result.task is not None and result.attempts == 2
    assert result.task.verifier == fixed
    assert audit_task(result.task).passed
    assert "KeyError" in prompts[0] and "still broken" in prompts[1]


def test_repair_gives_up_after_two_attempts() -> None:
    task = _broken("crashing_verifier")
    with OpenAIServer(
        default=Reply.json({"verify_workplace_py": "import sys\nsys.exit(3)  # " + "x" * 60})
    ) as s:
        model = get_model(f"{s.base_url}::repair", cache=False)
        result = asyncio.run(repair_verifier(model, task, "verifier crashed", audit_verifier))
        assert s.request_count == 2
    assert result.task is None and result.attempts == 2 and len(result.history) == 3


def test_a_tool_task_verifier_repair_must_pass_the_gold_chain() -> None:
    task = tool_task()
    broken = {**task, "verifier": {"version": 1, "assertions": []}}
    bad = {"assertions": [{"path": "/tickets/T-1001/status", "op": "eq", "value": "open"}]}
    with OpenAIServer() as server:
        server.enqueue(Reply.json(bad), Reply.json({"assertions": task["verifier"]["assertions"]}))
        model = get_model(f"{server.base_url}::repair", cache=False)
        result = asyncio.run(repair_verifier(model, broken, "verifier has no assertions", audit_verifier))
    assert result.task is not None and result.attempts == 2
    assert "gold chain" in result.history[1] or "initial state" in result.history[1]


# ---- one-pass generation -------------------------------------------------------------------------------


def _four_files(task: WorkspaceTask, task_id: str) -> dict:
    return {
        "task_yaml": f"id: {task_id}\nprompt: tasks/prompts/{task_id}.md\nasset: {task_id}\n"
        "runtime:\n  max_turns: 32\n",
        "prompt_md": task.prompt,
        "env_builder_py": task.builder,
        "verify_workplace_py": task.verifier,
    }


def test_one_pass_generation_from_recorded_answers_then_audit(tmp_path: Path) -> None:
    source = example_claw_task("logistics_manager_review")
    chain = {
        "steps": [
            {"tool": "list_returns", "params": {"status": "pending_review"}},
            {"tool": "approve_return"},
        ]
    }
    record = tmp_path / "answers.jsonl"
    with OpenAIServer() as server:  # record a model answer once ...
        server.enqueue(Reply.json(_four_files(source, "gen_returns")))
        live = get_model(f"{server.base_url}::writer", cache=False, record_to=record)
        first = asyncio.run(generate_workspace_task(live, "gen_returns", chain, "logistics"))
        body = server.chat_bodies()[0]
    assert body["response_format"]["json_schema"]["schema"] == GENERATION_SCHEMA
    assert (
        "gen_returns" in body["messages"][0]["content"] and "approve_return" in body["messages"][1]["content"]
    )
    replayed = asyncio.run(  # ... and replay it
        generate_workspace_task(get_model(f"replay:{record}"), "gen_returns", chain, "logistics")
    )
    assert replayed == first
    assert replayed.config["prompt"] == "tasks/prompts/gen_returns.md"
    report = audit_task(replayed)
    assert report.passed, [c.to_dict() for c in report.failures]


def test_generation_with_the_wrong_task_id_is_refused() -> None:
    source = example_claw_task("smart_home_energy_cost")
    with OpenAIServer() as server:
        server.enqueue(Reply.json(_four_files(source, "other_id")))
        model = get_model(f"{server.base_url}::writer", cache=False)
        with pytest.raises(GenerationError) as err:
            asyncio.run(generate_workspace_task(model, "mine", {"steps": []}, "smart_home"))
    assert err.value.reason is GenerationReason.WRONG_ID


def test_a_chain_record_of_unknown_shape_is_a_bad_chain_reject(tmp_path: Path) -> None:
    from dataclaw.core.store import RunStore
    from dataclaw.envcraft.tasks.claw.generate import synth_claw_tasks

    with OpenAIServer() as server, RunStore(tmp_path / "run") as store:
        model = get_model(f"{server.base_url}::writer", cache=False)
        ids = asyncio.run(synth_claw_tasks(model, [{"id": "c1", "tools": ["x"]}], tmp_path / "out", store))
        rejects = [(r["record_id"], r["reason"]) for r in store.rejects("claw_generate")]
        assert server.request_count == 0
    assert ids == [] and rejects == [("c1", "bad_chain")]


def test_generated_record_serialises(tmp_path: Path) -> None:
    task = example_claw_task("smart_home_energy_cost")
    assert WorkspaceTask.from_record(json.loads(json.dumps(task.to_record()))).verifier == task.verifier


def test_code_audit_of_tool_tasks_replays_the_gold_chain(tmp_path: Path) -> None:
    from dataclaw.core.store import RunStore
    from dataclaw.envcraft.quality.runs import audit_by_code, load_task_source

    good = guarded_tool_task()
    wrong = {**good, "id": "task:wrong", "verifier": {"version": 1, "assertions": [
        {"path": "/tickets/T-1001/status", "op": "eq", "value": "no_such_status"}]}}  # fmt: skip
    free = {**good, "id": "task:free", "verifier": {"version": 1, "assertions": [
        {"path": "/tickets/T-1001", "op": "exists"}]}}  # fmt: skip
    # a verifier that checks only what must change (every task made before guards): collateral is free
    blind = {**tool_task(), "id": "task:blind"}
    src = tmp_path / "tasks.jsonl"
    src.write_text("".join(json.dumps(t) + "\n" for t in (good, wrong, free, blind)))
    with RunStore(tmp_path / "run") as store:
        rows = {r["id"]: r for r in audit_by_code(load_task_source(src), store)}
        rejects = {r["record_id"]: r["detail"]["failed"] for r in store.rejects("code_audit")}
    assert rows[good["id"]]["passed"] and rows[good["id"]]["soundness"]["passed"]
    assert rows[good["id"]]["soundness"]["figures"]["collateral"]["score"] == 0.5
    reasons = {tid: [c["reason"] for c in failed] for tid, failed in rejects.items()}
    assert reasons["task:wrong"][0] == "gold_fails"
    assert reasons["task:free"][:2] == ["untouched_above_floor", "gamed_by_untouched"]
    assert "gamed_by_collateral" in reasons["task:blind"]
    assert rows["task:blind"]["soundness"]["figures"]["collateral"]["score"] == 1.0


def test_code_audit_reports_a_broken_task_folder_entry_as_a_layout_reject(tmp_path: Path) -> None:
    from dataclaw.core.store import RunStore
    from dataclaw.envcraft.quality.runs import audit_by_code, load_task_source

    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "lonely.yaml").write_text("id: lonely\nprompt: tasks/prompts/lonely.md\nasset: x\n")
    with RunStore(tmp_path / "run") as store:
        rows = audit_by_code(load_task_source(tmp_path), store)
        rejects = {r["record_id"]: r["reason"] for r in store.rejects("code_audit")}
    assert [(r["id"], r["passed"], r["layout"]) for r in rows] == [("lonely", False, "missing_file")]
    assert "env_builder.py" in rows[0]["checks"][0]["message"]
    assert rejects == {"lonely": "missing_file"}
