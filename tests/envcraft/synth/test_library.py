"""The synthesis library (``synth/library.py``): scenarios → specs → compiled packages → sandboxed audit →
``LIB/index.jsonl``, driven by the answers SmolLM2-135M gave (recorded, replayed) and by a scripted server
for broken answers. Rows carry their own usage, bad requests are rows, a rerun resumes."""

from __future__ import annotations

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
        assert r["passed"] and r["reasons"] == [] and r["path"] == "compile", r
        assert (lib["root"] / r["package"]).is_dir() and r["package"].startswith("envs/compile/")
        assert r["tools"] >= 6 and r["scenarios"] >= 2 and r["archetypes"]
        assert r["model"].startswith("replay:") and r["seconds"] > 0
    assert rows["support_ticketing"]["spec_valid"] and rows["support_ticketing"]["spec_issues"] == []
    # an invalid spec whose names are usable still gives the floor environment, its issues on record
    assert not rows[INVALID[0]]["spec_valid"] and rows[INVALID[0]]["spec_issues"] == ["duplicate_id"]
    assert [p.name for _, p in library_packages(lib["root"])] == [*VALID, INVALID[0]]
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
    assert manifest["library"]["per_path"]["compile"] == {"raw": 5, "passed": 3, "pass_rate": 0.6}


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
    assert (s["raw"], s["passed"]) == (5, 3)
    assert s["paper"] == {"raw": PAPER_RAW, "passed": PAPER_PASSED, "pass_rate": 0.429}
    assert sum(v["raw"] for v in s["per_archetype"].values()) == 3  # bad requests retrieved nothing
    assert s["reasons"] == {"unknown_scenario": 1, "empty_description": 1}


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
            model=f"{server.base_url}::writer", paths=("compile", "codegen"), concurrency=1, timeout_s=60
        )
        rows = synthesize(tmp_path / "LIB", reqs, config)
    got = {(r["scenario_id"], r["path"]): r for r in rows}
    for path in ("compile", "codegen"):
        r = got[("support_ticketing", path)]
        assert not r["passed"] and r["reasons"][0]["code"] == "invalid_spec" and r["package"] is None
        assert r["usage"]["spec"]["calls"] == 3
    assert "schema" in got[("support_ticketing", "compile")]["reasons"][0]["message"]
    floor = got[("task_issue_tracking", "compile")]
    assert floor["passed"] and floor["spec_issues"] == ["schema"], floor
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
            concurrency=1,
            timeout_s=15,
        )
        rows = synthesize(
            tmp_path / "LIB", Requests(scenarios=[load_catalogue().get(s) for s in ids]), config
        )
    got = _by(rows)
    good = got["crm_customer_management"]
    assert good["passed"] and good["package"].startswith("envs/codegen/"), good["reasons"]
    assert good["usage"]["generation"]["calls"] == 1 and good["tokens"]["completion"] > 0
    net, hang = got["support_ticketing"], got["task_issue_tracking"]
    assert (
        not net["passed"]
        and net["reasons"][0]["code"] == "static_audit"
        and "S050" in net["reasons"][0]["message"]
    )
    assert not hang["passed"] and hang["reasons"][0]["code"] == "timeout", hang["reasons"]
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


def test_env_list_rows_of_a_library_are_its_passing_packages_and_the_failed_are_counted(lib) -> None:
    from dataclaw.envcraft.envs import library_rows

    listing = library_rows(lib["root"])
    assert [r.folder for r in listing.rows] == [str(p) for _, p in library_packages(lib["root"])]
    assert listing.failed == 2  # the unknown scenario and the empty description
    row = listing.rows[0]
    assert row.scenario == VALID[0] and row.path == "compile" and row.package.startswith("envs/compile/")
