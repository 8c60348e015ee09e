"""Static code checks of a claw task's builder and verifier (AST): standard library only, and a verifier with
no network, subprocess, LLM or credential access."""

from __future__ import annotations

import ast
import re
import sys

from dataclaw.core import pyast
from dataclaw.envcraft.tasks.claw.audit.report import ClawAuditReason, Problem

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
