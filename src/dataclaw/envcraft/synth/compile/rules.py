"""Business rules → guards (issue 26): the E_spec's rule language (:class:`~dataclaw.envcraft.synth.spec.
BusinessRule` with a ``kind``) compiled into the runtime config of
:mod:`dataclaw.envcraft.synth.mechanics.rules`, which every compiled write tool enforces.

:func:`compile_rules` checks each rule against the compiled collections (a rule the compiler cannot enforce
is listed in the plan's defaults with why, never fatal), makes the world data consistent with the rules it
enforces (references name existing records, unique values are unique, computed fields hold their
aggregate) and adds what approvals need: the staff accounts with their roles, an approvals store,
``list_accounts`` and ``approve_<entity>``. :func:`finish_rules` runs once the tools are final: it names
the approval tool in the refusals and declares the collections a computed field writes into.
"""

from __future__ import annotations

import copy
from typing import Any

from dataclaw.envcraft.synth.compile.plan import Collection, Param, Plan, ToolPlan, cancel_like, spaced
from dataclaw.envcraft.synth.compile.tools import id_param
from dataclaw.envcraft.synth.compile.world import coerce
from dataclaw.envcraft.synth.mechanics.rules import maintain
from dataclaw.envcraft.synth.spec import RULE_WRITES, BusinessRule, rule_problem

_POINTERS = {"reference": "field", "precondition": "via", "quota": "via", "computed": "via"}
"""The attribute that points from one record to another, per kind (computed: on the related records)."""


def _unfit(rule: BusinessRule, c: Collection, rel: Collection | None) -> str | None:
    """Why a spec-valid rule does not fit the compiled collections (an attribute skipped, the lifecycle
    replaced), or None."""
    if rule.on and rule.on not in RULE_WRITES and rule.on not in c.statuses:
        return f"status {rule.on!r} is not in the compiled lifecycle of {c.entity} ({'/'.join(c.statuses)})"
    holder = rel if (rule.kind == "computed" or (rule.kind == "precondition" and rule.related)) else c
    if rule.field and rule.kind != "quota" and holder is not None:
        owner = c if rule.kind == "computed" else holder
        if rule.field not in owner.attributes:
            return f"{owner.entity} has no compiled attribute {rule.field!r}"
    status_of = rel if rule.kind == "precondition" and rel is not None else c
    if (
        rule.kind == "precondition"
        and rule.field == status_of.status_field
        and rule.op == "=="
        and rule.value not in status_of.statuses
    ):
        return f"{rule.value!r} is not a status of {status_of.entity} ({'/'.join(status_of.statuses)})"
    if rule.via and rel is not None:
        holder = rel if rule.kind == "computed" else c
        if rule.via not in holder.attributes:
            return f"{holder.entity} has no compiled attribute {rule.via!r}"
    return None


def _value(rule: BusinessRule, target: Collection) -> Any:
    """The rule's constant in the type of the attribute it is compared with."""
    kind = target.attributes.get(rule.field)
    if rule.value is None or kind is None or kind in ("array", "object"):
        return rule.value
    got = coerce(kind, rule.value)
    return rule.value if got is None else got


def compile_rules(p: Plan) -> None:
    """Compile the spec's rule-language rules into ``p.rules`` (and what they need in state and tools)."""
    entities = {e.name: e for e in p.spec.entities}
    by_entity = {c.entity: c for c in p.collections.values()}
    for rule in p.spec.business_rules:
        if not rule.kind:
            continue
        if not rule.entity and rule.entities:  # a model names the entity in ``entities`` only
            rule = rule.model_copy(update={"entity": rule.entities[0]})
        c, rel = by_entity.get(rule.entity), by_entity.get(rule.related)
        why = rule_problem(rule, entities) or (_unfit(rule, c, rel) if c is not None else "no collection")
        if why:
            p.defaults.append(f"rule {rule.rule_id} not enforced: {why}")
            continue
        assert c is not None
        compared = rel if rule.kind == "precondition" and rel is not None else c
        inactive = rel if rule.kind == "computed" and rel is not None else c
        p.rules.append(
            {
                "rule_id": rule.rule_id,
                "kind": rule.kind,
                "description": " ".join(rule.description.split())[:300] or rule.rule_id,
                "collection": c.name,
                "entity": c.entity,
                "on": rule.on,
                "field": rule.field,
                "op": rule.op,
                "value": _value(rule, compared),
                "related": rel.name if rel is not None else "",
                "via": rule.via,
                "of": rule.of,
                "role": rule.role,
                "inactive": [s for s in inactive.statuses if cancel_like(s)],
                "approve_tool": "",
                "required": True,
                "source": "spec",
            }
        )
    _infer_references(p)
    if not p.rules:
        return
    p.config["rules"] = p.rules
    _fix_world(p)
    if any(r["kind"] == "approval" for r in p.rules):
        _add_approvals(p)
    p.mechanics.append("business_rules")


def _infer_references(p: Plan) -> None:
    """Cross-entity references the spec's attributes declare without a rule: an attribute of one entity
    named after another's id field (``patient_id`` on a prescription) must name an existing record when
    set (not required on create: the spec did not say so). Listed as ``source: inferred``."""
    ids: dict[str, Collection] = {}
    for c in p.collections.values():
        ids.setdefault(c.id_field, c)
        ids.setdefault(f"{c.entity}_id", c)
    covered = {(r["collection"], r["field"]) for r in p.rules if r["kind"] == "reference"}
    for c in p.collections.values():
        for attr, kind in c.attributes.items():
            target = ids.get(attr)
            if target is None or target is c or kind != "string" or (c.name, attr) in covered:
                continue
            article = "An" if c.entity[:1] in "aeiou" else "A"
            what = f"{article} {spaced(c.entity)}'s {spaced(attr)} names an existing {spaced(target.entity)}."
            p.rules.append(
                {
                    "rule_id": f"{c.entity}_{target.entity}_exists"[:48],
                    "kind": "reference",
                    "description": what,
                    "collection": c.name,
                    "entity": c.entity,
                    "on": "",
                    "field": attr,
                    "op": "",
                    "value": None,
                    "related": target.name,
                    "via": "",
                    "of": "",
                    "role": "",
                    "inactive": [],
                    "approve_tool": "",
                    "required": False,
                    "source": "inferred",
                }
            )
            p.defaults.append(
                f"rule {p.rules[-1]['rule_id']} inferred: {c.entity}.{attr} names a {target.entity}"
            )


def _fix_world(p: Plan) -> None:
    """Make S0 obey the enforced rules: pointers name existing records (round robin over the targets),
    unique values are unique, computed fields hold their aggregate."""
    for r in p.rules:
        attr = r[_POINTERS[r["kind"]]] if r["kind"] in _POINTERS else ""
        if not attr or not r["related"]:
            continue
        holder, target = (
            (r["related"], r["collection"]) if r["kind"] == "computed" else (r["collection"], r["related"])
        )
        ids = sorted(p.state[target])
        fixed = 0
        for n, (_, rec) in enumerate(sorted(p.state[holder].items())):
            if rec.get(attr) not in p.state[target] and ids:
                rec[attr] = ids[n % len(ids)]
                fixed += 1
        if fixed:
            p.defaults.append(
                f"rule {r['rule_id']}: {fixed} {holder} record(s) now point at an existing {target}"
            )
    for r in p.rules:
        if r["kind"] != "unique":
            continue
        seen: set[Any] = set()
        for rid, rec in sorted(p.state[r["collection"]].items()):
            value = rec.get(r["field"])
            if not isinstance(value, str | int | float | bool):
                continue
            if value in seen:
                rec[r["field"]] = f"{value}-{rid}" if isinstance(value, str) else None
                p.defaults.append(f"rule {r['rule_id']}: {rid}.{r['field']} made unique")
            seen.add(rec.get(r["field"]))
    config = {"collections": {c.name: c.config() for c in p.collections.values()}, "rules": p.rules}
    maintain(p.state, config)


def _add_approvals(p: Plan) -> None:
    """Staff accounts with the roles the approval rules name (the spec's, plus one per missing role and
    one without any such role, so the agent must read who may approve), an approvals store and the
    tools: ``list_accounts`` and ``approve_<entity>`` per gated collection."""
    accounts = p.free("accounts")
    p.config["accounts"] = accounts
    rows = {
        a.account_id: {"account_id": a.account_id, "name": a.name, "role": a.role or "staff"}
        for a in p.spec.world_data.accounts
    }
    roles = sorted({r["role"] for r in p.rules if r["kind"] == "approval"})
    for n, role in enumerate(roles):
        if not any(a["role"] == role for a in rows.values()):
            aid = f"{role[:20]}_{101 + n}"
            rows[aid] = {"account_id": aid, "name": f"{spaced(role).title()} {101 + n}", "role": role}
            p.defaults.append(f"account {aid} added: approval rules need a {role!r}")
    if all(a["role"] in roles for a in rows.values()):
        rows["staff_100"] = {"account_id": "staff_100", "name": "Staff 100", "role": "staff"}
    p.state[accounts] = rows
    p.config["approvals"] = p.free("approvals")
    p.state[p.config["approvals"]] = {}
    p.add_tool(
        ToolPlan(
            "list_accounts",
            "list_accounts",
            "read",
            "List the staff accounts (id, name, role), optionally only those with one role: who may approve.",
            [Param("role", "str | None", "only accounts with this role", None, False)],
            returns=["accounts", "total"],
            key=("list_accounts",),
        )
    )
    for cname in dict.fromkeys(r["collection"] for r in p.rules if r["kind"] == "approval"):
        c = p.collections[cname]
        gated = sorted({r["on"] for r in p.rules if r["kind"] == "approval" and r["collection"] == cname})
        p.add_tool(
            ToolPlan(
                f"approve_{c.entity}",
                "approve",
                "write",
                f"Record an approval, by a staff account holding the role a rule names, of moving a "
                f"{spaced(c.entity)} record to {' or '.join(gated)}.",
                [
                    id_param(c),
                    Param(
                        "status", "Literal[" + ", ".join(repr(s) for s in gated) + "]", "the move approved"
                    ),
                    Param("approver_id", "str", "the approving account's id (see list_accounts)"),
                ],
                p.write_fields(p.config["approvals"]),
                ["approval"],
                {"collection": cname},
                ("approve", cname),
            )
        )


def finish_rules(p: Plan) -> None:
    """Once the tools are final: refusals name the approval tool, and every write tool of a collection
    whose records feed a computed field declares the collection that field lives in."""
    for r in p.rules:
        if r["kind"] == "approval":
            r["approve_tool"] = p.tool_for(("approve", r["collection"]))
    for r in p.rules:
        if r["kind"] != "computed":
            continue
        for t in p.tools.values():
            if (
                t.side_effect == "write"
                and t.cfg.get("collection") == r["related"]
                and r["collection"] not in t.fields
            ):
                t.fields = [*t.fields, r["collection"]]


def enforced(p: Plan) -> list[dict[str, str]]:
    """The enforced rules as a package lists them (``CompileResult.rules``, SKILL.md, the index)."""
    return [
        {k: str(r[k]) for k in ("rule_id", "kind", "entity", "on", "description", "source")}
        for r in copy.deepcopy(p.rules)
    ]
