"""Path analysis: the paths a prompt names and the paths a verifier's source builds (``os.path.join``,
pathlib, concatenation), for the path and objective consistency checks."""

from __future__ import annotations

import ast
import re

from dataclaw.envcraft.tasks.claw.audit.static import _parse

_EXTS = (
    "json|jsonl|ndjson|csv|tsv|md|markdown|mmd|txt|yaml|yml|xml|html|htm|log|ini|cfg|conf|toml|xlsx|xls|"
    "pdf|py|sql|sh|ics|eml|png|jpg|jpeg|svg|zip|gz|parquet|db|sqlite|rst|tex|diff|patch"
)
# ASCII only: a path glued to CJK text (保存到ops/a.json里) must not swallow the neighbouring characters.
_PATH_TOKEN = re.compile(
    rf"(?<![A-Za-z0-9_/.\-])((?:[A-Za-z0-9_.\-]+/)*[A-Za-z0-9_\-][A-Za-z0-9_.\-]*\.(?:{_EXTS}))(?![A-Za-z0-9_])",
    re.IGNORECASE,
)


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
