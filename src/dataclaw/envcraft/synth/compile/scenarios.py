"""Runtime scenarios of a compiled package: a goal from the scoring rules when one reads
``<record>.<field> == <value>`` and from the lifecycle otherwise, a reference solution and forbidden
actions."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from dataclaw.envcraft.runtime.errors import EnvError
from dataclaw.envcraft.synth.compile.plan import (
    Collection,
    Plan,
    cancel_like,
    clean,
    primary_collection,
    spaced,
)
from dataclaw.envcraft.synth.compile.world import coerce
from dataclaw.envcraft.synth.mechanics.evaluation import PENALISED
from dataclaw.envcraft.synth.mechanics.ops import run
from dataclaw.envcraft.synth.mechanics.rules import holds

DEFAULT_BASE_TIME = "2026-03-02T09:00:00+00:00"
_RULE_RE = re.compile(
    r"^\s*([A-Za-z0-9_\-]+)\.([a-z][a-z0-9_]*)\s*(?:==|=|is|equals)\s*['\"]?([^'\"]+?)['\"]?\s*$"
)


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
            value = coerce(c.attributes[attr], raw.strip())
            if value is not None and rec.get(attr) != value and c.forward(rec[c.status_field]) is not None:
                return _Goal(c, rid, [], {attr: value}, f"scoring rule {text!r}")
    return None


def _lifecycle_goal(p: Plan, index: int) -> _Goal:
    """Move the ``index``-th movable record of the primary collection one status forward; with enforced
    rules, the first from there whose reference solution the rules let through."""
    c = primary_collection(p)
    movable = [rid for rid, r in sorted(p.state[c.name].items()) if c.forward(r[c.status_field])]
    goals = []
    for k in range(len(movable)):
        rid = movable[(index + k) % len(movable)]
        nxt = c.forward(p.state[c.name][rid][c.status_field])
        assert nxt is not None
        goals.append(_Goal(c, rid, [nxt], {}, "lifecycle: the record moves one status forward"))
    return next((g for g in goals if _proven(p, g)), goals[0])


def _proven(p: Plan, g: _Goal) -> bool:
    """Whether the goal's reference solution passes the package's rules (always, without rules)."""
    return not p.rules or _simulate(p, _steps(p, g)) is not None


def _steps(p: Plan, g: _Goal) -> list[dict[str, Any]]:
    c = g.coll
    steps: list[dict[str, Any]] = [{"tool": p.tool_for(("get", c.name)), "params": {c.id_param: g.rid}}]
    if g.updates:
        steps.append({"tool": p.tool_for(("update", c.name)), "params": {c.id_param: g.rid, **g.updates}})
    rec = {**p.state[c.name][g.rid], **g.updates}
    for s in g.status_path:
        steps += _prerequisites(p, c, {**rec, c.status_field: s}, s) or []  # what the rules ask first
        steps += _move_steps(p, c, g.rid, [s])
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


def _untouched(p: Plan, touched: set[tuple[str, str]]) -> dict[str, Any]:
    """Every record of every collection but the goal's (``touched``: (collection, id)), with its S0
    fields: what must not change."""
    return {
        name: {r: dict(rec) for r, rec in sorted(p.state[name].items()) if (name, r) not in touched}
        for name in sorted(p.collections)
    }


def build_scenario(p: Plan, sc: Any, index: int, claw: bool) -> dict[str, Any]:
    rules = [r.rule for r in sc.scoring_rules] if sc is not None else []
    goal = _rule_goal(p, rules)
    if goal is None or not _proven(p, goal):
        goal = _lifecycle_goal(p, index)
    c = goal.coll
    rec = p.state[c.name][goal.rid]
    expected: dict[str, Any] = dict(goal.updates)
    if goal.status_path:
        expected[c.status_field] = goal.status_path[-1]
    steps = _steps(p, goal)
    after = _simulate(p, steps) if p.rules else None
    # with rules, the goal is what the proven steps leave: the related records the rules needed changed too
    changes = _changes(p, after) if after is not None else {c.name: {goal.rid: expected}}
    changes.setdefault(c.name, {}).setdefault(goal.rid, {}).update(expected)
    touched = {(n, r) for n, recs in changes.items() for r in recs}
    label = rec.get(c.label_field) or goal.rid
    what = ", ".join(f"{k} = {v!r}" for k, v in expected.items())
    concrete = (
        f"Concretely: {c.entity.replace('_', ' ')} {goal.rid} ({label}) must end with {what}; "
        "leave the other records as they are."
    )
    if goal.status_path and any(s in c.gated for s in goal.status_path):
        concrete += " Ask the user to confirm before a final status change."
    if sc is not None:
        sid, prompt, base = sc.scenario_id, clean(sc.task_prompt, 1500), _iso(sc.base_time)
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
        "title": clean(prompt, 80),
        "description": f"Compiled from the spec; goal from {goal.source}.",
        "task_prompt": f"{prompt}\n\n{concrete}",
        "base_time": base,
        "workspace_account": account,
        "overrides": {},
        "evaluation": {
            "expected": changes,
            "untouched": _untouched(p, touched),
            "record_ids": {name: sorted(p.state[name]) for name in sorted(p.collections)},
            "penalised": list(PENALISED),
            "scoring_rules": [r.model_dump() for r in sc.scoring_rules] if sc is not None else [],
            "gold_facts": gold,
            "stale_facts": stale,
            "goal_source": goal.source,
            "claw": claw,
        },
        "reference_solution": steps,
        "forbidden_actions": _forbidden(p, goal),
    }
    return out


# ---- goals from the business rules and relations (issue 26) ---------------------------------------------

MAX_RULE_SCENARIOS = 8
_STAMPS = ("created_at", "updated_at")


@dataclass
class _Plan:
    """A rule goal before it is proven: its steps, its prompt and the rule it exercises."""

    steps: list[dict[str, Any]]
    prompt: str
    rule: dict[str, Any]


def _simulate(p: Plan, steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The state the steps leave (run through the package's own mechanics), or None when one is refused."""
    session = copy.deepcopy(p.state)
    base = _iso(p.spec.scenarios[0].base_time) if p.spec.scenarios else DEFAULT_BASE_TIME
    session.update({"meta": {"base_time": base, "action_index": 0}, "workspace_account": None})
    for n, step in enumerate(steps):
        session["meta"]["action_index"] = n
        try:
            run(session, p.config, step["tool"], **step["params"])
        except EnvError:
            return None
    return session


def _changes(p: Plan, after: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per collection and record, the fields the steps set (timestamps and unset fields left out)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for name in sorted(p.collections):
        for rid, rec in sorted(after[name].items()):
            old = p.state[name].get(rid)
            diff = {
                k: v
                for k, v in rec.items()
                if k not in _STAMPS and (old.get(k) != v if old is not None else v is not None)
            }
            if diff:
                out.setdefault(name, {})[rid] = diff
    return out


def _a(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _records(p: Plan, c: Collection) -> list[tuple[str, dict[str, Any]]]:
    """A collection's S0 records, the spec's own before the ones the compiler filled in."""
    declared = {r.record_id for r in p.spec.world_data.records} | {
        str(r.fields.get(c.id_field)) for r in p.spec.world_data.records
    }
    return sorted(p.state[c.name].items(), key=lambda kv: (kv[0] not in declared, kv[0]))


def _label(c: Collection, rec: dict[str, Any]) -> str | None:
    label = rec.get(c.label_field) if c.label_field else None
    return label if isinstance(label, str) and label.strip() and label != rec.get(c.id_field) else None


def _move_steps(p: Plan, c: Collection, rid: str, status_path: list[str]) -> list[dict[str, Any]]:
    """Transitions of one record along a status path (a confirmation first where a move is gated)."""
    out = []
    for s in status_path:
        if s in c.gated:
            tool = p.tool_for(("request_confirmation", c.name))
            out.append({"tool": tool, "params": {c.id_param: rid, "status": s}})
        out.append(
            {"tool": p.tool_for(("transition", c.name, None)), "params": {c.id_param: rid, "status": s}}
        )
    return out


def _prerequisites(p: Plan, c: Collection, rec: dict[str, Any], to: str) -> list[dict[str, Any]] | None:
    """Steps that satisfy the rules guarding a move of ``rec`` to ``to`` (reads included), or None."""
    steps: list[dict[str, Any]] = []
    rid = rec[c.id_field]
    for r in p.rules:
        if r["collection"] != c.name or r["on"] not in ("", to):
            continue
        if r["kind"] == "approval" and (not r["field"] or holds(rec.get(r["field"]), r["op"], r["value"])):
            role = r["role"]
            approver = next(
                (a for a, row in sorted(p.state[p.config["accounts"]].items()) if row["role"] == role), None
            )
            if approver is None:
                return None
            steps.append({"tool": p.tool_for(("list_accounts",)), "params": {}})
            steps.append(
                {
                    "tool": r["approve_tool"],
                    "params": {c.id_param: rid, "status": to, "approver_id": approver},
                }
            )
        elif r["kind"] == "precondition" and r["op"] == "==":
            tc = p.collections[r["related"]] if r["related"] else c
            tid = rec.get(r["via"]) if r["related"] else rid
            target = p.state[tc.name].get(tid) if isinstance(tid, str) else None
            if target is None or target.get(r["field"]) == r["value"]:
                continue
            if tc is not c:
                steps.append({"tool": p.tool_for(("get", tc.name)), "params": {tc.id_param: tid}})
            if r["field"] == tc.status_field:
                path = _path(tc, target[tc.status_field], str(r["value"]))
                if not path:
                    return None
                steps += _move_steps(p, tc, tid, path)
            else:
                tool = p.tool_for(("update", tc.name))
                steps.append({"tool": tool, "params": {tc.id_param: tid, r["field"]: r["value"]}})
    return steps


def _move_goal(p: Plan, rule: dict[str, Any]) -> list[_Plan]:
    """Move a record to the status a rule guards, doing first what the rules require (an approval by an
    account the agent must look up, the related record brought to the state the rule wants)."""
    c = p.collections[rule["collection"]]
    out = []
    for rid, rec in _records(p, c):
        path = _path(c, rec[c.status_field], rule["on"])
        if not path or any(cancel_like(s) for s in path):
            continue
        steps = [{"tool": p.tool_for(("get", c.name)), "params": {c.id_param: rid}}]
        rest: list[dict[str, Any]] = []
        for s in path:
            pre = _prerequisites(p, c, {**rec, c.status_field: s}, s)
            if pre is None:
                break
            rest += pre + _move_steps(p, c, rid, [s])
        else:
            label = _label(c, rec)
            named = f"{spaced(c.entity)} {rid}" + (f" ({label})" if label else "")
            prompt = (
                f"Move the {named} to '{rule['on']}'. The environment enforces its rules: "
                f"{clean(rule['description'], 200)} Do first whatever the rules require."
            )
            out.append(_Plan(steps + rest, prompt, rule))
    return sorted(out, key=lambda g: -len(g.steps))


def _pointer(p: Plan, rule: dict[str, Any]) -> tuple[Collection, str, Collection] | None:
    """(the collection a new record goes in, its attribute naming another record, that record's
    collection) for a create goal around ``rule``."""
    if rule["kind"] == "computed":
        return p.collections[rule["related"]], rule["via"], p.collections[rule["collection"]]
    if rule["kind"] in ("reference", "quota") or (rule["kind"] == "precondition" and rule["related"]):
        attr = rule["field"] if rule["kind"] == "reference" else rule["via"]
        return p.collections[rule["collection"]], attr, p.collections[rule["related"]]
    for r in p.rules:  # a unique or limit rule: the new record's relation from another rule on its collection
        if r is not rule and r["collection"] == rule["collection"] and r["kind"] in ("reference", "quota"):
            return _pointer(p, r)
    return None


def _create_goal(p: Plan, rule: dict[str, Any]) -> list[_Plan]:
    """Create a record that points at another one the prompt names only by its label (the agent searches
    for its id first), with the values the rule constrains set to compliant ones."""
    found = _pointer(p, rule)
    if found is None:
        return _update_goal(p, rule)
    holder, attr, target = found
    out = []
    for n, (tid, trec) in enumerate(_records(p, target)):
        tlabel = _label(target, trec)
        if tlabel is None or holder.label_field is None:
            continue
        label = f"{spaced(holder.entity).title()} for {tlabel}"
        params: dict[str, Any] = {holder.label_field: label, attr: tid}
        extra = ""
        for r in p.rules:
            if r["kind"] == "computed" and r["related"] == holder.name and r["of"]:
                params[r["of"]] = 40 + 5 * n if holder.attributes.get(r["of"]) == "integer" else 40.0 + 5 * n
                extra += f" with {spaced(r['of'])} {params[r['of']]}"
            elif r["kind"] == "unique" and r["collection"] == holder.name and r["field"] not in params:
                params[r["field"]] = f"{holder.prefix}-U{n + 1}"
                extra += f", {spaced(r['field'])} {params[r['field']]!r}"
            elif r["kind"] == "limit" and r["collection"] == holder.name and r["field"] not in params:
                value = r["value"] if r["op"] in ("<=", ">=", "==") else None
                if isinstance(value, int | float) and not isinstance(value, bool):
                    params[r["field"]] = value
                    extra += f" with {spaced(r['field'])} {value}"
        steps = [
            {"tool": p.tool_for(("search", target.name)), "params": {"query": tlabel}},
            {"tool": p.tool_for(("create", holder.name)), "params": params},
        ]
        prompt = (
            f"Create {_a(holder.entity)} {spaced(holder.entity)} '{label}' for the "
            f"{spaced(target.entity)} named '{tlabel}'{extra}. "
            f"The environment enforces its rules: {clean(rule['description'], 200)}"
        )
        out.append(_Plan(steps, prompt, rule))
    return out


def _update_goal(p: Plan, rule: dict[str, Any]) -> list[_Plan]:
    """Set the field a unique or limit rule constrains, on a record the prompt names only by its label (the
    agent searches for its id first), to a compliant value (a fresh one; the limit's bound)."""
    c = p.collections[rule["collection"]]
    kind = c.attributes.get(rule["field"])
    out = []
    for n, (rid, rec) in enumerate(_records(p, c)):
        label = _label(c, rec)
        if label is None or not c.transitions.get(rec.get(c.status_field)):
            continue
        if rule["kind"] == "unique" and kind == "string":
            value: Any = f"{c.prefix.lower()}-{n + 1}-new"
        elif rule["kind"] == "limit" and rule["op"] in ("<=", ">=", "=="):
            value = rule["value"]
        else:
            continue
        steps = [
            {"tool": p.tool_for(("search", c.name)), "params": {"query": label}},
            {"tool": p.tool_for(("update", c.name)), "params": {c.id_param: rid, rule["field"]: value}},
        ]
        prompt = (
            f"Set the {spaced(rule['field'])} of the {spaced(c.entity)} named '{label}' to {value!r}. "
            f"The environment enforces its rules: {clean(rule['description'], 200)}"
        )
        out.append(_Plan(steps, prompt, rule))
    return out


_RULE_GOALS = {
    "approval": _move_goal,
    "precondition": lambda p, r: (
        _move_goal(p, r) if r["on"] not in ("", "create", "update") else _create_goal(p, r)
    ),
    "limit": lambda p, r: _move_goal(p, r) if r["on"] not in ("", "create", "update") else _create_goal(p, r),
    "quota": _create_goal,
    "unique": _create_goal,
    "reference": _create_goal,
    "computed": _create_goal,
}


def rule_scenarios(p: Plan, claw: bool) -> list[dict[str, Any]]:
    """One scenario per enforced rule a goal can exercise (at most :data:`MAX_RULE_SCENARIOS`): a goal of
    at least two steps, one of them a read of a value the prompt does not give (the approver's id, the
    related record's id or state), proven by running its reference solution through the mechanics."""
    out: list[dict[str, Any]] = []
    base = _iso(p.spec.scenarios[0].base_time) if p.spec.scenarios else DEFAULT_BASE_TIME
    account = p.spec.world_data.accounts[0].account_id if p.spec.world_data.accounts else None
    for rule in p.rules:
        if len(out) >= MAX_RULE_SCENARIOS:
            break
        for g in _RULE_GOALS[rule["kind"]](p, rule):
            after = _simulate(p, g.steps)
            expected = _changes(p, after) if after is not None else {}
            if not expected or len(g.steps) < 2:
                continue
            touched = {(c, r) for c, recs in expected.items() for r in recs}
            what = "; ".join(
                f"{r}: "
                + ", ".join(f"{k} = {v!r}" for k, v in sorted(f.items()) if k != p.collections[c].id_field)
                for c, recs in sorted(expected.items())
                for r, f in sorted(recs.items())
            )
            out.append(
                {
                    "scenario_id": f"rule_{rule['rule_id']}"[:60],
                    "title": clean(g.prompt, 80),
                    "description": f"Compiled from the spec; goal from rule {rule['rule_id']} "
                    f"({rule['kind']}).",
                    "task_prompt": g.prompt + " Leave the other records as they are.",
                    "base_time": base,
                    "workspace_account": account,
                    "overrides": {},
                    "evaluation": {
                        "expected": expected,
                        "untouched": _untouched(p, touched),
                        "record_ids": {name: sorted(p.state[name]) for name in sorted(p.collections)},
                        "penalised": list(PENALISED),
                        "scoring_rules": [],
                        "gold_facts": [f"the end state: {clean(what, 600)}"],
                        "stale_facts": [],
                        "goal_source": f"rule {rule['rule_id']} ({rule['kind']})",
                        "rule": rule["rule_id"],
                        "claw": claw,
                    },
                    "reference_solution": g.steps,
                    "forbidden_actions": _rule_forbidden(p, rule),
                }
            )
            break
    return out


def _rule_forbidden(p: Plan, rule: dict[str, Any]) -> list[dict[str, Any]]:
    c = p.collections[rule["collection"]]
    tool = p.tool_for(("transition", c.name, None))
    return [{"tool": tool, "params": {c.id_param: f"{c.prefix}-0000", "status": c.statuses[-1]}}]
