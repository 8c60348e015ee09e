"""The claw audit's vocabulary: reason codes, severities, one check's verdict, a task's report, and what
a failed builder or verifier run means (the problem a check reports)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from dataclaw.envcraft.tasks.claw.workspace import (
    BUILDER_NAME,
    VERIFIER_NAME,
    ScoreProblem,
    VerifierRun,
    crash_summary,
    missing_module,
)
from dataclaw.sandbox import Outcome, Status


class ClawAuditReason(StrEnum):
    """Reason codes of failed checks and warnings."""

    NON_STDLIB_IMPORT = "non_stdlib_import"
    FORBIDDEN_CAPABILITY = "forbidden_capability"
    SYNTAX_ERROR = "syntax_error"
    BUILDER_CRASH = "builder_crash"
    BUILDER_TIMEOUT = "builder_timeout"
    BUILDER_RESOURCE = "builder_resource_limit"
    BUILDER_ESCAPE = "builder_escape"
    BUILDER_EMPTY = "builder_empty"
    BUILDER_ENTRY = "builder_entry_not_called"
    VERIFIER_CRASH = "verifier_crash"
    VERIFIER_TIMEOUT = "verifier_timeout"
    VERIFIER_MALFORMED = "verifier_malformed_score"
    SCORE_FILE_TOO_LARGE = "score_file_too_large"
    PARTIAL_DETAILS = "partial_details"
    UNTOUCHED_ABOVE_FLOOR = "untouched_above_floor"
    PATH_MISMATCH = "path_mismatch"
    NO_OUTPUT_PATH = "no_output_path"
    OBJECTIVE_MISMATCH = "objective_mismatch"
    VERIFIER_MUTATES = "verifier_mutates_workspace"
    DATA_INCONSISTENT = "data_inconsistent"
    SOLUTION_NOT_FULL = "solution_not_full_score"
    SOLUTION_CRASH = "solution_crash"
    NON_DETERMINISTIC = "non_deterministic"
    ANSWER_LEAK = "answer_leak"
    PROMPT_ABSOLUTE_PATH = "prompt_absolute_path"


class Severity(StrEnum):
    ERROR = "error"
    """The task is broken: rejected."""
    WARNING = "warning"
    """A heuristic is not sure: kept in the record and the summary, the task passes."""


# Failures of the verifier itself: data defects that go to repair (D.6), not to difficulty calibration.
DEFECT_REASONS = frozenset(
    {
        ClawAuditReason.VERIFIER_CRASH,
        ClawAuditReason.VERIFIER_TIMEOUT,
        ClawAuditReason.VERIFIER_MALFORMED,
        ClawAuditReason.SCORE_FILE_TOO_LARGE,
    }
)
# Checks whose verdict depends on the verifier script: what a verifier repair can change. The others
# (builder, prompt, answer uniqueness) hold whatever verifier is written, so they do not gate a repair.
VERIFIER_CHECKS = frozenset(
    {
        "code_only_verifier",
        "verifier",
        "untouched_floor",
        "path_consistency",
        "objective_consistency",
        "data_consistency",
        "solution",
    }
)


@dataclass
class Check:
    """One check's verdict. ``passed`` is False only for a failing error; a warning passes, with its
    reason and message kept."""

    name: str
    passed: bool
    reason: ClawAuditReason | None = None
    message: str = ""
    severity: Severity | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "passed": self.passed,
            "reason": self.reason,
            "message": self.message,
            "severity": self.severity,
        }


Problem = tuple[ClawAuditReason, str]


@dataclass
class AuditReport:
    """All checks of one task."""

    task_id: str
    checks: list[Check] = field(default_factory=list)
    untouched_score: float | None = None
    solved_score: float | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    """Measurements that are not verdicts (the verifier's exit status, the score scale it was read on)."""
    inferred: dict[str, str] = field(default_factory=dict)
    """How the loader read the task (from :attr:`WorkspaceTask.inferred`)."""

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    @property
    def warnings(self) -> list[Check]:
        return [c for c in self.checks if c.severity is Severity.WARNING]

    @property
    def verifier_failures(self) -> list[Check]:
        """Failures a rewritten verifier could fix (the repair gate looks at these only)."""
        return [c for c in self.failures if c.name in VERIFIER_CHECKS]

    @property
    def defect(self) -> bool:
        """The verifier itself failed: route to repair."""
        return any(
            c.reason in DEFECT_REASONS
            or (c.name == "verifier" and c.reason is ClawAuditReason.NON_STDLIB_IMPORT)
            for c in self.failures
        )

    def add(self, name: str, problem: Problem | None, *, warning: bool = False) -> None:
        if problem is None:
            self.checks.append(Check(name, True))
        elif warning:
            self.checks.append(Check(name, True, problem[0], problem[1], Severity.WARNING))
        else:
            self.checks.append(Check(name, False, problem[0], problem[1], Severity.ERROR))

    def to_record(self) -> dict[str, Any]:
        """The audit record: warnings are the checks with ``severity: warning`` (one place, not two)."""
        return {
            "id": self.task_id,
            "passed": self.passed,
            "defect": self.defect,
            "untouched_score": self.untouched_score,
            "solved_score": self.solved_score,
            "checks": [c.to_dict() for c in self.checks],
            "metrics": self.metrics,
            "inferred": self.inferred,
        }


def _non_stdlib(outcome: Outcome) -> str | None:
    """The non-stdlib module a failed run could not import, if that is why it failed."""
    module = missing_module(outcome)
    if module and module.split(".")[0] not in sys.stdlib_module_names:
        return module
    return None


def _builder_problem(outcome: Outcome, mount: str) -> Problem:
    status = outcome.status
    module = _non_stdlib(outcome) if status is Status.ERROR else None
    if module:
        return (
            ClawAuditReason.NON_STDLIB_IMPORT,
            f"{BUILDER_NAME} imports {module!r}, not in the standard library (task code runs stdlib-only)",
        )
    if status is Status.VIOLATION:
        return (
            ClawAuditReason.BUILDER_ESCAPE,
            f"builder tried to act outside the workspace ({outcome.resource}): {outcome.message}",
        )
    if status is Status.TIMEOUT:
        return ClawAuditReason.BUILDER_TIMEOUT, f"{BUILDER_NAME} did not finish: {outcome.message}"
    if status is Status.RESOURCE_LIMIT:
        return (
            ClawAuditReason.BUILDER_RESOURCE,
            f"{BUILDER_NAME} hit the {outcome.resource or 'resource'} limit: {outcome.message}",
        )
    crash = crash_summary(outcome.stderr, BUILDER_NAME, mount, outcome.message)
    return ClawAuditReason.BUILDER_CRASH, f"{BUILDER_NAME} failed: {crash}"


def _verifier_problem(vr: VerifierRun, when: str, mount: str) -> Problem:
    status = vr.outcome.status
    if vr.kind is ScoreProblem.TOO_LARGE:
        return ClawAuditReason.SCORE_FILE_TOO_LARGE, f"on the {when} workspace: {vr.problem}"
    if vr.kind is ScoreProblem.FAILED:
        module = _non_stdlib(vr.outcome) if status is Status.ERROR else None
        if module:
            return (
                ClawAuditReason.NON_STDLIB_IMPORT,
                f"{VERIFIER_NAME} imports {module!r}, not in the standard library (task code runs "
                "stdlib-only)",
            )
        if status is Status.TIMEOUT:
            return ClawAuditReason.VERIFIER_TIMEOUT, f"verifier timed out on the {when} workspace"
        crash = crash_summary(vr.outcome.stderr, VERIFIER_NAME, mount, vr.problem or vr.outcome.message)
        return ClawAuditReason.VERIFIER_CRASH, f"verifier crashed on the {when} workspace: {crash}"
    return ClawAuditReason.VERIFIER_MALFORMED, f"on the {when} workspace: {vr.problem}"
