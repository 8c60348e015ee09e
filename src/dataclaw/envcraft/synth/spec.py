"""E_spec and T_spec (EnvCraft §3.1, C.2, C.3): what an environment must model and the tools it exposes.

E_spec follows the C.2 input schema (domains, world data, scenarios with gold/stale facts, allowed and
forbidden claims, scoring rules, constraints) plus what §3.2 says it defines: entity types with their
state attributes, the state fields that hold them, and business rules. C.2's id-keyed maps (accounts,
contacts, attachments, scoring rules) are lists with an id field here, so ids can be checked unique and
JSON-schema grammars stay small. T_spec is a list of tools in the C.3 unified schema — exactly what
:meth:`dataclaw.envcraft.runtime.tools.ToolSpec.unified_schema` renders, so a compiler can target it.

The JSON schemas sent to the model (:func:`e_spec_schema`, :func:`t_spec_schema`) carry no string-length
bounds (llama.cpp grammars would not compile); lengths, identifiers and referential integrity are
checked here by code (:func:`check_spec`), each problem an :class:`Issue` with a :class:`IssueCode`.
"""

from __future__ import annotations

import keyword
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

IDENT_RE = re.compile(r"^[a-z][a-z0-9_]{0,47}$")
"""Names the runtime can use as Python identifiers, state keys and CLI command names."""
RESERVED_STATE_FIELDS = frozenset(
    {"session_id", "scenario_id", "created_at", "meta", "workspace_account", "actions"}
)
"""Top-level session keys the runtime owns (C.1 state template): a spec may not declare them."""
ATTRIBUTE_TYPES = ("string", "integer", "number", "boolean", "array", "object")
PARAM_TYPES = ATTRIBUTE_TYPES
FIELD_KINDS = ("collection", "log", "counter", "setting")
MAX_TEXT = 2000
"""Longest description/prompt/fact a spec may carry (checked in code, not in the schema)."""

_STRICT = ConfigDict(extra="forbid")


class Attribute(BaseModel):
    model_config = _STRICT
    name: str
    type: Literal["string", "integer", "number", "boolean", "array", "object"]
    description: str = ""


class Entity(BaseModel):
    """A domain entity type: its state attributes, its id attribute and (optional) status values."""

    model_config = _STRICT
    name: str
    description: str = ""
    id_field: str
    attributes: list[Attribute]
    statuses: list[str] = Field(default_factory=list)


class StateField(BaseModel):
    """A top-level session-state field: a collection of one entity's records, a log, a counter or a
    setting. Tools name these in ``state_fields_affected``."""

    model_config = _STRICT
    name: str
    kind: Literal["collection", "log", "counter", "setting"]
    entity: str = ""
    description: str = ""


RULE_KINDS = ("precondition", "limit", "quota", "approval", "unique", "reference", "computed")
"""The rule language's kinds (see :class:`BusinessRule`); a rule without a kind is prose only."""
RULE_COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
RULE_AGGREGATES = ("sum", "count")
RULE_WRITES = ("create", "update")
"""Besides a status of the entity (a move to it), the writes a rule's ``on`` may name."""


class BusinessRule(BaseModel):
    """A rule governing valid state changes, over the entities it names: prose (``description``) and,
    when ``kind`` is set, a check the compiler turns into a guard every compiled tool enforces.

    The rule language (one flat object, so a grammar stays small; which fields a kind reads):

    - ``precondition``: before a write ``on`` an ``entity`` record (``create``, ``update`` or a status it
      moves to), ``field op value`` must hold on the record, or on the ``related`` record its ``via``
      attribute names (an order must be ``paid`` before it is ``shipped``).
    - ``limit``: after a write ``on`` (any write when empty), the record's numeric ``field op value`` holds
      (a refund's amount ``<= 500``).
    - ``quota``: at most ``value`` (or the ``related`` record's ``of`` attribute: a capacity) records of
      ``entity`` that are not cancelled point at one ``related`` record through ``via``.
    - ``approval``: a move to status ``on`` needs an approval by an account whose role is ``role``, when
      ``field op value`` holds (refunds over 100 need a manager), always when no ``field`` is given.
    - ``unique``: no two open records of ``entity`` share a ``field`` value.
    - ``reference``: ``field`` of an ``entity`` record names an existing ``related`` record (required on
      create).
    - ``computed``: ``field`` of an ``entity`` record is the ``op`` (``sum`` of ``of``, or ``count``) over
      the ``related`` records whose ``via`` names it, kept by the tools and never written directly.

    An empty ``entity`` is the first of ``entities``.
    """

    model_config = _STRICT
    rule_id: str
    description: str
    entities: list[str] = Field(default_factory=list)
    kind: Literal["", "precondition", "limit", "quota", "approval", "unique", "reference", "computed"] = ""
    entity: str = ""
    on: str = ""
    field: str = ""
    op: Literal["", "==", "!=", "<", "<=", ">", ">=", "sum", "count"] = ""
    value: str | int | float | bool | None = None
    related: str = ""
    via: str = ""
    of: str = ""
    role: str = ""


class Account(BaseModel):
    model_config = _STRICT
    account_id: str
    name: str
    role: str = ""
    persona: str = ""


class Contact(BaseModel):
    model_config = _STRICT
    contact_id: str
    name: str
    org: str = ""
    role: str = ""


class Attachment(BaseModel):
    model_config = _STRICT
    attachment_id: str
    filename: str
    content: str = ""


class WorldRecord(BaseModel):
    """One record of immutable world data (C.2 ``domain_artifacts``): an entity instance."""

    model_config = _STRICT
    record_id: str
    entity: str
    fields: dict[str, Any] = Field(default_factory=dict)


class WorldData(BaseModel):
    model_config = _STRICT
    accounts: list[Account] = Field(default_factory=list)
    contacts: list[Contact] = Field(default_factory=list)
    attachments: list[Attachment] = Field(default_factory=list)
    records: list[WorldRecord] = Field(default_factory=list)


class ScoringRule(BaseModel):
    model_config = _STRICT
    dimension: str
    weight: float
    rule: str


class SpecScenario(BaseModel):
    """A C.2 scenario: task prompt, base time, the entities it involves, facts, claims and scoring."""

    model_config = _STRICT
    scenario_id: str
    task_prompt: str
    base_time: str
    entities: list[str] = Field(default_factory=list)
    gold_facts: list[str] = Field(default_factory=list)
    stale_facts: list[str] = Field(default_factory=list)
    required_attachments: list[str] = Field(default_factory=list)
    required_replies: list[str] = Field(default_factory=list)
    allowed_claims: list[str] = Field(default_factory=list)
    forbidden_claims: list[str] = Field(default_factory=list)
    scoring_rules: list[ScoringRule] = Field(default_factory=list)


class Constraints(BaseModel):
    model_config = _STRICT
    max_turns: int | None = None
    required_reading_order: list[str] = Field(default_factory=list)
    forbidden_action_sequences: list[list[str]] = Field(default_factory=list)


class ESpec(BaseModel):
    """The environment specification. ``environment_name`` is the framework's (the scenario id)."""

    model_config = _STRICT
    environment_name: str
    task_description: str
    domains: list[str] = Field(default_factory=list)
    entities: list[Entity] = Field(default_factory=list)
    state_fields: list[StateField] = Field(default_factory=list)
    business_rules: list[BusinessRule] = Field(default_factory=list)
    world_data: WorldData = Field(default_factory=WorldData)
    scenarios: list[SpecScenario] = Field(default_factory=list)
    constraints: Constraints = Field(default_factory=Constraints)


class ParamDecl(BaseModel):
    """A parameter: JSON type, description, default (optional parameters), and the runtime's ``enum`` and
    ``items`` refinements when present."""

    model_config = _STRICT
    type: Literal["string", "integer", "number", "boolean", "array", "object"]
    description: str = ""
    default: Any = None
    enum: list[Any] | None = None
    items: dict[str, Any] | None = None


class Parameters(BaseModel):
    model_config = _STRICT
    type: Literal["object"] = "object"
    properties: dict[str, ParamDecl] = Field(default_factory=dict)
    required: list[str] = Field(default_factory=list)


class Returns(BaseModel):
    model_config = _STRICT
    type: Literal["object"] = "object"
    description: str = ""
    success_keys: list[str] = Field(default_factory=list)
    error_format: dict[str, str] = Field(
        default_factory=lambda: {"error": "human-readable, agent-safe message"}
    )


class ToolDecl(BaseModel):
    """One tool in the C.3 unified schema (the shape ``ToolSpec.unified_schema()`` renders)."""

    model_config = _STRICT
    name: str
    description: str
    parameters: Parameters = Field(default_factory=Parameters)
    returns: Returns = Field(default_factory=Returns)
    side_effect: Literal["read", "write"]
    modifies_state: bool
    state_fields_affected: list[str] = Field(default_factory=list)

    def unified_schema(self) -> dict[str, Any]:
        """The C.3 dict as the runtime renders it: optional parameters carry their ``default`` (also
        ``None``), required ones none; absent ``enum``/``items`` are left out."""
        out = self.model_dump(mode="json")
        required = set(self.parameters.required)
        for name, prop in out["parameters"]["properties"].items():
            for key in ("enum", "items"):
                if prop[key] is None:
                    del prop[key]
            if name in required:
                del prop["default"]
        return out


class TSpec(BaseModel):
    """The tool specification: the environment's tools."""

    model_config = _STRICT
    tools: list[ToolDecl] = Field(default_factory=list)

    def reads(self) -> list[ToolDecl]:
        return [t for t in self.tools if t.side_effect == "read"]

    def writes(self) -> list[ToolDecl]:
        return [t for t in self.tools if t.side_effect == "write"]


# ---- issues -------------------------------------------------------------------------------------------


class IssueCode(StrEnum):
    """What is wrong with a spec (machine-readable; the model is shown these when it repairs)."""

    SCHEMA = "schema"
    """The answer is not JSON of the requested schema."""
    EMPTY = "empty"
    DUPLICATE_ID = "duplicate_id"
    BAD_IDENTIFIER = "bad_identifier"
    RESERVED_NAME = "reserved_name"
    UNKNOWN_ENTITY = "unknown_entity"
    UNKNOWN_ATTRIBUTE = "unknown_attribute"
    UNKNOWN_STATE_FIELD = "unknown_state_field"
    UNKNOWN_REFERENCE = "unknown_reference"
    UNKNOWN_TOOL = "unknown_tool"
    UNSTORED_ENTITY = "unstored_entity"
    BAD_TIME = "bad_time"
    BAD_WEIGHT = "bad_weight"
    CONTRADICTION = "contradiction"
    TEXT_TOO_LONG = "text_too_long"
    BAD_SIDE_EFFECT = "bad_side_effect"
    BAD_PARAMETER = "bad_parameter"
    NO_READ_TOOL = "no_read_tool"
    NO_WRITE_TOOL = "no_write_tool"
    BAD_RULE = "bad_rule"
    """A rule of the rule language the compiler cannot enforce (one issue per rule, naming the part)."""


class Issue(BaseModel):
    """One problem: code, where (a JSON-path-like location) and a sentence saying what to change."""

    model_config = ConfigDict(frozen=True)
    code: IssueCode
    path: str
    message: str

    def line(self) -> str:
        return f"{self.code.value} at {self.path}: {self.message}"


def _ident(name: str, path: str, what: str) -> list[Issue]:
    if IDENT_RE.match(name) and not keyword.iskeyword(name):
        return []
    return [
        Issue(
            code=IssueCode.BAD_IDENTIFIER,
            path=path,
            message=f"{what} {name!r} must be snake_case (a-z, 0-9, _; starts with a letter; <= 48 chars)",
        )
    ]


def _unique(names: Iterable[str], path: str, what: str) -> list[Issue]:
    counts = Counter(names)
    return [
        Issue(code=IssueCode.DUPLICATE_ID, path=path, message=f"{what} {n!r} is declared {c} times")
        for n, c in counts.items()
        if c > 1
    ]


def _texts(items: Iterable[tuple[str, str]]) -> list[Issue]:
    return [
        Issue(code=IssueCode.TEXT_TOO_LONG, path=p, message=f"is {len(t)} characters (at most {MAX_TEXT})")
        for p, t in items
        if len(t) > MAX_TEXT
    ]


def _unknown(code: IssueCode, path: str, what: str, name: str, known: Iterable[str]) -> Issue:
    names = sorted(known)
    listed = ", ".join(names[:12]) if names else "none declared"
    return Issue(code=code, path=path, message=f"{what} {name!r} is not declared (declared: {listed})")


def check_e_spec(spec: ESpec) -> list[Issue]:
    """Problems of an E_spec on its own (ids, identifiers, references between its parts)."""
    out: list[Issue] = []
    if not spec.task_description.strip():
        out.append(Issue(code=IssueCode.EMPTY, path="task_description", message="must not be empty"))
    if not spec.entities:
        out.append(Issue(code=IssueCode.EMPTY, path="entities", message="declare at least one entity"))
    if not spec.state_fields:
        out.append(
            Issue(code=IssueCode.EMPTY, path="state_fields", message="declare at least one state field")
        )
    if not spec.scenarios:
        out.append(Issue(code=IssueCode.EMPTY, path="scenarios", message="declare at least one scenario"))
    entities = {e.name: e for e in spec.entities}
    out += _unique((e.name for e in spec.entities), "entities", "entity")
    for i, ent in enumerate(spec.entities):
        where = f"entities[{i}]"
        out += _ident(ent.name, f"{where}.name", "entity name")
        attrs = [a.name for a in ent.attributes]
        if not attrs:
            out.append(Issue(code=IssueCode.EMPTY, path=f"{where}.attributes", message="list its attributes"))
        out += _unique(attrs, f"{where}.attributes", "attribute")
        for j, name in enumerate(attrs):
            out += _ident(name, f"{where}.attributes[{j}].name", "attribute name")
        if ent.id_field not in attrs:
            out.append(
                _unknown(IssueCode.UNKNOWN_ATTRIBUTE, f"{where}.id_field", "id field", ent.id_field, attrs)
            )
        out += _unique(ent.statuses, f"{where}.statuses", "status")
    fields = [f.name for f in spec.state_fields]
    out += _unique(fields, "state_fields", "state field")
    for i, fld in enumerate(spec.state_fields):
        where = f"state_fields[{i}]"
        out += _ident(fld.name, f"{where}.name", "state field name")
        if fld.name in RESERVED_STATE_FIELDS:
            out.append(
                Issue(
                    code=IssueCode.RESERVED_NAME,
                    path=f"{where}.name",
                    message=f"{fld.name!r} is a session key the runtime owns; pick another name",
                )
            )
        if fld.entity and fld.entity not in entities:
            out.append(_unknown(IssueCode.UNKNOWN_ENTITY, f"{where}.entity", "entity", fld.entity, entities))
        if fld.kind == "collection" and not fld.entity:
            out.append(
                Issue(
                    code=IssueCode.UNKNOWN_ENTITY,
                    path=f"{where}.entity",
                    message="a collection must name the entity whose records it holds",
                )
            )
    stored = {f.entity for f in spec.state_fields if f.kind == "collection"}
    for i, ent in enumerate(spec.entities):
        if ent.name not in stored:
            out.append(
                Issue(
                    code=IssueCode.UNSTORED_ENTITY,
                    path=f"entities[{i}]",
                    message=f"no collection state field holds {ent.name!r} records",
                )
            )
    out += _unique((r.rule_id for r in spec.business_rules), "business_rules", "rule id")
    for i, rule in enumerate(spec.business_rules):
        for j, name in enumerate(rule.entities):
            if name not in entities:
                path = f"business_rules[{i}].entities[{j}]"
                out.append(_unknown(IssueCode.UNKNOWN_ENTITY, path, "entity", name, entities))
        problem = rule_problem(rule, entities) if rule.kind else None
        if problem:
            out.append(Issue(code=IssueCode.BAD_RULE, path=f"business_rules[{i}]", message=problem))
    out += _check_world(spec, entities)
    out += _check_scenarios(spec, entities)
    out += _texts(
        [("task_description", spec.task_description)]
        + [(f"entities[{i}].description", e.description) for i, e in enumerate(spec.entities)]
        + [(f"business_rules[{i}].description", r.description) for i, r in enumerate(spec.business_rules)]
        + [(f"scenarios[{i}].task_prompt", s.task_prompt) for i, s in enumerate(spec.scenarios)]
    )
    return out


def _number(value: Any) -> float | None:
    """A rule's number (a model writes ``"100"`` as often as ``100``), or None."""
    if isinstance(value, bool):
        return None
    try:
        return float(value) if isinstance(value, int | float | str) else None
    except ValueError:
        return None


def _attr_types(ent: Entity) -> dict[str, str]:
    return {a.name: a.type for a in ent.attributes}


def rule_problem(rule: BusinessRule, entities: dict[str, Entity]) -> str | None:
    """Why a rule of the rule language cannot be enforced (the first problem, one sentence), or None."""
    kind = rule.kind
    ent = entities.get(rule.entity or (rule.entities[0] if rule.entities else ""))
    if ent is None:
        return f"{kind} rule {rule.rule_id!r}: entity {rule.entity!r} is not declared"
    attrs = _attr_types(ent)
    rel = entities.get(rule.related) if rule.related else None
    if rule.related and rel is None:
        return f"{kind} rule {rule.rule_id!r}: related entity {rule.related!r} is not declared"
    rel_attrs = _attr_types(rel) if rel is not None else {}
    numeric = ("integer", "number")
    if rule.on and rule.on not in RULE_WRITES and rule.on not in ent.statuses:
        return (
            f"{kind} rule {rule.rule_id!r}: on {rule.on!r} is neither create, update nor a status of "
            f"{ent.name} ({', '.join(ent.statuses) or 'none declared'})"
        )
    needs: dict[str, tuple[bool, str]] = {
        "precondition": (
            bool(rule.field and rule.op in RULE_COMPARISONS and rule.value is not None),
            "needs field, a comparison op and a value",
        ),
        "limit": (
            bool(rule.field and rule.op in RULE_COMPARISONS and _number(rule.value) is not None),
            "needs a numeric field, a comparison op and a number",
        ),
        "quota": (
            bool(
                rule.related
                and rule.via
                and rule.op in ("<", "<=")
                and (isinstance(rule.value, int) or rule.of)
            ),
            "needs related, via, op < or <= and a number value (or of: the related capacity field)",
        ),
        "approval": (
            rule.on in ent.statuses and bool(rule.role),
            "needs on (a status of the entity) and a role",
        ),
        "unique": (bool(rule.field), "needs field"),
        "reference": (bool(rule.field and rule.related), "needs field and related"),
        "computed": (
            bool(
                rule.field
                and rule.related
                and rule.via
                and rule.op in RULE_AGGREGATES
                and (rule.of or rule.op == "count")
            ),
            "needs field, related, via, op sum or count (and of for sum)",
        ),
    }
    ok, what = needs[kind]
    if not ok:
        return f"{kind} rule {rule.rule_id!r} {what}"
    if kind == "precondition" and rule.related:
        if rule.via not in attrs:
            return f"precondition rule {rule.rule_id!r}: via {rule.via!r} is not a {ent.name} attribute"
        if rule.field not in rel_attrs:
            return f"precondition rule {rule.rule_id!r}: {rule.field!r} is not a {rule.related} attribute"
        return None
    if kind in ("quota", "computed"):
        holder, owner = (attrs, ent.name) if kind == "quota" else (rel_attrs, rule.related)
        if rule.via not in holder:
            return f"{kind} rule {rule.rule_id!r}: via {rule.via!r} is not a {owner} attribute"
        if rule.of and rel_attrs.get(rule.of) not in numeric:
            return f"{kind} rule {rule.rule_id!r}: of {rule.of!r} is not a numeric {rule.related} attribute"
        if kind == "quota":
            return None
    if kind == "approval" and not rule.field:
        return None
    if rule.field not in attrs:
        return f"{kind} rule {rule.rule_id!r}: field {rule.field!r} is not a {ent.name} attribute"
    if kind in ("limit", "computed") and attrs[rule.field] not in numeric:
        return f"{kind} rule {rule.rule_id!r}: field {rule.field!r} is not numeric"
    if kind == "approval" and rule.op not in RULE_COMPARISONS:
        return f"approval rule {rule.rule_id!r}: a condition field needs a comparison op and a value"
    return None


def _check_world(spec: ESpec, entities: dict[str, Entity]) -> list[Issue]:
    world = spec.world_data
    out = _unique((a.account_id for a in world.accounts), "world_data.accounts", "account id")
    out += _unique((c.contact_id for c in world.contacts), "world_data.contacts", "contact id")
    out += _unique((a.attachment_id for a in world.attachments), "world_data.attachments", "attachment id")
    out += _unique(
        (f"{r.entity}/{r.record_id}" for r in world.records), "world_data.records", "entity/record id"
    )
    for i, rec in enumerate(world.records):
        where = f"world_data.records[{i}]"
        ent = entities.get(rec.entity)
        if ent is None:
            out.append(_unknown(IssueCode.UNKNOWN_ENTITY, f"{where}.entity", "entity", rec.entity, entities))
            continue
        attrs = {a.name for a in ent.attributes}
        for name in rec.fields:
            if name not in attrs:
                out.append(
                    _unknown(
                        IssueCode.UNKNOWN_ATTRIBUTE,
                        f"{where}.fields.{name}",
                        f"{ent.name} attribute",
                        name,
                        attrs,
                    )
                )
    return out


def _check_scenarios(spec: ESpec, entities: dict[str, Entity]) -> list[Issue]:
    out = _unique((s.scenario_id for s in spec.scenarios), "scenarios", "scenario id")
    attachments = {a.attachment_id for a in spec.world_data.attachments}
    for i, sc in enumerate(spec.scenarios):
        where = f"scenarios[{i}]"
        out += _ident(sc.scenario_id, f"{where}.scenario_id", "scenario id")
        if not sc.task_prompt.strip():
            out.append(Issue(code=IssueCode.EMPTY, path=f"{where}.task_prompt", message="must not be empty"))
        try:
            datetime.fromisoformat(sc.base_time.replace("Z", "+00:00"))
        except ValueError:
            out.append(
                Issue(
                    code=IssueCode.BAD_TIME,
                    path=f"{where}.base_time",
                    message=f"{sc.base_time!r} is not an ISO-8601 time like 2026-03-02T09:00:00Z",
                )
            )
        if not sc.entities:
            out.append(
                Issue(code=IssueCode.EMPTY, path=f"{where}.entities", message="name the entities used")
            )
        for j, name in enumerate(sc.entities):
            if name not in entities:
                out.append(
                    _unknown(IssueCode.UNKNOWN_ENTITY, f"{where}.entities[{j}]", "entity", name, entities)
                )
        if not sc.gold_facts:
            out.append(
                Issue(code=IssueCode.EMPTY, path=f"{where}.gold_facts", message="state the gold facts")
            )
        for key in ("gold_facts", "stale_facts", "allowed_claims", "forbidden_claims", "required_replies"):
            for j, text in enumerate(getattr(sc, key)):
                if not text.strip():
                    out.append(Issue(code=IssueCode.EMPTY, path=f"{where}.{key}[{j}]", message="is blank"))
        for j, att in enumerate(sc.required_attachments):
            if att not in attachments:
                path = f"{where}.required_attachments[{j}]"
                out.append(_unknown(IssueCode.UNKNOWN_REFERENCE, path, "attachment", att, attachments))
        for a, b, what in (
            (sc.gold_facts, sc.stale_facts, "fact is both gold and stale"),
            (sc.allowed_claims, sc.forbidden_claims, "claim is both allowed and forbidden"),
        ):
            for text in sorted(set(a) & set(b)):
                out.append(Issue(code=IssueCode.CONTRADICTION, path=where, message=f"{what}: {text!r}"))
        if not sc.scoring_rules:
            out.append(
                Issue(code=IssueCode.EMPTY, path=f"{where}.scoring_rules", message="add scoring rules")
            )
        out += _unique((r.dimension for r in sc.scoring_rules), f"{where}.scoring_rules", "dimension")
        for j, rule in enumerate(sc.scoring_rules):
            if not rule.weight > 0:
                out.append(
                    Issue(
                        code=IssueCode.BAD_WEIGHT,
                        path=f"{where}.scoring_rules[{j}].weight",
                        message=f"weight {rule.weight} must be > 0",
                    )
                )
    return out


def check_t_spec(tools: TSpec, spec: ESpec) -> list[Issue]:
    """Problems of a T_spec against its E_spec: names, side effects, parameters, affected fields."""
    out: list[Issue] = []
    fields = {f.name for f in spec.state_fields}
    if not tools.tools:
        out.append(Issue(code=IssueCode.EMPTY, path="tools", message="declare the tools"))
    out += _unique((t.name for t in tools.tools), "tools", "tool name")
    for i, t in enumerate(tools.tools):
        where = f"tools[{i}]"
        out += _ident(t.name, f"{where}.name", "tool name")
        if not t.description.strip():
            out.append(Issue(code=IssueCode.EMPTY, path=f"{where}.description", message="describe the tool"))
        if t.modifies_state != (t.side_effect == "write"):
            out.append(
                Issue(
                    code=IssueCode.BAD_SIDE_EFFECT,
                    path=f"{where}.modifies_state",
                    message=f"must be {str(t.side_effect == 'write').lower()} for a {t.side_effect} tool",
                )
            )
        if t.side_effect == "write" and not t.state_fields_affected:
            out.append(
                Issue(
                    code=IssueCode.BAD_SIDE_EFFECT,
                    path=f"{where}.state_fields_affected",
                    message="a write tool must name the state fields it changes",
                )
            )
        if t.side_effect == "read" and t.state_fields_affected:
            out.append(
                Issue(
                    code=IssueCode.BAD_SIDE_EFFECT,
                    path=f"{where}.state_fields_affected",
                    message="a read tool changes no state field: leave it empty",
                )
            )
        out += _unique(t.state_fields_affected, f"{where}.state_fields_affected", "affected state field")
        for j, name in enumerate(t.state_fields_affected):
            if name not in fields:
                path = f"{where}.state_fields_affected[{j}]"
                out.append(_unknown(IssueCode.UNKNOWN_STATE_FIELD, path, "state field", name, fields))
        props = t.parameters.properties
        for name in props:
            out += _ident(name, f"{where}.parameters.properties.{name}", "parameter name")
            if name == "session":
                out.append(
                    Issue(
                        code=IssueCode.RESERVED_NAME,
                        path=f"{where}.parameters.properties.{name}",
                        message="'session' is the runtime's first tool argument; rename the parameter",
                    )
                )
        for name in t.parameters.required:
            if name not in props:
                out.append(
                    Issue(
                        code=IssueCode.BAD_PARAMETER,
                        path=f"{where}.parameters.required",
                        message=f"required parameter {name!r} is not in properties",
                    )
                )
            elif props[name].default is not None:
                out.append(
                    Issue(
                        code=IssueCode.BAD_PARAMETER,
                        path=f"{where}.parameters.properties.{name}.default",
                        message=f"required parameter {name!r} cannot have a default",
                    )
                )
        out += _unique(t.parameters.required, f"{where}.parameters.required", "required parameter")
        out += _texts([(f"{where}.description", t.description)])
    if tools.tools and not tools.reads():
        out.append(Issue(code=IssueCode.NO_READ_TOOL, path="tools", message="add at least one read tool"))
    if tools.tools and not tools.writes():
        out.append(Issue(code=IssueCode.NO_WRITE_TOOL, path="tools", message="add at least one write tool"))
    names = {t.name for t in tools.tools}
    for i, seq in enumerate(spec.constraints.forbidden_action_sequences):
        for j, name in enumerate(seq):
            if name not in names:
                path = f"constraints.forbidden_action_sequences[{i}][{j}]"
                out.append(_unknown(IssueCode.UNKNOWN_TOOL, path, "tool", name, names))
    readable = {a.attachment_id for a in spec.world_data.attachments} | {
        r.record_id for r in spec.world_data.records
    }
    for i, name in enumerate(spec.constraints.required_reading_order):
        if name not in readable | names:
            path = f"constraints.required_reading_order[{i}]"
            out.append(
                _unknown(IssueCode.UNKNOWN_REFERENCE, path, "attachment, record or tool", name, readable)
            )
    return out


def answer_to_spec(answer: dict[str, Any]) -> dict[str, Any]:
    """A state answer in E_spec form: ``collections`` (one per entity) and ``other_state`` become
    ``state_fields``; anything else passes through (pydantic then refuses what it does not know)."""
    out = {k: v for k, v in answer.items() if k not in ("collections", "other_state")}
    if "collections" in answer or "other_state" in answer:
        fields = [{"kind": "collection", **c} for c in answer.get("collections") or []]
        fields += [{"entity": "", **f} for f in answer.get("other_state") or []]
        out["state_fields"] = [*out.get("state_fields", []), *fields]
    return out


def check_spec(spec: ESpec, tools: TSpec) -> list[Issue]:
    """Every problem of the pair (empty when the spec is valid)."""
    return check_e_spec(spec) + check_t_spec(tools, spec)


# ---- the schemas the model answers in -------------------------------------------------------------------


@dataclass(frozen=True)
class SchemaLimits:
    """Bounds of the model-facing schemas. Short ones only (long string bounds make llama.cpp grammars
    too large to compile). A weak model fills every string and list to its bound, so the worst-case answer
    must fit its token budget: :data:`COMPACT` is sized for the embedded SmolLM2-135M."""

    name_len: int = 40
    text_len: int = 240
    max_items: int = 6
    """Cap on every list's ``maxItems`` (a list's own bound applies when lower)."""
    max_attributes: int = 6
    max_tools: int = 10
    max_params: int = 5
    read_write: bool = False
    """Ask for exactly one read and one write tool (a tuple whose side effects the grammar fixes)."""
    max_record_fields: int = 6
    rules: bool = True
    """Offer the rule language's fields in business rules (:func:`rule_schema`); off, a rule is prose."""


FULL = SchemaLimits()
COMPACT = SchemaLimits(
    name_len=24,
    text_len=80,
    max_items=1,
    max_attributes=4,
    max_tools=4,
    max_params=1,
    max_record_fields=3,
    read_write=True,
    rules=False,
)
"""One item per list, one parameter per tool (a weak model repeats items, and a repeated name is a
duplicate) but for attributes and the read+write tool pair; the smallest spec that is still a spec. Its rules
are prose: a 135M model does not fill the rule language meaningfully (and its recorded answers stay valid)."""


class _Parts:
    """The string and list schema builders of one :class:`SchemaLimits`."""

    def __init__(self, lim: SchemaLimits) -> None:
        self.lim = lim
        n = lim.name_len - 1
        self.name: dict[str, Any] = {"type": "string", "pattern": f"^[a-z][a-z0-9_]{{0,{n}}}$"}
        self.opt_name: dict[str, Any] = {"type": "string", "pattern": f"^([a-z][a-z0-9_]{{0,{n}}})?$"}
        # prose is never empty (the embedded model writes "" for facts it has none for)
        self.text: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": lim.text_len}
        self.time: dict[str, Any] = {
            "type": "string",
            "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$",
        }

    def list(self, items: dict[str, Any], max_items: int, min_items: int = 0) -> dict[str, Any]:
        top = max(min(max_items, self.lim.max_items), min_items)
        out: dict[str, Any] = {"type": "array", "items": items, "maxItems": top}
        if min_items:
            out["minItems"] = min_items
        return out


def _obj(props: dict[str, Any], required: Iterable[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": list(props if required is None else required),
        "additionalProperties": False,
    }


def _enum_or(names: Iterable[str], fallback: dict[str, Any], empty: bool = False) -> dict[str, Any]:
    """An enum of ``names`` (plus "" when ``empty``), or ``fallback`` when there are none."""
    values = sorted(set(names))
    return {"enum": [*values, ""] if empty else values} if values else fallback


def entities_schema(limits: SchemaLimits = FULL) -> dict[str, Any]:
    """JSON schema of the first E_spec answer: the domains and the entity types with their attributes."""
    p = _Parts(limits)
    name, text, lst = p.name, p.text, p.list
    attribute = _obj(
        {"name": name, "type": {"enum": list(ATTRIBUTE_TYPES)}, "description": text}, ["name", "type"]
    )
    entity = _obj(
        {  # attributes before id_field: a model writes them in this order and can then repeat one
            "name": name,
            "description": text,
            "attributes": {
                "type": "array",
                "items": attribute,
                "minItems": 1,
                "maxItems": limits.max_attributes,
            },
            "id_field": name,
            "statuses": lst(name, 5),
        },
        ["name", "id_field", "attributes"],
    )
    return _obj({"domains": lst(name, 3, 1), "entities": lst(entity, 3, 1)})


def rule_schema(
    p: _Parts, ent: dict[str, Any], opt_ent: dict[str, Any], scalar: dict[str, Any]
) -> dict[str, Any]:
    """One business rule: prose, and optionally the rule language's flat check (:class:`BusinessRule`):
    its kind, the entity it guards, the write it guards (``on``) and the parts its kind reads."""
    return _obj(
        {
            "rule_id": p.name,
            "description": p.text,
            "entities": p.list(ent, 3),
            "kind": {"enum": list(RULE_KINDS)},
            "entity": ent,
            "on": p.opt_name,
            "field": p.opt_name,
            "op": {"enum": [*RULE_COMPARISONS, *RULE_AGGREGATES]},
            "value": scalar,
            "related": opt_ent,
            "via": p.opt_name,
            "of": p.opt_name,
            "role": p.opt_name,
        },
        ["rule_id", "description"],
    )


def state_schema(entities: dict[str, list[str]], limits: SchemaLimits = FULL) -> dict[str, Any]:
    """JSON schema of the second E_spec answer: state fields, rules, world data and scenarios, over the
    first answer's ``entities`` (name → attribute names). Every entity reference is an enum of them, a
    record's fields are its entity's attributes and ``collections`` is a tuple of one state field per entity,
    so a grammar-constrained model can neither name what does not exist nor leave an entity unstored (code
    checks it all anyway: not every server enforces schemas). :func:`answer_to_spec` reads the answer."""
    p = _Parts(limits)
    name, text, lst = p.name, p.text, p.list
    ents = list(entities)
    ent = _enum_or(ents, name)
    scalar = {"type": ["string", "number", "integer", "boolean"]}
    rule = (
        rule_schema(p, ent, _enum_or(ents, p.opt_name, empty=True), scalar)
        if limits.rules
        else _obj({"rule_id": name, "description": text, "entities": lst(ent, 3)}, ["rule_id", "description"])
    )
    record: dict[str, Any] = _obj(
        {
            "record_id": name,
            "entity": ent,
            "fields": {"type": "object", "additionalProperties": scalar},
        }
    )
    if ents:  # one record shape per entity: its fields are that entity's attributes
        record = {
            "anyOf": [
                _obj(
                    {
                        "record_id": name,
                        "entity": {"const": e},
                        "fields": _obj({a: scalar for a in entities[e][: limits.max_record_fields]}, []),
                    }
                )
                for e in ents
            ]
        }
    scenario = _obj(
        {
            "scenario_id": name,
            "task_prompt": text,
            "base_time": p.time,
            "entities": lst(ent, 4, 1),
            "gold_facts": lst(text, 3, 1),
            "stale_facts": lst(text, 2),
            "required_attachments": lst(name, 2),
            "required_replies": lst(text, 2),
            "allowed_claims": lst(text, 2),
            "forbidden_claims": lst(text, 2),
            "scoring_rules": lst(_obj({"dimension": name, "weight": {"type": "number"}, "rule": text}), 3, 1),
        },
        ["scenario_id", "task_prompt", "base_time", "entities", "gold_facts", "scoring_rules"],
    )
    world = _obj(
        {
            "accounts": lst(
                _obj({"account_id": name, "name": text, "role": text}, ["account_id", "name"]), 2
            ),
            "contacts": lst(_obj({"contact_id": name, "name": text, "org": text}, ["contact_id", "name"]), 2),
            "attachments": lst(_obj({"attachment_id": name, "filename": text, "content": text}), 2),
            "records": lst(record, 4),
        },
        ["records"],
    )
    # one collection per entity, as a tuple (llama.cpp grammars honour tuples, not prefixItems + items);
    # the other state (logs, counters, settings) apart: answer_to_spec merges both into state_fields
    collection = _obj({"name": name, "entity": ent, "description": text}, ["name", "entity"])
    collections: dict[str, Any] = lst(collection, 3, 1)
    if ents:
        collections = {
            "type": "array",
            "prefixItems": [
                _obj({"name": name, "entity": {"const": e}, "description": text}, ["name", "entity"])
                for e in ents
            ],
            "items": False,
        }
    kinds = [k for k in FIELD_KINDS if k != "collection"]
    other = _obj({"name": name, "kind": {"enum": kinds}, "description": text}, ["name", "kind"])
    return _obj(
        {
            "collections": collections,
            "other_state": lst(other, 3),
            "business_rules": lst(rule, 3),
            "world_data": world,
            "scenarios": lst(scenario, 2, 1),
        }
    )


def t_spec_schema(state_fields: Iterable[str], limits: SchemaLimits = FULL) -> dict[str, Any]:
    """JSON schema of the model's T_spec answer (:func:`answer_to_tools` makes it C.3). Each parameter
    says whether it is required (so ``required`` cannot name a parameter that is not there), and
    ``state_fields_affected`` items are an enum of the E_spec's state fields. With ``limits.read_write``
    the answer is a tuple of one read tool and one write tool, their side effects fixed by the schema."""
    p = _Parts(limits)
    fields = sorted(set(state_fields))
    field_item: dict[str, Any] = {"enum": fields} if fields else p.name
    scalar_or_null = {"type": ["string", "number", "integer", "boolean", "null"]}
    param = _obj(
        {
            "name": p.name,
            "type": {"enum": list(PARAM_TYPES)},
            "description": p.text,
            "required": {"type": "boolean"},
            "default": scalar_or_null,
        },
        ["name", "type", "description", "required"],
    )
    # a list, not C.3's name-keyed map: llama.cpp grammars constrain list items but not map keys
    properties = {"type": "array", "items": param, "maxItems": limits.max_params}

    def tool(effect: dict[str, Any], modifies: dict[str, Any], affected: dict[str, Any]) -> dict[str, Any]:
        return _obj(
            {
                "name": p.name,
                "description": p.text,
                "parameters": properties,
                "returns": _obj({"description": p.text, "success_keys": p.list(p.name, 3)}),
                "side_effect": effect,
                "modifies_state": modifies,
                "state_fields_affected": affected,
            }
        )

    if limits.read_write and fields:
        read = tool(
            {"const": "read"}, {"const": False}, {"type": "array", "items": field_item, "maxItems": 0}
        )
        write = tool({"const": "write"}, {"const": True}, p.list(field_item, 3, 1))
        return _obj({"tools": {"type": "array", "prefixItems": [read, write], "items": False}})
    any_tool = tool({"enum": ["read", "write"]}, {"type": "boolean"}, p.list(field_item, 3))
    return _obj({"tools": {"type": "array", "items": any_tool, "minItems": 2, "maxItems": limits.max_tools}})


def answer_to_tools(answer: dict[str, Any]) -> dict[str, Any]:
    """A T_spec answer in C.3 form: the parameter list becomes ``properties`` + ``required``. A default
    applies to optional parameters only (a required one's is dropped); a parameter named twice is a
    ValueError (the caller reports it as a schema issue)."""
    tools = []
    for t in answer.get("tools") or []:
        params = t.get("parameters") if isinstance(t, dict) else None
        if not isinstance(params, list):  # already C.3, or malformed: pydantic decides
            tools.append(t)
            continue
        props: dict[str, Any] = {}
        required = []
        for decl in params:
            if not isinstance(decl, dict) or "name" not in decl:
                raise ValueError(f"tool {t.get('name')!r}: a parameter has no name")
            decl = dict(decl)
            name = decl.pop("name")
            if name in props:
                raise ValueError(f"tool {t.get('name')!r}: parameter {name!r} is declared twice")
            if decl.pop("required", False):
                required.append(name)
                decl.pop("default", None)
            props[name] = decl
        returns = {"type": "object", **(t.get("returns") or {})}
        tools.append(
            {
                **t,
                "parameters": {"type": "object", "properties": props, "required": required},
                "returns": returns,
            }
        )
    return {**answer, "tools": tools}
