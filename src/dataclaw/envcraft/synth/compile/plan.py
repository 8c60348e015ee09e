"""The package model a spec compiles into: collections, tools and the plan they are gathered in.

A :class:`Plan` is what every step of :func:`~dataclaw.envcraft.synth.compile.compile_package` reads and
extends (world state, mechanics config, tools, what was dropped or defaulted); the writer turns it into
files at the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from dataclaw.envcraft.synth.spec import ESpec

MIN_TOOLS = 6
MAX_TOOL_NAME = 64
"""OpenAI function names are at most 64 characters."""
MIN_SCENARIOS = 2
MARKER = "data/compile.json"
_CANCEL_WORDS = ("cancel", "reject", "declin", "withdraw", "abandon", "fail", "void", "refus", "dismiss")


class CompileError(ValueError):
    """The spec cannot be compiled (names the spec part and the problem)."""


class CompileResult(BaseModel):
    """What :func:`compile_package` wrote: the package folder and what went into it."""

    model_config = ConfigDict(frozen=True)
    path: Path
    env_name: str
    tools: list[str]
    scenarios: list[str]
    dropped: list[tuple[str, str]]
    archetypes: list[str]
    claw: bool = False
    mechanics: list[str] = []
    defaults: list[str] = []
    """What the compiler filled in or chose because the spec did not say (thin specs)."""
    mapped: dict[str, str] = {}
    """T_spec tool name → the operation it was compiled onto."""
    rules: list[dict[str, str]] = []
    """The business rules the package enforces (``rule_id``, ``kind``, ``entity``, ``on``, ``description``);
    a rule the compiler could not enforce is in ``defaults`` with why."""


@dataclass
class Param:
    """One parameter of a compiled tool."""

    name: str
    hint: str  # Python annotation source
    description: str
    default: Any = None
    required: bool = True


@dataclass
class ToolPlan:
    """One compiled tool: its operation (:data:`~dataclaw.envcraft.synth.mechanics.OPS`), signature and
    config; ``key`` identifies the operation on its collection (a canonical tool is added once per key)."""

    name: str
    op: str
    side_effect: str
    description: str
    params: list[Param]
    fields: list[str] = field(default_factory=list)
    returns: list[str] = field(default_factory=list)
    cfg: dict[str, Any] = field(default_factory=dict)
    key: tuple[Any, ...] = ()


@dataclass
class Collection:
    """An entity's records in the state: id scheme, attributes and lifecycle."""

    name: str
    entity: str
    id_field: str
    id_param: str
    prefix: str
    label_field: str | None
    attributes: dict[str, str]
    status_field: str | None
    statuses: list[str]
    transitions: dict[str, list[str]]
    gated: list[str] = field(default_factory=list)
    docs: dict[str, str] = field(default_factory=dict)  # attribute -> the spec's description
    stages: list[str] = field(default_factory=list)

    def config(self) -> dict[str, Any]:
        return {
            "entity": self.entity,
            "id_field": self.id_field,
            "id_param": self.id_param,
            "prefix": self.prefix,
            "label_field": self.label_field,
            "attributes": self.attributes,
            "status_field": self.status_field,
            "statuses": self.statuses,
            "initial_status": self.statuses[0] if self.statuses else None,
            "transitions": self.transitions,
            "gated": self.gated,
            "stages": self.stages,
        }

    def forward(self, status: str) -> str | None:
        """The next status along the declared order (not a cancel-like one)."""
        return next((s for s in self.transitions.get(status, []) if not cancel_like(s)), None)


@dataclass
class Plan:
    """Everything compiled so far: collections, world state, mechanics config, tools and the notes."""

    env: str
    spec: ESpec
    collections: dict[str, Collection]
    primary: str
    state: dict[str, Any]
    config: dict[str, Any]
    tools: dict[str, ToolPlan] = field(default_factory=dict)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    defaults: list[str] = field(default_factory=list)
    mechanics: list[str] = field(default_factory=list)
    mapped: dict[str, str] = field(default_factory=dict)
    path_name: str = ""
    rules: list[dict[str, Any]] = field(default_factory=list)
    """The enforced rules' runtime config (:mod:`dataclaw.envcraft.synth.mechanics.rules`)."""

    def free(self, base: str) -> str:
        name, n = base, 2
        while name in self.state:
            name, n = f"{base}_{n}", n + 1
        return name

    def add_tool(self, t: ToolPlan, *, canonical: bool = True) -> bool:
        """Add a tool. A canonical one is skipped when a tool with its operation key exists, and renamed
        (``<name>_records``) when only its name is taken; a declared one is refused on a taken name."""
        t.name = t.name[:MAX_TOOL_NAME]
        if canonical and t.key and any(x.key == t.key for x in self.tools.values()):
            return False
        if t.name in self.tools and canonical:
            t.name = f"{t.name[: MAX_TOOL_NAME - 8]}_records"
        if t.name in self.tools:
            return False
        self.tools[t.name] = t
        return True

    def tool_for(self, key: tuple[Any, ...]) -> str:
        return next(t.name for t in self.tools.values() if t.key == key)

    def write_fields(self, cname: str, *extra: str) -> list[str]:
        out = [cname, self.config["log"], *extra]
        if self.config.get("events"):
            out.append(self.config["events"])
        return list(dict.fromkeys(out))


def cancel_like(status: str) -> bool:
    """Whether a status ends a record's lifecycle without completing it (cancelled, rejected, …)."""
    return any(w in status for w in _CANCEL_WORDS)


def clean(text: str, limit: int = 200) -> str:
    """One line of prose safe inside a generated docstring."""
    text = " ".join(str(text).replace('"""', "'").replace("\\", "/").split())
    return text[:limit].rstrip() or "-"


def spaced(name: str) -> str:
    """An identifier as words (``work_order`` → ``work order``)."""
    return name.replace("_", " ")


def lifecycle_text(c: Collection) -> str:
    """The first lifecycle edges of a collection as prose (``open->done, …``)."""
    edges = [f"{a}->{b}" for a, bs in c.transitions.items() for b in bs]
    return ", ".join(edges[:8]) or "none"


def primary_collection(p: Plan) -> Collection:
    """The collection the scenarios act on first (the archetype mechanics attach to it)."""
    return p.collections[p.primary]
