""":func:`audit_task`: build the workspace in the sandbox, run the verifier on it untouched (and solved) and
run every check of this package on what happened."""

from __future__ import annotations

import tempfile
from pathlib import Path

from dataclaw.envcraft.tasks.claw.audit.consistency import (
    _consistency_checks,
    _separation_check,
    _solution_check,
    _uniqueness_check,
    _verifier_reads,
    idle_transcript,
)
from dataclaw.envcraft.tasks.claw.audit.report import (
    AuditReport,
    ClawAuditReason,
    _builder_problem,
    _verifier_problem,
)
from dataclaw.envcraft.tasks.claw.audit.static import code_problems
from dataclaw.envcraft.tasks.claw.workspace import (
    BUILDER_NAME,
    SCORE_FILE,
    VERIFIER_NAME,
    VerifierRun,
    WorkspaceTask,
    escaping_links,
    folders,
    fresh_workspace,
    run_builder,
    run_verifier,
    snapshot,
    uncalled_entry,
)
from dataclaw.sandbox import SandboxPolicy, Status


def audit_task(
    task: WorkspaceTask,
    *,
    floor: float = 0.0,
    policy: SandboxPolicy | None = None,
    scratch: Path | None = None,
    builder_wall_s: float | None = None,
) -> AuditReport:
    """Run every check on ``task``; never raises for a bad task (failures are in the report).
    ``builder_wall_s`` overrides the builder's wall-clock limit (60 s)."""
    report = AuditReport(task.task_id, inferred=dict(task.inferred))
    report.add("code_only", code_problems(task.builder, BUILDER_NAME, verifier=False))
    report.add("code_only_verifier", code_problems(task.verifier, VERIFIER_NAME, verifier=True))
    with tempfile.TemporaryDirectory(prefix="dataclaw-claw-audit-", dir=scratch) as tmp:
        _dynamic_checks(task, report, Path(tmp), floor, policy or SandboxPolicy(), builder_wall_s)
    return report


def _dynamic_checks(
    task: WorkspaceTask,
    report: AuditReport,
    tmp: Path,
    floor: float,
    policy: SandboxPolicy,
    wall_s: float | None,
) -> None:
    ws = fresh_workspace(tmp, "a")
    mount = str(ws.resolve()) if policy.unsafe else policy.workspace_mount
    entry = uncalled_entry(task.builder)
    if entry:
        report.add(
            "builder_entry",
            (
                ClawAuditReason.BUILDER_ENTRY,
                f"{BUILDER_NAME} defines {entry}() but never calls it; the audit and rollouts call it",
            ),
            warning=True,
        )
    built = run_builder(task, ws, policy=policy, wall_s=wall_s)
    if built.status is not Status.OK:
        report.add("builder", _builder_problem(built, mount))
        return
    links = escaping_links(ws)
    if links:
        report.add("builder", (ClawAuditReason.BUILDER_ESCAPE, f"symlinks leave the workspace: {links[:3]}"))
        return
    inputs = snapshot(ws)
    if not inputs and not task.config.get("empty_workspace"):
        what = f"{BUILDER_NAME} created no files"
        report.add("builder", (ClawAuditReason.BUILDER_EMPTY, what))
        return
    input_dirs = folders(ws)
    report.add("builder", None)
    # the untouched run is a real episode in which the agent did nothing: its transcript holds the request
    # alone (a grader that reads the transcript is run on one, never on an empty list that hides its bugs)
    untouched = run_verifier(task, ws, policy=policy, transcript=idle_transcript(task))
    report.metrics["untouched_verifier"] = untouched.metrics()
    if untouched.defect:
        report.add("verifier", _verifier_problem(untouched, "untouched", mount))
        return
    report.add("verifier", None)
    report.untouched_score = untouched.score
    assert untouched.score is not None
    report.add(
        "untouched_floor",
        None
        if untouched.score <= floor
        else (
            ClawAuditReason.UNTOUCHED_ABOVE_FLOOR,
            f"the untouched workspace scores {untouched.score:.2f} > floor {floor:.2f}: "
            "credit for doing nothing",
        ),
    )
    after = snapshot(ws)
    after.pop(SCORE_FILE, None)
    _consistency_checks(task, report, inputs, input_dirs, untouched, after)
    solved, solved_run = _solution_check(task, report, tmp, policy, wall_s, mount)
    _details_check(report, untouched, solved_run)
    reads = _verifier_reads(task, untouched, solved_run)
    _uniqueness_check(task, report, tmp, inputs, untouched, reads, policy, wall_s)
    _separation_check(task, report, inputs, solved)


def _details_check(report: AuditReport, untouched: VerifierRun, solved: VerifierRun | None) -> None:
    """``partial_details`` (a warning): on some run the written details sum to less than the declared
    max. The score is read against the declared max, so it is right; the verifier just did not report
    every item (usually an early exit when the output is missing)."""
    for when, vr in (("untouched", untouched), ("solved", solved)):
        r = vr.reading if vr is not None else None
        if r is not None and r.score is not None and r.partial:
            report.add(
                "score_details",
                (
                    ClawAuditReason.PARTIAL_DETAILS,
                    f"on the {when} workspace the details sum to {r.details_max:g} of {r.max_total:g} "
                    f"({r.max_source}); scores are read against {r.max_total:g}",
                ),
                warning=True,
            )
            return
    report.add("score_details", None)
