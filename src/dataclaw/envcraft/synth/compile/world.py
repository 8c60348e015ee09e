"""Spec → collections and world state: each entity becomes a collection with an id scheme and a guarded
lifecycle (forward edges in declared order, cancel-like statuses reachable from every open one, final
records read-only); the spec's records become the world, filled up to :data:`MIN_RECORDS` per collection
with :data:`MIN_MOVABLE` that can still move forward."""

from __future__ import annotations

import json
import keyword
import re
from itertools import pairwise
from typing import Any

from dataclaw.envcraft.synth.compile.plan import Collection, cancel_like, clean
from dataclaw.envcraft.synth.spec import IDENT_RE, ESpec

MIN_RECORDS = 3
MIN_MOVABLE = 2
"""Records per collection that can still move forward (scenario goals and task chains need them)."""
DEFAULT_LIFECYCLE = ("open", "in_progress", "done", "cancelled")


def _plural(entity: str) -> str:
    if entity.endswith("y") and not entity.endswith(("ay", "ey", "oy", "uy")):
        return entity[:-1] + "ies"
    return entity + ("es" if entity.endswith(("s", "x", "ch", "sh")) else "s")


def _lifecycle(statuses: list[str]) -> dict[str, list[str]]:
    """Forward edges in declared order over the non-cancel statuses; every open status may move to a
    cancel-like one; the last forward status and cancel-like ones are final."""
    main = [s for s in statuses if not cancel_like(s)] or statuses[:1]
    cancels = [s for s in statuses if cancel_like(s) and s not in main]
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


def build_collections(spec: ESpec, plan_defaults: list[str]) -> dict[str, Collection]:
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
        if sum(not cancel_like(s) for s in statuses) < 2:
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
            docs={a.name: clean(a.description, 100) for a in ent.attributes if a.description.strip()},
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


def coerce(kind: str, value: Any) -> Any:
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


def world_state(spec: ESpec, colls: dict[str, Collection], defaults: list[str]) -> dict[str, Any]:
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
                row[k] = coerce(c.attributes[k], v)
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
