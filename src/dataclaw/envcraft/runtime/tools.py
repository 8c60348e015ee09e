"""``@tool``: declare a domain function ``(session: dict, **params) -> dict`` as an environment tool.

The unified tool schema (EnvCraft C.3) is derived from the signature, the type hints and the Google-style
docstring; it is also rendered as an OpenAI function schema. Parameters are validated (types, required,
enums) before the function runs, so domain code only checks domain rules.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from dataclaw.envcraft.runtime.errors import EnvError, ErrorCategory, echo

SideEffect = Literal["read", "write"]
ToolFn = Callable[..., dict[str, Any]]

_SCALARS: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_SECTION_RE = re.compile(r"^(Args|Arguments|Parameters|Returns|Raises|Example|Examples|Note|Notes):\s*$")
_ARG_RE = re.compile(r"^(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")
_NO_DEFAULT = object()


@dataclass(frozen=True)
class Param:
    """One tool parameter: JSON schema fragment + Python-side validation data."""

    name: str
    schema: dict[str, Any]
    description: str
    required: bool
    default: Any = None
    nullable: bool = False


@dataclass(frozen=True)
class ToolSpec:
    """A tool: the callable plus its unified schema (C.3)."""

    name: str
    fn: ToolFn
    description: str
    params: tuple[Param, ...]
    side_effect: SideEffect
    state_fields_affected: tuple[str, ...]
    returns_description: str = ""
    success_keys: tuple[str, ...] = ()
    _by_name: dict[str, Param] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        # derived from ``params`` on every construction, dataclasses.replace included, so it never goes stale
        object.__setattr__(self, "_by_name", {p.name: p for p in self.params})

    @property
    def modifies_state(self) -> bool:
        return self.side_effect == "write"

    def parameters_schema(self) -> dict[str, Any]:
        props: dict[str, Any] = {}
        for p in self.params:
            prop = dict(p.schema)
            prop["description"] = p.description
            if not p.required:
                prop["default"] = p.default
            props[p.name] = prop
        return {
            "type": "object",
            "properties": props,
            "required": [p.name for p in self.params if p.required],
        }

    def unified_schema(self) -> dict[str, Any]:
        """The C.3 unified tool schema."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters_schema(),
            "returns": {
                "type": "object",
                "description": self.returns_description,
                "success_keys": list(self.success_keys),
                "error_format": {"error": "human-readable, agent-safe message"},
            },
            "side_effect": self.side_effect,
            "modifies_state": self.modifies_state,
            "state_fields_affected": list(self.state_fields_affected),
        }

    def openai_schema(self) -> dict[str, Any]:
        """The same tool as an OpenAI ``tools=[...]`` entry."""
        params = self.parameters_schema()
        params["additionalProperties"] = False
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": params},
        }

    def validate(self, params: dict[str, Any]) -> dict[str, Any]:
        """Check names, required fields, types and enums; return params with defaults filled in."""
        by_name = self._by_name
        unknown = sorted(set(params) - set(by_name))
        if unknown:
            valid = ", ".join(by_name) or "none"
            raise EnvError(
                ErrorCategory.INVALID_ARGUMENT,
                f"{self.name} got unknown parameter {echo(unknown[0])}; valid parameters: {valid}.",
            )
        out: dict[str, Any] = {}
        for p in self.params:
            if p.name not in params or (params[p.name] is None and not p.nullable):
                if p.required:
                    raise EnvError(
                        ErrorCategory.MISSING_FIELD,
                        f"{self.name} needs '{p.name}': {p.description or _type_words(p.schema)}.",
                        field=p.name,
                    )
                out[p.name] = p.default
                continue
            value = params[p.name]
            if value is None and p.nullable:
                out[p.name] = None
                continue
            problem = check_value(value, p.schema)
            if problem:
                raise EnvError(
                    ErrorCategory.INVALID_ARGUMENT,
                    f"{self.name}: parameter '{p.name}' {problem} (got {echo(value)}).",
                    field=p.name,
                )
            out[p.name] = float(value) if p.schema.get("type") == "number" else value
        return out


def check_value(value: Any, schema: dict[str, Any]) -> str | None:
    """Return a description of why ``value`` does not fit ``schema``, or None when it fits."""
    kind = schema.get("type")
    if "enum" in schema and value not in schema["enum"]:
        return "must be one of " + ", ".join(repr(v) for v in schema["enum"])
    fits = _TYPE_CHECKS.get(kind)
    if fits is not None and not fits(value):
        return f"must be {_type_words(schema)}"
    if kind == "array" and "items" in schema:
        for i, item in enumerate(value):
            problem = check_value(item, schema["items"])
            if problem:
                return f"item {i} {problem}"
    return None


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# JSON schema type -> whether a Python value is of it (built once: validation runs on every tool call)
_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str) and _is_utf8(v),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63,
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool) and v == v,
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict) and all(isinstance(k, str) for k in v),
}


def _type_words(schema: dict[str, Any]) -> str:
    kind = schema.get("type", "a value")
    if kind == "array":
        return f"a list of {_type_words(schema.get('items', {}))}s"
    if kind == "integer":
        return "an integer (64-bit)"
    if kind == "string":
        return "a string (valid UTF-8 text)"
    return f"{'an' if kind == 'object' else 'a'} {kind}"


def _schema_for(hint: Any) -> tuple[dict[str, Any], bool]:
    """JSON schema for a type hint, plus whether ``None`` is allowed."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unsupported union type {hint!r}: use X | None")
        return _schema_for(args[0])[0], True
    if origin is Literal:
        values = list(typing.get_args(hint))
        kinds = {_SCALARS[type(v)] for v in values}
        if len(kinds) != 1:
            raise TypeError(f"Literal {hint!r} mixes types")
        return {"type": kinds.pop(), "enum": values}, False
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}, False
    if hint is list or origin is list:
        args = typing.get_args(hint)
        return ({"type": "array", "items": _schema_for(args[0])[0]} if args else {"type": "array"}), False
    if hint is dict or origin is dict:
        return {"type": "object"}, False
    raise TypeError(f"unsupported parameter type {hint!r}")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str], str]:
    """Google-style docstring → (description, {param: description}, returns description)."""
    lines = inspect.cleandoc(doc or "").splitlines()
    desc: list[str] = []
    args: dict[str, str] = {}
    returns: list[str] = []
    section, current = None, None
    for line in lines:
        m = _SECTION_RE.match(line.strip())
        if m and not line.startswith(" "):
            section, current = m.group(1), None
            continue
        if section is None:
            desc.append(line)
        elif section in ("Args", "Arguments", "Parameters"):
            am = _ARG_RE.match(line.strip())
            if am and line.startswith("    ") and not line.startswith("        "):
                current = am.group(1)
                args[current] = am.group(2).strip()
            elif current and line.strip():
                args[current] = (args[current] + " " + line.strip()).strip()
        elif section == "Returns" and line.strip():
            returns.append(line.strip())
    return " ".join(x.strip() for x in desc if x.strip()), args, " ".join(returns)


def tool(
    side_effect: SideEffect,
    fields: Iterable[str] = (),
    *,
    name: str | None = None,
    returns: Iterable[str] = (),
) -> Callable[[ToolFn], ToolFn]:
    """Declare a domain function as a tool.

    Args:
        side_effect: "read" (never mutates domain state) or "write".
        fields: top-level state fields the tool may modify (C.3 ``state_fields_affected``).
        name: tool name; defaults to the function name.
        returns: keys present in a successful result (C.3 ``success_keys``).
    """
    if side_effect not in ("read", "write"):
        raise ValueError(f"side_effect must be 'read' or 'write', not {side_effect!r}")
    fields = tuple(fields)
    if side_effect == "write" and not fields:
        raise ValueError("a write tool must declare the state fields it affects")
    if side_effect == "read" and fields:
        raise ValueError("a read tool cannot declare affected state fields")

    def wrap(fn: ToolFn) -> ToolFn:
        fn.__envcraft_tool__ = build_spec(fn, side_effect, fields, name=name, returns=tuple(returns))  # type: ignore[attr-defined]
        return fn

    return wrap


def build_spec(
    fn: ToolFn,
    side_effect: SideEffect,
    fields: tuple[str, ...],
    *,
    name: str | None,
    returns: tuple[str, ...],
) -> ToolSpec:
    """Build the :class:`ToolSpec` of ``fn`` (fails loudly on undocumented or untyped parameters)."""
    sig = inspect.signature(fn)
    hints = typing.get_type_hints(fn)
    names = list(sig.parameters)
    if not names or names[0] != "session":
        raise TypeError(f"tool {fn.__name__} must take `session: dict` as its first parameter")
    description, arg_docs, returns_doc = parse_docstring(fn.__doc__)
    if not description:
        raise TypeError(f"tool {fn.__name__} needs a docstring: it is the tool description the agent sees")
    params = []
    for pname in names[1:]:
        p = sig.parameters[pname]
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            raise TypeError(f"tool {fn.__name__}: parameter {pname} must be a plain named parameter")
        if pname not in hints:
            raise TypeError(f"tool {fn.__name__}: parameter {pname} needs a type hint")
        if pname not in arg_docs:
            raise TypeError(f"tool {fn.__name__}: parameter {pname} is not described under Args:")
        schema, nullable = _schema_for(hints[pname])
        has_default = p.default is not inspect.Parameter.empty
        params.append(
            Param(
                pname, schema, arg_docs[pname], not has_default, p.default if has_default else None, nullable
            )
        )
    return ToolSpec(
        name=name or fn.__name__,
        fn=fn,
        description=description,
        params=tuple(params),
        side_effect=side_effect,
        state_fields_affected=fields,
        returns_description=returns_doc,
        success_keys=returns,
    )


class ToolSet:
    """The tools of one environment, by name; refuses duplicates."""

    def __init__(self, specs: Iterable[ToolSpec] = ()) -> None:
        self._specs: dict[str, ToolSpec] = {}
        for spec in specs:
            self.add(spec)

    @classmethod
    def from_modules(cls, *modules: types.ModuleType) -> ToolSet:
        """Collect every ``@tool`` function defined in ``modules`` (in definition order)."""
        out = cls()
        for module in modules:
            for value in vars(module).values():
                spec = getattr(value, "__envcraft_tool__", None)
                if spec is not None and getattr(value, "__module__", None) == module.__name__:
                    out.add(spec)
        return out

    def add(self, spec: ToolSpec) -> None:
        if spec.name in self._specs:
            raise ValueError(f"duplicate tool name {spec.name!r}")
        self._specs[spec.name] = spec

    def get(self, name: str) -> ToolSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise EnvError(
                ErrorCategory.UNKNOWN_TOOL,
                f"There is no tool {echo(name)}. Available tools: {', '.join(self._specs)}.",
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._specs.values())

    def __len__(self) -> int:
        return len(self._specs)

    def names(self) -> list[str]:
        return list(self._specs)

    def unified_schemas(self) -> list[dict[str, Any]]:
        return [s.unified_schema() for s in self._specs.values()]

    def openai_schemas(self) -> list[dict[str, Any]]:
        return [s.openai_schema() for s in self._specs.values()]
