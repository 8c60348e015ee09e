"""Resumable runs behind ``dataclaw tasks audit|calibrate``: tasks in, JSONL records out (the rollout run
itself is :mod:`dataclaw.envcraft.rollout.run`).

Tasks come from a ``tasks.jsonl`` (tool tasks, or claw task records) or from a folder in the four-file
layout (claw workspace tasks made here or elsewhere). Every output record has a deterministic id, so a
rerun into the same run directory skips what is done: audits per task, rollouts per (task, model, sample),
calibrations per task.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dataclaw.core.errors import ConfigError, Reject
from dataclaw.core.ids import stable_hash
from dataclaw.core.moved import keep_old_names
from dataclaw.core.store import RunStore
from dataclaw.envcraft.importers.base import publisher_set
from dataclaw.envcraft.quality.common import task_id, tool_task_problems
from dataclaw.envcraft.quality.soundness import SoundnessSettings, run_soundness
from dataclaw.envcraft.rollout import RolloutConfig
from dataclaw.envcraft.rollout.run import Progress, require_sandbox, rollout_tasks, trajectories_of
from dataclaw.envcraft.runtime.task import CLAW_KIND, ToolTask, read_task_rows
from dataclaw.sandbox import SandboxError, SandboxPolicy

if TYPE_CHECKING:
    from dataclaw.envcraft.quality.calibrate import CalibrationConfig


@dataclass
class LoadedTasks:
    tasks: list[Any]
    """:class:`ToolTask` and :class:`WorkspaceTask` objects."""
    broken: list[Any] = field(default_factory=list)
    """:class:`LayoutError` of folder entries that are not loadable tasks."""


def load_task_source(path: Path, limit: int | None = None) -> LoadedTasks:
    """A ``tasks.jsonl``, a run directory holding one, or a four-file task folder."""
    from dataclaw.envcraft.tasks.claw.workspace import LayoutError, WorkspaceTask, load_tasks

    if path.is_dir() and (path / "tasks").is_dir():
        loaded = load_tasks(path)
        ok = [t for t in loaded if isinstance(t, WorkspaceTask)]
        return LoadedTasks(ok[:limit], [t for t in loaded if isinstance(t, LayoutError)])
    file = path / "tasks.jsonl" if path.is_dir() else path
    if not file.is_file():
        raise ConfigError(f"{path}: expected tasks.jsonl, a run directory holding one, or a tasks/ folder")
    out = [
        WorkspaceTask.from_record(row) if row.get("kind") == CLAW_KIND else ToolTask.from_row(row, where)
        for where, row in read_task_rows(file)
    ]
    return LoadedTasks(out[:limit])


# ---- audit -------------------------------------------------------------------------------------------


def default_workers() -> int:
    """Parallel audits by default: one per CPU this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


CODE_AUDIT_VERSION = 2
"""Bumped when the code checks change what they conclude: every stored verdict is then redone (2: tool
tasks run the soundness suite)."""


def task_fingerprint(task: Any) -> str:
    """Hash of what a task *is*: a claw task's YAML config, prompt, builder, verifier and solution; a tool
    task's record. An edited file is another fingerprint (the file's name and place are not part of it)."""
    if isinstance(task, ToolTask | dict):
        return stable_hash({"tool": ToolTask.of(task).to_row()}, 16)
    return stable_hash(
        {
            "config": task.config,
            "prompt": task.prompt,
            "builder": task.builder,
            "verifier": task.verifier,
            "solution": task.solution,
        },
        16,
    )


def _audit_producer(task: Any, floor: float, soundness: SoundnessSettings | None = None) -> str:
    """A task's audit producer: its fingerprint, the floor, the checks' version (and, for a tool task,
    the soundness settings)."""
    key: dict[str, Any] = {"task": task_fingerprint(task), "floor": floor, "checks": CODE_AUDIT_VERSION}
    if soundness is not None and isinstance(task, ToolTask):
        key["soundness"] = soundness.to_dict()
    return stable_hash(key, 16)


def audit_by_code(
    loaded: LoadedTasks,
    store: RunStore,
    *,
    floor: float = 0.0,
    policy: SandboxPolicy | None = None,
    progress: Progress | None = None,
    workers: int = 1,
    soundness: SoundnessSettings | None = None,
) -> list[dict[str, Any]]:
    """Code audit of each task → ``code_audit.jsonl`` (one report per audited task, claw and tool tasks
    alike) and a reject per failed or unloadable task: claw tasks by the C.6 checks in the sandbox (up to
    ``workers`` tasks at once, each in its own sandboxed runs), tool tasks by :func:`tool_task_problems`
    and the soundness suite (:mod:`.soundness`, ``soundness`` its settings, the defaults when None): a
    check per policy, failed ones with the reason naming the policy that gamed the verifier, and the
    figures under the report's ``soundness``.

    Resumable per task *and per content*: each report carries ``task_producer``, a hash of the task's
    files (:func:`task_fingerprint`), the ``floor`` and :data:`CODE_AUDIT_VERSION`; a report is read back
    only when that hash matches, so an edited task, or another floor, is audited again. The stage's
    producer (``manifest.json`` ``producers.code_audit``) hashes every task's producer: when any of them
    changes, the old reports and their rejects are superseded (kept in the file, not read), the unchanged
    tasks' reports are carried over under the new producer without re-running them, and the changed ones
    are redone. Unloadable tasks are rejects only (re-read on every run, so a fixed task is audited next
    time). Rows come back in task order; each report records its ``duration_s``."""
    from dataclaw.envcraft.tasks.claw.workspace import WorkspaceTask

    soundness = soundness or SoundnessSettings()
    tasks = [t for t in loaded.tasks if isinstance(t, ToolTask | WorkspaceTask)]
    producers = {task_id(t): _audit_producer(t, floor, soundness) for t in tasks}
    store.set_producer(
        "code_audit",
        {
            "floor": floor,
            "checks": CODE_AUDIT_VERSION,
            "tasks": len(producers),
            "task_producers": stable_hash(sorted(producers.items()), 16),
        },
    )
    out = store.stage("code_audit")
    # every stored report by (id, task producer), superseded ones included: an unchanged task's report
    # from a run whose task set differed is carried over, not redone
    done: dict[tuple[str, str], dict[str, Any]] = {}
    for r in out.read():
        if r.get("task_producer") and not r.get("error"):
            done[(r["id"], r["task_producer"])] = r
    rows: dict[str, dict[str, Any]] = {}
    order: list[str] = []

    def carry(rec: dict[str, Any]) -> dict[str, Any]:
        if not out.is_current(rec):  # a superseded report of the same task content: re-stamp it
            rec = {k: v for k, v in rec.items() if k != "producer"}
            out.append(rec)
            _reject_failed(store, rec)
        return rec

    for err in loaded.broken:
        reason = str(err.reason)
        check = {"name": "layout", "passed": False, "reason": reason, "message": err.message}
        order.append(err.task_id)
        rows[err.task_id] = {
            "id": err.task_id, "passed": False, "defect": False, "layout": reason, "checks": [check],
        }  # fmt: skip
        store.reject(Reject(id=err.task_id, stage="code_audit", reason=reason, message=err.message))
    for task in (t for t in loaded.tasks if isinstance(t, ToolTask)):
        tid = task.id
        order.append(tid)
        rec = done.get((tid, producers[tid]))
        if rec is None or rec.get("kind") != "tool":
            t0 = time.perf_counter()
            checks = tool_task_problems(task)
            sound = run_soundness(task, soundness) if checks[0]["passed"] else None
            warned: list[dict[str, Any]] = []
            if sound is not None:
                # the gold replay is tool_task_problems' check already
                found = [c for c in sound.checks() if c["name"] != "soundness:gold"]
                publisher = publisher_set(task)
                if publisher is not None:  # their verifier, reported but not ours to refuse (as in exports)
                    warned += [{**c, "publisher": publisher} for c in found if not c["passed"]]
                    found = [c for c in found if c["passed"]]
                checks += found
            rec = {
                "id": tid,
                "kind": "tool",
                "passed": all(c["passed"] for c in checks),
                "defect": False,
                "checks": checks,
                **({"soundness": sound.to_record()} if sound is not None else {}),
                **({"warnings": warned} if warned else {}),
                "task_producer": producers[tid],
                "duration_s": round(time.perf_counter() - t0, 3),
            }
            out.append(rec)
            _reject_failed(store, rec)
        else:
            rec = carry(rec)
        rows[tid] = rec
    claw = [t for t in loaded.tasks if isinstance(t, WorkspaceTask)]
    order += [t.task_id for t in claw]
    todo = []
    for task in claw:
        rec = done.get((task.task_id, producers[task.task_id]))
        if rec is not None and rec.get("floor") == floor:
            rows[task.task_id] = carry(rec)
        else:
            todo.append(task)
    finished = len(claw) - len(todo)
    if progress:
        progress(finished, len(claw))
    if todo:
        require_sandbox(policy)
    for task, rec in _audit_claw(todo, floor, policy, max(1, workers)):
        rec = {**rec, "task_producer": producers[task.task_id]}
        if not rec.get("error"):  # an audit that crashed is retried next run: returned only
            out.append(rec)
        _reject_failed(store, rec)
        rows[task.task_id] = rec
        finished += 1
        if progress:
            progress(finished, len(claw))
    return [rows[tid] for tid in dict.fromkeys(order)]


def _audit_claw(
    tasks: list[Any], floor: float, policy: SandboxPolicy | None, workers: int
) -> Iterator[tuple[Any, dict[str, Any]]]:
    """(task, report) as each audit finishes; ``workers`` audits run at once on the command's executor
    (local: threads, each audit waits on its sandboxed subprocesses, so the GIL is not the limit; ray:
    actors)."""
    from functools import partial

    from dataclaw.pipeline.registry import make_executor
    from dataclaw.sandbox.runner import interrupt

    if not tasks:
        return
    audit = partial(_audit_one, floor=floor, policy=policy)
    audits = make_executor(workers=workers).calls(audit, tasks, min(workers, len(tasks)), stopping=interrupt)
    try:
        yield from audits
    except GeneratorExit:  # the caller stopped early, or dropped this generator (closed whenever it is
        raise  # collected): interrupting would kill every sandbox of the process, others' included
    except BaseException:
        # interrupted (Ctrl-C) or a sandbox that cannot run: end the audits in flight now instead of
        # waiting out their timeouts; their half-done results are dropped, never stored
        with interrupt():
            audits.close()
        raise
    finally:
        audits.close()


def _audit_one(task: Any, floor: float, policy: SandboxPolicy | None) -> dict[str, Any]:
    """One claw task's report. A bug in the checks is this task's reject (``audit_error``), not the end of
    the run; a sandbox that cannot run at all still stops it (every later task would fail the same way)."""
    from dataclaw.envcraft.tasks.claw.audit import audit_task
    from dataclaw.sandbox.pool import reuse_workers

    t0 = time.perf_counter()
    try:
        with reuse_workers():  # builder and verifier runs on one workspace share a warm sandbox worker
            rec = audit_task(task, floor=floor, policy=policy).to_record()
    except SandboxError:
        raise
    except Exception as exc:  # noqa: BLE001 - failures are data: one task's crash never stops the run
        msg = f"the audit itself failed: {type(exc).__name__}: {str(exc)[:200]}"
        check = {"name": "audit", "passed": False, "reason": "audit_error", "message": msg}
        rec = {"id": task.task_id, "passed": False, "defect": False, "checks": [check], "error": True}
    return {**rec, "floor": floor, "duration_s": round(time.perf_counter() - t0, 3)}


def _reject_failed(store: RunStore, rec: dict[str, Any]) -> None:
    failed = [c for c in rec["checks"] if not c["passed"]]
    if failed:
        store.reject(
            Reject(
                id=rec["id"],
                stage="code_audit",
                reason=str(failed[0]["reason"]),
                message=failed[0]["message"],
                detail={"failed": failed},
            )
        )


def reject_unloadable(loaded: LoadedTasks, store: RunStore, stage: str) -> list[dict[str, Any]]:
    """Every folder entry that is not a loadable task becomes a reject of ``stage`` (naming the files found
    and what is missing, as the loader said); returns them as {id, reason, message}."""
    out = []
    for err in loaded.broken:
        reason = str(err.reason)
        store.reject(Reject(id=err.task_id, stage=stage, reason=reason, message=err.message))
        out.append({"id": err.task_id, "reason": reason, "message": err.message})
    return out


async def rubric_tasks(
    model: Any, tasks: list[Any], store: RunStore, progress: Progress | None = None
) -> list[dict[str, Any]]:
    """LLM rubric per task → ``rubric.jsonl``; tasks failing the Eq. 5 gate are rejected."""
    from dataclaw.envcraft.quality.rubric import inspect_task
    from dataclaw.models import ModelError

    out = store.stage("rubric")
    done = {r["id"]: r for r in out.read()}
    rows = []
    for i, task in enumerate(tasks):
        tid = task_id(task)
        if tid not in done:
            try:
                rec = (await inspect_task(model, task)).to_record()
            except ModelError as exc:
                store.reject(Reject(id=tid, stage="rubric", reason="model_error", message=str(exc)[:300]))
                continue
            out.append(rec)
            if not rec["qualified"]:
                store.reject(
                    Reject(id=tid, stage="rubric", reason="rubric_gate", message=json.dumps(rec["scores"]))
                )
            done[tid] = rec
        rows.append(done[tid])
        if progress:
            progress(i + 1, len(tasks))
    return rows


# ---- calibration ---------------------------------------------------------------------------------------


async def calibrate_tasks(
    model: Any,
    tasks: list[Any],
    store: RunStore,
    config: CalibrationConfig,
    rollout: RolloutConfig,
    *,
    repair_model: Any = None,
    policy: SandboxPolicy | None = None,
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """k seeded rollouts per task (``rollouts.jsonl``) → verdict per task (``calibration.jsonl``); kept
    tasks are copied to ``calibrated_tasks.jsonl``. Verifier defects go to repair (≤ 2 attempts) when a
    ``repair_model`` is given: repaired tasks land in ``repaired_tasks.jsonl`` (calibrate those in a new
    run)."""
    from dataclaw.envcraft.quality.calibrate import CalibrationVerdict, audit_verifier, judge, repair_verifier

    records = await rollout_tasks(
        model,
        tasks,
        store,
        config.rollout_config(rollout),
        samples=config.k,
        concurrency=config.concurrency,
        seeds=config.seed,
        policy=policy,
        progress=progress,
    )
    out, kept, repaired = (
        store.stage("calibration"),
        store.stage("calibrated_tasks"),
        store.stage("repaired_tasks"),
    )
    rows = []
    for task in tasks:
        tid = task_id(task)
        trajs = trajectories_of(records, tid)
        if len(trajs) < config.k:  # a rollout whose workers kept dying: judged when a rerun has all k
            continue
        cal = judge(tid, trajs, config.success_threshold)
        rec = cal.to_record()
        if cal.verdict is CalibrationVerdict.KEEP:
            kept.append(_task_record(task))
        elif cal.verdict is CalibrationVerdict.DEFECT and repair_model is not None and tid not in repaired:
            result = await repair_verifier(
                repair_model, task, cal.defect_problem or "verifier failed", audit_verifier
            )
            rec["repair"] = {
                "attempts": result.attempts,
                "history": result.history,
                "ok": result.task is not None,
            }
            if result.task is not None:
                repaired.append(_task_record(result.task))
        if rec["verdict"] != CalibrationVerdict.KEEP:
            store.reject(Reject(id=tid, stage="calibration", reason=rec["verdict"], message=f"p={rec['p']}"))
        out.append(rec)
        rows.append(rec)
    return rows


def _task_record(task: Any) -> dict[str, Any]:
    return task.to_record() if hasattr(task, "to_record") else ToolTask.of(task).to_row()


# names that moved out of this module in 0.x, readable here for one release
keep_old_names(
    __name__,
    {
        "HOST_ATTEMPTS": "dataclaw.envcraft.rollout.run",
        "rollout_summary": "dataclaw.envcraft.rollout.run",
    },
)
