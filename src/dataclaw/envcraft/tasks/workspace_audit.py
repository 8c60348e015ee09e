"""Code checks of a claw workspace task (EnvCraft C.5 rules and the C.6 cross-artifact invariants).

``audit_task(task)`` builds the workspace in the sandbox, runs the verifier on the untouched workspace (and,
when the task ships a reference ``solution.py``, on the solved one) and checks:

* ``code_only``: builder and verifier import only the standard library; the verifier has no network,
  subprocess, LLM or credential access (static, AST) — and both run on a stdlib-only interpreter with no
  network anyway, so a third-party import that does run is a ``non_stdlib_import`` naming the module;
* ``builder``: the builder finishes, writes only inside the workspace, plants no escaping symlinks (a crash
  names the exception, file and line);
* ``verifier``: it runs on the untouched workspace and writes a well-formed ``workplace_score.json``
  (a crash, timeout or malformed score is a *data defect*, routed to repair, never an agent failure; a
  valid score file followed by a non-zero exit is scored, and the exit status kept as a metric);
* ``untouched_floor``: the untouched workspace scores no more than ``floor`` (default 0): a verifier
  that gives credit for doing nothing is rejected; scores are ``total_score / declared max`` (C.5: 100);
* ``score_details``: the written details cover the declared max (else ``partial_details``, a warning);
* ``path_consistency``: every output path the prompt asks for is inspected by the verifier, verbatim
  (traced in the run, or built by ``os.path.join``/pathlib in the verifier's source);
* ``objective_consistency``: the verifier inspects no output the prompt does not ask for and changes
  nothing in the workspace but its score file;
* ``output_fields``: every field name the verifier reads from or expects in the output (``data["k"]``,
  ``.get("k")``, an expected record's keys, a ``required_fields`` list) is named by the prompt or held by
  the inputs (else ``objective_mismatch``: the prompt says "format as before" and the verifier wants
  ``accuracy_diff``);
* ``data_consistency``: identifiers the verifier checks literally exist in the built workspace; with a
  solution, the solved workspace scores 1.0;
* ``answer_uniqueness``: two builds agree (up to record order and timestamps) and the verifier gives the
  same score on them (a builder that draws different data each time has no single answer);
* ``information_separation``: the prompt holds no expected value and no scoring internals.

Checks have a severity: a failing ``error`` rejects the task; a ``warning`` (a heuristic that is not sure)
is kept in the record and the summary and rejects nothing.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
import sys
import tempfile
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from dataclaw.core import pyast
from dataclaw.envcraft.tasks.workspace import (
    BUILDER_NAME,
    SCORE_FILE,
    VERIFIER_NAME,
    ScoreProblem,
    VerifierRun,
    WorkspaceTask,
    crash_summary,
    escaping_links,
    folders,
    fresh_workspace,
    missing_module,
    run_builder,
    run_solution,
    run_verifier,
    snapshot,
    uncalled_entry,
)
from dataclaw.sandbox import Outcome, SandboxPolicy, Status


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
_OS_NAMES = frozenset({"os", "posix", "_os"})
_CREDENTIAL = re.compile(r"key|token|secret|pass|cred|auth|api|session|cookie", re.IGNORECASE)
LEAK_WORDS = ("workplace_score", "verify_workplace", "total_score", "max_score")
"""Scoring internals a request must never show (C.5): a prompt holding them is rejected."""
SOFT_LEAK_WORDS = ("verifier", "scoring rule", "score file", "grader")
"""Words that may point at the checker, or may be the role's own vocabulary: a warning."""
_EXTS = (
    "json|jsonl|ndjson|csv|tsv|md|markdown|mmd|txt|yaml|yml|xml|html|htm|log|ini|cfg|conf|toml|xlsx|xls|"
    "pdf|py|sql|sh|ics|eml|png|jpg|jpeg|svg|zip|gz|parquet|db|sqlite|rst|tex|diff|patch"
)
# ASCII only: a path glued to CJK text (保存到ops/a.json里) must not swallow the neighbouring characters.
_PATH_TOKEN = re.compile(
    rf"(?<![A-Za-z0-9_/.\-])((?:[A-Za-z0-9_.\-]+/)*[A-Za-z0-9_\-][A-Za-z0-9_.\-]*\.(?:{_EXTS}))(?![A-Za-z0-9_])",
    re.IGNORECASE,
)
_ABS_PATH = re.compile(r"(?<![\w.])/(?:home|root|tmp|workspace|usr|etc|var|mnt)(?:/[\w.-]+)+")
_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w])")
_ID_LIKE = re.compile(r"^[A-Za-z]+[-_][A-Za-z0-9_-]*\d{2,}[A-Za-z0-9_-]*$")
_FIELD_NAME = re.compile(r"^[a-z][a-z_]*$")
_TIMESTAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?|\b1[6-9]\d{8}(?:\.\d+)?\b"
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


# ---- static checks -----------------------------------------------------------------------------------


def _guarded_imports(tree: ast.AST) -> set[int]:
    """ids of import nodes inside ``try`` blocks that catch ImportError (optional imports with a fallback)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        names = set()
        for h in node.handlers:
            types = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
            names |= {t.id for t in types if isinstance(t, ast.Name)} | ({"*"} if h.type is None else set())
        if names & {"ImportError", "ModuleNotFoundError", "Exception", "BaseException", "*"}:
            for stmt in node.body:
                out |= {id(n) for n in ast.walk(stmt) if isinstance(n, ast.Import | ast.ImportFrom)}
    return out


def _harmless_env_reads(tree: ast.AST) -> set[int]:
    """ids of ``os.environ`` / ``os.getenv`` nodes read with a constant, non-credential key
    (``os.environ.get("WORKSPACE")``): where a harness passes the workspace, not a secret."""

    def os_attr(node: ast.AST, attr: str) -> bool:
        return (
            isinstance(node, ast.Attribute)
            and node.attr == attr
            and isinstance(node.value, ast.Name)
            and node.value.id in _OS_NAMES
        )

    def harmless(key: ast.AST | None) -> bool:
        return (
            isinstance(key, ast.Constant) and isinstance(key.value, str) and not _CREDENTIAL.search(key.value)
        )

    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and harmless(node.args[0]):
            func = node.func
            if os_attr(func, "getenv"):
                out.add(id(func))
            elif isinstance(func, ast.Attribute) and func.attr == "get" and os_attr(func.value, "environ"):
                out.add(id(func.value))
        elif isinstance(node, ast.Subscript) and os_attr(node.value, "environ") and harmless(node.slice):
            out.add(id(node.value))
        elif isinstance(node, ast.Compare) and harmless(node.left):
            out |= {id(c) for c in node.comparators if os_attr(c, "environ")}
    return out


def code_problems(source: str, what: str, *, verifier: bool) -> Problem | None:
    """Non-stdlib imports (both scripts); network/subprocess/env access (verifier)."""
    try:
        tree = pyast.parse(source)
    except SyntaxError as exc:
        return ClawAuditReason.SYNTAX_ERROR, f"{what} does not parse: line {exc.lineno}: {exc.msg}"
    stdlib = sys.stdlib_module_names
    optional = _guarded_imports(tree)
    env_ok = _harmless_env_reads(tree)
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            if verifier and node.module.split(".")[0] in _OS_NAMES:
                bad = [a.name for a in node.names if a.name in FORBIDDEN_CALLS]
                if bad:
                    return (
                        ClawAuditReason.FORBIDDEN_CAPABILITY,
                        f"{what} imports os.{bad[0]} (environment/process)",
                    )
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__":
            return ClawAuditReason.FORBIDDEN_CAPABILITY, f"{what} imports dynamically (__import__)"
        for name in names:
            top = name.split(".")[0]
            if top not in stdlib and id(node) not in optional:
                return (
                    ClawAuditReason.NON_STDLIB_IMPORT,
                    f"{what} imports {name!r}, not in the standard library",
                )
            if verifier and top in FORBIDDEN_MODULES:
                return (
                    ClawAuditReason.FORBIDDEN_CAPABILITY,
                    f"{what} imports {name!r} (network/process access)",
                )
        if (
            verifier
            and isinstance(node, ast.Attribute)
            and node.attr in FORBIDDEN_CALLS
            and isinstance(node.value, ast.Name)
            and node.value.id in _OS_NAMES
            and id(node) not in env_ok
        ):
            return ClawAuditReason.FORBIDDEN_CAPABILITY, f"{what} uses os.{node.attr} (environment/process)"
    return None


def _parse(source: str) -> ast.AST | None:
    try:
        return pyast.parse(source)
    except SyntaxError:
        return None


def _string_constants(source: str) -> list[str]:
    tree = _parse(source)
    if tree is None:
        return []
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def prompt_paths(prompt: str) -> list[str]:
    """Workspace-relative file paths the prompt names (``reports/summary.json``), in order, unique."""
    out: list[str] = []
    for m in _PATH_TOKEN.finditer(prompt):
        p = m.group(1).removeprefix("./")
        if p not in out:
            out.append(p)
    return out


def _norm(p: str) -> str:
    parts = [x for x in p.replace("\\", "/").split("/") if x not in ("", ".")]
    return "/".join(parts)


def _differing(a: dict[str, bytes], b: dict[str, bytes]) -> list[str]:
    """Paths added, removed or changed between two workspace snapshots."""
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


# ---- paths the verifier's source builds (os.path.join, pathlib) -----------------------------------------


_ROOT = ""
"""The workspace root in a constructed path (argv[1], a Path of it, '.')."""


def _is_join(func: ast.AST) -> bool:
    if isinstance(func, ast.Attribute) and func.attr == "join":
        v = func.value
        return (isinstance(v, ast.Attribute) and v.attr == "path") or (
            isinstance(v, ast.Name) and v.id == "path"
        )
    return isinstance(func, ast.Name) and func.id == "join"


def _is_path_ctor(func: ast.AST) -> bool:
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name in ("Path", "PurePath", "PosixPath", "PurePosixPath")


def _is_path_call(func: ast.AST, methods: tuple[str, ...] = ("joinpath",)) -> bool:
    """``os.path.join``, ``Path(...)`` or a path method (``.joinpath``) call."""
    if _is_join(func) or _is_path_ctor(func):
        return True
    return isinstance(func, ast.Attribute) and func.attr in methods


def _join(parts: list[str | None]) -> str | None:
    """``os.path.join`` of resolved parts: None when one is unknown; an absolute part restarts the path."""
    out = ""
    for part in parts:
        if part is None:
            return None
        out = part if part.startswith("/") else f"{out}/{part}" if out else part
    return out


def _concat_parts(node: ast.AST) -> tuple[ast.AST, str]:
    """(base expression, constant tail) of ``base + "/a/b"`` or ``f"{base}/a/b"``."""
    if isinstance(node, ast.BinOp):
        assert isinstance(node.right, ast.Constant)
        return node.left, str(node.right.value)
    assert isinstance(node, ast.JoinedStr) and isinstance(node.values[0], ast.FormattedValue)
    return node.values[0].value, "".join(str(v.value) for v in node.values[1:] if isinstance(v, ast.Constant))


def _is_concat(node: ast.AST) -> bool:
    """A string built as a base path plus a constant tail that starts with a slash."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        right = node.right
        return (
            isinstance(right, ast.Constant) and isinstance(right.value, str) and right.value.startswith("/")
        )
    if isinstance(node, ast.JoinedStr) and len(node.values) >= 2:
        first, rest = node.values[0], node.values[1:]
        return (
            isinstance(first, ast.FormattedValue)
            and all(isinstance(v, ast.Constant) for v in rest)
            and str(getattr(rest[0], "value", "")).startswith("/")
        )
    return False


def _resolve(node: ast.AST, env: dict[str, str], *, base: bool) -> str | None:
    """The workspace-relative path ``node`` evaluates to, when it can be read off the source. Unknown
    non-constant bases (argv[1], a parameter) are taken as the workspace root; unknown parts after
    the base make the path unknown."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        return _ROOT if base else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return _join([_resolve(node.left, env, base=True), _resolve(node.right, env, base=False)])
    if _is_concat(node):  # workspace + "/ops/x.json", f"{workspace}/ops/x.json"
        head, tail = _concat_parts(node)
        return _join([_resolve(head, env, base=True), tail.removeprefix("/")])
    if isinstance(node, ast.Call):
        args = node.args
        if _is_join(node.func) or _is_path_ctor(node.func):
            if not args:
                return _ROOT if _is_path_ctor(node.func) else None
            return _join(
                [_resolve(args[0], env, base=True)] + [_resolve(a, env, base=False) for a in args[1:]]
            )
        if isinstance(node.func, ast.Attribute) and node.func.attr == "joinpath":
            return _join(
                [_resolve(node.func.value, env, base=True)] + [_resolve(a, env, base=False) for a in args]
            )
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("resolve", "absolute", "expanduser"):
            return _resolve(node.func.value, env, base=True)
        return _ROOT if base else None
    if isinstance(node, ast.Subscript | ast.Attribute | ast.IfExp | ast.BoolOp):
        return _ROOT if base else None
    return None


def constructed_paths(source: str) -> set[str]:
    """Workspace-relative paths the verifier builds with ``os.path.join(ws, "ops", "x.json")``,
    ``Path(ws) / "ops" / "x.json"`` (through variables too), normalised; absolute and ``..`` paths are
    dropped. Static reading, so it sees the branches the untouched run never takes."""
    tree = _parse(source)
    if tree is None:
        return set()
    env: dict[str, str] = {}
    assigns = [n for n in ast.walk(tree) if isinstance(n, ast.Assign | ast.AnnAssign)]
    for _ in range(3):  # variables built from variables: a few passes settle them
        for node in assigns:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is None or len(targets) != 1 or not isinstance(targets[0], ast.Name):
                continue
            value = node.value
            if isinstance(value, ast.Constant) or not isinstance(
                value, ast.BinOp | ast.Call | ast.Name | ast.JoinedStr
            ):
                continue
            if isinstance(value, ast.BinOp | ast.JoinedStr) and not (
                _is_concat(value) or (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Div))
            ):
                continue
            if isinstance(value, ast.Call) and not _is_path_call(
                value.func, ("joinpath", "resolve", "absolute")
            ):
                continue
            path = _resolve(value, env, base=True)
            if path is not None and targets[0].id not in env:
                env[targets[0].id] = path
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp | ast.Call | ast.JoinedStr):
            if isinstance(node, ast.Call) and not _is_path_call(node.func):
                continue
            if isinstance(node, ast.BinOp | ast.JoinedStr) and not (
                _is_concat(node) or (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div))
            ):
                continue
            path = _resolve(node, env, base=True)
            if (
                path is None
                or path.startswith("/")
                or ".." in path.split("/")
                or any(c in path for c in "*?{}%")
            ):
                continue
            rel = _norm(path)
            if rel:
                out.add(rel)
    out |= {_norm(p) for p in env.values() if p and not p.startswith("/") and ".." not in p.split("/")}
    out.discard("")
    return out


# ---- dynamic checks ----------------------------------------------------------------------------------


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


def _answer_sets(tree: ast.AST | None) -> list[list[str]]:
    """Literal collections of two or more strings in the verifier (an expected selection, dict keys)."""
    if tree is None:
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


def _key_strings(tree: ast.AST | None) -> set[str]:
    """Strings the verifier uses as keys: ``data["k"]``, ``.get("k")``, ``"k" in data``, dict-literal keys
    — output field names the prompt must state, not answers."""
    if tree is None:
        return set()
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            out.add(str(node.slice.value))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr
            in (
                "get",
                "pop",
                "setdefault",
            )
        ):
            if node.args and isinstance(node.args[0], ast.Constant):
                out.add(str(node.args[0].value))
        elif isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
            if isinstance(node.left, ast.Constant):
                out.add(str(node.left.value))
    return out


_SCORE_VOCABULARY = frozenset(
    {"total_score", "details", "score", "max_score", "item", "passed", "reason", "name", "message", "field"}
)
"""Keys of the score file and its detail items (and the words verifiers name them by): never output fields."""
_DETAIL_KEYS = frozenset({"score", "max_score", "total_score", "details", "item", "passed"})
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_LISTED_FIELDS = re.compile(r"field|key|required|column", re.IGNORECASE)


def _alternative_keys(tree: ast.AST) -> set[str]:
    """Keys tested by ``if "k" in data:`` in an ``if``/``elif`` chain: one accepted shape among several
    (``{"denied_ids": [...]}`` or a bare list), not a field the output must have."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.If) and node.orelse and isinstance(node.orelse[0], ast.If)):
            continue
        chain: list[ast.If] = [node]
        while chain[-1].orelse and len(chain[-1].orelse) == 1 and isinstance(chain[-1].orelse[0], ast.If):
            chain.append(chain[-1].orelse[0])  # type: ignore[arg-type]
        for branch in chain:
            for sub in ast.walk(branch.test):
                if (
                    isinstance(sub, ast.Compare)
                    and isinstance(sub.left, ast.Constant)
                    and isinstance(sub.left.value, str)
                    and all(isinstance(op, ast.In) for op in sub.ops)
                ):
                    out.add(sub.left.value)
    return out


def required_output_keys(source: str) -> set[str]:
    """Field names the verifier *reads or expects*: ``data["k"]``, ``.get("k")``, the keys of an expected
    record literal, the strings of a ``required_fields``/``keys`` list. Not ``"k" in text`` alone (that is
    as often a substring test on free text), not the score file's own vocabulary, not the detail items'
    keys, not one accepted alternative among several (:func:`_alternative_keys`)."""
    tree = _parse(source)
    if tree is None:
        return set()
    out: set[str] = set()

    transcript = _transcript_names(tree)
    score_dicts = _grade_score_dicts(tree)

    def environ(n: ast.AST) -> bool:  # os.environ["WORKSPACE"] is a setting, not an output field
        return (isinstance(n, ast.Attribute) and n.attr == "environ") or (
            isinstance(n, ast.Name) and n.id == "environ"
        )

    def not_output(n: ast.AST) -> bool:  # a setting, or an event of the agent's transcript (PinchBench)
        return environ(n) or any(isinstance(x, ast.Name) and x.id in transcript for x in ast.walk(n))

    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            # scores["k"] = 1.0 is the verifier's own bookkeeping, not a field it reads
            if (
                isinstance(node.slice.value, str)
                and isinstance(node.ctx, ast.Load)
                and not not_output(node.value)
            ):
                out.add(node.slice.value)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "setdefault")
            and not not_output(node.func.value)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.add(node.args[0].value)
        elif isinstance(node, ast.Dict) and id(node) not in score_dicts:
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            if not keys & _DETAIL_KEYS:
                out |= keys
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.List | ast.Tuple | ast.Set):
            if any(isinstance(t, ast.Name) and _LISTED_FIELDS.search(t.id) for t in node.targets):
                elts = node.value.elts
                out |= {e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    out -= _alternative_keys(tree)
    return {k for k in out if _IDENTIFIER.match(k) and k not in _SCORE_VOCABULARY}


def _grade_score_dicts(tree: ast.AST) -> set[int]:
    """Ids of the dict literals a PinchBench ``grade(transcript, workspace_path)`` returns (``return {...}``,
    or ``scores = {...}`` … ``return scores``): its criteria and their scores, the score file's own
    vocabulary, not fields the agent writes."""
    out: set[int] = set()
    for f in ast.walk(tree):
        if not isinstance(f, ast.FunctionDef) or f.name != "grade":
            continue
        returns = [n.value for n in ast.walk(f) if isinstance(n, ast.Return) and n.value is not None]
        names = {r.id for r in returns if isinstance(r, ast.Name)}
        out |= {id(r) for r in returns if isinstance(r, ast.Dict)}
        for n in ast.walk(f):
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Dict):
                if any(isinstance(t, ast.Name) and t.id in names for t in n.targets):
                    out.add(id(n.value))
    return out


def _transcript_names(tree: ast.AST) -> set[str]:
    """Names bound to the agent's transcript or to parts of it: a ``transcript`` parameter (PinchBench's
    ``grade(transcript, workspace_path)``), then every name assigned or iterated from one of those."""
    names = {
        a.arg
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
        for a in f.args.args + f.args.kwonlyargs
        if a.arg == "transcript"
    }
    if not names:
        return names

    def derived(n: ast.AST) -> bool:
        return any(isinstance(x, ast.Name) and x.id in names for x in ast.walk(n))

    def bound(target: ast.AST) -> set[str]:
        return {x.id for x in ast.walk(target) if isinstance(x, ast.Name)}

    while True:
        before = len(names)
        for node in ast.walk(tree):
            if isinstance(node, ast.For | ast.comprehension) and derived(node.iter):
                names |= bound(node.target)
            elif isinstance(node, ast.Assign) and derived(node.value):
                for t in node.targets:
                    names |= bound(t)
            elif (
                isinstance(node, ast.AnnAssign | ast.NamedExpr)
                and node.value is not None
                and derived(node.value)
            ):
                names |= bound(node.target)
        if len(names) == before:
            return names


def _unstated_fields(task: WorkspaceTask, inputs: dict[str, bytes]) -> list[str]:
    """Keys the verifier requires that neither the prompt names (as a word, or with spaces for ``_``) nor
    any built input holds (a key of the input data is the verifier reading its inputs)."""
    words = {w.lower() for w in re.findall(r"[A-Za-z0-9_]+", task.prompt)}
    prose = task.prompt.lower()
    held: set[str] = set()
    for data in inputs.values():
        held |= set(re.findall(r"[A-Za-z0-9_]+", data.decode("utf-8", "replace")))
    return sorted(
        k
        for k in required_output_keys(task.verifier)
        if k.lower() not in words and k.replace("_", " ").lower() not in prose and k not in held
    )


def _threshold_numbers(tree: ast.AST | None) -> set[float]:
    """Numbers the verifier compares with ``<``/``>``/``<=``/``>=`` (rule thresholds the request must
    state), and the points of its detail items: parameters, not answers."""
    if tree is None:
        return set()
    out: set[float] = set()
    ordering = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(isinstance(op, ordering) for op in node.ops):
            for side in (node.left, *node.comparators):
                if isinstance(side, ast.Constant) and isinstance(side.value, int | float):
                    out.add(float(side.value))
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=False):
                if (
                    isinstance(k, ast.Constant)
                    and k.value in ("score", "max_score", "points", "weight")
                    and isinstance(v, ast.Constant)
                    and isinstance(v.value, int | float)
                ):
                    out.add(float(v.value))
    return out


def _number_constants(tree: ast.AST | None) -> list[float]:
    if tree is None:
        return []
    return [
        float(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, int | float) and not isinstance(n.value, bool)
    ]


def _as_number(tok: str) -> float | None:
    try:
        return float(tok.replace(",", ""))
    except ValueError:
        return None


def _answer_like_number(x: float) -> bool:
    """Amounts and fractions, not small counts, points or calendar years."""
    if x != int(x):
        return True
    return abs(x) >= 1000 and not 1900 <= x <= 2100


def _leaks(task: WorkspaceTask, inputs: dict[str, bytes], solved: dict[str, bytes] | None) -> list[str]:
    """Expected values visible in the prompt: verifier literals and solution outputs that the input
    workspace does not already hold (those are derived answers, not user-specified data). Only values
    with a digit count (ids, amounts, dates): words are the task's vocabulary, not its answer; the keys
    the verifier reads (output field names) and the thresholds it compares with are what the request
    must say, so they never count."""
    tree = _parse(task.verifier)
    input_text = "\n".join([*inputs, *(b.decode("utf-8", "replace") for b in inputs.values())])
    input_numbers = {_as_number(t) for t in _NUMBER.findall(input_text)}
    keys = _key_strings(tree)
    outputs = set(prompt_paths(task.prompt))
    strings: set[str] = set()
    numbers: set[float] = set()
    for s in _string_constants(task.verifier):
        if _PATH_TOKEN.fullmatch(s) or "/" in s or s in input_text or s in keys:
            continue
        if any(s in p.split("/") or p.startswith(s) for p in outputs):
            continue
        if 3 <= len(s) <= 64 and any(ch.isdigit() for ch in s):
            strings.add(s)
    thresholds = _threshold_numbers(tree)
    for x in _number_constants(tree):
        if _answer_like_number(x) and x not in input_numbers and x not in thresholds:
            numbers.add(x)
    if solved is not None:
        for rel, data in solved.items():
            if rel == SCORE_FILE or inputs.get(rel) == data:
                continue
            text = data.decode("utf-8", "replace")
            for tok in _NUMBER.findall(text):
                x = _as_number(tok)
                if (
                    x is not None
                    and _answer_like_number(x)
                    and x not in input_numbers
                    and x not in thresholds
                ):
                    numbers.add(x)
            for tok in re.findall(r"[A-Za-z][\w-]*\d[\w-]*", text):
                if tok not in input_text and tok not in keys:
                    strings.add(tok)
    words = set(re.findall(r"[\w-]+(?:\.[\w-]+)*", task.prompt))
    found = sorted(s for s in strings if s in words or (" " in s and s in task.prompt))
    for answer in _answer_sets(tree):  # the whole expected selection spelled out in the request
        if all(_FIELD_NAME.match(a) or a in keys for a in answer):
            continue  # output field names (review, roadmap, papers_used): the request must name them
        if all(a in words or (" " in a and a in task.prompt) for a in answer):
            found.append(" + ".join(answer))
    prompt_numbers = {_as_number(t) for t in _NUMBER.findall(task.prompt)}
    found += [f"{x:.15g}" for x in sorted(numbers) if x in prompt_numbers]
    return found


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
    if not inputs:
        what = f"{BUILDER_NAME} created no files"
        report.add("builder", (ClawAuditReason.BUILDER_EMPTY, what))
        return
    input_dirs = folders(ws)
    report.add("builder", None)
    untouched = run_verifier(task, ws, policy=policy)
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


def _input_reference(p: str, inputs: dict[str, bytes], dirs: set[str]) -> bool:
    """The prompt names an existing input, in full or by a partial path (``papers.json`` for
    ``db_dumps/papers.json``)."""
    return p in inputs or p in dirs or any(k.endswith("/" + p) for k in (*inputs, *dirs))


def _matches(a: str, b: str) -> bool:
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _consistency_checks(
    task: WorkspaceTask,
    report: AuditReport,
    inputs: dict[str, bytes],
    dirs: set[str],
    vr: VerifierRun,
    after: dict[str, bytes],
) -> None:
    exists = set(inputs) | dirs | {""}
    constants = _string_constants(task.verifier)
    statics = {
        _norm(s) for s in constants if _PATH_TOKEN.fullmatch(s.removeprefix("./")) and not s.startswith("/")
    }
    built = constructed_paths(task.verifier)
    traced = {_norm(p) for p in vr.inspected} - {""}
    prompt_outputs = [
        p for p in (_norm(x) for x in prompt_paths(task.prompt)) if not _input_reference(p, inputs, dirs)
    ]
    checked = traced | built | statics
    exact = [p for p in prompt_outputs if p in checked]
    # a bare file name in the prompt that the verifier inspects inside a folder: maybe the prose says where
    loose = [
        p
        for p in prompt_outputs
        if p not in exact and "/" not in p and any(c.endswith("/" + p) for c in checked)
    ]
    unchecked = [p for p in prompt_outputs if p not in exact and p not in loose]

    def extra_outputs(paths: set[str]) -> list[str]:
        out = []
        for v in sorted(paths):
            if v in exists or v == SCORE_FILE or _input_reference(v, inputs, dirs):
                continue
            if any(_matches(v, p) or p.startswith(v + "/") for p in prompt_outputs):
                continue  # the requested output, or its folder (ops/ for ops/review_summary.json)
            if "/" not in v and any(k.endswith("/" + v) for k in (*traced, *built)):
                continue  # a bare name the verifier joins onto a folder at run time
            out.append(v)
        return out

    observed = extra_outputs(traced | statics)
    if unchecked and (observed or not (exact or loose)):
        # the verifier inspects none of the requested outputs, or looks somewhere the prompt never names
        report.add(
            "path_consistency",
            (
                ClawAuditReason.PATH_MISMATCH,
                f"output paths requested by the prompt but not inspected by the verifier: {unchecked}",
            ),
        )
    elif unchecked:
        # the requested outputs it does check are there; the rest may be prose (a file named as an example)
        report.add(
            "path_consistency",
            (
                ClawAuditReason.PATH_MISMATCH,
                f"the prompt names {unchecked} besides {sorted(exact + loose)}, and the verifier never "
                "inspects them",
            ),
            warning=True,
        )
    elif loose:
        report.add(
            "path_consistency",
            (
                ClawAuditReason.PATH_MISMATCH,
                f"the prompt names {loose} but the verifier inspects them under another folder: "
                f"{sorted(c for c in checked if any(c.endswith('/' + p) for p in loose))[:4]}",
            ),
            warning=True,
        )
    elif not prompt_outputs:
        report.add(
            "path_consistency",
            (ClawAuditReason.NO_OUTPUT_PATH, "the prompt names no output path for the agent to produce"),
            warning=True,
        )
    else:
        report.add("path_consistency", None)

    inferred_only = [p for p in extra_outputs(built) if p not in observed]
    added = sorted(set(after) - set(inputs))
    changed = sorted(k for k in inputs if after.get(k) != inputs[k])
    if changed:
        report.add(
            "objective_consistency",
            (
                ClawAuditReason.VERIFIER_MUTATES,
                f"the verifier changed or removed workspace files: {changed[:5]}",
            ),
        )
    elif observed:
        report.add(
            "objective_consistency",
            (
                ClawAuditReason.OBJECTIVE_MISMATCH,
                f"the verifier checks outputs the prompt never asks for: {observed}",
            ),
        )
    elif added or inferred_only:
        what = (
            f"the verifier writes files besides {SCORE_FILE}: {added[:5]}"
            if added
            else f"the verifier's source builds paths the prompt never names: {inferred_only[:5]}"
        )
        kind = ClawAuditReason.VERIFIER_MUTATES if added else ClawAuditReason.OBJECTIVE_MISMATCH
        report.add("objective_consistency", (kind, what), warning=True)
    else:
        report.add("objective_consistency", None)
    unstated = _unstated_fields(task, inputs)
    report.add(
        "output_fields",
        None
        if not unstated
        else (
            ClawAuditReason.OBJECTIVE_MISMATCH,
            f"the verifier requires output fields the prompt never names (nor any input holds): "
            f"{unstated[:6]}; an agent that follows the prompt cannot know them",
        ),
    )
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
    task: WorkspaceTask,
    report: AuditReport,
    tmp: Path,
    policy: SandboxPolicy,
    wall_s: float | None,
    mount: str,
) -> tuple[dict[str, bytes] | None, VerifierRun | None]:
    """With a reference solution: build, solve, verify — it must score 1.0."""
    if task.solution is None:
        return None, None
    ws = fresh_workspace(tmp, "solved")
    if run_builder(task, ws, policy=policy, wall_s=wall_s).status is not Status.OK:
        return None, None
    out = run_solution(task, ws, policy=policy, wall_s=wall_s)
    if out.status is not Status.OK:
        crash = crash_summary(out.stderr, "solution.py", mount, out.message)
        report.add("solution", (ClawAuditReason.SOLUTION_CRASH, f"solution.py failed: {crash}"))
        return None, None
    solved = snapshot(ws)
    vr = run_verifier(task, ws, policy=policy)
    report.solved_score = vr.score
    report.metrics["solved_verifier"] = vr.metrics()
    if vr.defect:
        report.add("solution", _verifier_problem(vr, "solved", mount))
    elif vr.score is not None and vr.score < 1.0 - 1e-9:
        report.add(
            "solution",
            (ClawAuditReason.SOLUTION_NOT_FULL, f"the reference solution scores {vr.score:.2f}, not 1.0"),
        )
    else:
        report.add("solution", None)
    return solved, vr


def _canonical(rel: str, data: bytes) -> Any:
    """A file's content with record order and timestamps factored out: JSON with sorted lists, CSV and
    text as sorted lines."""
    text = _TIMESTAMP.sub("<t>", data.decode("utf-8", "replace"))

    def norm(x: Any) -> Any:
        if isinstance(x, dict):
            return {k: norm(v) for k, v in x.items()}
        if isinstance(x, list):
            return sorted((norm(v) for v in x), key=lambda v: json.dumps(v, sort_keys=True, default=str))
        return x

    if rel.endswith((".json", ".jsonl", ".ndjson")):
        try:
            return norm(json.loads(text))
        except ValueError:
            lines = text.splitlines()
            try:
                return sorted(json.dumps(norm(json.loads(ln)), sort_keys=True) for ln in lines if ln.strip())
            except ValueError:
                pass
    if rel.endswith((".csv", ".tsv")):
        rows = list(csv.reader(io.StringIO(text), delimiter="\t" if rel.endswith(".tsv") else ","))
        return rows[:1] + sorted(rows[1:])
    return sorted(text.splitlines())


def _verifier_reads(task: WorkspaceTask, *runs: VerifierRun | None) -> set[str]:
    """Workspace paths the verifier touches in a run or names in its source."""
    out = constructed_paths(task.verifier)
    out |= {_norm(s) for s in _string_constants(task.verifier) if _PATH_TOKEN.fullmatch(s.removeprefix("./"))}
    for vr in runs:
        if vr is not None:
            out |= {_norm(p) for p in vr.inspected}
    return out - {""}


def _uniqueness_check(
    task: WorkspaceTask,
    report: AuditReport,
    tmp: Path,
    inputs: dict[str, bytes],
    first: VerifierRun,
    reads: set[str],
    policy: SandboxPolicy,
    wall_s: float | None,
) -> None:
    ws = fresh_workspace(tmp, "b")
    if run_builder(task, ws, policy=policy, wall_s=wall_s).status is not Status.OK:
        report.add(
            "answer_uniqueness", (ClawAuditReason.NON_DETERMINISTIC, "the builder failed on a second run")
        )
        return
    second_inputs = snapshot(ws)
    differ = _differing(inputs, second_inputs)
    second = run_verifier(task, ws, policy=policy)
    if second.score != first.score:
        report.add(
            "answer_uniqueness",
            (ClawAuditReason.NON_DETERMINISTIC, f"the verifier scored {first.score} then {second.score}"),
        )
        return
    if not differ:
        report.add("answer_uniqueness", None)
        return
    real = [
        k
        for k in differ
        if k not in inputs
        or k not in second_inputs
        or _canonical(k, inputs[k]) != _canonical(k, second_inputs[k])
    ]
    hardcoded = [k for k in real if not any(_matches(k, r) for r in reads)]
    if hardcoded:
        report.add(
            "answer_uniqueness",
            (ClawAuditReason.NON_DETERMINISTIC, f"two builds differ in {hardcoded[:5]}: no single answer"),
        )
    elif real:
        report.add(
            "answer_uniqueness",
            (
                ClawAuditReason.NON_DETERMINISTIC,
                f"two builds differ in {real[:5]}, which the verifier reads (it may derive its answer from "
                "them)",
            ),
            warning=True,
        )
    else:
        report.add(
            "answer_uniqueness",
            (
                ClawAuditReason.NON_DETERMINISTIC,
                f"two builds differ only in record order or timestamps in {differ[:5]} (same data)",
            ),
            warning=True,
        )


def _separation_check(
    task: WorkspaceTask, report: AuditReport, inputs: dict[str, bytes], solved: dict[str, bytes] | None
) -> None:
    leaks = _leaks(task, inputs, solved)
    lower = task.prompt.lower()
    vocab = [w for w in LEAK_WORDS if w in lower]
    soft = [w for w in SOFT_LEAK_WORDS if re.search(rf"\b{re.escape(w)}\b", lower)]
    abs_paths = _ABS_PATH.findall(task.prompt)
    if leaks:
        report.add(
            "information_separation",
            (ClawAuditReason.ANSWER_LEAK, f"the prompt reveals expected values: {leaks[:5]}"),
        )
    elif vocab:
        report.add(
            "information_separation",
            (ClawAuditReason.ANSWER_LEAK, f"the prompt mentions verification internals: {vocab}"),
        )
    elif soft or abs_paths:
        reason = ClawAuditReason.ANSWER_LEAK if soft else ClawAuditReason.PROMPT_ABSOLUTE_PATH
        what = (
            f"the prompt mentions the checker: {soft}"
            if soft
            else f"the prompt uses absolute paths: {abs_paths[:3]}"
        )
        report.add("information_separation", (reason, what), warning=True)
    else:
        report.add("information_separation", None)
