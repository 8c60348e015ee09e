"""``dataclaw tasks rollout`` and ``calibrate`` as functions: a task source (``tasks.jsonl``, a run directory
holding one, or a claw task folder) → rollouts (and calibration verdicts) in a run directory, with the
model's answers cached and its usage saved there. The runs themselves are :func:`.runs.calibrate_tasks`
and :func:`dataclaw.envcraft.rollout.run.rollout_tasks`; this module opens the run around them.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError
from dataclaw.core.progress import ProgressFactory, progress_for
from dataclaw.core.store import RunStore
from dataclaw.envcraft.quality.calibrate import CalibrationConfig
from dataclaw.envcraft.quality.common import StageCount
from dataclaw.envcraft.quality.runs import LoadedTasks, calibrate_tasks, load_task_source, reject_unloadable
from dataclaw.envcraft.rollout import RolloutConfig
from dataclaw.envcraft.rollout.run import rollout_summary, rollout_tasks
from dataclaw.envcraft.rollout.user_sim import UserConfig
from dataclaw.models.ledger import UsageLedger, saved_usage
from dataclaw.sandbox import SandboxPolicy

OnUnloadable = Callable[[list[dict[str, Any]]], None]
"""``on_unloadable(broken)``: told which folder entries could not be loaded (``{id, reason, message}``),
after they became rejects and before the run starts (or fails for want of a task)."""


def run_model(spec: str, run: Path, ledger: UsageLedger | None, **options: Any) -> Any:
    """A model whose answers are cached in the run directory and whose usage goes to the run's ledger
    (``options``: the backend's, e.g. ``isolate``)."""
    from dataclaw.models import get_model

    return get_model(spec, cache=run / "model_cache.sqlite", ledger=ledger, **options)


def rollout_config(
    max_turns: int = 32, timeout: float = 300.0, max_tokens: int = 4096, strict: bool = False, **sampling: Any
) -> RolloutConfig:
    """A :class:`RolloutConfig` from command-line values; a bad value is a ConfigError (one line)."""
    try:
        return RolloutConfig(
            max_turns=max_turns,
            timeout_s=timeout,
            max_tokens=max_tokens,
            strict_tool_calls=strict,
            **sampling,
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def require_loaded(
    loaded: LoadedTasks, store: RunStore, stage: str, source: Path, on_unloadable: OnUnloadable | None
) -> list[dict[str, Any]]:
    """Record every task that cannot be loaded as a reject of ``stage`` and return them; when not one
    task could be loaded, a ConfigError (a run over nothing is not a success)."""
    broken = reject_unloadable(loaded, store, stage)
    if on_unloadable is not None:
        on_unloadable(broken)
    if not loaded.tasks:
        why = Counter(b["reason"] for b in broken)
        detail = ", ".join(f"{k}={v}" for k, v in why.most_common()) or "the folder holds none"
        raise ConfigError(f"no task could be loaded from {source} ({detail}; rejects in {store.root})")
    return broken


@dataclass
class RolloutRun:
    """What :func:`rollout_run` did: its rollout records and their summary (with ``unloadable``)."""

    records: list[dict[str, Any]]
    summary: dict[str, Any]


def rollout_run(
    source: Path,
    out: Path,
    model: str,
    config: RolloutConfig,
    *,
    samples: int = 1,
    concurrency: int = 8,
    limit: int | None = None,
    loaded: LoadedTasks | None = None,
    policy: SandboxPolicy | None = None,
    progress: ProgressFactory | None = None,
    on_unloadable: OnUnloadable | None = None,
    judge_model: str | None = None,
    user_model: str | None = None,
    user_config: UserConfig | None = None,
) -> RolloutRun:
    """``samples`` rollouts of each of the first ``limit`` tasks of ``source`` (or of ``loaded``, its tasks
    when already loaded) by the agent ``model`` into ``out/rollouts.jsonl`` (resumable). The samples of a
    task are independent: sample ``j`` sends ``config.seed + j`` when a seed is set (the seed is then part
    of each rollout's id). ``judge_model`` grades tasks' natural-language assertions (``nl_assertions``).
    ``user_model`` plays each tool task's user (τ²-bench's user simulator; ``user_config``: its turn
    budget and sampling), through the run's cache and ledger like the agent."""
    loaded = load_task_source(source, limit) if loaded is None else loaded
    seed = config.seed
    with RunStore(out) as store, saved_usage(store) as ledger:
        broken = require_loaded(loaded, store, "rollouts", source, on_unloadable)
        chat = run_model(model, out, ledger)
        judge = run_model(judge_model, out, ledger) if judge_model else None
        user = run_model(user_model, out, ledger) if user_model else None
        with progress_for(progress, "rollouts") as bar:
            recs = asyncio.run(
                rollout_tasks(
                    chat,
                    loaded.tasks,
                    store,
                    config,
                    samples=samples,
                    concurrency=concurrency,
                    # an explicit seed is part of each rollout's id: a rerun with another seed is new work
                    seeds=(lambda j: seed + j) if seed is not None else (lambda j: None),
                    policy=policy,
                    progress=bar,
                    judge=judge,
                    user_model=user,
                    user_config=user_config,
                )
            )
        summary = {**rollout_summary(recs), "unloadable": len(broken)}
        sampling = {"temperature": config.temperature, "top_p": config.top_p, "seed": seed}
        store.update_manifest(
            rollout={
                "model": model, "samples": samples, "summary": summary, "judge_model": judge_model,
                "user": _user_manifest(user_model, user_config),
                "sampling": {**sampling, "max_tokens": config.max_tokens},
            }
        )  # fmt: skip
    return RolloutRun(recs, summary)


def _user_manifest(user_model: str | None, config: UserConfig | None) -> dict[str, Any] | None:
    """The manifest's record of who played the user (None: the tasks' scripted turns)."""
    if user_model is None:
        return None
    config = config or UserConfig()
    return {"model": user_model, "max_turns": config.max_turns, "temperature": config.temperature}


def simulated_user_config(max_turns: int, temperature: float | None = None) -> UserConfig:
    """A :class:`UserConfig` from command-line values; a bad value is a ConfigError (one line)."""
    try:
        return UserConfig(max_turns=max_turns, temperature=temperature)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


@dataclass
class CalibrationRun:
    """What :func:`calibrate_run` did: one verdict row per calibrated task, the unloadable tasks, and the
    summary of every rollout in the run directory."""

    rows: list[dict[str, Any]]
    broken: list[dict[str, Any]]
    summary: dict[str, Any]

    @property
    def stage_count(self) -> StageCount:
        """Tasks in → kept (0 < p < 1), with the other verdicts, the unloadable and the repaired counted."""
        kept = sum(r["verdict"] == "keep" for r in self.rows)
        reasons = Counter(r["verdict"] for r in self.rows if r["verdict"] != "keep")
        reasons.update(f"unloadable: {b['reason']}" for b in self.broken)
        repaired = sum(1 for r in self.rows if (r.get("repair") or {}).get("ok"))
        if repaired:
            reasons["repaired (see repaired_tasks.jsonl)"] = repaired
        return StageCount("calibration", len(self.rows) + len(self.broken), kept, dict(reasons))


def calibration_config(k: int = 8, threshold: float = 1.0, concurrency: int = 8) -> CalibrationConfig:
    """A :class:`CalibrationConfig` from command-line values; a bad value is a ConfigError (one line)."""
    try:
        return CalibrationConfig(k=k, success_threshold=threshold, concurrency=concurrency)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def calibrate_run(
    source: Path,
    out: Path,
    model: str,
    cal_config: CalibrationConfig,
    config: RolloutConfig,
    *,
    repair_model: str | None = None,
    limit: int | None = None,
    loaded: LoadedTasks | None = None,
    policy: SandboxPolicy | None = None,
    progress: ProgressFactory | None = None,
    on_unloadable: OnUnloadable | None = None,
) -> CalibrationRun:
    """Difficulty calibration of the first ``limit`` tasks of ``source`` (or of ``loaded``): ``k``
    rollouts per task by ``model`` under ``config``'s limits, keep 0 < p < 1 (``cal_config``); verifier
    failures go to ``repair_model`` (≤ 2 tries) when given. Resumable in ``out``."""
    loaded = load_task_source(source, limit) if loaded is None else loaded
    with RunStore(out) as store, saved_usage(store) as ledger:
        broken = require_loaded(loaded, store, "calibration", source, on_unloadable)
        chat = run_model(model, out, ledger)
        fixer = run_model(repair_model, out, ledger) if repair_model else None
        with progress_for(progress, "calibration rollouts") as bar:
            rows = asyncio.run(
                calibrate_tasks(
                    chat,
                    loaded.tasks,
                    store,
                    cal_config,
                    config,
                    repair_model=fixer,
                    policy=policy,
                    progress=bar,
                )
            )
        summary = {**rollout_summary(list(store.records("rollouts"))), "unloadable": len(broken)}
        manifest = {"model": model, "k": cal_config.k, "threshold": cal_config.success_threshold}
        manifest["summary"] = summary  # pass^k over the k trials, reward components, stop reasons
        store.update_manifest(calibrate=manifest)
    return CalibrationRun(rows, broken, summary)
