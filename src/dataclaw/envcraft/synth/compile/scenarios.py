"""Runtime scenarios of a compiled package: a goal from the scoring rules when one reads
``<record>.<field> == <value>`` and from the lifecycle otherwise, a reference solution and forbidden
actions."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from dataclaw.envcraft.synth.compile.plan import Collection, Plan, clean, primary_collection
from dataclaw.envcraft.synth.compile.world import coerce
from dataclaw.envcraft.synth.mechanics.evaluation import PENALISED

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
    c = primary_collection(p)
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


def _untouched(p: Plan, coll: str, rid: str) -> dict[str, Any]:
    """Every record of every collection but the goal's, with its S0 fields: what must not change."""
    return {
        name: {r: dict(rec) for r, rec in sorted(p.state[name].items()) if (name, r) != (coll, rid)}
        for name in sorted(p.collections)
    }


def build_scenario(p: Plan, sc: Any, index: int, claw: bool) -> dict[str, Any]:
    rules = [r.rule for r in sc.scoring_rules] if sc is not None else []
    goal = _rule_goal(p, rules) or _lifecycle_goal(p, index)
    c = goal.coll
    rec = p.state[c.name][goal.rid]
    expected: dict[str, Any] = dict(goal.updates)
    if goal.status_path:
        expected[c.status_field] = goal.status_path[-1]
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
            "expected": {c.name: {goal.rid: expected}},
            "untouched": _untouched(p, c.name, goal.rid),
            "record_ids": {name: sorted(p.state[name]) for name in sorted(p.collections)},
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
