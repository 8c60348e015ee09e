"""The synthesis library (``synth/library.py``): scenarios → specs → compiled packages → sandboxed audit →
meaning and soundness gates → ``LIB/index.jsonl``, driven by the answers SmolLM2-135M gave (recorded,
replayed) and by a scripted server for broken answers. Rows carry their own usage and status (passing only
with every gate; a floor environment counted apart), bad requests are rows, a rerun resumes."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from dataclaw.envcraft.scenarios import load_catalogue
from dataclaw.envcraft.synth.library import (
    PAPER_PASSED,
    PAPER_RAW,
    Requests,
    SynthConfig,
    library_packages,
    read_index,
    resolve_requests,
    summarize,
    synthesize,
)
from dataclaw.models import UsageLedger
from dataclaw.sandbox import sandbox_available
from support.openai_server import OpenAIServer, Reply

RECORDED = Path(__file__).parent / "fixtures" / "compile"
MEANING = importlib.util.find_spec("dataclaw.envcraft.synth.meaning")
VALID = ["support_ticketing", "monitoring_logging"]
INVALID = ["scheduling_reminders", "home_office_security_patrol"]  # SmolLM2's specs stay invalid


@pytest.fixture(autouse=True)
def require_bwrap() -> None:
    avail = sandbox_available()
    if not avail:
        pytest.skip(avail.reason)


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The four SmolLM2 recordings as one replay file."""
    path = tmp_path_factory.mktemp("rec") / "smollm2.jsonl"
    path.write_text("".join(p.read_text() for p in sorted(RECORDED.glob("smollm2_*.jsonl"))))
    return path


def _config(model: str, **kw: Any) -> SynthConfig:
    """The recordings predate the meaning round (its asks would miss them): the spec and repair rounds
    only, as they were recorded; test_meaning runs the embedded model with a meaning round."""
    kw.setdefault("meaning_rounds", 0)
    return SynthConfig(model=model, bounds="compact", timeout_s=60, **kw)


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory, recording: Path) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("lib") / "LIB"
    reqs = resolve_requests(
        load_catalogue(), [*VALID, INVALID[0], "no_such_scenario"], descriptions=["  "], paths=["compile"]
    )
    ledger = UsageLedger()
    before = set(sys.modules)  # other tests load compiled packages on purpose: count what synthesize adds
    rows = synthesize(root, reqs, _config(f"replay:{recording}", concurrency=4), ledger=ledger)
    added = set(sys.modules) - before
    return {"root": root, "rows": rows, "ledger": ledger, "recording": recording, "imported": added}


def _by(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["scenario_id"]: r for r in rows}


def test_recorded_specs_compile_into_audited_packages(lib) -> None:
    rows = _by(lib["rows"])
    assert len(lib["rows"]) == 5 and len(read_index(lib["root"])) == 5
    for sid in [*VALID, INVALID[0]]:
        r = rows[sid]
        assert r["gates"]["audit"] and r["path"] == "compile", r
        assert (lib["root"] / r["package"]).is_dir()
        assert r["tools"] >= 6 and r["scenarios"] >= 2 and r["archetypes"]
        assert r["model"].startswith("replay:") and r["seconds"] > 0
        assert r["entities"] == 1 and r["chains3"] is not None
        assert r["passed"] == (r["status"] == "passing") == all(r["gates"].values())
    assert rows["support_ticketing"]["spec_valid"] and rows["support_ticketing"]["spec_issues"] == []
    # an invalid spec whose names are usable still gives the floor environment, its issues on record: it
    # is a floor environment, never a passing one, and kept apart in LIB/floor/
    floor = rows[INVALID[0]]
    assert not floor["spec_valid"] and floor["spec_issues"] == ["duplicate_id"]
    assert (
        floor["status"] == "floor" and not floor["passed"] and floor["package"].startswith("floor/compile/")
    )
    assert floor["reasons"][0]["code"] == "floor" and "duplicate_id" in floor["reasons"][0]["message"]
    assert INVALID[0] not in [p.name for _, p in library_packages(lib["root"])]
    assert INVALID[0] in [p.name for _, p in library_packages(lib["root"], floor=True)]
    # the packages were audited in the sandbox, never imported here
    assert not [m for m in lib["imported"] if m.split(".")[0] in (*VALID, INVALID[0])]


def test_bad_requests_are_rows_with_reasons(lib) -> None:
    rows = _by(lib["rows"])
    unknown = rows["no_such_scenario"]
    assert not unknown["passed"] and unknown["reasons"][0]["code"] == "unknown_scenario"
    assert "no_such_scenario" in unknown["reasons"][0]["message"]
    empty = rows[""]
    assert empty["reasons"][0]["code"] == "empty_description" and empty["package"] is None


def test_each_row_carries_its_own_usage(lib) -> None:
    """Four scenarios were expanded at once; each row's tokens are its own calls', and they add up."""
    rows = [r for r in lib["rows"] if r["source"] == "builtin"]
    total = lib["ledger"].totals()
    assert sum(r["usage"]["spec"]["calls"] for r in rows) == total.calls == 10
    assert sum(r["tokens"]["prompt"] for r in rows) == total.prompt_tokens > 0
    specs = {json.loads(x)["scenario_id"]: json.loads(x) for x in (lib["root"] / "specs.jsonl").open()}
    for r in rows:
        if r["spec_valid"]:
            assert r["usage"]["spec"]["calls"] == specs[r["scenario_id"]]["calls"]
    manifest = json.loads((lib["root"] / "manifest.json").read_text())
    assert manifest["models"]["usage"]["total"]["calls"] == 10
    per_path = manifest["library"]["per_path"]["compile"]
    assert (per_path["raw"], per_path["floor"], per_path["passed"] + per_path["failed"]) == (5, 1, 4)
    assert per_path["pass_rate"] == round(per_path["passed"] / 5, 3)  # the floor one is not in it


def test_rerun_skips_the_index_and_resumes_the_rest(lib) -> None:
    root, before = lib["root"], (lib["root"] / "index.jsonl").read_text()
    reqs = resolve_requests(
        load_catalogue(), [*VALID, INVALID[0], "no_such_scenario"], descriptions=[""], paths=["compile"]
    )
    ledger = UsageLedger()
    again = synthesize(root, reqs, _config("replay:/nonexistent/never-called.jsonl"), ledger=ledger)
    assert (root / "index.jsonl").read_text() == before and not ledger.models()
    assert sorted(r["id"] for r in again) == sorted(r["id"] for r in lib["rows"])
    # one more scenario: only it is expanded and built
    more = resolve_requests(load_catalogue(), [*VALID, INVALID[1]])
    rows = synthesize(root, more, _config(f"replay:{lib['recording']}"), ledger=ledger)
    assert ledger.totals().calls == 3 and len(rows) == 3 and len(read_index(root)) == 6
    assert _by(rows)[INVALID[1]]["spec_issues"] == ["unknown_attribute"]


def test_summary_groups_by_path_and_archetype(lib) -> None:
    s = summarize(lib["rows"])
    assert (s["raw"], s["floor"]) == (5, 1) and s["passed"] + s["failed"] == 4
    assert s["paper"] == {"raw": PAPER_RAW, "passed": PAPER_PASSED, "pass_rate": 0.429}
    assert sum(v["raw"] for v in s["per_archetype"].values()) == 3  # bad requests retrieved nothing
    assert {"unknown_scenario": 1, "empty_description": 1, "floor": 1}.items() <= s["reasons"].items()
    assert s["gates"]["spec"] == {"passed": 2, "failed": 1, "not_reached": 2}
    assert s["gates"]["audit"] == {"passed": 3, "failed": 0, "not_reached": 2}


@pytest.mark.skipif(MEANING is None, reason="the meaning gates are not installed")
def test_the_embedded_models_recorded_specs_fail_the_meaning_gates(lib) -> None:
    """SmolLM2's well-formed specs are generic CRUD over one entity named after an id: no passing
    environment, whatever the audit said, and the reason names the meaning issues."""
    rows = _by(lib["rows"])
    for sid in VALID:
        r = rows[sid]
        assert r["spec_valid"] and r["gates"]["audit"] and r["gates"]["meaning"] is False, r["gates"]
        assert r["status"] == "failed" and r["reasons"][0]["code"] == "meaning"
        assert "entity_is_id" in r["meaning"]["codes"] and r["gates"]["soundness"] is None
        assert r["package"].startswith("failed/compile/")
    assert library_packages(lib["root"]) == []


def test_broken_model_answers_are_per_scenario_reasons(
    tmp_path, e_answer, t_answer, split, tool_answer
) -> None:
    """An answer that is never JSON of the schema, and tools that write a state field the spec never
    declares (through both repairs; the schema's enum refuses it): clear reasons in the index; the
    compiler still builds the floor from the second spec's E_spec, code generation refuses it."""
    ents, state = split(e_answer)
    bad_tools = tool_answer(t_answer)
    bad_tools["tools"][1]["state_fields_affected"] = ["tickets", "escalations"]
    reqs = Requests(scenarios=[load_catalogue().get(s) for s in ("support_ticketing", "task_issue_tracking")])
    with OpenAIServer() as server:
        # scenarios run one at a time (concurrency 1): support_ticketing first, then task_issue_tracking
        server.enqueue(*[Reply.text("Sure! Here is the environment you asked for.")] * 3)
        server.enqueue(*[Reply.json(x) for x in (ents, state, bad_tools, bad_tools, bad_tools)])
        config = SynthConfig(
            model=f"{server.base_url}::writer",
            paths=("compile", "codegen"),
            concurrency=1,
            timeout_s=60,
            meaning_rounds=0,  # the queued replies answer the spec and repair asks only
        )
        rows = synthesize(tmp_path / "LIB", reqs, config)
    got = {(r["scenario_id"], r["path"]): r for r in rows}
    for path in ("compile", "codegen"):
        r = got[("support_ticketing", path)]
        assert not r["passed"] and r["reasons"][0]["code"] == "invalid_spec" and r["package"] is None
        assert r["usage"]["spec"]["calls"] == 3
    assert "schema" in got[("support_ticketing", "compile")]["reasons"][0]["message"]
    floor = got[("task_issue_tracking", "compile")]
    assert floor["status"] == "floor" and not floor["passed"] and floor["spec_issues"] == ["schema"], floor
    refused = got[("task_issue_tracking", "codegen")]
    assert (
        refused["reasons"][0]["code"] == "invalid_spec"
        and "'escalations' is not one of" in refused["reasons"][0]["message"]
    )


CODEGEN = Path(__file__).parent / "fixtures" / "codegen" / "crm_customer_management"
ROLES = {"env.py": "environment_class", "evaluator.py": "evaluator", "state.py": "repository"}


def _package_answer(patch: dict[str, str]) -> dict[str, Any]:
    """A code-generation answer (C.2 output form) holding the hand-written CRM package, with ``patch``
    (file → code appended to it)."""
    files = []
    for p in sorted(CODEGEN.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            rel = p.relative_to(CODEGEN).as_posix()
            role = ROLES.get(rel, "domain_module" if rel.endswith(".py") else "data_artifact")
            role = "data_scenario" if rel.startswith("data/scenarios/") else role
            files.append({"path": rel, "role": role, "content": p.read_text() + patch.get(rel, "")})
    return {
        "environment_name": "crm_customer_management",
        "documentation": "# CRM\nCustomer profiles, contacts and outreach.",
        "skill_md": "# Skill\nRead the customer first, then change it.",
        "files": files,
    }


@pytest.mark.slow
def test_generated_packages_that_break_the_rules_are_classified(
    tmp_path, e_answer, t_answer, split, tool_answer
) -> None:
    """Code generation (one round, no repairs): a sound package passes; one importing a network module
    fails the static audit (S050); one that hangs at import times out in the sandbox. Each is its
    scenario's row with the reason, kept in LIB/failed/; the run goes on."""
    ents, state = split(e_answer)
    spec = [Reply.json(x) for x in (ents, state, tool_answer(t_answer))]
    ids = ["crm_customer_management", "support_ticketing", "task_issue_tracking"]
    answers = [
        _package_answer({}),
        _package_answer({"customers.py": "\nimport socket  # noqa: E402\n"}),
        _package_answer({"log.py": "\nwhile True:  # hangs at import\n    pass\n"}),
    ]
    with OpenAIServer() as server:
        server.enqueue(*spec * 3, *[Reply.json(a) for a in answers])
        config = SynthConfig(
            model=f"{server.base_url}::coder",
            paths=("codegen",),
            repair_rounds=0,
            meaning_rounds=0,  # the queued replies answer the spec asks only
            concurrency=1,
            timeout_s=15,
        )
        rows = synthesize(
            tmp_path / "LIB", Requests(scenarios=[load_catalogue().get(s) for s in ids]), config
        )
    got = _by(rows)
    good = got["crm_customer_management"]
    assert good["gates"]["spec"] and good["gates"]["audit"], good["reasons"]
    where = {"passing": "envs", "failed": "failed"}[good["status"]]  # the meaning and soundness gates decide
    assert good["package"].startswith(f"{where}/codegen/") and good["passed"] == all(good["gates"].values())
    assert good["usage"]["generation"]["calls"] == 1 and good["tokens"]["completion"] > 0
    net, hang = got["support_ticketing"], got["task_issue_tracking"]
    why = {x["code"]: x["message"] for r in (net, hang) for x in r["reasons"] if x["code"] != "meaning"}
    assert not net["passed"] and not net["gates"]["audit"] and "S050" in why["static_audit"]
    assert not hang["passed"] and not hang["gates"]["audit"] and "timeout" in why, hang["reasons"]
    for r in (net, hang):
        assert r["package"].startswith("failed/codegen/") and (tmp_path / "LIB" / r["package"]).is_dir()


@pytest.mark.slow
def test_on_ray_the_library_matches_the_local_one(lib, tmp_path) -> None:
    """``--executor ray``: specs on Ray, packages built and audited on Ray actors; the same rows (but for
    timings) as the local run, each with its own usage."""
    pytest.importorskip("ray")
    from dataclaw.pipeline.executors.ray import connect
    from dataclaw.pipeline.registry import ExecutorSettings, using_executor

    connect(None, num_cpus=2)  # a session-wide local Ray (left running for the other Ray tests)
    reqs = resolve_requests(load_catalogue(), [*VALID, INVALID[0]], paths=["compile"])
    with using_executor(ExecutorSettings(name="ray")):
        rows = synthesize(tmp_path / "LIB", reqs, _config(f"replay:{lib['recording']}", workers=2))
    timing = ("seconds", "model")
    local = {r["id"]: {k: v for k, v in r.items() if k not in timing} for r in lib["rows"] if r["package"]}
    assert {r["id"]: {k: v for k, v in r.items() if k not in timing} for r in rows} == local


def test_floor_spec_drops_a_counter_that_repeats_a_collection_name() -> None:
    """The embedded model's most common unrepaired spec (seen live on 5 of 22 scenarios): the collection
    repeated as a counter of the same name. The floor keeps the collection; a valid spec is untouched."""
    from dataclaw.envcraft.synth.library import floor_spec
    from dataclaw.envcraft.synth.spec import ESpec

    spec = ESpec.model_validate(
        {
            "environment_name": "shop",
            "task_description": "carts",
            "entities": [
                {"name": "cart", "id_field": "cart_id", "attributes": [{"name": "cart_id", "type": "string"}]}
            ],
            "state_fields": [
                {"name": "carts", "kind": "collection", "entity": "cart"},
                {"name": "carts", "kind": "counter"},
            ],
        }
    )
    fixed, fixes = floor_spec(spec)
    assert [(f.name, f.kind) for f in fixed.state_fields] == [("carts", "collection")]
    assert fixes == ["state field 'carts' (counter) dropped: the name of a collection"]
    assert floor_spec(fixed) == (fixed, [])


def test_env_list_rows_of_a_library_are_listed_by_status(lib) -> None:
    from dataclaw.envcraft.envs import library_rows

    listing = library_rows(lib["root"])
    assert [r.folder for r in listing.rows] == [str(p) for _, p in library_packages(lib["root"])]
    floor = {r.name: r for r in listing.floor}  # the rerun test may have added INVALID[1]
    assert INVALID[0] in floor and set(floor) <= set(INVALID)
    assert floor[INVALID[0]].package.startswith("floor/compile/") and "floor:" in floor[INVALID[0]].reasons
    n = len(read_index(lib["root"]))
    assert listing.failed == len(listing.failures) == n - len(floor) - len(listing.rows)
    assert {"unknown_scenario", "empty_description"} <= {r.reasons.split(":")[0] for r in listing.failures}
    assert [r.status for r in listing.all()] == sorted(
        (r.status for r in listing.all()), key=["passing", "floor", "failed"].index
    )


# ---- the gates: a passing environment needs every one --------------------------------------------------

FIXTURE_SPECS = {
    json.loads(x)["scenario_id"]: json.loads(x) for x in (RECORDED / "specs.jsonl").read_text().splitlines()
}


def _shop_spec() -> dict[str, Any]:
    """The rule-language test's web shop (four related entities, a rule of each kind) as a spec record,
    with a refund tool: a spec a careful author writes."""
    path = Path(__file__).parent / "test_rules.py"
    module_spec = importlib.util.spec_from_file_location("_rules_fixture", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    shop = module.SHOP
    refund = {
        "name": "refund_order",
        "description": "Pay out an approved refund of an order.",
        "parameters": {
            "type": "object",
            "properties": {"refund_id": {"type": "string", "description": "the refund"}},
            "required": ["refund_id"],
        },
        "returns": {"type": "object", "description": "the refund", "success_keys": [], "error_format": {}},
        "side_effect": "write",
        "modifies_state": True,
        "state_fields_affected": ["refunds"],
    }
    scenario = {"id": shop["environment_name"], "category": "general", "name": "Shop refunds",
                "description": shop["task_description"], "source": "test"}  # fmt: skip
    return {"scenario_id": scenario["id"], "scenario": scenario, "e_spec": shop, "t_spec": [refund]}


def _gated(tmp_path: Path, spec: dict[str, Any], meaning: dict[str, Any] | None = None) -> dict[str, Any]:
    """One spec record through the package step (compile, audit, gates); ``meaning``: the report the spec
    stage would have recorded on it (the gates' interface: a record's ``meaning``), else computed."""
    from dataclaw.envcraft.scenarios import ScenarioSpec
    from dataclaw.envcraft.synth.library import Job, run_job
    from dataclaw.envcraft.synth.stages import scenario_record

    spec = {**spec, **({"meaning": meaning} if meaning is not None else {})}
    item = scenario_record(ScenarioSpec.model_validate(spec["scenario"]))
    return run_job(Job(str(tmp_path), item, "compile", "replay:none", spec, timeout_s=60))


MEANING_OK = {"passed": True, "coverage": 1.0, "issues": [], "codes": []}


@pytest.mark.skipif(MEANING is None, reason="the meaning gates are not installed")
def test_a_careful_spec_passes_every_gate_and_clears_the_bar(tmp_path) -> None:
    r = _gated(tmp_path, _shop_spec())
    assert r["gates"] == {"spec": True, "meaning": True, "audit": True, "soundness": True}, r["reasons"]
    assert r["status"] == "passing" and r["passed"] and r["reasons"] == []
    assert r["package"].startswith("envs/compile/") and (tmp_path / r["package"]).is_dir()
    sound = r["soundness"]
    assert sound["grounded"] >= 1 and sound["sound"] * 2 >= sound["grounded"] and sound["passed"]
    # the issue's bar for a passing environment: >= 2 entities, >= 1 enforced rule, >= 10 3-step chains
    assert r["entities"] >= 2 and r["chains3"] >= 10
    assert r["rules"] >= 1  # the compiler reports what it enforces (the env class's enforced_rules)


def test_a_one_edge_environment_has_no_task_to_prove_sound(lib, tmp_path) -> None:
    """SmolLM2's monitoring spec, even with its meaning waved through: a tool graph of one edge gives no
    3-step chain and no task, so the soundness gate fails it (``no_task``)."""
    rec = next(json.loads(x) for x in (lib["root"] / "specs.jsonl").open() if VALID[1] in x)
    r = _gated(tmp_path, rec, MEANING_OK)
    assert r["gates"]["audit"] and r["gates"]["soundness"] is False and r["status"] == "failed"
    assert r["chains3"] == 0 and r["reasons"][0]["code"] == "no_task"
    assert r["package"].startswith("failed/compile/") and not r["passed"]


def test_the_soundness_sample_names_the_policies_that_game_an_environment(lib, tmp_path) -> None:
    """SmolLM2's patrol spec compiles (as a floor environment) into tools whose tasks a seeded random
    policy completes: the soundness sample fails it and names the policy."""
    from dataclaw.envcraft.synth.library import probe_package

    rows = synthesize(
        tmp_path / "LIB",
        resolve_requests(load_catalogue(), [INVALID[1]], paths=["compile"]),
        _config(f"replay:{lib['recording']}"),
    )
    assert rows[0]["status"] == "floor" and rows[0]["gates"]["soundness"] is None  # never run for a floor
    sound = probe_package(tmp_path / "LIB" / rows[0]["package"], soundness=True)["soundness"]
    assert sound["grounded"] >= 1 and not sound["passed"] and sound["sound"] * 2 < sound["grounded"]
    assert sound["reasons"] and all(k.startswith("gamed_by_") for k in sound["reasons"])


def test_a_spec_that_fails_the_meaning_gates_never_reaches_soundness(tmp_path) -> None:
    issue = {"code": "entity_is_id", "message": "entity 'ticket_id' is an id, not a domain noun", "path": "e"}
    meaning = {"passed": False, "issues": [issue], "codes": ["entity_is_id"]}
    r = _gated(tmp_path, FIXTURE_SPECS["monitoring_logging"], meaning)
    assert r["gates"] == {"spec": True, "meaning": False, "audit": True, "soundness": None}
    assert r["status"] == "failed" and r["reasons"][0] == {
        "code": "meaning",
        "message": "entity_is_id: entity 'ticket_id' is an id, not a domain noun",
    }


def test_judge_a_floor_environment_is_never_passing_whatever_else_passed() -> None:
    from dataclaw.envcraft.synth.library import judge

    sound = {"sampled": 3, "grounded": 3, "sound": 3, "reasons": {}, "passed": True}
    called: list[bool] = []

    def probe(soundness: bool) -> dict[str, Any]:
        called.append(soundness)
        return {"chains3": 12, "rules": 1, **({"soundness": sound} if soundness else {})}

    status, gates, reasons, _ = judge(
        valid=False, meaning=MEANING_OK, audit=True, probe=probe, spec_codes=["x"]
    )
    assert status == "floor" and gates["spec"] is False and called == [False]  # no soundness run for it
    assert reasons[0]["code"] == "floor" and "smoke tests only" in reasons[0]["message"]
    status, *_ = judge(valid=False, meaning=MEANING_OK, audit=False, probe=probe, spec_codes=["x"])
    assert status == "failed" and called == [False]  # an audit failure is never probed
    status, gates, reasons, _ = judge(valid=True, meaning=MEANING_OK, audit=True, probe=probe, spec_codes=[])
    assert status == "passing" and all(gates.values()) and reasons == [] and called[-1] is True
    sound.update(sound=1, passed=False, reasons={"gamed_by_collateral": 2})
    status, gates, reasons, _ = judge(valid=True, meaning=MEANING_OK, audit=True, probe=probe, spec_codes=[])
    assert status == "failed" and reasons[0]["message"].startswith("2 of 3 tool tasks gamed")
    sound.update(grounded=0, sound=0, passed=False, reasons={})
    status, _, reasons, _ = judge(valid=True, meaning=MEANING_OK, audit=True, probe=probe, spec_codes=[])
    assert status == "failed" and reasons[0]["code"] == "no_task"


def test_floor_rows_are_never_in_the_pass_rate_and_old_rows_read_as_floor() -> None:
    from dataclaw.envcraft.synth.library import row, status_of

    scenario = {"id": "s", "name": "s", "category": "general", "source": "builtin"}
    rows = [
        row("a", scenario, "compile", status="passing", spec_valid=True),
        row("b", scenario, "compile", status="floor", reasons=[{"code": "floor", "message": "m"}]),
        row("c", scenario, "compile", status="floor", reasons=[{"code": "floor", "message": "m"}]),
        row("d", scenario, "compile", reasons=[{"code": "timeout", "message": "m"}]),
    ]
    assert [r["passed"] for r in rows] == [True, False, False, False]
    s = summarize(rows)
    assert (s["raw"], s["passed"], s["floor"], s["failed"], s["pass_rate"]) == (4, 1, 2, 1, 0.25)
    assert s["reasons"] == {"floor": 2, "timeout": 1}
    # a row written before statuses: an invalid spec that "passed" the audit was a floor environment
    old = {k: v for k, v in row("e", scenario, "compile", spec_valid=False).items() if k != "status"}
    assert (
        status_of({**old, "passed": True}) == "floor" and summarize([{**old, "passed": True}])["passed"] == 0
    )
