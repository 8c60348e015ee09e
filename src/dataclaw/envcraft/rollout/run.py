"""A rollout run (EnvCraft D.3/D.4): ``samples`` rollouts of every task of a task set into ``rollouts.jsonl``,
resumable per (task, model, sample, seed), with the harnesses wherever the command's executor puts them.

What ``dataclaw tasks rollout``, calibration (:mod:`dataclaw.envcraft.quality.runs`) and the quickstart run;
:func:`rollout_summary` is the summary table they print.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from dataclaw.core.errors import Reject
from dataclaw.core.store import RunStore
from dataclaw.envcraft.rollout.evaluate import component_summary
from dataclaw.envcraft.rollout.harness import harness_for, task_of
from dataclaw.envcraft.rollout.loop import RolloutConfig, Trajectory, rollout_id, run_rollout
from dataclaw.envcraft.rollout.user_sim import STOP_LEAK, UserConfig
from dataclaw.sandbox import SandboxPolicy, SandboxUnavailable, sandbox_available

Progress = Callable[[int, int], None]
log = logging.getLogger(__name__)
HOST_ATTEMPTS = 3
"""Tries of one rollout whose worker (holding its env session or workspace) dies under it."""


def require_sandbox(policy: SandboxPolicy | None) -> None:
    """Claw tasks run untrusted code: refuse up front (one clear error) when bubblewrap cannot run,
    unless the caller opted into unsafe mode."""
    if policy is not None and policy.unsafe:
        return
    avail = sandbox_available()
    if not avail:
        raise SandboxUnavailable(avail.refusal)


async def rollout_tasks(
    model: Any,
    tasks: list[Any],
    store: RunStore,
    config: RolloutConfig,
    *,
    samples: int = 1,
    concurrency: int = 8,
    seeds: Callable[[int], int | None] = lambda j: None,
    policy: SandboxPolicy | None = None,
    progress: Progress | None = None,
    judge: Any = None,
    user_model: Any = None,
    user_config: UserConfig | None = None,
    model_key: str | None = None,
) -> list[dict[str, Any]]:
    """``samples`` rollouts per task into ``rollouts.jsonl``; finished ones are read back, not rerun.
    ``model_key`` names the policy in rollout ids instead of its model id, where that id changes between
    runs of the same policy (a local server on a fresh port each time).

    The harnesses (env sessions, sandboxed workspaces) live where the command's executor puts them
    (local: this process; ray: actors), the agent loop and the model calls stay here, so every answer
    goes through this run's response cache. A rollout whose worker dies starts again on another one (its
    model calls answered from the cache); one whose workers die :data:`HOST_ATTEMPTS` times is a
    ``worker_crashed`` reject, retried on the next run. With ``user_model`` an LLM plays each tool task's
    user (``user_config``: its turn budget and sampling); its model id is part of each rollout's id."""
    from dataclaw.envcraft.tasks.claw.workspace import WorkspaceTask
    from dataclaw.pipeline.executors import WORKER_CRASHED, HostLost
    from dataclaw.pipeline.registry import make_executor

    tasks = [task_of(t) for t in tasks]
    if any(isinstance(t, WorkspaceTask) for t in tasks):
        require_sandbox(policy)
    out = store.stage("rollouts")
    have = {r["id"]: r for r in out.read()}
    user_id = user_model.model_id if user_model is not None else None
    ids = [
        (t, j, rollout_id(t.task_id, model_key or model.model_id, j, seeds(j), user_id))
        for t in tasks
        for j in range(samples)
    ]
    todo = [(t, j, rid) for t, j, rid in ids if rid not in have]
    window = max(1, min(concurrency, len(todo)))
    sem = asyncio.Semaphore(window)
    finished = 0

    async def one(host: Any, task: Any, j: int, rid: str) -> None:
        nonlocal finished
        kwargs = {"policy": policy} if isinstance(task, WorkspaceTask) else {}
        rc = _task_limits(task, config)
        async with sem:
            for attempt in range(1, HOST_ATTEMPTS + 1):
                try:
                    harness = await asyncio.to_thread(host, harness_for, task, **kwargs)
                    traj = await run_rollout(
                        model, harness, rc, sample=j, seed=seeds(j), judge=judge, user_model=user_model,
                        user_config=user_config,
                    )  # fmt: skip
                    break
                except HostLost as exc:
                    log.warning("rollout %s: %s (attempt %d of %d)", rid, exc, attempt, HOST_ATTEMPTS)
            else:
                store.reject(
                    Reject(
                        id=rid, stage="rollouts", reason=WORKER_CRASHED,
                        message=f"the worker holding its environment died {HOST_ATTEMPTS} times",
                        detail={"task_id": task.task_id, "sample": j},
                    )
                )  # fmt: skip
                traj = None
        if traj is not None:
            rec = {**traj.to_record(), "id": rid}  # the id asked for (``model_key`` may name the policy)
            out.append(rec)
            have[rec["id"]] = rec
        finished += 1
        if progress:
            progress(finished, len(todo))

    if progress:
        progress(0, len(todo))
    if todo:
        with make_executor(concurrency=window).hosting(window) as host:
            await asyncio.gather(*(one(host, t, j, rid) for t, j, rid in todo))
    wanted = {rid for _, _, rid in ids}
    return [r for rid, r in have.items() if rid in wanted]


def _task_limits(task: Any, config: RolloutConfig) -> RolloutConfig:
    """A claw task's yaml runtime may lower the turn and time budget."""
    turns, timeout = getattr(task, "max_turns", None), getattr(task, "timeout_s", None)
    return replace(
        config,
        max_turns=min(config.max_turns, turns) if turns else config.max_turns,
        timeout_s=min(config.timeout_s, timeout) if timeout else config.timeout_s,
    )


def trajectories_of(records: list[dict[str, Any]], tid: str) -> list[Trajectory]:
    """Rebuild the judging view (reward, error, defect) of stored trajectories of one task, in sample
    order (outcome j is sample j's, whichever finished first)."""
    out = []
    for r in sorted((r for r in records if r["task_id"] == tid), key=lambda r: r["sample"]):
        t = Trajectory(id=r["id"], task_id=tid, kind=r["kind"], model=r["model"], sample=r["sample"])
        t.reward, t.error, t.defect = r["reward"], r["error"], r["defect"]
        out.append(t)
    return out


def is_success(reward: float | None) -> bool:
    """A trial succeeds when its reward is full (τ²-bench's ``is_successful``: 1 within 1e-6)."""
    return reward is not None and abs(float(reward) - 1.0) <= 1e-6


def pass_hat_k(records: list[dict[str, Any]]) -> dict[int, float]:
    """pass^k (τ-bench, arXiv 2406.12045) for k = 1 … the fewest trials any task has: per task
    C(successes, k) / C(trials, k), the chance that k trials drawn from its n all succeed, averaged over
    tasks. Every task counts the same whatever its trials; ``{}`` when there are none."""
    by_task: dict[str, list[bool]] = defaultdict(list)
    for r in records:
        by_task[r["task_id"]].append(is_success(r.get("reward")))
    if not by_task:
        return {}
    n_min = min(len(v) for v in by_task.values())
    return {
        k: round(sum(math.comb(sum(v), k) / math.comb(len(v), k) for v in by_task.values()) / len(by_task), 4)
        for k in range(1, n_min + 1)
    }


def rollout_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts for the summary table, with pass^k over the tasks' trials."""
    errors = Counter(r["error"]["boundary"] for r in records if r.get("error"))
    rewards = [r["reward"] for r in records]
    return {
        "pass_hat_k": pass_hat_k(records),
        "components": component_summary(records),
        "rollouts": len(records),
        "tasks": len({r["task_id"] for r in records}),
        "mean_reward": round(sum(rewards) / len(rewards), 4) if rewards else None,
        "full_reward": sum(1 for x in rewards if x >= 1.0),
        "defects": sum(1 for r in records if r.get("defect")),
        "errors": dict(errors),
        "stop_reasons": dict(Counter(r["stop_reason"] for r in records)),
        "mean_turns": round(sum(r["turns"] for r in records) / len(records), 2) if records else None,
        **budget_totals(records),
        "user": user_summary(records),
    }


def user_summary(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The simulated users of a run (None when every rollout had the scripted user): rollouts, messages
    per rollout, how many were cut at their budget or ended by a leak, messages discarded, tokens."""
    users = [r["user"] for r in records if r.get("user")]
    if not users:
        return None
    return {
        "rollouts": len(users),
        "models": sorted({u["model"] for u in users}),
        "mean_turns": round(sum(len(u["turns"]) for u in users) / len(users), 2),
        "cut": sum(1 for u in users if u.get("cut")),
        "leaks": sum(1 for u in users if u.get("stop") == STOP_LEAK),
        "discarded": sum(len(u.get("discarded") or []) for u in users),
        "prompt_tokens": sum(u["usage"]["prompt_tokens"] for u in users),
        "completion_tokens": sum(u["usage"]["completion_tokens"] for u in users),
    }


def budget_totals(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-run wall-clock totals: episodes' wall time summed and the longest, how many ran out of their
    budget (stopped there and scored), and the most any episode overran its budget (records older than
    the budget fields count as within it)."""
    walls = [float(r.get("wall_s") or 0.0) for r in records]
    over = [float(r.get("wall_s") or 0.0) - float(r["budget_s"]) for r in records if r.get("budget_s")]
    return {
        "wall_s_total": round(sum(walls), 2),
        "wall_s_max": round(max(walls), 2) if walls else None,
        "budget_exceeded": sum(1 for r in records if r.get("budget_exceeded")),
        "overrun_s_max": round(max(0.0, *over), 2) if over else None,
    }
