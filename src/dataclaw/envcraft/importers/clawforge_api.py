"""Reading a ClawForge tool-API environment (one ``.py`` file, a class whose methods are the tools) without
running it: the class, its state keys, and per public method the parameters, the description and the
side effect. Only :mod:`ast` touches the source here; the code itself runs in the sandbox.

The shape is the one ClawForge releases (``ClawForge-Tool_env/*.py``, the BFCL multi-turn backend shape):
``_load_scenario(self, scenario, long_context=False)`` loads a state dict (falling back to a module-level
default), ``get_env_state(self)`` returns ``{"key": self.attr, ...}``, and every public method takes typed
arguments documented under ``Args:`` and returns a dict, ``{"error": ...}`` on failure.

Side effects come from the method body: a method that assigns, deletes or augments ``self.<attr>`` (or an
item of it), calls a mutating method (``append``, ``pop``, ``update`` …) on it, or does either through a
local name bound to part of ``self`` (``task = self.tasks[i]; task["status"] = s``) is a write of those
attributes; a method that calls another method of ``self`` inherits what that one writes. Everything else
is a read.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from dataclaw.core import pyast
from dataclaw.envcraft.runtime.tools import parse_docstring

MUTATORS = frozenset(
    {"append", "extend", "insert", "pop", "popitem", "remove", "clear", "update", "setdefault", "add",
     "discard", "sort", "reverse", "appendleft", "extendleft", "popleft", "__setitem__", "__delitem__"}
)  # fmt: skip
HARNESS_METHODS = frozenset({"get_env_state", "_load_scenario"})
_SCALARS = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
ALL_FIELDS = "*"


class ApiSourceError(ValueError):
    """The file is not a tool-API environment (no class with ``_load_scenario`` and ``get_env_state``)."""


@dataclass
class MethodInfo:
    name: str
    description: str
    params: list[dict[str, Any]]
    returns: str
    writes: set[str] = field(default_factory=set)
    """Attributes of ``self`` the body changes (``*``: some, through a helper's return value)."""
    calls: set[str] = field(default_factory=set)
    """Methods of ``self`` it calls."""
    skipped: str | None = None
    """Why it is not a tool (``*args``/``**kwargs``)."""
    success_keys: list[str] = field(default_factory=list)
    """Keys of the dicts it returns on success (``return {"tasks": ...}``): what it outputs."""


@dataclass
class ApiInfo:
    cls: str
    description: str
    state_keys: list[str]
    """Keys of ``get_env_state()`` (empty: not a dict literal; the probe finds them)."""
    attributes: dict[str, str]
    """State key → attribute of ``self`` holding it."""
    methods: list[MethodInfo]
    uses_wall_clock: bool = False


def schema_of(annotation: ast.expr | None) -> tuple[dict[str, Any], bool]:
    """A JSON schema for a (source) type annotation, and whether ``None`` is allowed. Unions of several
    types and ``Any`` give an untyped schema (anything is accepted and passed on)."""
    if annotation is None:
        return {}, False
    text = ast.unparse(annotation).replace("typing.", "")
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return schema_of(pyast.parse(annotation.value, mode="eval").body)
        except SyntaxError:
            return {}, False
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        parts = [annotation.left, annotation.right]
        rest = [p for p in parts if not (isinstance(p, ast.Constant) and p.value is None)]
        if len(rest) == 1:
            return schema_of(rest[0])[0], True
        return {}, False
    if isinstance(annotation, ast.Subscript):
        head = ast.unparse(annotation.value).replace("typing.", "")
        inner = annotation.slice
        args = list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
        if head == "Optional":
            return schema_of(args[0])[0], True
        if head == "Union":
            rest = [a for a in args if not (isinstance(a, ast.Constant) and a.value is None)]
            if len(rest) == 1:
                return schema_of(rest[0])[0], len(rest) < len(args)
            return {}, len(rest) < len(args)
        if head in ("List", "list", "Sequence", "Tuple", "tuple", "Set", "set"):
            items = schema_of(args[0])[0] if args and head not in ("Tuple", "tuple") else {}
            return ({"type": "array", "items": items} if items else {"type": "array"}), False
        if head in ("Dict", "dict", "Mapping"):
            return {"type": "object"}, False
        if head == "Literal":
            values = [a.value for a in args if isinstance(a, ast.Constant)]
            kinds = {type(v).__name__ for v in values}
            if len(kinds) == 1 and kinds.pop() in _SCALARS:
                return {"type": _SCALARS[type(values[0]).__name__], "enum": values}, False
        return {}, False
    if text in _SCALARS:
        return {"type": _SCALARS[text]}, False
    if text in ("list", "List", "tuple", "Tuple", "set"):
        return {"type": "array"}, False
    if text in ("dict", "Dict"):
        return {"type": "object"}, False
    return {}, False


def _root_attr(node: ast.AST, aliases: dict[str, set[str]]) -> set[str] | None:
    """The ``self`` attributes an expression reaches into (``self.a[b].c`` → {a}); through a local
    alias, that alias's attributes; None when it is not rooted at ``self``."""
    while True:
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return {node.attr}
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            # self.tasks.get(x), self._find(x) (a helper returning part of the state: unknown field)
            func = node.func
            if isinstance(func.value, ast.Name) and func.value.id == "self":
                return {ALL_FIELDS}
            node = func.value
        elif isinstance(node, ast.Name):
            return aliases.get(node.id)
        else:
            return None


def _bind(target: ast.AST, roots: set[str], aliases: dict[str, set[str]]) -> None:
    if isinstance(target, ast.Name):
        aliases[target.id] = set(roots)
    elif isinstance(target, ast.Tuple | ast.List):
        for t in target.elts:
            _bind(t, roots, aliases)


def analyse_method(fn: ast.FunctionDef) -> tuple[set[str], set[str]]:
    """(attributes written, methods of ``self`` called) of one method body."""
    aliases: dict[str, set[str]] = {}
    writes: set[str] = set()
    calls: set[str] = set()
    nodes = sorted(ast.walk(fn), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
    for node in nodes:
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            for t in targets:
                if isinstance(t, ast.Name):
                    roots = _root_attr(value, aliases) if value is not None else None
                    if roots is not None and not isinstance(value, ast.Constant):
                        _bind(t, roots, aliases)
                    else:
                        aliases.pop(t.id, None)
                    if isinstance(node, ast.AugAssign) and t.id in aliases:
                        writes |= aliases[t.id]
                else:
                    roots = _root_attr(t, aliases)
                    if roots:
                        writes |= roots
        elif isinstance(node, ast.For | ast.comprehension):
            roots = _root_attr(node.iter, aliases)
            if roots is not None:
                _bind(node.target, roots, aliases)
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                writes |= _root_attr(t, aliases) or set()
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            func = node.func
            if isinstance(func.value, ast.Name) and func.value.id == "self":
                calls.add(func.attr)
            elif func.attr in MUTATORS:
                writes |= _root_attr(func.value, aliases) or set()
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            if node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "self":
                writes.add(ALL_FIELDS)
    return writes, calls


def _state_mapping(fn: ast.FunctionDef) -> tuple[list[str], dict[str, str]]:
    """Keys of the dict ``get_env_state`` returns, and key → ``self`` attribute where the value is one."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Dict):
            keys: list[str] = []
            attrs: dict[str, str] = {}
            for k, v in zip(node.value.keys, node.value.values, strict=True):
                if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                    return [], {}
                keys.append(k.value)
                if isinstance(v, ast.Attribute) and isinstance(v.value, ast.Name) and v.value.id == "self":
                    attrs[k.value] = v.attr
            return keys, attrs
    return [], {}


def _literal(node: ast.expr) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _params(fn: ast.FunctionDef, docs: dict[str, str]) -> tuple[list[dict[str, Any]], str | None]:
    a = fn.args
    if a.vararg or a.kwarg:
        return [], "takes *args or **kwargs (no fixed parameters to describe)"
    positional = [*a.posonlyargs, *a.args][1:]  # without self
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    pairs = list(zip(positional, defaults, strict=True)) + list(zip(a.kwonlyargs, a.kw_defaults, strict=True))
    out = []
    for arg, default in pairs:
        schema, nullable = schema_of(arg.annotation)
        p: dict[str, Any] = {
            "name": arg.arg,
            "schema": schema,
            "description": docs.get(arg.arg)
            or (ast.unparse(arg.annotation) if arg.annotation else "a value"),
            "required": default is None,
            "nullable": nullable,
        }
        if default is not None:
            ok, value = _literal(default)
            p["default"] = value if ok else None
            p["nullable"] = nullable or value is None
        out.append(p)
    return out, None


def success_keys(fn: ast.FunctionDef) -> list[str]:
    """Keys of the dict literals the method returns, but not those of ``{"error": ...}`` returns."""
    out: list[str] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Dict):
            consts = [k for k in node.value.keys if isinstance(k, ast.Constant)]
            keys = [k.value for k in consts if isinstance(k.value, str)]
            if "error" not in keys:
                out += [k for k in keys if k not in out]
    return out


def _api_classes(tree: ast.Module) -> list[ast.ClassDef]:
    out = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
            if HARNESS_METHODS <= names:
                out.append(node)
    return out


def _wall_clock(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("now", "utcnow", "today", "time"):
            base = ast.unparse(node.value)
            if base.split(".")[-1] in ("datetime", "date", "time"):
                return True
    return False


def read_api(source: str, filename: str = "<source>") -> ApiInfo:
    """Parse ``source`` (SyntaxError when it does not compile, :class:`ApiSourceError` when it holds no
    tool-API class) and describe its class."""
    tree = pyast.parse(source, filename=filename)
    classes = _api_classes(tree)
    if not classes:
        raise ApiSourceError(
            "no class with _load_scenario() and get_env_state() (a ClawForge tool-API class)"
        )
    cls = classes[0]
    funcs = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    keys, attrs = _state_mapping(funcs["get_env_state"])
    description = " ".join((ast.get_docstring(cls) or "").split())
    for node in ast.walk(funcs.get("__init__", cls)):  # ClawForge classes describe themselves here
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Attribute) and t.attr == "_api_description" for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            description = node.value.value
    methods: list[MethodInfo] = []
    analysed = {name: analyse_method(fn) for name, fn in funcs.items()}
    for name, fn in funcs.items():
        if name.startswith("_") or name in HARNESS_METHODS:
            continue
        desc, docs, returns = parse_docstring(ast.get_docstring(fn, clean=False))
        params, skipped = _params(fn, docs)
        writes, calls = analysed[name]
        label = desc or name.replace("_", " ")
        methods.append(
            MethodInfo(name, label, params, returns, set(writes), set(calls), skipped, success_keys(fn))
        )
    # a method inherits what the methods of self it calls write (to a fixed point)
    effect = {name: set(w) for name, (w, _) in analysed.items()}
    changed = True
    while changed:
        changed = False
        for name, (_, calls) in analysed.items():
            for c in calls:
                extra = effect.get(c, set()) - effect[name]
                if extra and c not in HARNESS_METHODS:
                    effect[name] |= extra
                    changed = True
    for m in methods:
        m.writes = effect[m.name]
    return ApiInfo(cls.name, description, keys, attrs, methods, _wall_clock(tree))


def fields_of(writes: set[str], info: ApiInfo, state_keys: list[str]) -> list[str]:
    """State keys a method changes, from the attributes it writes (all keys when it cannot be told)."""
    if ALL_FIELDS in writes:
        return list(state_keys)
    by_attr = {attr: key for key, attr in info.attributes.items()}
    out = [by_attr.get(a, a) for a in sorted(writes)]
    known = [k for k in out if k in state_keys]
    return known if len(known) == len(out) else list(state_keys)
