"""Difficulty calibration (EnvCraft §4.3, D.6) and verifier repair.

Each task gets ``k`` independent rollouts (default 8, temperature 0.7, top-p 0.95, distinct seeds). A
rollout succeeds (z = 1) only when it ends within budget and the verifier confirms every constraint
(reward ≥ ``success_threshold``, 1.0 by default; claw rewards in [0, 1] count as success only at full
score). The pass rate is p = mean(z); tasks with 0 < p < 1 are kept, p = 0 and p = 1 are dropped.

A verifier that raises, times out or writes a malformed score is a *data defect*, not an agent failure:
the task leaves calibration and goes to repair — at most two model-written replacement verifiers, each
re-audited; a task whose verifier is still invalid afterwards is discarded.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from dataclaw.envcraft.quality.common import tool_task_problems
from dataclaw.envcraft.rollout import RolloutConfig, Trajectory, harness_for, run_rollouts
from dataclaw.envcraft.runtime.task import ToolTask


class CalibrationVerdict(StrEnum):
    KEEP = "keep"
    TOO_EASY = "too_easy"
    """p = 1: little learning signal."""
    TOO_HARD = "too_hard"
    """p = 0: likely unsolvable, underspecified or too hard for now."""
    DEFECT = "verifier_defect"
    """The verifier failed in some rollout: routed to repair."""


@dataclass(frozen=True)
class CalibrationConfig:
    k: int = 8
    success_threshold: float = 1.0
    temperature: float = 0.7
    top_p: float = 0.95
    base_seed: int = 0
    concurrency: int = 8

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")
        if not 0 < self.success_threshold <= 1:
            raise ValueError(f"success_threshold must be in (0, 1], got {self.success_threshold}")

    def rollout_config(self, rollout: RolloutConfig | None = None) -> RolloutConfig:
        """``rollout`` (default limits) with this calibration's sampling: temperature and top-p."""
        return replace(rollout or RolloutConfig(), temperature=self.temperature, top_p=self.top_p)

    def seed(self, j: int) -> int:
        """The seed of the ``j``-th of the k rollouts."""
        return self.base_seed + j


@dataclass
class Calibration:
    task_id: str
    verdict: CalibrationVerdict
    p: float | None
    outcomes: list[int]
    rewards: list[float]
    defects: int
    errors: dict[str, int] = field(default_factory=dict)
    """Agent-side rollout failures by boundary (model, timeout, tool) — counted as z = 0."""
    defect_problem: str | None = None

    def to_record(self) -> dict[str, Any]:
        return {
            "id": self.task_id,
            "verdict": str(self.verdict),
            "p": self.p,
            "outcomes": self.outcomes,
            "rewards": self.rewards,
            "defects": self.defects,
            "errors": self.errors,
            "defect_problem": self.defect_problem,
        }


def judge(task_id: str, trajectories: list[Trajectory], threshold: float = 1.0) -> Calibration:
    """The verdict from k finished rollouts."""
    defects = [t for t in trajectories if t.defect]
    rewards = [t.reward for t in trajectories]
    errors = dict(Counter(t.error["boundary"] for t in trajectories if t.error and not t.defect))
    if defects:
        problem = (defects[0].error or {}).get("message")
        return Calibration(
            task_id, CalibrationVerdict.DEFECT, None, [], rewards, len(defects), errors, problem
        )
    outcomes = [int(t.error is None and t.reward >= threshold - 1e-9) for t in trajectories]
    p = sum(outcomes) / len(outcomes)
    verdict = (
        CalibrationVerdict.TOO_HARD
        if p == 0
        else CalibrationVerdict.TOO_EASY
        if p == 1
        else CalibrationVerdict.KEEP
    )
    return Calibration(task_id, verdict, p, outcomes, rewards, 0, errors)


async def calibrate_task(
    model: Any,
    task: Any,
    config: CalibrationConfig | None = None,
    rollout: RolloutConfig | None = None,
) -> tuple[Calibration, list[Trajectory]]:
    """k rollouts of one task with distinct seeds → verdict (and the trajectories, for the record)."""
    config = config or CalibrationConfig()
    harnesses = [harness_for(task) for _ in range(config.k)]
    trajs = await run_rollouts(
        model,
        harnesses,
        config.rollout_config(rollout),
        concurrency=config.concurrency,
        seeds=[config.seed(j) for j in range(config.k)],
    )
    task_id = harnesses[0].task_id
    return judge(task_id, trajs, config.success_threshold), trajs


# ---- repair --------------------------------------------------------------------------------------------

MAX_REPAIRS = 2

CLAW_REPAIR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"verify_workplace_py": {"type": "string", "minLength": 50, "maxLength": 40000}},
    "required": ["verify_workplace_py"],
    "additionalProperties": False,
}
TOOL_REPAIR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "assertions": {
            "type": "array",
            "minItems": 1,
            "maxItems": 40,
            "items": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "op": {"type": "string"},
                    "value": {},
                    "why": {"type": "string"},
                },
                "required": ["path", "op"],
            },
        }
    },
    "required": ["assertions"],
    "additionalProperties": False,
}


@dataclass
class RepairResult:
    task: Any | None
    """The repaired task, or None when no attempt produced a valid verifier."""
    attempts: int
    history: list[str] = field(default_factory=list)


Auditor = Callable[[Any], Awaitable[str | None]]
"""A re-audit of a candidate task: None when its verifier is now valid, else the problem."""


def _repair_prompt(task: Any, problem: str) -> tuple[str, dict[str, Any]]:
    from dataclaw.envcraft.tasks.claw.workspace import WorkspaceTask

    if isinstance(task, WorkspaceTask):
        return (
            "The verification script of this file-workspace task is broken. Rewrite verify_workplace.py: "
            "Python standard library only, no network, no LLM; it receives the workspace path as argv[1] "
            "(default '.') and must write workplace_score.json as "
            '{"total_score": N, "details": [{"item", "score", "max_score", "passed", "reason"}]}; '
            "the untouched workspace must score 0.\n\n"
            f"Problem: {problem}\n\n## User request\n{task.prompt}\n\n## env_builder.py\n{task.builder}\n\n"
            f"## Broken verify_workplace.py\n{task.verifier}",
            CLAW_REPAIR_SCHEMA,
        )
    from dataclaw.envcraft.tasks.tool.verifier import OPS

    task = ToolTask.of(task)
    return (
        "The verifier of this tool task is broken. Write new assertions over the session state: JSON "
        f"pointers as path, op one of {', '.join(OPS)}. They must hold after the gold chain and not all "
        f"hold in the initial state.\n\nProblem: {problem}\n\n## User turns\n"
        + "\n".join(task.user_turns)
        + f"\n\n## Gold chain\n{json.dumps(task.gold_chain)}\n\n## Broken verifier\n"
        + json.dumps(task.verifier),
        TOOL_REPAIR_SCHEMA,
    )


def _with_verifier(task: Any, parsed: dict[str, Any]) -> Any:
    from dataclaw.envcraft.tasks.claw.workspace import WorkspaceTask
    from dataclaw.envcraft.tasks.tool.verifier import VERIFIER_VERSION

    if isinstance(task, WorkspaceTask):
        return replace(task, verifier=parsed["verify_workplace_py"])
    return ToolTask.of(task).with_verifier({"version": VERIFIER_VERSION, "assertions": parsed["assertions"]})


async def repair_verifier(
    model: Any, task: Any, problem: str, audit: Auditor, max_attempts: int = MAX_REPAIRS
) -> RepairResult:
    """Up to ``max_attempts`` model-written verifiers, each re-audited; the first valid one wins."""
    from dataclaw.models import ModelError

    history = [problem]
    for attempt in range(1, max_attempts + 1):
        prompt, schema = _repair_prompt(task, history[-1])
        try:
            done = await model.complete(prompt, schema=schema, temperature=0)
        except ModelError as exc:
            history.append(f"attempt {attempt}: the model gave no usable answer ({type(exc).__name__})")
            continue
        candidate = _with_verifier(task, done.parsed)
        still = await audit(candidate)
        if still is None:
            return RepairResult(candidate, attempt, history)
        history.append(f"attempt {attempt}: {still}")
    return RepairResult(None, max_attempts, history)


async def audit_verifier(task: Any) -> str | None:
    """The default re-audit: claw tasks through the C.6 code audit, counting only the failures a new
    verifier can change (:attr:`AuditReport.verifier_failures`: the verifier runs, no credit for nothing,
    paths, objective, data, solution) — never warnings, and never prompt- or builder-side findings a
    repaired verifier cannot fix; tool tasks through the code audit of ``dataclaw tasks audit``
    (:func:`tool_task_problems`: a well-formed verifier, gold replay at 1.0, a failing initial state).
    None when the verifier is valid."""
    from dataclaw.envcraft.tasks.claw.workspace import WorkspaceTask

    if isinstance(task, WorkspaceTask):
        from dataclaw.envcraft.tasks.claw.audit import audit_task

        report = await asyncio.to_thread(audit_task, task)
        return "; ".join(f"{c.name}: {c.message}" for c in report.verifier_failures) or None
    failed = [c for c in await asyncio.to_thread(tool_task_problems, task) if not c["passed"]]
    return failed[0]["message"] if failed else None
