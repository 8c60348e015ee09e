"""Code checks of a claw workspace task (EnvCraft C.5 rules and the C.6 cross-artifact invariants).

``audit_task(task)`` builds the workspace in the sandbox, runs the verifier on the untouched workspace (and,
when the task ships a reference ``solution.py``, on the solved one) and checks:

* ``code_only``: builder and verifier import only the standard library; the verifier has no network,
  subprocess, LLM or credential access (static, AST) — and runs with no network anyway;
* ``builder``: the builder finishes, writes only inside the workspace, plants no escaping symlinks;
* ``verifier``: it runs on the untouched workspace and writes a well-formed ``workplace_score.json``
  (a crash, timeout or malformed score is a *data defect*, routed to repair, never an agent failure);
* ``untouched_floor``: the untouched workspace scores no more than ``floor`` (default 0): a verifier
  that gives credit for doing nothing is rejected;
* ``path_consistency``: every output path the prompt asks for is inspected by the verifier, verbatim;
* ``objective_consistency``: the verifier inspects no output the prompt does not ask for and changes
  nothing in the workspace but its score file;
* ``data_consistency``: identifiers the verifier checks literally exist in the built workspace; with a
  solution, the solved workspace scores 1.0;
* ``answer_uniqueness``: two builds are byte-identical and the verifier gives the same score on them
  (a builder that draws different data each time has no single answer);
* ``information_separation``: the prompt holds no expected value, no verifier/scoring vocabulary and no
  absolute path.
"""

from __future__ import annotations

import ast
import re
import sys
import tempfile
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from dataclaw.envcraft.tasks.workspace import (
    SCORE_FILE,
    VerifierRun,
    WorkspaceTask,
    escaping_links,
    fresh_workspace,
    run_builder,
    run_solution,
    run_verifier,
    snapshot,
)
from dataclaw.sandbox import SandboxPolicy, Status


class ClawAuditReason(StrEnum):
    """Reason codes of failed checks."""

    NON_STDLIB_IMPORT = "non_stdlib_import"
    FORBIDDEN_CAPABILITY = "forbidden_capability"
    SYNTAX_ERROR = "syntax_error"
    BUILDER_CRASH = "builder_crash"
    BUILDER_TIMEOUT = "builder_timeout"
    BUILDER_ESCAPE = "builder_escape"
    BUILDER_EMPTY = "builder_empty"
    VERIFIER_CRASH = "verifier_crash"
    VERIFIER_TIMEOUT = "verifier_timeout"
    VERIFIER_MALFORMED = "verifier_malformed_score"
    UNTOUCHED_ABOVE_FLOOR = "untouched_above_floor"
    PATH_MISMATCH = "path_mismatch"
    OBJECTIVE_MISMATCH = "objective_mismatch"
    VERIFIER_MUTATES = "verifier_mutates_workspace"
    DATA_INCONSISTENT = "data_inconsistent"
    SOLUTION_NOT_FULL = "solution_not_full_score"
    SOLUTION_CRASH = "solution_crash"
    NON_DETERMINISTIC = "non_deterministic"
    ANSWER_LEAK = "answer_leak"


# Failures of the verifier itself: data defects that go to repair (D.6), not to difficulty calibration.
DEFECT_REASONS = frozenset(
    {
        ClawAuditReason.VERIFIER_CRASH,
        ClawAuditReason.VERIFIER_TIMEOUT,
        ClawAuditReason.VERIFIER_MALFORMED,
    }
)

# Modules that reach the network, spawn programs, load native code or call models.
FORBIDDEN_MODULES = frozenset(
    {
        "socket",
        "ssl",
        "http",
        "urllib",
        "ftplib",
        "smtplib",
        "poplib",
        "imaplib",
        "telnetlib",
        "xmlrpc",
        "socketserver",
        "asyncio",
        "subprocess",
        "multiprocessing",
        "ctypes",
        "webbrowser",
    }
)
FORBIDDEN_CALLS = frozenset({"getenv", "environ", "system", "popen", "execv", "execve", "spawnv", "fork"})
LEAK_WORDS = ("workplace_score", "verify_workplace", "total_score", "max_score", "verifier", "scoring rule")
_PATH_TOKEN = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)*[\w-][\w.-]*\.(?:json|jsonl|csv|tsv|md|txt|yaml|yml|xml|html|log|ini|xlsx))\b"
)
_ABS_PATH = re.compile(r"(?<![\w.])/(?:home|root|tmp|workspace|usr|etc|var|mnt)(?:/[\w.-]+)+")
_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w])")
_ID_LIKE = re.compile(r"^[A-Za-z]+[-_][A-Za-z0-9_-]*\d{2,}[A-Za-z0-9_-]*$")


@dataclass
class Check:
    """One check's verdict."""

    name: str
    passed: bool
    reason: ClawAuditReason | None = None
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "reason": self.reason, "message": self.message}


@dataclass
class AuditReport:
    """All checks of one task."""

    task_id: str
    checks: list[Check] = field(default_factory=list)
    untouched_score: float | None = None
    solved_score: float | None = None

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    @property
    def defect(self) -> bool:
        """The verifier itself failed: route to repair."""
        return any(c.reason in DEFECT_REASONS for c in self.failures)

    def add(self, name: str, problem: tuple[ClawAuditReason, str] | None) -> None:
        if problem is None:
            self.checks.append(Check(name, True))
        else:
            self.checks.append(Check(name, False, problem[0], problem[1]))

    def to_record(self) -> dict[str, Any]:
        return {
            "id": self.task_id,
            "passed": self.passed,
            "defect": self.defect,
            "untouched_score": self.untouched_score,
            "solved_score": self.solved_score,
            "checks": [c.to_dict() for c in self.checks],
        }


# ---- static checks -----------------------------------------------------------------------------------


def code_problems(source: str, what: str, *, verifier: bool) -> tuple[ClawAuditReason, str] | None:
    """Non-stdlib imports (both scripts); network/subprocess/env access (verifier)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return ClawAuditReason.SYNTAX_ERROR, f"{what} does not parse: line {exc.lineno}: {exc.msg}"
    stdlib = sys.stdlib_module_names
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__":
            return ClawAuditReason.FORBIDDEN_CAPABILITY, f"{what} imports dynamically (__import__)"
        for name in names:
            top = name.split(".")[0]
            if top not in stdlib:
                return (
                    ClawAuditReason.NON_STDLIB_IMPORT,
                    f"{what} imports {name!r}, not in the standard library",
                )
            if verifier and top in FORBIDDEN_MODULES:
                return (
                    ClawAuditReason.FORBIDDEN_CAPABILITY,
                    f"{what} imports {name!r} (network/process access)",
                )
        if verifier and isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_CALLS:
            return ClawAuditReason.FORBIDDEN_CAPABILITY, f"{what} uses os.{node.attr} (environment/process)"
    return None


def _string_constants(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _number_constants(source: str) -> list[float]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [
        float(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, int | float) and not isinstance(n.value, bool)
    ]


def prompt_paths(prompt: str) -> list[str]:
    """Workspace-relative file paths the prompt names (``reports/summary.json``)."""
    out: list[str] = []
    for m in _PATH_TOKEN.finditer(prompt):
        p = m.group(1).removeprefix("./")
        if p not in out:
            out.append(p)
    return out


def _norm(p: str) -> str:
    return p.removeprefix("./").strip("/")


def _differing(a: dict[str, bytes], b: dict[str, bytes]) -> list[str]:
    """Paths added, removed or changed between two workspace snapshots."""
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


# ---- dynamic checks ----------------------------------------------------------------------------------


def _builder_problem(status: Status, resource: str | None, message: str) -> tuple[ClawAuditReason, str]:
    if status is Status.VIOLATION:
        return (
            ClawAuditReason.BUILDER_ESCAPE,
            f"builder tried to act outside the workspace ({resource}): {message}",
        )
    if status is Status.TIMEOUT:
        return ClawAuditReason.BUILDER_TIMEOUT, f"builder timed out: {message}"
    return ClawAuditReason.BUILDER_CRASH, f"builder failed ({status}): {message}"


def _verifier_problem(vr: VerifierRun, when: str) -> tuple[ClawAuditReason, str]:
    status = vr.outcome.status
    if status is Status.TIMEOUT:
        return ClawAuditReason.VERIFIER_TIMEOUT, f"verifier timed out on the {when} workspace"
    if status is not Status.OK:
        tail = (vr.outcome.stderr.strip().splitlines() or [vr.outcome.message])[-1][:200]
        return ClawAuditReason.VERIFIER_CRASH, f"verifier crashed on the {when} workspace: {tail}"
    return ClawAuditReason.VERIFIER_MALFORMED, f"on the {when} workspace: {vr.problem}"


def _answer_sets(source: str) -> list[list[str]]:
    """Literal collections of two or more strings in the verifier (an expected selection, dict keys)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        elts = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
        if not isinstance(node, ast.List | ast.Tuple | ast.Set | ast.Dict) or not elts:
            continue
        strs = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if len(strs) >= 2 and len(strs) == len(elts):
            out.append(strs)
    return out


def _as_number(tok: str) -> float | None:
    try:
        return float(tok.replace(",", ""))
    except ValueError:
        return None


def _leaks(task: WorkspaceTask, inputs: dict[str, bytes], solved: dict[str, bytes] | None) -> list[str]:
    """Expected values visible in the prompt: verifier literals and solution outputs that the input
    workspace does not already hold (those are derived answers, not user-specified data). Only values
    with a digit count (ids, amounts, dates): words are the task's vocabulary, not its answer."""
    input_text = "\n".join([*inputs, *(b.decode("utf-8", "replace") for b in inputs.values())])
    input_numbers = {_as_number(t) for t in _NUMBER.findall(input_text)}
    strings: set[str] = set()
    numbers: set[float] = set()
    for s in _string_constants(task.verifier):
        if _PATH_TOKEN.fullmatch(s) or "/" in s or s in input_text:
            continue
        if 3 <= len(s) <= 64 and any(ch.isdigit() for ch in s):
            strings.add(s)
    for x in _number_constants(task.verifier):
        if (x != int(x) or abs(x) >= 1000) and x not in input_numbers:
            numbers.add(x)
    if solved is not None:
        for rel, data in solved.items():
            if rel == SCORE_FILE or inputs.get(rel) == data:
                continue
            text = data.decode("utf-8", "replace")
            for tok in _NUMBER.findall(text):
                x = _as_number(tok)
                if x is not None and (x != int(x) or abs(x) >= 1000) and x not in input_numbers:
                    numbers.add(x)
            for tok in re.findall(r"[A-Za-z][\w-]*\d[\w-]*", text):
                if tok not in input_text:
                    strings.add(tok)
    words = set(re.findall(r"[\w-]+(?:\.[\w-]+)*", task.prompt))
    found = sorted(s for s in strings if s in words or (" " in s and s in task.prompt))
    for answer in _answer_sets(task.verifier):  # the whole expected selection spelled out in the request
        if all(a in words for a in answer):
            found.append(" + ".join(answer))
    prompt_numbers = {_as_number(t) for t in _NUMBER.findall(task.prompt)}
    found += [f"{x:g}" for x in sorted(numbers) if x in prompt_numbers]
    return found


def audit_task(
    task: WorkspaceTask,
    *,
    floor: float = 0.0,
    policy: SandboxPolicy | None = None,
    scratch: Path | None = None,
) -> AuditReport:
    """Run every check on ``task``; never raises for a bad task (failures are in the report)."""
    report = AuditReport(task.task_id)
    report.add("code_only", code_problems(task.builder, "env_builder.py", verifier=False))
    report.add("code_only_verifier", code_problems(task.verifier, "verify_workplace.py", verifier=True))
    with tempfile.TemporaryDirectory(prefix="dataclaw-claw-audit-", dir=scratch) as tmp:
        _dynamic_checks(task, report, Path(tmp), floor, policy)
    return report


def _dynamic_checks(
    task: WorkspaceTask, report: AuditReport, tmp: Path, floor: float, policy: SandboxPolicy | None
) -> None:
    ws = fresh_workspace(tmp, "a")
    built = run_builder(task, ws, policy=policy)
    if built.status is not Status.OK:
        report.add("builder", _builder_problem(built.status, built.resource, built.message))
        return
    links = escaping_links(ws)
    if links:
        report.add("builder", (ClawAuditReason.BUILDER_ESCAPE, f"symlinks leave the workspace: {links[:3]}"))
        return
    inputs = snapshot(ws)
    if not inputs:
        report.add("builder", (ClawAuditReason.BUILDER_EMPTY, "builder created no files"))
        return
    report.add("builder", None)
    untouched = run_verifier(task, ws, policy=policy)
    if untouched.defect:
        report.add("verifier", _verifier_problem(untouched, "untouched"))
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
    changed = _differing(inputs, after)
    _consistency_checks(task, report, inputs, untouched, changed)
    solved = _solution_check(task, report, tmp, policy)
    _uniqueness_check(task, report, tmp, inputs, untouched, policy)
    leaks = _leaks(task, inputs, solved)
    abs_paths = _ABS_PATH.findall(task.prompt)
    vocab = [w for w in LEAK_WORDS if w in task.prompt.lower()]
    problem = None
    if leaks:
        problem = (ClawAuditReason.ANSWER_LEAK, f"the prompt reveals expected values: {leaks[:5]}")
    elif vocab:
        problem = (ClawAuditReason.ANSWER_LEAK, f"the prompt mentions verification internals: {vocab}")
    elif abs_paths:
        problem = (ClawAuditReason.ANSWER_LEAK, f"the prompt uses absolute paths: {abs_paths[:3]}")
    report.add("information_separation", problem)


def _consistency_checks(
    task: WorkspaceTask, report: AuditReport, inputs: dict[str, bytes], vr: VerifierRun, changed: list[str]
) -> None:
    input_dirs = {str(Path(p).parent.as_posix()) for p in inputs} | {""}
    constants = _string_constants(task.verifier)
    statics = [
        _norm(s) for s in constants if _PATH_TOKEN.fullmatch(s.removeprefix("./")) and not s.startswith("/")
    ]
    inspected = [_norm(p) for p in vr.inspected]
    exists = set(inputs) | input_dirs
    prompt_outputs = {p for p in prompt_paths(task.prompt) if p not in exists}
    verifier_outputs = {p for p in inspected if p not in exists and p != SCORE_FILE}
    for s in statics:  # a bare file name joined at run time counts when a traced/requested path ends in it
        known = verifier_outputs | prompt_outputs | exists
        if s in exists or s == SCORE_FILE:
            continue
        if "/" in s or not any(k == s or k.endswith("/" + s) for k in known):
            verifier_outputs.add(s)
    unchecked = sorted(prompt_outputs - verifier_outputs)
    report.add(
        "path_consistency",
        None
        if prompt_outputs and not unchecked
        else (
            ClawAuditReason.PATH_MISMATCH,
            f"output paths requested by the prompt but not inspected by the verifier: {unchecked}"
            if unchecked
            else "the prompt names no output path for the agent to produce",
        ),
    )
    extra = sorted(verifier_outputs - prompt_outputs)
    problem: tuple[ClawAuditReason, str] | None = None
    if changed:
        problem = (ClawAuditReason.VERIFIER_MUTATES, f"the verifier changed workspace files: {changed[:5]}")
    elif extra:
        problem = (
            ClawAuditReason.OBJECTIVE_MISMATCH,
            f"the verifier checks outputs the prompt never asks for: {extra}",
        )
    report.add("objective_consistency", problem)
    text = "\n".join(b.decode("utf-8", "replace") for b in inputs.values())
    missing = sorted(
        s for s in set(constants) if _ID_LIKE.match(s) and s not in text and s not in task.prompt
    )
    report.add(
        "data_consistency",
        None
        if not missing
        else (
            ClawAuditReason.DATA_INCONSISTENT,
            f"the verifier checks identifiers absent from the built workspace and the prompt: {missing[:5]}",
        ),
    )


def _solution_check(
    task: WorkspaceTask, report: AuditReport, tmp: Path, policy: SandboxPolicy | None
) -> dict[str, bytes] | None:
    """With a reference solution: build, solve, verify — it must score 1.0."""
    if task.solution is None:
        return None
    ws = fresh_workspace(tmp, "solved")
    if run_builder(task, ws, policy=policy).status is not Status.OK:
        return None
    out = run_solution(task, ws, policy=policy)
    if out.status is not Status.OK:
        report.add("solution", (ClawAuditReason.SOLUTION_CRASH, f"solution.py failed: {out.message}"))
        return None
    solved = snapshot(ws)
    vr = run_verifier(task, ws, policy=policy)
    report.solved_score = vr.score
    if vr.defect:
        report.add("solution", _verifier_problem(vr, "solved"))
    elif vr.score is not None and vr.score < 1.0 - 1e-9:
        report.add(
            "solution",
            (ClawAuditReason.SOLUTION_NOT_FULL, f"the reference solution scores {vr.score:.2f}, not 1.0"),
        )
    else:
        report.add("solution", None)
    return solved


def _uniqueness_check(
    task: WorkspaceTask,
    report: AuditReport,
    tmp: Path,
    inputs: dict[str, bytes],
    first: VerifierRun,
    policy: SandboxPolicy | None,
) -> None:
    ws = fresh_workspace(tmp, "b")
    if run_builder(task, ws, policy=policy).status is not Status.OK:
        report.add(
            "answer_uniqueness", (ClawAuditReason.NON_DETERMINISTIC, "the builder failed on a second run")
        )
        return
    differ = _differing(inputs, snapshot(ws))
    if differ:
        report.add(
            "answer_uniqueness",
            (ClawAuditReason.NON_DETERMINISTIC, f"two builds differ in {differ[:5]}: no single answer"),
        )
        return
    second = run_verifier(task, ws, policy=policy)
    report.add(
        "answer_uniqueness",
        None
        if second.score == first.score
        else (ClawAuditReason.NON_DETERMINISTIC, f"the verifier scored {first.score} then {second.score}"),
    )
