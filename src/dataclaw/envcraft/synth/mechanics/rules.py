"""Business rules compiled packages enforce (issue 26): the guards and invariants of the E_spec's rule
language (:class:`dataclaw.envcraft.synth.spec.BusinessRule`), configured by ``config["rules"]``.

Every write operation calls :func:`enforce` with the record as it would be after the write, before it
mutates anything, and :func:`maintain` after it (computed fields). A broken rule is a ``rule_violation``
:class:`~dataclaw.envcraft.runtime.errors.EnvError` whose message starts with the rule's id and says what
the rule requires and what the record has, so an agent can read it and fix its next call.

Rule config (written by :mod:`dataclaw.envcraft.synth.compile.rules`): ``{"rule_id", "kind",
"description", "collection", "on", "field", "op", "value", "related", "via", "of", "role", "inactive"}``
where ``related`` is the related entity's collection and ``inactive`` the statuses (of ``collection`` for
quota/unique, of ``related`` for computed) whose records no longer count.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from dataclaw.envcraft.runtime.errors import EnvError, echo, rule_violation

Check = Callable[[dict[str, Any], dict[str, Any], dict[str, Any], "Write"], None]
CHECKS: dict[str, Check] = {}
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_SAID = {
    "==": "be",
    "!=": "not be",
    "<": "be below",
    "<=": "be at most",
    ">": "be above",
    ">=": "be at least",
}


@dataclass(frozen=True)
class Write:
    """One write a rule judges: the collection, the action (``create``, ``update`` or the status moved
    to), the record before (None on create) and as it would be after, and the fields the caller set."""

    collection: str
    action: str
    before: dict[str, Any] | None
    after: dict[str, Any]
    changes: frozenset[str] = frozenset()


def check(kind: str) -> Callable[[Check], Check]:
    """Register the guard of one rule kind (refuses duplicates)."""

    def wrap(fn: Check) -> Check:
        if kind in CHECKS:
            raise ValueError(f"duplicate rule check {kind!r}")
        CHECKS[kind] = fn
        return fn

    return wrap


def holds(got: Any, op: str, want: Any) -> bool:
    """``got op want``; a comparison of incomparable values (a missing amount, text against a number) is
    False, so a rule never passes on a value it cannot read."""
    try:
        return bool(_COMPARE[op](got, want))
    except TypeError:
        return False


def _refuse(rule: dict[str, Any], why: str) -> EnvError:
    return rule_violation(rule["rule_id"], f"{rule['description'].rstrip('.')} ({why})")


def _rid(config: dict[str, Any], cname: str, rec: dict[str, Any]) -> str:
    return str(rec.get(config["collections"][cname]["id_field"]) or "the new record")


def _status(config: dict[str, Any], cname: str, rec: dict[str, Any]) -> Any:
    field = config["collections"][cname].get("status_field")
    return rec.get(field) if field else None


def enforce(
    session: dict[str, Any],
    config: dict[str, Any],
    cname: str,
    action: str,
    before: dict[str, Any] | None,
    after: dict[str, Any],
    changes: Iterable[str] = (),
) -> None:
    """Refuse a write that breaks a rule: ``action`` is ``create``, ``update`` or the status moved to;
    ``before`` is the record before the write (None on create), ``after`` as it would be after it and
    ``changes`` the fields the caller set."""
    w = Write(cname, action, before, after, frozenset(changes))
    for rule in config.get("rules", []):
        if rule["collection"] == cname and (not rule["on"] or rule["on"] == action):
            CHECKS[rule["kind"]](session, config, rule, w)


@check("precondition")
def _precondition(session: dict[str, Any], config: dict[str, Any], rule: dict[str, Any], w: Write) -> None:
    subject, ref = w.after, _rid(config, w.collection, w.after)
    entity = config["collections"][w.collection]["entity"]
    if rule["related"]:
        ref = w.after.get(rule["via"])
        subject = session[rule["related"]].get(ref) if isinstance(ref, str) else None
        entity = config["collections"][rule["related"]]["entity"]
        if subject is None:
            raise _refuse(rule, f"its {rule['via']} {echo(ref)} names no {entity}")
    got = subject.get(rule["field"])
    if not holds(got, rule["op"], rule["value"]):
        need = f"{rule['field']} must {_SAID[rule['op']]} {rule['value']!r}"
        raise _refuse(rule, f"{entity} {ref} has {rule['field']} {got!r}; {need}")


@check("limit")
def _limit(session: dict[str, Any], config: dict[str, Any], rule: dict[str, Any], w: Write) -> None:
    got = w.after.get(rule["field"])
    if got is None or holds(got, rule["op"], rule["value"]):
        return
    raise _refuse(rule, f"{rule['field']} {got!r} must {_SAID[rule['op']]} {rule['value']!r}")


@check("quota")
def _quota(session: dict[str, Any], config: dict[str, Any], rule: dict[str, Any], w: Write) -> None:
    ref = w.after.get(rule["via"])
    if ref is None or (w.before is not None and w.before.get(rule["via"]) == ref):
        return
    cname, rid = w.collection, _rid(config, w.collection, w.after)
    taken = sum(
        1
        for oid, r in session[cname].items()
        if oid != rid and r.get(rule["via"]) == ref and _status(config, cname, r) not in rule["inactive"]
    )
    cap: Any = rule["value"]
    if rule["of"]:
        parent = session[rule["related"]].get(ref) if isinstance(ref, str) else None
        cap = parent.get(rule["of"]) if parent else None
    if isinstance(cap, int | float) and holds(taken + 1, rule["op"], cap):
        return
    raise _refuse(rule, f"{ref} already has {taken}, the most allowed is {cap!r}")


@check("approval")
def _approval(session: dict[str, Any], config: dict[str, Any], rule: dict[str, Any], w: Write) -> None:
    if rule["field"] and not holds(w.after.get(rule["field"]), rule["op"], rule["value"]):
        return
    rid = _rid(config, w.collection, w.after)
    approval = session[config["approvals"]].get(approval_key(w.collection, rid, w.action))
    if approval is not None and approval.get("role") == rule["role"]:
        return
    cond = f"{rule['field']} is {w.after.get(rule['field'])!r}; " if rule["field"] else ""
    raise _refuse(
        rule,
        f"{cond}{rid} has no approval by a {rule['role']} for '{w.action}'; "
        f"ask one with {rule['approve_tool']}",
    )


@check("unique")
def _unique(session: dict[str, Any], config: dict[str, Any], rule: dict[str, Any], w: Write) -> None:
    value = w.after.get(rule["field"])
    if value is None:
        return
    cname, rid = w.collection, _rid(config, w.collection, w.after)
    for oid, r in sorted(session[cname].items()):
        if oid != rid and r.get(rule["field"]) == value and _status(config, cname, r) not in rule["inactive"]:
            raise _refuse(rule, f"{oid} already has {rule['field']} {value!r}")


@check("reference")
def _reference(session: dict[str, Any], config: dict[str, Any], rule: dict[str, Any], w: Write) -> None:
    ref = w.after.get(rule["field"])
    entity = config["collections"][rule["related"]]["entity"]
    if ref is None:
        if w.before is None and rule.get("required", True):
            raise _refuse(rule, f"give {rule['field']}: the id of an existing {entity}")
        return
    if not isinstance(ref, str) or ref not in session[rule["related"]]:
        raise _refuse(rule, f"{rule['field']} {echo(ref)} names no existing {entity}")


@check("computed")
def _computed(session: dict[str, Any], config: dict[str, Any], rule: dict[str, Any], w: Write) -> None:
    """Only a write of the owning record can break it: setting the computed field by hand."""
    if rule["field"] in w.changes:
        raise _refuse(
            rule, f"{rule['field']} is computed from the {rule['related']}; it cannot be set by hand"
        )


def approval_key(cname: str, rid: str, status: str) -> str:
    """Where an approval of moving record ``rid`` of ``cname`` to ``status`` is kept."""
    return f"{cname}/{rid}:{status}"


def computed_value(session: dict[str, Any], config: dict[str, Any], rule: dict[str, Any], rid: str) -> Any:
    """The value a computed field must have for the record ``rid``."""
    cname = rule["related"]
    rows = [
        r
        for _, r in sorted(session[cname].items())
        if r.get(rule["via"]) == rid and _status(config, cname, r) not in rule["inactive"]
    ]
    if rule["op"] == "count":
        return len(rows)
    total = sum(
        v for r in rows if isinstance(v := r.get(rule["of"]), int | float) and not isinstance(v, bool)
    )
    return round(total, 6) if isinstance(total, float) else total


def maintain(session: dict[str, Any], config: dict[str, Any]) -> None:
    """Keep every computed field equal to its aggregate (after each write; a no-op when nothing changed)."""
    for rule in config.get("rules", []):
        if rule["kind"] != "computed":
            continue
        for rid, rec in session[rule["collection"]].items():
            value = computed_value(session, config, rule, rid)
            if rec.get(rule["field"]) != value:
                rec[rule["field"]] = value
