"""Spec compilation (EnvCraft §3.2, issue 13 item 4): a validated E_spec/T_spec → an environment package on
the runtime contract, deterministically, with no model-written Python.

The compiler configures generic mechanics (:mod:`dataclaw.envcraft.synth.mechanics`) instead of writing
logic: entities and their fields become state collections; a status attribute becomes a guarded
lifecycle (forward edges in declared order, cancel-like statuses reachable from every open one, final
records read-only); each retrieved archetype adds its mechanics (:data:`MECHANICS`: draft/commit,
pipeline stages and reports, user confirmation before gated moves, event triggers, available transitions,
time slots, bilateral matching, stream acknowledgement). T_spec tools are mapped onto operations by their
verb, target collection and parameters; a tool that maps onto nothing is dropped with a reason. Every
collection gets the canonical tools (``list_X``, ``get_X``, ``search_X``, ``create_X``, ``update_X``,
``set_X_status``) the declared ones do not already provide, so a package has at least :data:`MIN_TOOLS`.
Spec scenarios become runtime scenarios (at least :data:`MIN_SCENARIOS`, filled when the spec has
fewer) with a goal derived from the scoring rules when one reads ``<record>.<field> == <value>`` and from
the lifecycle otherwise, a reference solution and forbidden actions. Claw scenarios (catalogue category
``claw`` or ``claw=True``) get the claw bash tool over the session's records and a SKILL.md of workflow
guidance. Everything filled in is listed in ``CompileResult.defaults``.

The package written is data (``data/config.json``, ``data/world.json``, ``data/scenarios/*.json``) plus thin
generated glue: ``tools.py`` (typed, documented ``@tool`` functions whose body is one ``run(...)`` call),
``state.py``, ``env.py``, ``evaluator.py``, ``__init__.py``, ``__main__.py``, README.md and SKILL.md.
"""

from __future__ import annotations

import json
import keyword
import re
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from dataclaw.envcraft.synth.mechanics import templates as T
from dataclaw.envcraft.synth.mechanics.claw import workspace_files
from dataclaw.envcraft.synth.mechanics.evaluation import DIMENSIONS, PENALISED
from dataclaw.envcraft.synth.retrieval import Retrieved
from dataclaw.envcraft.synth.spec import IDENT_RE, ESpec, IssueCode, ToolDecl, TSpec, check_spec

MIN_TOOLS = 6
MAX_TOOL_NAME = 64
"""OpenAI function names are at most 64 characters."""
MIN_SCENARIOS = 2
MIN_RECORDS = 3
MIN_MOVABLE = 2
"""Records per collection that can still move forward (scenario goals and task chains need them)."""
DEFAULT_LIFECYCLE = ("open", "in_progress", "done", "cancelled")
DEFAULT_BASE_TIME = "2026-03-02T09:00:00+00:00"
MARKER = "data/compile.json"
_CANCEL_WORDS = ("cancel", "reject", "declin", "withdraw", "abandon", "fail", "void", "refus", "dismiss")
_FATAL = {IssueCode.BAD_IDENTIFIER, IssueCode.RESERVED_NAME, IssueCode.DUPLICATE_ID, IssueCode.SCHEMA}
_FATAL_PATH = re.compile(r"^(entities|state_fields)(\[\d+\](\.name|\.entity)?)?$")
"""Where a naming problem cannot be compiled around (entity and state field names); elsewhere (attributes,
statuses, records, scenarios, tools) the compiler skips or renames the part and records it."""
_RESERVED_PARAMS = frozenset({"session", "status", "limit", "query"})
_RESERVED_TOOLS = frozenset({"tool", "Literal", "CONFIG", "annotations"})
_HINTS = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
}
_RULE_RE = re.compile(
    r"^\s*([A-Za-z0-9_\-]+)\.([a-z][a-z0-9_]*)\s*(?:==|=|is|equals)\s*['\"]?([^'\"]+?)['\"]?\s*$"
)


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


# ---- the plan ------------------------------------------------------------------------------------------


@dataclass
class Param:
    name: str
    hint: str  # Python annotation source
    description: str
    default: Any = None
    required: bool = True


@dataclass
class ToolPlan:
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
        return next((s for s in self.transitions.get(status, []) if not _cancel_like(s)), None)


@dataclass
class Plan:
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


def _cancel_like(status: str) -> bool:
    return any(w in status for w in _CANCEL_WORDS)


def _clean(text: str, limit: int = 200) -> str:
    """One line of prose safe inside a generated docstring."""
    text = " ".join(str(text).replace('"""', "'").replace("\\", "/").split())
    return text[:limit].rstrip() or "-"


def _w(name: str) -> str:
    return name.replace("_", " ")


def _plural(entity: str) -> str:
    if entity.endswith("y") and not entity.endswith(("ay", "ey", "oy", "uy")):
        return entity[:-1] + "ies"
    return entity + ("es" if entity.endswith(("s", "x", "ch", "sh")) else "s")


def _lifecycle(statuses: list[str]) -> dict[str, list[str]]:
    """Forward edges in declared order over the non-cancel statuses; every open status may move to a
    cancel-like one; the last forward status and cancel-like ones are final."""
    main = [s for s in statuses if not _cancel_like(s)] or statuses[:1]
    cancels = [s for s in statuses if _cancel_like(s) and s not in main]
    out: dict[str, list[str]] = {s: [] for s in statuses}
    for a, b in pairwise(main):
        out[a].append(b)
    for s in main[:-1]:
        out[s] += cancels
    return out


def _status_attr(ent: Any) -> str | None:
    names = [a.name for a in ent.attributes]
    for cand in ("status", "state", "stage", "phase"):
        if cand in names:
            return cand
    return next((n for n in names if n.endswith("_status")), None)


def _build_collections(spec: ESpec, plan_defaults: list[str]) -> dict[str, Collection]:
    stored = {f.entity: f.name for f in spec.state_fields if f.kind == "collection" and f.entity}
    out: dict[str, Collection] = {}
    prefixes: set[str] = set()
    for ent in spec.entities:
        cname = stored.get(ent.name)
        if cname is None:
            cname = _plural(ent.name)
            plan_defaults.append(f"entity {ent.name}: no collection declared, stored in {cname!r}")
        attrs: dict[str, str] = {}
        for a in ent.attributes:  # a weak model repeats attributes and misnames some: keep the usable first
            if a.name in attrs or not IDENT_RE.match(a.name) or keyword.iskeyword(a.name):
                plan_defaults.append(
                    f"entity {ent.name}: attribute {a.name!r} skipped (repeated or unusable)"
                )
                continue
            attrs[a.name] = a.type
        id_field = ent.id_field if ent.id_field in attrs else f"{ent.name}_id"
        if id_field not in attrs:
            plan_defaults.append(
                f"entity {ent.name}: id field {ent.id_field!r} undeclared, using {id_field!r}"
            )
        if attrs.get(id_field) != "string":
            plan_defaults.append(f"entity {ent.name}: id field {id_field!r} stored as a string")
        attrs = {id_field: "string", **{k: v for k, v in attrs.items() if k != id_field}}
        id_param = id_field if id_field.endswith("_id") and len(id_field) > 3 else f"{ent.name}_id"
        if id_param != id_field and id_param in attrs:
            id_param = id_field
        status_field = _status_attr(ent)
        statuses = list(dict.fromkeys(s.strip() for s in ent.statuses if s.strip()))
        if sum(not _cancel_like(s) for s in statuses) < 2:
            statuses = list(DEFAULT_LIFECYCLE)
            plan_defaults.append(
                f"entity {ent.name}: fewer than two open statuses, lifecycle {'/'.join(statuses)}"
            )
        if status_field is None:
            status_field = "status" if "status" not in attrs else f"{ent.name}_status"
            plan_defaults.append(f"entity {ent.name}: lifecycle kept in a {status_field!r} attribute")
        attrs[status_field] = "string"
        label = next(
            (a for a, t in attrs.items() if t == "string" and a not in (id_field, status_field)), None
        )
        if label is None:
            label = "name"
            attrs[label] = "string"
            plan_defaults.append(f"entity {ent.name}: no text attribute, added 'name'")
        base = re.sub(r"[^A-Z]", "", ent.name.upper())[:3].ljust(3, "X")
        prefix, n = base, 2
        while prefix in prefixes:
            prefix, n = f"{base[:2]}{n}", n + 1
        prefixes.add(prefix)
        out[cname] = Collection(
            name=cname,
            entity=ent.name,
            id_field=id_field,
            id_param=id_param,
            prefix=prefix,
            label_field=label,
            attributes=attrs,
            docs={a.name: _clean(a.description, 100) for a in ent.attributes if a.description.strip()},
            status_field=status_field,
            statuses=statuses,
            transitions=_lifecycle(statuses),
        )
    return out


def _value(kind: str, attr: str, entity: str, n: int) -> Any:
    return {
        "string": f"{entity.replace('_', ' ').title()} {attr.replace('_', ' ')} {n}",
        "integer": n,
        "number": float(n) * 10.0,
        "boolean": n % 2 == 0,
        "array": [],
        "object": {},
    }[kind]


def _coerce(kind: str, value: Any) -> Any:
    """A world value in its attribute's type (the weak model writes numbers as strings and back)."""
    try:
        if kind == "string":
            return value if isinstance(value, str) else json.dumps(value)
        if kind == "integer":
            return int(value)
        if kind == "number":
            return float(value)
        if kind == "boolean":
            return value if isinstance(value, bool) else str(value).lower() in ("true", "1", "yes")
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, list | dict) else None


def _world_state(spec: ESpec, colls: dict[str, Collection], defaults: list[str]) -> dict[str, Any]:
    by_entity = {c.entity: c for c in colls.values()}
    state: dict[str, Any] = {c.name: {} for c in colls.values()}
    for rec in spec.world_data.records:
        c = by_entity.get(rec.entity)
        if c is None:
            continue
        rid = rec.fields.get(c.id_field)
        rid = rid if isinstance(rid, str) and rid.strip() else rec.record_id
        row = {a: None for a in c.attributes}
        for k, v in rec.fields.items():
            if k in c.attributes:
                row[k] = _coerce(c.attributes[k], v)
        row[c.id_field] = rid
        if row.get(c.status_field) not in c.statuses:
            row[c.status_field] = c.statuses[0]
        state[c.name][rid] = row
    for c in colls.values():
        n = 0
        while (
            len(state[c.name]) < MIN_RECORDS
            or sum(1 for r in state[c.name].values() if c.forward(r[c.status_field])) < MIN_MOVABLE
        ):
            n += 1
            rid = f"{c.prefix}-{1000 + n}"
            if rid in state[c.name]:
                continue
            row = {a: _value(t, a, c.entity, n) for a, t in c.attributes.items()}
            row[c.id_field] = rid
            row[c.status_field] = c.statuses[0]
            state[c.name][rid] = row
        if n:
            defaults.append(
                f"collection {c.name}: {n} record(s) added (>= {MIN_RECORDS}, {MIN_MOVABLE} open)"
            )
        for row in state[c.name].values():
            row.setdefault("created_at", None)
            row.setdefault("updated_at", None)
    return state


# ---- tools ---------------------------------------------------------------------------------------------


def _id_param(c: Collection, what: str = "") -> Param:
    return Param(c.id_param, "str", f"the {c.entity.replace('_', ' ')} id{what}")


def _status_hint(c: Collection) -> str:
    return "Literal[" + ", ".join(repr(s) for s in c.statuses) + "]"


def _attr_params(c: Collection, required_label: bool) -> list[Param]:
    out = []
    for a, kind in c.attributes.items():
        if a in (c.id_field, c.status_field) or a in _RESERVED_PARAMS:
            continue
        req = required_label and a == c.label_field
        hint = _HINTS[kind] if req else f"{_HINTS[kind]} | None"
        doc = c.docs.get(a, "")
        what = f"the {_w(a)}" + (f" ({doc})" if doc and doc != a and doc != "-" else "")
        out.append(Param(a, hint, what, None, req))
    return out


def _core_tools(p: Plan, c: Collection, full: bool) -> list[ToolPlan]:
    e, cn = c.entity, c.name
    words = e.replace("_", " ")
    out = [
        ToolPlan(
            f"list_{cn}",
            "list",
            "read",
            f"List {words} records (sorted by id), optionally only those in one status.",
            [
                Param("status", f"{_status_hint(c)} | None", "only records in this status", None, False),
                Param("limit", "int", "at most this many records (1-200)", 50, False),
            ],
            returns=[cn, "total"],
            cfg={"collection": cn},
            key=("list", cn),
        ),
        ToolPlan(
            f"get_{e}",
            "get",
            "read",
            f"Get one {words} record by its id.",
            [_id_param(c)],
            returns=[e],
            cfg={"collection": cn},
            key=("get", cn),
        ),
    ]
    if not full:
        return out
    return [
        *out,
        ToolPlan(
            f"search_{cn}",
            "search",
            "read",
            f"Find {words} records whose text fields contain a phrase (case-insensitive).",
            [Param("query", "str", "the phrase to look for")],
            returns=[cn, "total"],
            cfg={"collection": cn},
            key=("search", cn),
        ),
        ToolPlan(
            f"create_{e}",
            "create",
            "write",
            f"Create a {words} record; it starts in status '{c.statuses[0]}' and gets a new id.",
            _attr_params(c, True),
            p.write_fields(cn, p.config["counters"]),
            [e],
            {"collection": cn},
            ("create", cn),
        ),
        ToolPlan(
            f"update_{e}",
            "update",
            "write",
            f"Change fields of a {words} record (not its status; final records are read-only).",
            [_id_param(c), *_attr_params(c, False)],
            p.write_fields(cn),
            [e],
            {"collection": cn},
            ("update", cn),
        ),
        ToolPlan(
            f"set_{e}_status",
            "transition",
            "write",
            f"Move a {words} record to another status along its lifecycle "
            f"({_lifecycle_text(c)}); other moves are refused.",
            [_id_param(c), Param("status", _status_hint(c), "the status to move to")],
            p.write_fields(cn),
            [e],
            {"collection": cn},
            ("transition", cn, None),
        ),
    ]


def _lifecycle_text(c: Collection) -> str:
    edges = [f"{a}->{b}" for a, bs in c.transitions.items() for b in bs]
    return ", ".join(edges[:8]) or "none"


# archetype mechanics: name -> function(plan) adding state, config and tools
Mechanic = Callable[[Plan], None]
MECHANICS: dict[str, Mechanic] = {}


def mechanic(name: str) -> Callable[[Mechanic], Mechanic]:
    def wrap(fn: Mechanic) -> Mechanic:
        if name in MECHANICS:
            raise ValueError(f"duplicate mechanic {name!r}")
        MECHANICS[name] = fn
        return fn

    return wrap


def _primary(p: Plan) -> Collection:
    return p.collections[p.primary]


@mechanic("transactional_workspace")
def _transactional(p: Plan) -> None:
    c = _primary(p)
    drafts = p.config.setdefault("drafts", p.free("drafts"))
    p.state.setdefault(drafts, {})
    words = c.entity.replace("_", " ")
    p.add_tool(
        ToolPlan(
            f"stage_{c.entity}_changes",
            "stage_change",
            "write",
            f"Stage field changes to a {words} record as a draft; nothing changes until commit_changes.",
            [_id_param(c), *_attr_params(c, False)],
            [drafts],
            ["draft", "pending"],
            {"collection": c.name},
            ("stage_change", c.name),
        )
    )
    p.add_tool(
        ToolPlan(
            "commit_changes",
            "commit",
            "write",
            "Apply every staged draft at once (all or nothing) and clear the drafts.",
            [],
            list(dict.fromkeys([drafts, *p.write_fields(c.name)])),
            ["committed"],
            {},
            ("commit",),
        )
    )
    p.add_tool(
        ToolPlan(
            "list_drafts",
            "list_drafts",
            "read",
            "List the staged drafts not yet committed.",
            [],
            returns=["drafts"],
            key=("list_drafts",),
        )
    )


def _advance_tool(p: Plan) -> None:
    c = _primary(p)
    c.stages = [s for s in c.statuses if not _cancel_like(s)]
    p.add_tool(
        ToolPlan(
            f"advance_{c.entity}",
            "advance",
            "write",
            f"Move a {_w(c.entity)} record to the next stage of its pipeline ({' -> '.join(c.stages)}).",
            [_id_param(c)],
            p.write_fields(c.name),
            [c.entity, "stage"],
            {"collection": c.name},
            ("advance", c.name),
        )
    )


@mechanic("cross_tool_pipeline")
def _pipeline(p: Plan) -> None:
    c = _primary(p)
    _advance_tool(p)
    reports = p.config.setdefault("reports", p.free("reports"))
    p.state.setdefault(reports, {})
    p.add_tool(
        ToolPlan(
            f"render_{c.name}_report",
            "render_report",
            "write",
            f"Aggregate the {c.entity.replace('_', ' ')} records by status into a rendered report.",
            [
                Param(
                    "format", "Literal['markdown', 'bullets', 'json']", "the output format", "markdown", False
                )
            ],
            [reports, p.config["log"]],
            ["report"],
            {"collection": c.name, "reports": reports},
            ("render_report", c.name),
        )
    )


@mechanic("human_agent_interaction")
def _human(p: Plan) -> None:
    c = _primary(p)
    finals = [s for s, nxt in c.transitions.items() if not nxt]
    c.gated = finals
    conf = p.config.setdefault("confirmations", p.free("confirmations"))
    p.state.setdefault(conf, {})
    p.add_tool(
        ToolPlan(
            f"request_{c.entity}_confirmation",
            "request_confirmation",
            "write",
            f"Ask the user to confirm moving a {c.entity.replace('_', ' ')} record to a final status "
            f"({', '.join(finals)}); such moves are refused without it.",
            [
                _id_param(c),
                Param("status", _status_hint(c), "the status the user should confirm"),
                Param("note", "str | None", "what to tell the user", None, False),
            ],
            [conf, p.config["log"]],
            ["confirmation", "reply"],
            {"collection": c.name},
            ("request_confirmation", c.name),
        )
    )


def _events(p: Plan) -> str:
    if not p.config.get("events"):
        p.config["events"] = p.free("events")
        p.state[p.config["events"]] = []
        c = _primary(p)
        p.config["triggers"] = [
            {"collection": c.name, "status": s, "event": f"{c.entity}_{s}"} for s in c.statuses
        ]
        p.add_tool(
            ToolPlan(
                "list_events",
                "list_events",
                "read",
                "List the events the environment fired (one per status change), after an offset.",
                [Param("after_offset", "int | None", "only events with a larger offset", None, False)],
                returns=["events", "total"],
                key=("list_events",),
            )
        )
    return p.config["events"]


@mechanic("event_triggering")
def _event(p: Plan) -> None:
    _events(p)


@mechanic("state_machine")
def _fsm(p: Plan) -> None:
    c = _primary(p)
    p.add_tool(
        ToolPlan(
            f"available_{c.entity}_transitions",
            "available_transitions",
            "read",
            f"Show the statuses a {_w(c.entity)} record may move to next (and which need confirmation).",
            [_id_param(c)],
            returns=["record_id", "status", "next_statuses"],
            cfg={"collection": c.name},
            key=("available_transitions", c.name),
        )
    )


@mechanic("temporal_scheduling")
def _temporal(p: Plan) -> None:
    c = _primary(p)
    p.add_tool(
        ToolPlan(
            f"schedule_{c.entity}",
            "schedule",
            "write",
            f"Book a time slot for a {_w(c.entity)} record; slots never overlap or start in the past.",
            [
                _id_param(c),
                Param("start", "str", "ISO-8601 start time with zone, e.g. 2026-03-03T10:00:00Z"),
                Param("duration_minutes", "int", "length of the slot in minutes (5-1440)", 60, False),
            ],
            [c.name, p.config["log"]],
            [c.entity],
            {"collection": c.name},
            ("schedule", c.name),
        )
    )


@mechanic("bilateral_matching")
def _matching(p: Plan) -> None:
    a = _primary(p)
    b = next((c for c in p.collections.values() if c.name != a.name), a)
    matches = p.config.setdefault("matches", p.free("matches"))
    p.state.setdefault(matches, {})
    b_param = b.id_param if b is not a else f"partner_{a.id_param}"
    p.add_tool(
        ToolPlan(
            f"match_{a.entity}_with_{b.entity}" if b is not a else f"match_{a.entity}_pair",
            "match",
            "write",
            f"Match a {_w(a.entity)} with a {_w(b.entity)}; each record is matched at most once.",
            [_id_param(a), Param(b_param, "str", f"the {b.entity.replace('_', ' ')} id to match with")],
            list(dict.fromkeys([a.name, b.name, matches, p.config["log"]])),
            ["match"],
            {
                "collection": a.name,
                "partner": b.name,
                "a_param": a.id_param,
                "b_param": b_param,
                "matches": matches,
            },
            ("match", a.name, b.name),
        )
    )


@mechanic("workflow_orchestration")
def _workflow(p: Plan) -> None:
    _advance_tool(p)


@mechanic("stream_processing")
def _stream(p: Plan) -> None:
    _events(p)
    cursor = p.config.setdefault("cursor", p.free("stream_cursor"))
    p.state.setdefault(cursor, {"acked": -1})
    p.add_tool(
        ToolPlan(
            "pending_events",
            "pending_events",
            "read",
            "List the events not yet acknowledged (at-least-once delivery: they stay until acknowledged).",
            [],
            returns=["events", "pending", "acked"],
            key=("pending_events",),
        )
    )
    p.add_tool(
        ToolPlan(
            "acknowledge_events",
            "acknowledge",
            "write",
            "Acknowledge every event up to and including an offset; the consumer cursor only moves forward.",
            [Param("offset", "int", "the last event offset handled")],
            [cursor],
            ["acked", "pending"],
            {},
            ("acknowledge",),
        )
    )


# ---- mapping T_spec tools ------------------------------------------------------------------------------

_VERBS: dict[str, tuple[str, ...]] = {
    "get": (
        "get",
        "read",
        "view",
        "show",
        "fetch",
        "describe",
        "inspect",
        "open",
        "retrieve",
        "check",
        "lookup",
    ),
    "list": ("list", "browse", "all", "enumerate"),
    "search": ("search", "find", "query", "filter", "lookup", "locate"),
    "create": (
        "create",
        "add",
        "new",
        "register",
        "submit",
        "post",
        "log",
        "record",
        "make",
        "insert",
        "file",
    ),
    "update": ("update", "edit", "modify", "change", "rename", "assign", "tag", "set", "patch", "reassign"),
    "transition": ("move", "transition", "mark", "progress", "status"),
}


def _tokens(name: str) -> list[str]:
    return [t for t in name.split("_") if t]


def _target_collection(p: Plan, decl: ToolDecl) -> Collection | None:
    for f in decl.state_fields_affected:
        if f in p.collections:
            return p.collections[f]
    params = set(decl.parameters.properties)
    toks = set(_tokens(decl.name))
    for c in p.collections.values():
        if {c.id_field, c.id_param} & params:
            return c
    for c in p.collections.values():
        if c.name in toks or c.entity in toks or c.entity in decl.name or c.name in decl.name:
            return c
    return None


def _status_target(c: Collection, verb: str) -> str | None:
    """The status a verb moves a record to (``close`` → closed, ``verify`` → verified, ``activate`` →
    active): a shared prefix of at least four letters, at most two short of the shorter word."""
    if len(verb) < 4:
        return None
    for s in c.statuses:
        common = next(
            (i for i, (a, b) in enumerate(zip(verb, s, strict=False)) if a != b), min(len(verb), len(s))
        )
        if common >= 4 and common >= min(len(verb), len(s)) - 2:
            return s
    return None


def _map_tool(p: Plan, decl: ToolDecl) -> tuple[ToolPlan | None, str]:
    """The operation a declared tool compiles onto, or None and why not."""
    if not IDENT_RE.match(decl.name) or keyword.iskeyword(decl.name) or decl.name in _RESERVED_TOOLS:
        return None, "tool name is not a usable identifier"
    c = _target_collection(p, decl)
    if c is None:
        return None, "names no entity collection (by state_fields_affected, id parameter or name)"
    toks = _tokens(decl.name)
    verb = toks[0] if toks else ""
    params = set(decl.parameters.properties)
    has_id = bool({c.id_field, c.id_param} & params)
    desc = _clean(decl.description)
    target = _status_target(c, verb) if decl.side_effect == "write" else None
    if decl.side_effect == "read":
        if verb in _VERBS["search"] and not has_id:
            kind = "search"
        elif verb in _VERBS["list"] or (verb in _VERBS["get"] and not has_id):
            kind = "list"
        elif verb in _VERBS["get"] or has_id:
            kind = "get"
        else:
            return None, f"read verb {verb!r} maps onto no read operation"
    elif target is not None:
        kind = "transition"
    elif "status" in params or verb in _VERBS["transition"]:
        kind = "transition"
    elif verb in _VERBS["create"] and not has_id:
        kind = "create"
    elif verb in _VERBS["update"] or (has_id and verb in _VERBS["create"]):
        kind = "update"
    else:
        return None, f"write verb {verb!r} maps onto no write operation of {c.name}"
    canon = {t.op: t for t in _core_tools(p, c, True)}[kind]
    out = ToolPlan(
        decl.name,
        canon.op,
        canon.side_effect,
        desc if desc != "-" else canon.description,
        canon.params,
        canon.fields,
        canon.returns,
        dict(canon.cfg),
        canon.key,
    )
    if kind == "transition" and target is not None:
        out.params = [_id_param(c)]
        out.cfg["target"] = target
        out.key = ("transition", c.name, target)
        out.description = f"{out.description} (moves it to '{target}')"
    return out, kind


_MECHANIC_VERBS: dict[str, tuple[str, ...]] = {
    "schedule": ("schedule", "book", "reschedule", "reserve", "slot", "plan"),
    "advance": ("advance", "promote", "proceed", "next", "forward", "process", "run"),
    "request_confirmation": ("confirm", "ask", "request", "consult", "check"),
    "match": ("match", "pair", "allocate", "assign"),
    "commit": ("commit", "apply", "save", "finalize"),
    "render_report": ("render", "report", "summarize", "aggregate", "export"),
    "acknowledge": ("acknowledge", "ack", "consume"),
    "list_events": ("events", "history", "poll", "subscribe"),
}


def _mechanic_op(p: Plan, decl: ToolDecl) -> str | None:
    """Rename the archetype-mechanic tool a declared tool's verb names (``book_table`` → the schedule
    tool of the tables) to the declared name and description; the operation, or None when no mechanic
    of the same side effect (and the same collection, when the mechanic has one) fits."""
    if not IDENT_RE.match(decl.name) or keyword.iskeyword(decl.name) or decl.name in _RESERVED_TOOLS:
        return None
    if decl.name in p.tools:
        return None
    verb = (_tokens(decl.name) or [""])[0]
    for op, verbs in _MECHANIC_VERBS.items():
        if verb not in verbs:
            continue
        target = _target_collection(p, decl)
        t = next(
            (
                x
                for x in p.tools.values()
                if x.op == op
                and x.side_effect == decl.side_effect
                and x.cfg.get("collection") in (None, target.name if target else None)
            ),
            None,
        )
        if t is None or t.name in p.mapped:
            continue
        del p.tools[t.name]
        t.name = decl.name[:MAX_TOOL_NAME]
        desc = _clean(decl.description)
        t.description = desc if desc != "-" else t.description
        p.tools[t.name] = t
        return op
    return None


# ---- scenarios -----------------------------------------------------------------------------------------


def _iso(text: str) -> str:
    try:
        t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return DEFAULT_BASE_TIME
    return (t if t.tzinfo else t.replace(tzinfo=UTC)).isoformat()


def _path(c: Collection, start: str, goal: str) -> list[str] | None:
    """Statuses from ``start`` to ``goal`` (exclusive of start) along the lifecycle edges (BFS)."""
    prev: dict[str, str] = {start: start}
    queue = [start]
    while queue:
        s = queue.pop(0)
        if s == goal:
            out = []
            while s != start:
                out.append(s)
                s = prev[s]
            return out[::-1]
        for n in c.transitions.get(s, []):
            if n not in prev:
                prev[n] = s
                queue.append(n)
    return None


@dataclass
class _Goal:
    coll: Collection
    rid: str
    status_path: list[str]
    updates: dict[str, Any]
    source: str


def _rule_goal(p: Plan, rules: list[str]) -> _Goal | None:
    """A goal from the first scoring rule ``<record>.<field> == <value>`` the package can reach."""
    for text in rules:
        m = _RULE_RE.match(text)
        if not m:
            continue
        rid, attr, raw = m.groups()
        for c in p.collections.values():
            rec = p.state[c.name].get(rid)
            if rec is None or attr not in c.attributes or attr == c.id_field:
                continue
            if attr == c.status_field:
                path = _path(c, rec[c.status_field], raw.strip())
                if path:
                    return _Goal(c, rid, path, {}, f"scoring rule {text!r}")
                continue
            value = _coerce(c.attributes[attr], raw.strip())
            if value is not None and rec.get(attr) != value and c.forward(rec[c.status_field]) is not None:
                return _Goal(c, rid, [], {attr: value}, f"scoring rule {text!r}")
    return None


def _lifecycle_goal(p: Plan, index: int) -> _Goal:
    c = _primary(p)
    movable = [rid for rid, r in sorted(p.state[c.name].items()) if c.forward(r[c.status_field])]
    rid = movable[index % len(movable)]
    nxt = c.forward(p.state[c.name][rid][c.status_field])
    assert nxt is not None
    return _Goal(c, rid, [nxt], {}, "lifecycle: the record moves one status forward")


def _steps(p: Plan, g: _Goal) -> list[dict[str, Any]]:
    c = g.coll
    steps: list[dict[str, Any]] = [{"tool": p.tool_for(("get", c.name)), "params": {c.id_param: g.rid}}]
    if g.updates:
        steps.append({"tool": p.tool_for(("update", c.name)), "params": {c.id_param: g.rid, **g.updates}})
    for s in g.status_path:
        if s in c.gated:
            tool = p.tool_for(("request_confirmation", c.name))
            steps.append({"tool": tool, "params": {c.id_param: g.rid, "status": s}})
        steps.append(
            {"tool": p.tool_for(("transition", c.name, None)), "params": {c.id_param: g.rid, "status": s}}
        )
    return steps


def _forbidden(p: Plan, g: _Goal) -> list[dict[str, Any]]:
    c = g.coll
    final = g.status_path[-1] if g.status_path else p.state[c.name][g.rid][c.status_field]
    bad = next((s for s in c.statuses if s != final and s not in c.transitions.get(final, [])), None)
    tool = p.tool_for(("transition", c.name, None))
    out = [{"tool": tool, "params": {c.id_param: f"{c.prefix}-0000", "status": c.statuses[-1]}}]
    if bad is not None:
        out.insert(0, {"tool": tool, "params": {c.id_param: g.rid, "status": bad}})
    return out


def _scenario(p: Plan, sc: Any, index: int, claw: bool) -> dict[str, Any]:
    rules = [r.rule for r in sc.scoring_rules] if sc is not None else []
    goal = _rule_goal(p, rules) or _lifecycle_goal(p, index)
    c = goal.coll
    rec = p.state[c.name][goal.rid]
    expected: dict[str, Any] = dict(goal.updates)
    if goal.status_path:
        expected[c.status_field] = goal.status_path[-1]
    others = [r for r in sorted(p.state[c.name]) if r != goal.rid][:3]
    label = rec.get(c.label_field) or goal.rid
    what = ", ".join(f"{k} = {v!r}" for k, v in expected.items())
    concrete = (
        f"Concretely: {c.entity.replace('_', ' ')} {goal.rid} ({label}) must end with {what}; "
        "leave the other records as they are."
    )
    if goal.status_path and any(s in c.gated for s in goal.status_path):
        concrete += " Ask the user to confirm before a final status change."
    if sc is not None:
        sid, prompt, base = sc.scenario_id, _clean(sc.task_prompt, 1500), _iso(sc.base_time)
        gold, stale = list(sc.gold_facts), list(sc.stale_facts)
    else:
        raw = f"{c.entity}_{expected.get(c.status_field, 'update')}_{goal.rid}".lower()
        sid = re.sub(r"[^a-z0-9_]+", "_", raw).strip("_")[:60]
        prompt = f"Bring the {c.entity.replace('_', ' ')} {goal.rid} forward in its lifecycle."
        base = _iso(p.spec.scenarios[0].base_time) if p.spec.scenarios else DEFAULT_BASE_TIME
        gold, stale = [f"{goal.rid} is '{rec[c.status_field]}' at the start"], []
    account = p.spec.world_data.accounts[0].account_id if p.spec.world_data.accounts else None
    out = {
        "scenario_id": sid,
        "title": _clean(prompt, 80),
        "description": f"Compiled from the spec; goal from {goal.source}.",
        "task_prompt": f"{prompt}\n\n{concrete}",
        "base_time": base,
        "workspace_account": account,
        "overrides": {},
        "evaluation": {
            "expected": {c.name: {goal.rid: expected}},
            "untouched": {c.name: {r: {c.status_field: p.state[c.name][r][c.status_field]} for r in others}},
            "penalised": list(PENALISED),
            "scoring_rules": [r.model_dump() for r in sc.scoring_rules] if sc is not None else [],
            "gold_facts": gold,
            "stale_facts": stale,
            "goal_source": goal.source,
            "claw": claw,
        },
        "reference_solution": _steps(p, goal),
        "forbidden_actions": _forbidden(p, goal),
    }
    return out


# ---- writing -------------------------------------------------------------------------------------------


def _wrap(head: str, items: list[str], tail: str, width: int = 110) -> str:
    """``head + items + tail`` on one line, or one item per line when that is too long (black style)."""
    line = head + ", ".join(items) + tail
    if len(line) <= width:
        return line
    indent = " " * (len(head) - len(head.lstrip()) + 4)
    return head + "\n" + "".join(f"{indent}{x},\n" for x in items) + indent[:-4] + tail


def _py_tool(t: ToolPlan) -> str:
    t.params.sort(key=lambda x: not x.required)  # Python: parameters with defaults come last
    sig = ["session: dict"]
    for prm in t.params:
        sig.append(f"{prm.name}: {prm.hint}" + ("" if prm.required else f" = {prm.default!r}"))
    deco = f"@tool({t.side_effect!r}"
    if t.fields:
        deco += f", fields={t.fields!r}"
    if t.returns:
        deco += f", returns={t.returns!r}"
    deco += ")"
    doc = [f'    """{_clean(t.description, 300)}']
    if t.params:
        doc += ["", "    Args:"] + [
            f"        {prm.name}: {_clean(prm.description, 120)}." for prm in t.params
        ]
    doc.append('    """')
    call = ", ".join([f"{t.name!r}"] + [f"{prm.name}={prm.name}" for prm in t.params])
    return "\n".join(
        [
            deco,
            _wrap(f"def {t.name}(", sig, ") -> dict:"),
            *doc,
            _wrap("    return _run(", ["session", "CONFIG", *call.split(", ")], ")"),
            "",
            "",
        ]
    )


def _files(p: Plan, scenarios: list[dict[str, Any]], claw: bool, archetypes: list[str]) -> dict[str, str]:
    cls = "".join(w.title() for w in p.env.split("_"))[:60] + "Env"
    dims = "\n".join(
        T.DIMENSION.substitute(name=name, weight=weight, doc=_clean(doc)) for name, weight, doc in DIMENSIONS
    )
    doc = _clean(p.spec.task_description, 300).replace('"', "'")
    return {
        "__init__.py": T.INIT.substitute(env=p.env, cls=cls),
        "__main__.py": T.MAIN.substitute(env=p.env),
        "env.py": T.ENV.substitute(env=p.env, cls=cls, doc=doc, prefix=p.env.upper()[:40]),
        "state.py": T.STATE.substitute(),
        "evaluator.py": T.EVALUATOR.substitute(dimensions=dims),
        "tools.py": T.TOOLS.substitute(env=p.env, tools="\n".join(_py_tool(t) for t in p.tools.values())),
        "README.md": _readme(p, scenarios, claw, archetypes),
        "SKILL.md": _skill(p, claw),
        "data/config.json": json.dumps(p.config, indent=1, sort_keys=True) + "\n",
        "data/world.json": json.dumps(p.state, indent=1, sort_keys=True) + "\n",
        **{f"data/scenarios/{s['scenario_id']}.json": json.dumps(s, indent=1) + "\n" for s in scenarios},
    }


def _readme(p: Plan, scenarios: list[dict[str, Any]], claw: bool, archetypes: list[str]) -> str:
    lines = [
        f"# {p.env}",
        "",
        _clean(p.spec.task_description, 600),
        "",
        "Compiled deterministically from an E_spec/T_spec by `dataclaw.envcraft.synth.compile`",
        f"(no model-written code). Archetypes: {', '.join(archetypes) or 'none'};",
        f"mechanics: {', '.join(p.mechanics) or 'core'}.",
        "",
        "## State",
        "",
    ]
    for c in p.collections.values():
        lines.append(f"- `{c.name}`: {c.entity} records by `{c.id_field}`; lifecycle {_lifecycle_text(c)}")
    lines += ["", "## Tools", ""]
    lines += [f"- `{t.name}` ({t.side_effect}): {_clean(t.description, 160)}" for t in p.tools.values()]
    lines += ["", "## Scenarios", ""]
    lines += [f"- `{s['scenario_id']}`: {s['title']}" for s in scenarios]
    lines += [
        "",
        "## Use",
        "",
        "Sessions, storage, the clock and the CLI come from `dataclaw.envcraft.runtime`:",
        f"`python -m {p.path_name} prepare-rollout --scenario-id ID --state-root DIR --show-bindings`,",
        "then the agent commands with the printed bindings. Check it with `dataclaw env audit <folder>`.",
    ]
    if claw:
        lines += [
            "",
            "Claw scenario: `bash` runs a command over the session's records as files (see SKILL.md).",
        ]
    return "\n".join(lines) + "\n"


def _skill(p: Plan, claw: bool) -> str:
    c = _primary(p)
    reads = [t.name for t in p.tools.values() if t.side_effect == "read"]
    writes = [t.name for t in p.tools.values() if t.side_effect == "write"]
    lines = [
        f"# {p.env}: workflow",
        "",
        "1. Read before you write: " + ", ".join(f"`{n}`" for n in reads[:5]) + ".",
        f"2. Find the record by id (`{p.tool_for(('get', c.name))}`) and check its status first.",
        f"3. Change state only with: {', '.join(f'`{n}`' for n in writes[:6])}.",
        f"4. Lifecycle of {c.entity}: {_lifecycle_text(c)}. Other moves are refused.",
        "5. Change only the records the task names; leave the others as they are.",
    ]
    if c.gated:
        lines.append(f"6. Moves to {', '.join(c.gated)} need the user's confirmation first (request it).")
    rules = [_clean(r.description, 150) for r in p.spec.business_rules][:6]
    if rules:
        lines += ["", "## Rules", ""] + [f"- {r}" for r in rules]
    order = p.spec.constraints.required_reading_order[:5]
    if order:
        lines += ["", "Read in this order: " + ", ".join(order) + "."]
    for seq in p.spec.constraints.forbidden_action_sequences[:3]:
        lines.append("Never do in sequence: " + " -> ".join(seq) + ".")
    if claw:
        lines += [
            "",
            "## Workspace (bash)",
            "",
            "- `bash` sees one JSON file per record, `<collection>/<id>.json`, the logs and a README.md.",
            "- Use it to search and compare records (`ls`, `grep -l`, `python3 -c`); edits there are",
            "  thrown away: change state only through the write tools above.",
            "- Workflow: list the workspace, grep for the record, read it, act with the tools, verify",
            f"  with `{p.tool_for(('get', c.name))}`.",
        ]
    lines += [
        "",
        "Errors are structured (`category`, `message`): read the message, fix the call, retry once.",
    ]
    return "\n".join(lines[:48]) + "\n"


# ---- entry point ---------------------------------------------------------------------------------------


def _package_name(env: str) -> str:
    name = env if IDENT_RE.match(env) else re.sub(r"[^a-z0-9_]", "_", env.lower()).strip("_") or "env"
    if not name[0].isalpha():
        name = "env_" + name
    if name in sys.stdlib_module_names or name in {"dataclaw", "tests", "support", "data"}:
        name += "_env"
    return name


def _is_claw(scenario: Mapping[str, Any] | Any, claw: bool | None) -> bool:
    """``claw`` when given, else whether the scenario record (or a ``ScenarioSpec``) is claw-specific."""
    if claw is not None:
        return claw
    category = (
        scenario.get("category", "") if isinstance(scenario, Mapping) else getattr(scenario, "category", "")
    )
    return str(category).lower() in ("claw", "claw-specific", "claw_specific")


def compile_package(
    e_spec: ESpec,
    t_spec: TSpec,
    retrieved: Sequence[Retrieved],
    out: Path,
    *,
    scenario: Mapping[str, Any],
    claw: bool | None = None,
) -> CompileResult:
    """Compile a spec into an environment package folder ``out/<name>`` (``name`` is the spec's
    environment name, made a safe import name); an earlier compiled package there is replaced. Raises
    :class:`CompileError` for a spec whose names the runtime cannot use (bad identifiers, duplicates,
    reserved keys) or that declares no entity."""
    issues = check_spec(e_spec, t_spec)
    fatal = [i for i in issues if i.code in _FATAL and _FATAL_PATH.match(i.path)]
    if fatal:
        raise CompileError(
            f"{e_spec.environment_name}: spec cannot be compiled: " + "; ".join(i.line() for i in fatal[:5])
        )
    if not e_spec.entities:
        raise CompileError(f"{e_spec.environment_name}: spec declares no entity, nothing to compile")
    defaults = [f"spec issue tolerated: {i.line()}" for i in issues if i not in fatal]
    env = _package_name(e_spec.environment_name)
    if env != e_spec.environment_name:
        defaults.append(f"package named {env!r} (not {e_spec.environment_name!r}: unsafe as an import name)")
    is_claw = _is_claw(scenario, claw)
    colls = _build_collections(e_spec, defaults)
    state = _world_state(e_spec, colls, defaults)
    first = [e for sc in e_spec.scenarios for e in sc.entities]
    by_entity = {c.entity: c.name for c in colls.values()}
    primary = next((by_entity[e] for e in first if e in by_entity), next(iter(colls)))
    config: dict[str, Any] = {"env": env, "collections": {}, "tools": {}}
    plan = Plan(env, e_spec, colls, primary, state, config, defaults=defaults)
    for f in e_spec.state_fields:  # the spec's other state: kept, with empty values
        if f.name not in state:  # (a second collection of one entity stays an empty collection)
            state[f.name] = {"log": [], "counter": 0, "setting": {}, "collection": {}}[f.kind]
    logs = [f.name for f in e_spec.state_fields if f.kind == "log"]
    config["log"] = logs[0] if logs else plan.free("activity_log")
    state.setdefault(config["log"], [])
    config["counters"] = plan.free("id_counters")
    state[config["counters"]] = {}
    # T_spec tools first (their names win), then archetype mechanics, then the canonical floor
    unmapped: list[tuple[ToolDecl, str]] = []
    for decl in t_spec.tools:
        mapped, why = _map_tool(plan, decl)
        if mapped is None:
            unmapped.append((decl, why))
        elif not plan.add_tool(mapped, canonical=False):
            plan.dropped.append((decl.name, "a tool of that name is already compiled"))
        else:
            plan.mapped[decl.name] = why
    names = [r.name for r in retrieved][:2]
    if not names:
        defaults.append("no archetype retrieved: core mechanics only")
    for name in names:
        if name in MECHANICS:
            MECHANICS[name](plan)
            plan.mechanics.append(name)
    for decl, why in unmapped:  # a declared tool may name an archetype mechanic: it takes that tool over
        op = _mechanic_op(plan, decl)
        if op is None:
            plan.dropped.append((decl.name, why))
        else:
            plan.mapped[decl.name] = op
    for c in colls.values():
        for t in _core_tools(plan, c, True):
            plan.add_tool(t)
    if is_claw:
        plan.add_tool(
            ToolPlan(
                "bash",
                "bash",
                "read",
                "Run a bash command over the workspace: one JSON file per record (<collection>/<id>.json), "
                "the logs; edits there are discarded.",
                [Param("command", "str", "the bash command line")],
                returns=["output", "ok"],
                key=("bash",),
            )
        )
    plan.config["collections"] = {c.name: c.config() for c in colls.values()}
    # tools compiled before a mechanic added the events log fire events too: declare it
    for t in plan.tools.values():
        if t.side_effect == "write" and t.op in ("create", "update", "transition", "advance"):
            t.fields = plan.write_fields(t.cfg["collection"], *t.fields)
        plan.config["tools"][t.name] = {"op": t.op, **t.cfg}
    specs = list(e_spec.scenarios)
    scenarios = [_scenario(plan, sc, i, is_claw) for i, sc in enumerate(specs)]
    seen: set[str] = set()
    for k, s in enumerate(scenarios):
        if not IDENT_RE.match(s["scenario_id"]) or s["scenario_id"] in seen:
            defaults.append(
                f"scenario {s['scenario_id']!r} renamed scenario_{k + 1} (unusable or repeated id)"
            )
            s["scenario_id"] = f"scenario_{k + 1}"
        seen.add(s["scenario_id"])
    i = len(scenarios)
    while len(scenarios) < MIN_SCENARIOS:
        s = _scenario(plan, None, i, is_claw)
        i += 1
        if s["scenario_id"] in {x["scenario_id"] for x in scenarios}:
            s["scenario_id"] += f"_{i}"
        scenarios.append(s)
        defaults.append(f"scenario {s['scenario_id']} added (the spec has {len(specs)})")
    plan.path_name = env
    folder = Path(out) / env
    _write(folder, _files(plan, scenarios, is_claw, names), plan, is_claw)
    result = CompileResult(
        path=folder,
        env_name=env,
        tools=list(plan.tools),
        scenarios=[s["scenario_id"] for s in scenarios],
        dropped=plan.dropped,
        archetypes=names,
        claw=is_claw,
        mechanics=plan.mechanics,
        defaults=defaults,
        mapped=plan.mapped,
    )
    (folder / MARKER).write_text(result.model_dump_json(indent=1, exclude={"path"}) + "\n", encoding="utf-8")
    return result


def _write(folder: Path, files: dict[str, str], plan: Plan, claw: bool) -> None:
    if folder.exists():
        if not (folder / MARKER).is_file():
            raise CompileError(f"{folder} exists and is not a compiled package; refusing to replace it")
        shutil.rmtree(folder)
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    if claw:  # the S0 workspace a claw task starts from (the layout the bash tool shows)
        for rel, text in workspace_files(plan.state, plan.config).items():
            path = folder / "data" / "workspace" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
