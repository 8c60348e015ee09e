"""What the task quality runs, the calibration and the rubric share: a task's id and the code checks of a
tool task (so :mod:`.runs` imports :mod:`.calibrate` and :mod:`.rubric`, and neither imports it back), and
the raw → kept count of a stage every task run reports."""

from __future__ import annotations

from collections import Counter
from typing import Any, NamedTuple

from dataclaw.core.store import RunStore
from dataclaw.envcraft.rollout.harness import task_of
from dataclaw.envcraft.runtime.task import ToolTask


class StageCount(NamedTuple):
    """One stage of a task run: records in (``raw``), records out (``kept``), and why the rest were not
    kept (reason → count). What the ``tasks`` commands print as their pipeline table."""

    stage: str
    raw: int
    kept: int
    reasons: dict[str, int]


def reject_reasons(store: RunStore, stage: str, ids: set[str]) -> dict[str, int]:
    """Reject reasons of ``stage`` counted over the records in ``ids`` (this call's, not the whole run's)."""
    return dict(Counter(r["reason"] for r in store.rejects(stage) if r["record_id"] in ids))


def task_id(task: Any) -> str:
    """The id of a tool or claw task (or of either's row)."""
    return task_of(task).task_id


def tool_task_problems(task: ToolTask | dict[str, Any]) -> list[dict[str, Any]]:
    """Code checks of a tool task: a well-formed verifier, the gold chain replays to 1.0, the initial
    state does not already pass (a verifier that pays for doing nothing)."""
    from dataclaw.envcraft.tasks.tool.stages import replay_task
    from dataclaw.envcraft.tasks.tool.verifier import check_verifier, evaluate

    def check(name: str, problem: str | None, reason: str) -> dict[str, Any]:
        return {"name": name, "passed": problem is None, "reason": None if problem is None else reason,
                "message": problem or ""}  # fmt: skip

    task = ToolTask.of(task)
    shape = check_verifier(task.verifier)
    out = [check("verifier", shape[0] if shape else None, "verifier_malformed")]
    if shape:
        return out
    try:
        gold = replay_task(task)
        bad_gold = (
            None if gold["passed"] else f"the gold chain scores {gold['score']:.2f} ({gold['errors']} errors)"
        )
    except Exception as exc:  # noqa: BLE001 - an environment that cannot replay the task: report, go on
        bad_gold = f"the gold chain could not be replayed: {type(exc).__name__}: {exc}"
    out.append(check("gold_chain", bad_gold, "gold_fails"))
    initial = evaluate(task.verifier, task.initial_state)
    out.append(check("untouched_floor", "the initial state already passes" if initial["passed"] else None,
                     "untouched_above_floor"))  # fmt: skip
    return out
