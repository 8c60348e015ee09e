"""Spec compilation: 18 hand-written specs (two catalogue scenarios per archetype) compile into packages
that load, pass the static + dynamic audit and the contract suite, and yield a proven tool task; thin
specs compile to a floor package; claw scenarios get bash and a workflow SKILL.md."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest

from dataclaw.envcraft.audit import audit_package, static_audit
from dataclaw.envcraft.graph import ChainSampler, build_tool_graph
from dataclaw.envcraft.runtime import load_env_package
from dataclaw.envcraft.runtime.contract import run_contract
from dataclaw.envcraft.scenarios import builtin_scenarios
from dataclaw.envcraft.synth import (
    CompileError,
    CompileResult,
    ESpec,
    TSpec,
    compile_package,
    expand_scenario,
    retrieve,
)
from dataclaw.envcraft.synth.compile import MIN_SCENARIOS, MIN_TOOLS
from dataclaw.envcraft.synth.spec import COMPACT
from dataclaw.envcraft.tasks import GroundingError, ground_chain
from dataclaw.envcraft.tasks.tool.initial import build_initial_state, build_verifier
from dataclaw.envcraft.tasks.tool.synth import SynthError
from dataclaw.models import get_model
from dataclaw.sandbox import SandboxUnavailable
from dataclaw.sandbox.bwrap import sandbox_available

SPECS = Path(__file__).parent / "fixtures" / "compile" / "specs.jsonl"
RECORDS = [json.loads(line) for line in SPECS.read_text(encoding="utf-8").splitlines()]
ARCHETYPES = {r["archetypes"][0]["name"] for r in RECORDS}
CATALOGUE = {s.id: s for s in builtin_scenarios()}


def _specs(rec: dict[str, Any]) -> tuple[ESpec, TSpec]:
    return ESpec.model_validate(rec["e_spec"]), TSpec.model_validate({"tools": rec["t_spec"]})


def _compile(rec: dict[str, Any], out: Path, **kw: Any) -> CompileResult:
    e, t = _specs(rec)
    found = retrieve(e, t, CATALOGUE[rec["scenario_id"]], pinned=[rec["archetypes"][0]["name"]])
    return compile_package(e, t, found, out, scenario=rec["scenario"], **kw)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CompileResult]:
    out = tmp_path_factory.mktemp("compiled")
    return {r["scenario_id"]: _compile(r, out) for r in RECORDS}


def test_the_fixture_covers_every_archetype_twice() -> None:
    assert len(RECORDS) >= 18
    counts = {a: sum(r["archetypes"][0]["name"] == a for r in RECORDS) for a in ARCHETYPES}
    assert len(counts) == 9 and min(counts.values()) >= 2, counts


def proven_task(env_cls: Any, tries: int = 40) -> dict[str, Any]:
    """Sample chains on the tool graph, ground each, add distractors, derive and prove the verifier."""
    sampler = ChainSampler([build_tool_graph(env_cls)])
    rng = random.Random(7)
    reasons: list[str] = []
    for n in range(tries):
        chain = sampler.walk(env_cls.name, rng, 2, 4)
        if chain is None:
            continue
        try:
            g = ground_chain(env_cls, list(chain.steps), seed=n)
            g = build_initial_state(env_cls, g, seed=n)
            verifier, proof = build_verifier(g)
        except (GroundingError, SynthError) as exc:
            reasons.append(str(exc)[:80])
            continue
        return {"chain": chain.steps, "verifier": verifier, "proof": proof, "grounded": g}
    pytest.fail(f"no chain of {env_cls.name} became a proven task in {tries} samples: {reasons[:3]}")


@pytest.mark.parametrize("scenario_id", [r["scenario_id"] for r in RECORDS])
def test_a_compiled_package_passes_audit_contract_and_yields_a_proven_task(
    compiled: dict[str, CompileResult], scenario_id: str
) -> None:
    res = compiled[scenario_id]
    rec = next(r for r in RECORDS if r["scenario_id"] == scenario_id)
    pkg = load_env_package(res.path)
    assert pkg.env_cls.name == res.env_name == scenario_id
    assert len(pkg.env_cls.tools) >= MIN_TOOLS and set(res.tools) == set(pkg.env_cls.tools.names())
    assert len(pkg.env_cls.scenarios()) >= MIN_SCENARIOS and set(res.scenarios) == set(
        pkg.env_cls.scenarios()
    )
    assert {s.side_effect for s in pkg.env_cls.tools} == {"read", "write"}
    assert res.archetypes[0] == rec["archetypes"][0]["name"] and res.archetypes[0] in res.mechanics
    # the spec's tools are compiled under their own names; the one outside the state is dropped with a reason
    declared = [t["name"] for t in rec["t_spec"]]
    assert set(declared[:4]) <= set(res.tools)
    assert [d[0] for d in res.dropped] == [declared[4]] and res.dropped[0][1]
    assert static_audit(res.path) == []
    report = run_contract(res.path)
    assert report.passed, report.summary()
    task = proven_task(pkg.env_cls)
    assert task["proof"]["gold"] == 1.0 and task["proof"]["initial"] < 1.0


@pytest.mark.skipif(not sandbox_available().ok, reason="the dynamic audit runs in the bubblewrap sandbox")
@pytest.mark.parametrize("scenario_id", [r["scenario_id"] for r in RECORDS])
def test_the_dynamic_audit_passes_in_the_sandbox(
    compiled: dict[str, CompileResult], scenario_id: str
) -> None:
    try:
        report = audit_package(compiled[scenario_id].path)
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))
    assert report.passed, report.reasons()


def test_the_scoring_rule_becomes_the_goal_and_the_lifecycle_is_guarded(
    compiled: dict[str, CompileResult],
) -> None:
    env_cls = load_env_package(compiled["insurance"].path).env_cls
    sc = env_cls.scenario("assess_policy_claim")
    assert sc.evaluation["expected"] == {"policy_claims": {"p1": {"status": "assessed"}}}
    assert "p1.status == assessed" in sc.evaluation["goal_source"]
    env = env_cls()
    sid = env.create_session("assess_policy_claim")
    jump = env.call(sid, "set_policy_claim_status", policy_claim_id="p1", status="paid")
    assert jump["status"] == "error" and jump["error"]["category"] == "invalid_transition"
    assert "assessed" in jump["error"]["message"]  # says which move is allowed
    assert (
        env.call(sid, "assess_policy_claim", policy_claim_id="p1")["status"] == "ok"
    )  # the spec's verb tool
    assert env.evaluate_session(sid)["dimensions"]["goal_state"]["score"] == 1.0
    assert env.evaluate_session(sid)["dimensions"]["rule_compliance"]["score"] < 1.0  # the refused jump


def test_human_agent_mechanics_gate_final_moves_on_confirmation(compiled: dict[str, CompileResult]) -> None:
    env = load_env_package(compiled["support_ticketing"].path).env_cls()
    sid = env.create_session("resolve_ticket")
    for status in ("in_progress", "resolved"):
        assert env.call(sid, "set_ticket_status", ticket_id="t2", status=status)["status"] == "ok"
    refused = env.call(sid, "set_ticket_status", ticket_id="t2", status="closed")
    assert refused["error"]["category"] == "permission_denied"
    asked = env.call(sid, "request_ticket_confirmation", ticket_id="t2", status="closed")
    assert asked["status"] == "ok"
    assert env.call(sid, "set_ticket_status", ticket_id="t2", status="closed")["status"] == "ok"
    update = env.call(sid, "update_ticket", ticket_id="t2", title="reopened?")
    assert update["error"]["category"] == "invalid_transition"  # a final record is read-only


def test_mechanics_of_other_archetypes_behave(compiled: dict[str, CompileResult]) -> None:
    sched = load_env_package(compiled["reservation_booking"].path).env_cls()
    sid = sched.create_session("confirm_reservation")
    ok = sched.call(sid, "schedule_reservation", reservation_id="b1", start="2026-03-05T19:00:00Z")
    assert ok["status"] == "ok"
    clash = sched.call(
        sched_sid := sid, "schedule_reservation", reservation_id="b2", start="2026-03-05T19:30:00Z"
    )
    assert clash["error"]["category"] == "invalid_transition" and "b1" in clash["error"]["message"]
    past = sched.call(sched_sid, "schedule_reservation", reservation_id="b2", start="2020-01-01T00:00:00Z")
    assert past["error"]["category"] == "invalid_argument"

    match = load_env_package(compiled["accommodation"].path).env_cls()
    sid = match.create_session("close_guest_request")
    first = match.call(sid, "match_guest_request_with_listing", guest_request_id="g1", listing_id="listing_a")
    assert first["status"] == "ok"
    again = match.call(sid, "match_guest_request_with_listing", guest_request_id="g2", listing_id="listing_a")
    assert again["error"]["category"] == "invalid_transition"  # each record is matched once

    tx = load_env_package(compiled["document_note_management"].path).env_cls()
    sid = tx.create_session("publish_note")
    assert tx.call(sid, "stage_note_changes", note_id="n1", folder="finance")["status"] == "ok"
    assert tx.get_session_state(sid)["notes"]["n1"]["folder"] == "folder 1"  # nothing applied yet
    assert tx.call(sid, "commit_changes")["data"]["committed"] == ["D-0001"]
    assert tx.get_session_state(sid)["notes"]["n1"]["folder"] == "finance"

    stream = load_env_package(compiled["sensor_device_management"].path).env_cls()
    sid = stream.create_session("retire_sensor")
    assert stream.call(sid, "set_sensor_status", sensor_id="s1", status="degraded")["status"] == "ok"
    pending = stream.call(sid, "pending_events")["data"]
    assert pending["pending"] == 1 and pending["events"][0]["event"] == "sensor_degraded"
    assert stream.call(sid, "acknowledge_events", offset=0)["data"] == {"acked": 0, "pending": 0}
    assert stream.call(sid, "acknowledge_events", offset=0)["error"]["category"] == "invalid_argument"

    flow = load_env_package(compiled["workflow_job_scheduling"].path).env_cls()
    sid = flow.create_session("fail_job")
    assert flow.call(sid, "advance_job", job_id="j1")["data"]["stage"] == "running"
    assert flow.call(sid, "advance_job", job_id="j1")["data"]["stage"] == "succeeded"
    assert flow.call(sid, "advance_job", job_id="j1")["error"]["category"] == "invalid_transition"


def test_claw_scenarios_get_bash_and_a_workflow_skill(compiled: dict[str, CompileResult]) -> None:
    claw = [r["scenario_id"] for r in RECORDS if r["scenario"]["category"] == "claw"]
    assert len(claw) >= 4
    for sid in claw:
        res = compiled[sid]
        assert res.claw and "bash" in res.tools
        skill = (res.path / "SKILL.md").read_text(encoding="utf-8")
        assert "bash" in skill and len(skill.splitlines()) < 50
        assert (res.path / "data" / "workspace" / "README.md").is_file()
    general = next(r["scenario_id"] for r in RECORDS if r["scenario"]["category"] == "general")
    assert not compiled[general].claw and "bash" not in compiled[general].tools


@pytest.mark.skipif(not sandbox_available().ok, reason="bash runs in the bubblewrap sandbox")
def test_the_bash_tool_sees_the_sessions_records(compiled: dict[str, CompileResult]) -> None:
    env = load_env_package(compiled["brand_product_research"].path).env_cls()
    sid = env.create_session("verify_finding")
    assert env.call(sid, "set_finding_status", finding_id="f1", status="verified")["status"] == "ok"
    out = env.call(sid, "bash", command="ls findings && grep -l verified findings/*.json")
    assert out["status"] == "ok", out
    assert "f1.json" in out["data"]["output"] and "findings/f1.json" in out["data"]["output"]
    assert env.get_session_state(sid)["findings"]["f1"]["status"] == "verified"  # bash changed nothing


def test_claw_can_be_forced_either_way(tmp_path: Path) -> None:
    rec = next(r for r in RECORDS if r["scenario"]["category"] == "general")
    assert "bash" in _compile(rec, tmp_path / "a", claw=True).tools
    claw_rec = next(r for r in RECORDS if r["scenario"]["category"] == "claw")
    assert "bash" not in _compile(claw_rec, tmp_path / "b", claw=False).tools


THIN_E = {
    "environment_name": "greenhouse_irrigation",
    "task_description": "Irrigation controllers for greenhouse beds.",
    "domains": ["farming"],
    "entities": [
        {
            "name": "valve",
            "description": "A water valve.",
            "id_field": "valve_id",
            "attributes": [{"name": "valve_id", "type": "string", "description": "id"}],
            "statuses": [],
        }
    ],
    "state_fields": [{"name": "valves", "kind": "collection", "entity": "valve", "description": "valves"}],
    "business_rules": [],
    "world_data": {"accounts": [], "contacts": [], "attachments": [], "records": []},
    "scenarios": [],
}
THIN_T = {
    "tools": [
        {
            "name": "open_valve",
            "description": "Open a valve.",
            "parameters": {"type": "object", "properties": {}, "required": []},
            "side_effect": "write",
            "modifies_state": True,
            "state_fields_affected": ["valves"],
        }
    ]
}


def test_a_thin_spec_compiles_to_a_floor_package(tmp_path: Path) -> None:
    e, t = ESpec.model_validate(THIN_E), TSpec.model_validate(THIN_T)
    res = compile_package(
        e, t, retrieve(e, t), tmp_path, scenario={"id": e.environment_name, "category": "claw"}
    )
    assert len(res.tools) >= MIN_TOOLS and len(res.scenarios) >= MIN_SCENARIOS and res.claw
    assert "open_valve" in res.tools  # 'open' is a status of the default lifecycle: a transition tool
    assert any("lifecycle" in d for d in res.defaults) and any("scenario" in d for d in res.defaults)
    assert any("no_read_tool" in d for d in res.defaults)  # tolerated spec issues are recorded
    assert static_audit(res.path) == []
    report = run_contract(res.path)
    assert report.passed, report.summary()
    assert proven_task(load_env_package(res.path).env_cls)["proof"]["gold"] == 1.0


def test_compilation_is_deterministic(tmp_path: Path) -> None:
    rec = RECORDS[0]
    a, b = _compile(rec, tmp_path / "a"), _compile(rec, tmp_path / "b")
    files_a = {p.relative_to(a.path): p.read_bytes() for p in sorted(a.path.rglob("*")) if p.is_file()}
    files_b = {p.relative_to(b.path): p.read_bytes() for p in sorted(b.path.rglob("*")) if p.is_file()}
    assert files_a == files_b
    again = _compile(rec, tmp_path / "a")  # an earlier compiled package is replaced
    assert again.tools == a.tools


def test_bad_input_is_one_clear_error(tmp_path: Path) -> None:
    e, t = ESpec.model_validate(THIN_E), TSpec.model_validate(THIN_T)
    with pytest.raises(CompileError, match="no entity"):
        compile_package(e.model_copy(update={"entities": []}), t, [], tmp_path, scenario={})
    bad = e.model_copy(update={"state_fields": [*e.state_fields, e.state_fields[0]]})
    with pytest.raises(CompileError, match="duplicate_id"):
        compile_package(bad, t, [], tmp_path, scenario={})
    (tmp_path / "greenhouse_irrigation").mkdir()
    (tmp_path / "greenhouse_irrigation" / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(CompileError, match="not a compiled package"):
        compile_package(e, t, [], tmp_path, scenario={})
    assert (tmp_path / "greenhouse_irrigation" / "notes.txt").is_file()


REPLAYS = sorted(
    p
    for p in (Path(__file__).parent / "fixtures" / "compile").glob("smollm2_*.jsonl")
    if "_invalid_" not in p.name
)
INVALID = sorted((Path(__file__).parent / "fixtures" / "compile").glob("smollm2_invalid_*.jsonl"))


@pytest.mark.parametrize("recording", REPLAYS, ids=[p.stem for p in REPLAYS])
def test_a_spec_the_embedded_model_wrote_compiles(recording: Path, tmp_path: Path) -> None:
    """Answers SmolLM2-135M gave (recorded once with ``get_model(..., record_to=...)``, COMPACT bounds as
    for ``local:`` models), replayed through ``expand_scenario``: the thin spec still compiles to a
    package that passes the contract suite and yields a proven task."""
    scenario = CATALOGUE[recording.stem.removeprefix("smollm2_")]
    result = asyncio.run(
        expand_scenario(get_model(f"replay:{recording}"), scenario, repair_rounds=2, limits=COMPACT)
    )
    assert result.valid and result.e_spec is not None and result.t_spec is not None
    found = retrieve(result.e_spec, result.t_spec, scenario)
    res = compile_package(
        result.e_spec, result.t_spec, found, tmp_path, scenario=scenario.model_dump(mode="json")
    )
    assert len(res.tools) >= MIN_TOOLS and len(res.scenarios) >= MIN_SCENARIOS and res.defaults
    assert res.claw == (scenario.category == "claw")
    assert json.loads((res.path / "data" / "compile.json").read_text())["tools"] == res.tools
    assert static_audit(res.path) == []
    report = run_contract(res.path)
    assert report.passed, report.summary()
    assert proven_task(load_env_package(res.path).env_cls)["proof"]["gold"] == 1.0


def _weak(**change: Any) -> dict[str, Any]:
    """A copy of the first fixture spec with the primary entity (or the spec) changed as weak models do."""
    e = json.loads(json.dumps(RECORDS[0]["e_spec"]))
    for key, value in change.items():
        if key == "records":
            e["world_data"]["records"] = value
        elif key == "scenarios":
            e["scenarios"] = value
        else:
            e["entities"][0][key] = value
    return e


WEAK = {
    "all_statuses_final": _weak(statuses=["cancelled", "rejected"]),
    "one_status": _weak(statuses=["Open Now"]),
    "spaces_and_case": _weak(statuses=["New Item", "In Review", "Done!"]),
    "no_text_attribute": _weak(
        attributes=[{"name": "note_id", "type": "string"}, {"name": "count", "type": "integer"}]
    ),
    "no_world_records": _weak(records=[]),
    "no_scenarios": _weak(scenarios=[]),
    "final_world_records": _weak(
        records=[
            {"record_id": f"n{i}", "entity": "note", "fields": {"note_id": f"n{i}", "status": "archived"}}
            for i in range(3)
        ]
    ),
}


@pytest.mark.parametrize("case", sorted(WEAK))
def test_weak_specs_still_compile_to_a_working_package(case: str, tmp_path: Path) -> None:
    e = ESpec.model_validate(WEAK[case])
    t = TSpec.model_validate({"tools": RECORDS[0]["t_spec"]})
    res = compile_package(e, t, retrieve(e, t), tmp_path, scenario=RECORDS[0]["scenario"])
    assert len(res.tools) >= MIN_TOOLS and len(res.scenarios) >= MIN_SCENARIOS
    assert static_audit(res.path) == []
    report = run_contract(res.path)
    assert report.passed, report.summary()


@pytest.mark.skipif(not sandbox_available().ok, reason="the env worker runs in the bubblewrap sandbox")
def test_a_compiled_package_runs_in_its_env_worker(compiled: dict[str, CompileResult]) -> None:
    """The non-built-in path: the package is imported only inside its sandboxed env worker; tasks come
    out the same way, and the claw bash tool works there (no nested bubblewrap)."""
    from dataclaw.envcraft.worker import env_class

    cls = env_class(str(compiled["brand_product_research"].path))
    assert "bash" in cls.tools and len(cls.scenarios()) >= MIN_SCENARIOS
    assert proven_task(cls)["proof"]["gold"] == 1.0
    env = cls()
    sid = env.create_session("verify_finding")
    out = env.call(sid, "bash", command="ls findings")
    assert out["status"] == "ok" and "f1.json" in out["data"]["output"], out


def test_repeated_and_unusable_attributes_are_skipped_not_fatal(tmp_path: Path) -> None:
    """What SmolLM2 gave for scheduling_reminders (an attribute repeated) and others: compiled anyway."""
    e = json.loads(json.dumps(THIN_E))
    attrs = e["entities"][0]["attributes"]
    attrs += [{"name": "flow_rate", "type": "number"}, {"name": "flow_rate", "type": "string"}]
    attrs += [{"name": "Bad Name", "type": "string"}, {"name": "class", "type": "string"}]
    e["entities"][0]["statuses"] = ["closed", "open", "open"]
    spec, t = ESpec.model_validate(e), TSpec.model_validate(THIN_T)
    res = compile_package(spec, t, retrieve(spec, t), tmp_path, scenario={})
    skipped = [d for d in res.defaults if "skipped" in d]
    assert len(skipped) == 3 and any("'class'" in d for d in skipped)
    assert run_contract(res.path).passed


def test_an_empty_t_spec_gives_the_canonical_tools(tmp_path: Path) -> None:
    """Expansion stops before the tools when the E_spec stays invalid: the compiler still gives a floor."""
    spec = ESpec.model_validate(THIN_E)
    res = compile_package(spec, TSpec(), [], tmp_path, scenario={})
    assert res.tools[:2] == ["list_valves", "get_valve"] and len(res.tools) == MIN_TOOLS
    assert "no archetype retrieved: core mechanics only" in res.defaults
    assert run_contract(res.path).passed


@pytest.mark.parametrize("recording", INVALID, ids=[p.stem for p in INVALID])
def test_an_e_spec_the_embedded_model_never_got_valid_still_compiles(recording: Path, tmp_path: Path) -> None:
    """SmolLM2's E_spec stayed invalid after two repairs (an attribute repeated; an undeclared id field), so
    expansion stopped before the tools: its entities alone compile to a floor package."""
    scenario = CATALOGUE[recording.stem.removeprefix("smollm2_invalid_")]
    result = asyncio.run(
        expand_scenario(get_model(f"replay:{recording}"), scenario, repair_rounds=2, limits=COMPACT)
    )
    assert not result.valid and result.e_spec is not None and result.t_spec is None
    res = compile_package(
        result.e_spec,
        TSpec(),
        retrieve(result.e_spec, None, scenario),
        tmp_path,
        scenario=scenario.model_dump(mode="json"),
    )
    assert len(res.tools) >= MIN_TOOLS and len(res.scenarios) >= MIN_SCENARIOS
    assert res.claw == (scenario.category == "claw")
    assert static_audit(res.path) == []
    report = run_contract(res.path)
    assert report.passed, report.summary()
    assert proven_task(load_env_package(res.path).env_cls)["proof"]["gold"] == 1.0


def test_a_declared_tool_naming_a_mechanic_takes_it_over(tmp_path: Path) -> None:
    rec = next(r for r in RECORDS if r["scenario_id"] == "reservation_booking")
    e, t = _specs(rec)
    book = t.tools[3].model_copy(
        update={"name": "book_reservation", "description": "Book a table slot for a reservation."}
    )
    report = t.tools[4].model_copy(update={"name": "render_map", "description": "Render a map."})
    tools = TSpec(tools=[*t.tools[:4], book, report])
    res = compile_package(e, tools, retrieve(e, tools, pinned=["temporal_scheduling"]), tmp_path, scenario={})
    assert res.mapped["book_reservation"] == "schedule" and "schedule_reservation" not in res.tools
    assert ("render_map", res.dropped[0][1]) in res.dropped  # no mechanic of its (no) collection
    env = load_env_package(res.path).env_cls()
    sid = env.create_session("confirm_reservation")
    out = env.call(sid, "book_reservation", reservation_id="b1", start="2026-03-05T19:00:00Z")
    assert out["status"] == "ok" and out["data"]["reservation"]["slot"]["start"].startswith("2026-03-05T19")
    assert env.tools.get("book_reservation").description == "Book a table slot for a reservation."
