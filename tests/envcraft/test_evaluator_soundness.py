"""Environment evaluators are sound: policies that try to game an environment's own evaluator, run over
every archetype scenario and every package compiled from the synthesis tests' fixture specs.

- ``untouched``: the scenario's initial state, no action;
- ``reference``: the scenario's reference solution;
- ``collateral``: the reference, then one successful write on a record the goal does not name (a write
  step of the reference or of the forbidden actions, aimed at another record of the same collection);
- ``destructive``: the reference with its last write replaced by a destructive or wrong one on the record
  it writes (a cancel/delete/reject-like tool given its ids, a forbidden action on that record, or the last
  write with another enum value);
- ``destructive_alone``: a cancel/delete/reject-like move on that record after only the reference steps
  that make no goal progress.

``python tests/envcraft/test_evaluator_soundness.py [-v]`` prints the counts per policy (and the rows).
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from dataclaw.envcraft.runtime import Environment, Evaluator, Scenario
from dataclaw.envcraft.runtime.contract import HIGH_SCORE
from dataclaw.envcraft.runtime.evaluation import COLLATERAL_PENALTY, collateral_writes

PASS_THRESHOLD = HIGH_SCORE  # the contract's bar for a correct workflow
DESTRUCTIVE = re.compile(
    r"cancel|delete|remove|reject|decline|fail|terminate|archive|revoke|withdraw|abort|unsubscribe|deregister|purge"
)
RUNTIME_KEYS = {"actions", "meta"}


def _collections(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Dicts of records (``{id: {..}}``) found at the top two levels of a state."""
    out: dict[str, dict[str, Any]] = {}

    def visit(path: str, node: Any, depth: int) -> None:
        if not isinstance(node, dict) or depth > 2:
            return
        if node and all(isinstance(v, dict) for v in node.values()) and len(node) >= 2:
            out[path] = node
        for k, v in node.items():
            if k not in RUNTIME_KEYS:
                visit(f"{path}/{k}", v, depth + 1)

    visit("", state, 0)
    return out


def _named(scenario: Scenario) -> set[str]:
    """Every string the scenario's evaluation mentions (record ids the goal names among them)."""
    found: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                found.add(str(k))
                visit(v)
        elif isinstance(node, list):
            for v in node:
                visit(v)
        elif isinstance(node, str):
            found.add(node)

    visit({k: v for k, v in scenario.evaluation.items() if k not in ("untouched", "record_ids")})
    return found


def _domain(state: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in state.items() if k not in RUNTIME_KEYS}


def _run(env: Environment, sid: str, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [env.call(sid, s["tool"], **s.get("params", {})) for s in steps]


def _writes(env_cls: type[Environment], steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        s for s in steps if s["tool"] in env_cls.tools.names() and env_cls.tools.get(s["tool"]).modifies_state
    ]


def _try(env: Environment, sid: str, step: dict[str, Any]) -> bool:
    """Run ``step``; true when it succeeded and changed the domain state."""
    before = _domain(env.get_session_state(sid))
    out = env.call(sid, step["tool"], **step.get("params", {}))
    return out["status"] == "ok" and _domain(env.get_session_state(sid)) != before


def _retargeted(
    step: dict[str, Any], colls: dict[str, dict[str, Any]], avoid: set[str]
) -> list[dict[str, Any]]:
    """``step`` aimed at each other record of the collection its id parameter points into."""
    out = []
    for name, value in step.get("params", {}).items():
        if not isinstance(value, str):
            continue
        for records in colls.values():
            if value in records:
                for other in sorted(records):
                    if other != value and other not in avoid:
                        out.append({"tool": step["tool"], "params": {**step["params"], name: other}})
    return out


def score(env: Environment, sid: str) -> float:
    return float(env.evaluate_session(sid)["overall_score"])


def policies(env_cls: type[Environment], scenario: Scenario, root: Path) -> dict[str, float | None]:
    """Scores of the four policies on ``scenario`` (``None`` where the policy finds no move)."""
    env = env_cls(root)
    out: dict[str, float | None] = {}
    sid = env.create_session(scenario.scenario_id)
    out["untouched"] = score(env, sid)
    at_start = _collections(env.get_session_state(sid))
    _run(env, sid, scenario.reference_solution)
    out["reference"] = score(env, sid)
    avoid = _named(scenario)
    # records that exist at the start: the reference's own creations are the goal's, not collateral
    colls = {
        k: {r: v for r, v in recs.items() if r in at_start.get(k, {})}
        for k, recs in _collections(env.get_session_state(sid)).items()
    }
    out["collateral"] = None
    candidates = _writes(env_cls, scenario.reference_solution + scenario.forbidden_actions)
    for step in [c for s in candidates for c in _retargeted(s, colls, avoid)][:40]:
        snap = env.get_session_state(sid)
        if _try(env, sid, step):
            out["collateral"] = score(env, sid)
            break
        env.restore_env_state(snap)
    out["destructive"] = out["destructive_alone"] = None
    writes = _writes(env_cls, scenario.reference_solution)
    if writes:
        last = max(i for i, s in enumerate(scenario.reference_solution) if s in writes)
        prefix = scenario.reference_solution[:last]
        moves = _destructive(env_cls, writes[-1], scenario)
        for step, _ in moves:
            sid = env.create_session(scenario.scenario_id)
            _run(env, sid, prefix)
            if _try(env, sid, step):
                out["destructive"] = score(env, sid)
                break
        for step in [m for m, destructive in moves if destructive]:
            sid = _setup(env, scenario, prefix)
            if _try(env, sid, step):
                out["destructive_alone"] = score(env, sid)
                break
    return out


def _setup(env: Environment, scenario: Scenario, prefix: list[dict[str, Any]]) -> str:
    """A fresh session where only the prefix steps that make no goal progress ran (log-ins, reads,
    opening a conversation): the destructive move then comes with no progress of its own."""
    sid = env.create_session(scenario.scenario_id)
    for step in prefix:
        snap = env.get_session_state(sid)
        env.call(sid, step["tool"], **step.get("params", {}))
        if env.evaluate_session(sid).get("goal_progress", 0.0) > 0:
            env.restore_env_state(snap)
    return sid


def _destructive(
    env_cls: type[Environment], target: dict[str, Any], scenario: Scenario
) -> list[tuple[dict[str, Any], bool]]:
    """Moves on the record ``target`` writes, each with whether it is destructive: cancel/delete/reject-like
    tools given its id parameters (other required ones from the scenario's steps with that tool); then
    ``target`` with one enum parameter set to another value (destructive when the value is: cancelled,
    rejected, …) and a forbidden action of the scenario on the same record (wrong)."""
    params = target.get("params", {})
    ids = {k: v for k, v in params.items() if isinstance(v, str) and k.endswith("_id")}
    steps = scenario.reference_solution + scenario.forbidden_actions
    out: list[tuple[dict[str, Any], bool]] = []
    for spec in env_cls.tools:
        names = {p.name for p in spec.params}
        if not spec.modifies_state or not DESTRUCTIVE.search(spec.name) or not names & set(params):
            continue
        seen = [st.get("params", {}) for st in steps if st["tool"] == spec.name]
        given = {k: v for k, v in {**(seen[0] if seen else {}), **params}.items() if k in names}
        if {p.name for p in spec.params if p.required} <= set(given) and (spec.name, given) != (
            target["tool"],
            params,
        ):
            out.append(({"tool": spec.name, "params": given}, True))
    for step in scenario.forbidden_actions:
        if step != target and any(step.get("params", {}).get(k) == v for k, v in ids.items()):
            out.append((step, False))
    spec = env_cls.tools.get(target["tool"])
    for p in spec.params:
        for alt in p.schema.get("enum", []):
            if p.name in params and alt != params[p.name]:
                step = {"tool": target["tool"], "params": {**params, p.name: alt}}
                out.append((step, bool(DESTRUCTIVE.search(str(alt)))))
    return out


def measure(packages: list[type[Environment]]) -> dict[str, Any]:
    """Counts per policy over every scenario with a reference solution."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for env_cls in packages:
            for sc in env_cls.scenarios().values():
                if sc.reference_solution:
                    got = policies(env_cls, sc, Path(tmp) / env_cls.name)
                    rows.append({"env": env_cls.name, "scenario": sc.scenario_id, **got})
    return {"rows": rows, "counts": counts(rows)}


def counts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    coll = [r for r in rows if r["collateral"] is not None]
    dest = [r for r in rows if r["destructive"] is not None]
    alone = [r for r in rows if r["destructive_alone"] is not None]
    return {
        "scenarios": n,
        "untouched_zero": sum(r["untouched"] == 0 for r in rows),
        "reference_full": sum(r["reference"] >= 1.0 for r in rows),
        "collateral_run": len(coll),
        "collateral_below_reference": sum(r["collateral"] < r["reference"] for r in coll),
        "destructive_run": len(dest),
        "destructive_below_pass": sum(r["destructive"] < PASS_THRESHOLD for r in dest),
        "destructive_alone_run": len(alone),
        "destructive_alone_zero": sum(r["destructive_alone"] == 0 for r in alone),
    }


def archetype_envs() -> list[type[Environment]]:
    from dataclaw.envcraft.archetypes import all_packages

    return [pkg.env_cls for pkg in all_packages()]


def compiled_envs(out: Path) -> list[type[Environment]]:
    """The packages compiled from the synthesis tests' fixture specs."""
    from dataclaw.envcraft.runtime import load_env_package
    from dataclaw.envcraft.scenarios import builtin_scenarios
    from dataclaw.envcraft.synth import ESpec, TSpec, compile_package, retrieve

    specs = Path(__file__).parent / "synth" / "fixtures" / "compile" / "specs.jsonl"
    catalogue = {s.id: s for s in builtin_scenarios()}
    envs = []
    for line in specs.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        e, t = ESpec.model_validate(rec["e_spec"]), TSpec.model_validate({"tools": rec["t_spec"]})
        found = retrieve(e, t, catalogue[rec["scenario_id"]], pinned=[rec["archetypes"][0]["name"]])
        res = compile_package(e, t, found, out, scenario=rec["scenario"])
        envs.append(load_env_package(res.path).env_cls)
    return envs


# ---- the guarantee, over every scenario --------------------------------------------------------------


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("compiled")
    return {
        "archetypes": measure(archetype_envs())["rows"],
        "compiled": measure(compiled_envs(out))["rows"],
    }


def _fmt(bad: list[dict[str, Any]]) -> str:
    return "; ".join(f"{r['env']}/{r['scenario']}: {r}" for r in bad[:5])


@pytest.mark.parametrize("kind", ["archetypes", "compiled"])
def test_the_untouched_state_scores_zero_and_the_reference_full(
    rows: dict[str, list[dict[str, Any]]], kind: str
) -> None:
    got = rows[kind]
    assert len(got) >= (24 if kind == "archetypes" else 36)
    assert not (bad := [r for r in got if r["untouched"] != 0.0]), _fmt(bad)
    assert not (bad := [r for r in got if r["reference"] != 1.0]), _fmt(bad)


@pytest.mark.parametrize("kind", ["archetypes", "compiled"])
def test_a_collateral_write_after_the_reference_costs(
    rows: dict[str, list[dict[str, Any]]], kind: str
) -> None:
    ran = [r for r in rows[kind] if r["collateral"] is not None]
    # the policy finds a collateral write almost everywhere, so the check is not vacuous
    assert len(ran) >= (0.75 * len(rows[kind]) if kind == "archetypes" else len(rows[kind]))
    assert not (bad := [r for r in ran if r["collateral"] >= r["reference"]]), _fmt(bad)


@pytest.mark.parametrize("kind", ["archetypes", "compiled"])
def test_a_destructive_move_on_the_target_fails(rows: dict[str, list[dict[str, Any]]], kind: str) -> None:
    ran = [r for r in rows[kind] if r["destructive"] is not None]
    assert len(ran) >= 10
    assert not (bad := [r for r in ran if r["destructive"] >= PASS_THRESHOLD]), _fmt(bad)
    alone = [r for r in rows[kind] if r["destructive_alone"] is not None]
    assert len(alone) >= (1 if kind == "archetypes" else 10)
    assert not (bad := [r for r in alone if r["destructive_alone"] != 0.0]), _fmt(bad)


# ---- the Evaluator base: goal gating and the collateral allowance --------------------------------------


def _evaluator() -> Evaluator:
    ev = Evaluator()

    @ev.dimension("goal", 0.6, "the record is closed", goal=True)
    def goal(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
        return float(state["tickets"]["t1"]["status"] == "closed"), ""

    @ev.dimension("rules", 0.4, "no refused call")
    def rules(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
        return 1.0, ""

    return ev


def _state(**statuses: str) -> dict[str, Any]:
    return {"tickets": {k: {"status": v} for k, v in statuses.items()}, "actions": [], "notes": []}


SC = Scenario("s", "s", "s", "2026-01-01T00:00:00Z")


def test_a_dimension_an_idle_agent_satisfies_pays_only_with_goal_progress() -> None:
    ev = _evaluator()
    initial = _state(t1="open", t2="open")
    assert ev.evaluate(initial, SC, initial)["overall_score"] == 0.0
    assert ev.evaluate(_state(t1="closed", t2="open"), SC, initial)["overall_score"] == 1.0
    # the old weighted mean paid the idle agent its "rules" dimension: 0.4
    plain = Evaluator()
    plain.dimension("goal", 0.6)(lambda s, sc: (float(s["tickets"]["t1"]["status"] == "closed"), ""))
    plain.dimension("rules", 0.4)(lambda s, sc: (1.0, ""))
    assert plain.evaluate(initial, SC, initial)["overall_score"] == 0.4


def test_a_goal_met_at_the_start_measures_nothing() -> None:
    ev = _evaluator()
    done = _state(t1="closed")
    assert ev.evaluate(done, SC, done)["overall_score"] == 0.0


def test_changes_outside_the_reference_footprint_cost_a_penalty_each() -> None:
    ev = _evaluator()
    initial, reference = _state(t1="open", t2="open", t3="open"), _state(t1="closed", t2="open", t3="open")
    assert ev.evaluate(reference, SC, initial, reference)["overall_score"] == 1.0
    harm = _state(t1="closed", t2="cancelled", t3="open")
    result = ev.evaluate(harm, SC, initial, reference)
    assert result["collateral"] == ["tickets/t2 changed"]
    assert result["overall_score"] == 1.0 - COLLATERAL_PENALTY
    gone = _state(t1="closed", t3="open")
    gone["tickets"]["t9"] = {"status": "open"}
    gone["notes"] = ["extra"]
    assert collateral_writes(gone, initial, reference) == [
        "tickets/t2 deleted",
        "tickets: 1 record(s) created beyond the goal",
        "notes: 1 item(s) added beyond the goal",
    ]
    # a record the goal keeps (the reference changes it) deleted: collateral too, the goal dimension aside
    assert collateral_writes(_state(t2="open", t3="open"), initial, reference) == ["tickets/t1 deleted"]
    # ... or ended instead of completed (a status the reference does not reach)
    ended = collateral_writes(_state(t1="cancelled", t2="open", t3="open"), initial, reference)
    assert ended == ["tickets/t1 status → cancelled"]
    # logs and the action log are the documented allowance
    logged = {**reference, "audit_log": ["x", "y"], "actions": [{}]}
    assert collateral_writes(logged, {**initial, "audit_log": []}, {**reference, "audit_log": ["x"]}) == []


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        result = {
            "archetypes": measure(archetype_envs()),
            "compiled": measure(compiled_envs(Path(tmp))),
        }
    if "-v" in sys.argv:
        for part in result.values():
            for row in part["rows"]:
                print(json.dumps(row))
    print(json.dumps({k: v["counts"] for k, v in result.items()}))
