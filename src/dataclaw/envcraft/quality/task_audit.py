"""``dataclaw tasks audit`` as a function: the code audit of a task source (claw tasks by the C.6 checks in
the sandbox, tool tasks by their code checks) and, with a model, the LLM rubric; each task's verdict and the
run's summary (tasks per verdict, per failure reason and per warning, pass rate, pace, slowest tasks).

The reports themselves are :func:`.runs.audit_by_code`'s rows (``code_audit.jsonl``).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from dataclaw.core.progress import ProgressFactory, progress_for
from dataclaw.core.store import RunStore
from dataclaw.envcraft.quality.common import StageCount, reject_reasons, task_id
from dataclaw.envcraft.quality.runs import LoadedTasks, audit_by_code, rubric_tasks
from dataclaw.envcraft.quality.soundness import SoundnessSettings
from dataclaw.envcraft.quality.task_runs import run_model
from dataclaw.models.backends.local import isolation_options
from dataclaw.models.ledger import saved_usage
from dataclaw.sandbox import SandboxPolicy

VERDICTS = ("pass", "FAIL", "DEFECT", "unloadable", "error")
"""A task's audit verdict, in the order a summary lists them."""


def verdict(row: dict[str, Any]) -> str:
    """One word per task: pass, FAIL (the task is broken), DEFECT (its verifier failed: repair it),
    unloadable (its files do not form a task), error (the audit itself crashed on it)."""
    if row.get("layout"):
        return "unloadable"
    if row.get("error"):
        return "error"
    if row["passed"]:
        return "pass"
    return "DEFECT" if row.get("defect") else "FAIL"


def warnings(row: dict[str, Any]) -> list[dict[str, Any]]:
    """A report's warnings: uncertain heuristics that do not fail the task (a ``warnings`` list, or checks
    marked ``severity: warning``)."""
    out = [w if isinstance(w, dict) else {"message": str(w)} for w in row.get("warnings") or []]
    out += [c for c in row.get("checks", []) if c.get("severity") == "warning"]
    return out


@dataclass
class AuditSummary:
    """The numbers of one code audit (what goes into the run manifest under ``audit.summary``)."""

    tasks: int
    verdicts: dict[str, int]
    reasons: dict[str, int]
    """Failure reason → tasks that failed for it (a task may have several)."""
    warnings: dict[str, int]
    """Warning reason → tasks warned about it."""
    pass_rate: float | None
    audited: int
    """Tasks audited by this call (not resumed, not unloadable)."""
    resumed: int
    seconds: float
    tasks_per_s: float | None
    """Tasks audited per second, None when none was audited."""
    slowest: list[tuple[str, float]]
    """The five slowest tasks: (id, seconds)."""
    examples: dict[str, str]
    """Failure or warning reason → the first task that has it."""
    n_warnings: int
    """Warnings in all, and on how many tasks (:attr:`warned_tasks`)."""
    warned_tasks: int

    def to_dict(self) -> dict[str, Any]:
        """The manifest's form: times rounded, without the examples and the warning totals (for display)."""
        out = asdict(self)
        for key in ("examples", "n_warnings", "warned_tasks"):
            out.pop(key)
        out["seconds"] = round(self.seconds, 2)
        out["tasks_per_s"] = round(self.tasks_per_s, 3) if self.tasks_per_s else None
        return out


def summarize_audit(rows: list[dict[str, Any]], *, seconds: float, resumed: int) -> AuditSummary:
    """Tasks per verdict, per failure reason and per warning, the pass rate and the pace of ``rows`` (the
    reports of one audit that took ``seconds``, ``resumed`` of them read back from the run directory)."""
    verdicts = Counter(verdict(r) for r in rows)
    failing: Counter[str] = Counter()
    warned: Counter[str] = Counter()
    example: dict[str, str] = {}
    for r in rows:
        for reason in dict.fromkeys(str(c["reason"]) for c in r["checks"] if not c["passed"]):
            failing[reason] += 1
            example.setdefault(reason, r["id"])
        for reason in dict.fromkeys(str(w.get("reason") or w.get("name") or "warning") for w in warnings(r)):
            warned[reason] += 1
            example.setdefault(reason, r["id"])
    n, passed = len(rows), verdicts.get("pass", 0)
    audited = n - resumed - verdicts.get("unloadable", 0)
    rate = audited / seconds if seconds > 0 and audited else None
    timed = sorted((r for r in rows if r.get("duration_s") is not None), key=lambda r: -r["duration_s"])
    return AuditSummary(
        tasks=n,
        verdicts=dict(verdicts),
        reasons=dict(failing),
        warnings=dict(warned),
        pass_rate=round(passed / n, 4) if n else None,
        audited=audited,
        resumed=resumed,
        seconds=seconds,
        tasks_per_s=rate,
        slowest=[(r["id"], r["duration_s"]) for r in timed[:5]],
        examples=example,
        n_warnings=sum(len(warnings(r)) for r in rows),
        warned_tasks=sum(1 for r in rows if warnings(r)),
    )


async def _rubric_run(chat: Any, tasks: list[Any], store: RunStore, bar: Any) -> list[dict[str, Any]]:
    """The rubric over ``tasks``, then the model closed (an isolated model's child process ends here)."""
    try:
        return await rubric_tasks(chat, tasks, store, progress=bar)
    finally:
        await chat.aclose()


@dataclass
class CodeAudit:
    """The code audit of a task source: one report row per task and their summary."""

    rows: list[dict[str, Any]]
    summary: AuditSummary


@dataclass
class TaskAudit:
    """What :func:`audit_tasks` did: the code audit, the rubric's count (with a model) and how many tasks
    failed either."""

    code: CodeAudit
    rubric: StageCount | None
    failed: int


def audit_tasks(
    source: Path,
    loaded: LoadedTasks,
    run: Path,
    *,
    floor: float = 0.0,
    workers: int = 1,
    model: str | None = None,
    policy: SandboxPolicy | None = None,
    progress: ProgressFactory | None = None,
    on_code_audit: Callable[[CodeAudit], None] | None = None,
    soundness: SoundnessSettings | None = None,
    isolate_model: bool = True,
) -> TaskAudit:
    """Audit the tasks ``loaded`` from ``source`` into the run directory ``run`` (resumable): every task by
    code (``workers`` at once; a claw task fails when its untouched workspace scores above ``floor``), then,
    with ``model``, every loadable task by the LLM rubric. ``on_code_audit`` is told the code audit before
    the rubric starts. Tool tasks also run the soundness suite (``soundness``: its settings, the defaults
    when None; a task a policy games fails with ``gamed_by_<policy>``). The embedded model runs the rubric
    in one child process for the whole run (``isolate_model``; ``local:…?isolate=false`` or False opts
    out), so a crash of llama.cpp is that task's ``model_error`` and the run goes on. The summary goes
    into the run manifest under ``audit``."""
    soundness = soundness or SoundnessSettings()
    with RunStore(run) as store:
        before = store.stage("code_audit").ids()
        t0 = time.perf_counter()
        with progress_for(progress, "audit") as bar:
            rows = audit_by_code(
                loaded, store, floor=floor, policy=policy, progress=bar, workers=workers, soundness=soundness
            )
        took = time.perf_counter() - t0
        resumed = sum(1 for r in rows if r["id"] in before and "layout" not in r)
        code = CodeAudit(rows, summarize_audit(rows, seconds=took, resumed=resumed))
        if on_code_audit is not None:
            on_code_audit(code)
        failed = len(rows) - sum(r["passed"] for r in rows)
        rubric = None
        if model:
            with saved_usage(store) as ledger:
                chat = run_model(model, run, ledger, **isolation_options(model, isolate_model))
                with progress_for(progress, "rubric") as bar:
                    verdicts = asyncio.run(_rubric_run(chat, loaded.tasks, store, bar))
            kept = sum(v["qualified"] for v in verdicts)
            # every task's reject counts, a model_error included (it leaves no verdict row)
            reasons = reject_reasons(store, "rubric", {task_id(t) for t in loaded.tasks})
            rubric = StageCount("rubric", len(loaded.tasks), kept, reasons)
            failed += len(loaded.tasks) - kept
        store.update_manifest(
            audit={
                "source": str(source),
                "floor": floor,
                "model": model,
                "workers": workers,
                "soundness": soundness.to_dict(),
                "summary": code.summary.to_dict(),
            }
        )
    return TaskAudit(code, rubric, failed)
