"""The rule language (issue 26): a hand-written shop spec with one rule of every kind compiles into a package
whose tools refuse the violating call with the rule named (``rule_violation: <rule id>: …``) and accept the
compliant one, in process and through the package's sandboxed env worker; every enforced rule gets a goal of
at least two steps, one a read of a value the prompt does not give; a malformed rule is one spec issue and
the package still compiles without it."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from dataclaw.envcraft.runtime import load_env_package
from dataclaw.envcraft.runtime.contract import run_contract
from dataclaw.envcraft.synth import CompileResult, ESpec, TSpec, compile_package
from dataclaw.envcraft.synth.compile import MARKER
from dataclaw.envcraft.synth.spec import COMPACT, FULL, IssueCode, check_e_spec, state_schema
from dataclaw.sandbox.bwrap import sandbox_available


def _attr(name: str, type_: str = "string", description: str = "") -> dict[str, str]:
    return {"name": name, "type": type_, "description": description}


def _rec(rid: str, entity: str, **fields: Any) -> dict[str, Any]:
    return {"record_id": rid, "entity": entity, "fields": fields}


RULES: list[dict[str, Any]] = [
    {
        "rule_id": "refund_needs_delivery",
        "description": "A refund is approved only once its order is delivered.",
        "entities": ["refund", "order"],
        "kind": "precondition",
        "entity": "refund",
        "on": "approved",
        "related": "order",
        "via": "order_id",
        "field": "status",
        "op": "==",
        "value": "delivered",
    },
    {
        "rule_id": "refund_limit",
        "description": "Refunds over 100 need a manager's approval.",
        "entities": ["refund"],
        "kind": "approval",
        "entity": "refund",
        "on": "refunded",
        "field": "amount",
        "op": ">",
        "value": 100,
        "role": "manager",
    },
    {
        "rule_id": "refund_cap",
        "description": "No refund is larger than 500.",
        "entities": ["refund"],
        "kind": "limit",
        "entity": "refund",
        "field": "amount",
        "op": "<=",
        "value": "500",  # a model writes numbers as strings: the compiler types it
    },
    {
        "rule_id": "refund_order",
        "description": "A refund names an existing order.",
        "entities": ["refund", "order"],
        "kind": "reference",
        "entity": "refund",
        "field": "order_id",
        "related": "order",
    },
    {
        "rule_id": "refunds_per_order",
        "description": "An order has at most three open refunds.",
        "entities": ["refund", "order"],
        "kind": "quota",
        "entity": "refund",
        "related": "order",
        "via": "order_id",
        "op": "<=",
        "value": 3,
    },
    {
        "rule_id": "unique_email",
        "description": "Two customers never share an email address.",
        "entities": ["customer"],
        "kind": "unique",
        "entity": "customer",
        "field": "email",
    },
    {
        "rule_id": "order_total",
        "description": "An order's total is the sum of its lines' amounts.",
        "entities": ["order", "order_line"],
        "kind": "computed",
        "entity": "order",
        "field": "total",
        "op": "sum",
        "related": "order_line",
        "via": "order_id",
        "of": "amount",
    },
]

SHOP: dict[str, Any] = {
    "environment_name": "shop_refunds",
    "task_description": "A web shop's back office: customers, orders with lines, and refunds of orders.",
    "domains": ["retail"],
    "entities": [
        {
            "name": "customer",
            "description": "A shop customer.",
            "id_field": "customer_id",
            "attributes": [_attr("customer_id"), _attr("name"), _attr("email")],
            "statuses": ["active", "verified", "closed"],
        },
        {
            "name": "order",
            "description": "An order of a customer.",
            "id_field": "order_id",
            "attributes": [
                _attr("order_id"),
                _attr("title"),
                _attr("status"),
                _attr("total", "number", "sum of the lines"),
                _attr("customer_id"),
            ],
            "statuses": ["placed", "paid", "shipped", "delivered", "cancelled"],
        },
        {
            "name": "order_line",
            "description": "One line of an order.",
            "id_field": "line_id",
            "attributes": [_attr("line_id"), _attr("item"), _attr("order_id"), _attr("amount", "number")],
            "statuses": ["open", "billed", "void"],
        },
        {
            "name": "refund",
            "description": "Money given back for an order.",
            "id_field": "refund_id",
            "attributes": [
                _attr("refund_id"),
                _attr("reason"),
                _attr("order_id"),
                _attr("amount", "number"),
                _attr("status"),
            ],
            "statuses": ["requested", "approved", "refunded", "rejected"],
        },
    ],
    "state_fields": [
        {"name": "customers", "kind": "collection", "entity": "customer"},
        {"name": "orders", "kind": "collection", "entity": "order"},
        {"name": "order_lines", "kind": "collection", "entity": "order_line"},
        {"name": "refunds", "kind": "collection", "entity": "refund"},
        {"name": "audit_log", "kind": "log"},
    ],
    "business_rules": RULES,
    "world_data": {
        "accounts": [
            {"account_id": "ana_desk", "name": "Ana Ruiz", "role": "agent"},
            {"account_id": "mgr_okafor", "name": "Dele Okafor", "role": "manager"},
        ],
        "records": [
            _rec("c1", "customer", name="Lena Berg", email="lena@example.com"),
            _rec("c2", "customer", name="Tom Hale", email="tom@example.com"),
            _rec("o1", "order", title="Garden chairs", status="delivered", customer_id="c1"),
            _rec("o2", "order", title="Desk lamp", status="paid", customer_id="c2"),
            _rec("o3", "order", title="Bookshelf", status="placed", customer_id="c1"),
            _rec("l1", "order_line", item="Chair", order_id="o1", amount=30.0),
            _rec("l2", "order_line", item="Cushion", order_id="o1", amount=20.0),
            _rec("l3", "order_line", item="Lamp", order_id="o2", amount=75.0),
            _rec("r1", "refund", reason="Lamp flickers", order_id="o2", amount=250.0, status="requested"),
            _rec("r2", "refund", reason="Chair broken", order_id="o1", amount=250.0, status="approved"),
            _rec("r3", "refund", reason="Cushion stained", order_id="o1", amount=40.0, status="approved"),
            _rec("r4", "refund", reason="Late delivery", order_id="o1", amount=60.0, status="requested"),
        ],
    },
    "scenarios": [
        {
            "scenario_id": "refund_broken_chair",
            "task_prompt": "Pay out the refund for the broken chair.",
            "base_time": "2026-03-02T09:00:00Z",
            "entities": ["refund", "order"],
            "gold_facts": ["r2 is approved"],
            "scoring_rules": [{"dimension": "refund", "weight": 1.0, "rule": "r2.status == refunded"}],
        }
    ],
}


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> CompileResult:
    spec = ESpec.model_validate(SHOP)
    assert check_e_spec(spec) == []
    return compile_package(spec, TSpec(), [], tmp_path_factory.mktemp("rules"), scenario={})


def _spec_rules(rules: list[dict[str, str]]) -> list[dict[str, str]]:
    return [r for r in rules if r["source"] == "spec"]


def _err(out: dict[str, Any]) -> str:
    assert out["status"] == "error", out
    return f"{out['error']['category']}: {out['error']['message']}"


def _ok(out: dict[str, Any]) -> dict[str, Any]:
    assert out["status"] == "ok", out
    return out["data"]


# (rule id, violating call, compliant call): each call is (tool, params), run in a fresh session
CASES: list[tuple[str, list[tuple[str, dict[str, Any]]], list[tuple[str, dict[str, Any]]]]] = [
    (
        "refund_needs_delivery",
        [("set_refund_status", {"refund_id": "r1", "status": "approved"})],  # o2 is only paid
        [("set_refund_status", {"refund_id": "r4", "status": "approved"})],  # o1 is delivered
    ),
    (
        "refund_limit",
        [("set_refund_status", {"refund_id": "r2", "status": "refunded"})],  # 250 > 100, no approval
        [
            ("approve_refund", {"refund_id": "r2", "status": "refunded", "approver_id": "mgr_okafor"}),
            ("set_refund_status", {"refund_id": "r2", "status": "refunded"}),
        ],
    ),
    (
        "refund_cap",
        [("update_refund", {"refund_id": "r1", "amount": 900.0})],
        [("update_refund", {"refund_id": "r1", "amount": 300.0})],
    ),
    (
        "refund_order",
        [("create_refund", {"reason": "Never arrived", "order_id": "o9", "amount": 10.0})],
        [("create_refund", {"reason": "Never arrived", "order_id": "o3", "amount": 10.0})],
    ),
    (
        "refunds_per_order",
        [("create_refund", {"reason": "Scratched", "order_id": "o1", "amount": 10.0})],  # o1 has 3
        [("create_refund", {"reason": "Scratched", "order_id": "o2", "amount": 10.0})],
    ),
    (
        "unique_email",
        [("create_customer", {"name": "Lena B.", "email": "lena@example.com"})],
        [("create_customer", {"name": "Ivo Marx", "email": "ivo@example.com"})],
    ),
    (
        "order_total",
        [("update_order", {"order_id": "o2", "total": 5.0})],
        [("create_order_line", {"item": "Table", "order_id": "o1", "amount": 25.0})],
    ),
]


def _run_case(env: Any, scenario: str, rule_id: str, bad: list, good: list) -> tuple[str, dict[str, Any]]:
    sid = env.create_session(scenario)
    for tool, params in bad[:-1]:
        _ok(env.call(sid, tool, **params))
    refusal = _err(env.call(sid, bad[-1][0], **bad[-1][1]))
    sid = env.create_session(scenario)
    for tool, params in good:
        _ok(env.call(sid, tool, **params))
    return refusal, env.get_session_state(sid)


@pytest.mark.parametrize("rule_id", [c[0] for c in CASES])
def test_each_rule_kind_refuses_the_violation_naming_the_rule_and_accepts_the_compliant_call(
    shop: CompileResult, rule_id: str
) -> None:
    env = load_env_package(shop.path).env_cls()
    _, bad, good = next(c for c in CASES if c[0] == rule_id)
    refusal, state = _run_case(env, "refund_broken_chair", rule_id, bad, good)
    assert refusal.startswith(f"rule_violation: {rule_id}: "), refusal
    assert "Traceback" not in refusal and "/" not in refusal.split(": ", 2)[2].split("(")[0]
    if rule_id == "order_total":  # the invariant is kept: S0 holds the sum, and a new line adds to it
        assert state["orders"]["o1"]["total"] == 75.0


def test_the_package_lists_what_it_enforces(shop: CompileResult) -> None:
    kinds = {r["rule_id"]: r["kind"] for r in _spec_rules(shop.rules)}
    assert kinds == {r["rule_id"]: r["kind"] for r in RULES}
    # the references the attributes declare without a rule (refund.order_id has one) are inferred, and say so
    assert [(r["rule_id"], r["source"]) for r in shop.rules if r["source"] != "spec"] == [
        ("order_customer_exists", "inferred"),
        ("order_line_order_exists", "inferred"),
    ]
    marker = json.loads((shop.path / MARKER).read_text())
    assert marker["rules"] == shop.rules
    config = json.loads((shop.path / "data" / "config.json").read_text())
    assert len(config["rules"]) == len(RULES) + 2
    assert load_env_package(shop.path).env_cls.enforced_rules == marker["rules"]  # what the library counts
    skill = (shop.path / "SKILL.md").read_text()
    assert "## Enforced rules" in skill and "`refund_limit` (approval" in skill
    world = json.loads((shop.path / "data" / "world.json").read_text())
    assert world["orders"]["o1"]["total"] == 50.0 and world["orders"]["o3"]["total"] == 0  # computed at S0


def test_an_approval_by_the_wrong_role_is_refused_by_the_rule(shop: CompileResult) -> None:
    env = load_env_package(shop.path).env_cls()
    sid = env.create_session("refund_broken_chair")
    out = env.call(sid, "approve_refund", refund_id="r2", status="refunded", approver_id="ana_desk")
    assert _err(out).startswith("rule_violation: refund_limit: ") and "'agent'" in out["error"]["message"]
    assert _err(
        env.call(sid, "approve_refund", refund_id="r2", status="refunded", approver_id="x")
    ).startswith("invalid_reference")
    # a small refund needs no approval
    _ok(env.call(sid, "set_refund_status", refund_id="r3", status="refunded"))


def _reads(env_cls: Any) -> set[str]:
    return {t.name for t in env_cls.tools if t.side_effect == "read"}


@pytest.mark.parametrize("rule_id", [r["rule_id"] for r in RULES])
def test_every_rule_has_a_goal_of_several_steps_with_a_read_first(shop: CompileResult, rule_id: str) -> None:
    env_cls = load_env_package(shop.path).env_cls
    sc = env_cls.scenario(f"rule_{rule_id}")
    steps = sc.reference_solution
    reads = _reads(env_cls)
    assert len(steps) >= 2 and steps[0]["tool"] in reads, steps
    writes = [s for s in steps if s["tool"] not in reads]
    assert writes, steps
    # a value the agent must read first: a write argument the prompt does not give
    hidden = [
        v
        for s in writes
        for v in s["params"].values()
        if isinstance(v, str) and not re.search(rf"\b{re.escape(v)}\b", sc.task_prompt)
    ]
    assert hidden, (sc.task_prompt, writes)
    env = env_cls()
    gold = env.create_session(sc.scenario_id)
    for s in steps:
        _ok(env.call(gold, s["tool"], **s["params"]))
    assert env.evaluate_session(gold)["overall_score"] == 1.0
    assert "r3" not in json.dumps(sc.evaluation["expected"])
    _ok(env.call(gold, "update_refund", refund_id="r3", reason="edited"))  # collateral costs
    assert env.evaluate_session(gold)["overall_score"] < 1.0
    idle = env.create_session(sc.scenario_id)
    assert env.evaluate_session(idle)["overall_score"] == 0.0
    if len(writes) > 1:  # the last write alone (skipping what the rule requires first) does not do
        lone = env.create_session(sc.scenario_id)
        env.call(lone, writes[-1]["tool"], **writes[-1]["params"])
        assert env.evaluate_session(lone)["overall_score"] < 1.0


def test_the_rule_package_passes_the_contract(shop: CompileResult) -> None:
    report = run_contract(shop.path)
    assert report.passed, report.summary()


@pytest.mark.skipif(not sandbox_available().ok, reason="the env worker runs in the bubblewrap sandbox")
def test_refusals_reach_the_agent_through_the_env_worker(shop: CompileResult) -> None:
    """The package imported only inside its sandboxed env worker, as synthesised libraries run."""
    from dataclaw.envcraft.worker import env_class

    cls = env_class(str(shop.path))
    assert [r["rule_id"] for r in _spec_rules(cls.enforced_rules)] == [r["rule_id"] for r in RULES]
    env = cls()
    for rule_id, bad, good in CASES:
        refusal, _ = _run_case(env, "refund_broken_chair", rule_id, bad, good)
        assert refusal.startswith(f"rule_violation: {rule_id}: "), refusal


MALFORMED = [
    ({"kind": "limit", "entity": "refund", "field": "reason", "op": "<=", "value": 5}, "is not numeric"),
    ({"kind": "approval", "entity": "refund", "on": "paid_out", "role": "manager"}, "on 'paid_out'"),
    ({"kind": "reference", "entity": "refund", "field": "order_id", "related": "invoice"}, "'invoice'"),
    ({"kind": "computed", "entity": "order", "field": "total", "related": "order_line"}, "needs field"),
    ({"kind": "precondition", "entity": "refund", "on": "approved"}, "needs field"),
    (
        {"kind": "quota", "entity": "refund", "related": "order", "via": "customer", "op": "<=", "value": 1},
        "via",
    ),
]


@pytest.mark.parametrize(("rule", "why"), MALFORMED, ids=[m[0]["kind"] for m in MALFORMED])
def test_a_malformed_rule_is_one_clear_issue_and_the_rest_still_compiles(
    rule: dict[str, Any], why: str, tmp_path: Path
) -> None:
    raw = copy.deepcopy(SHOP)
    raw["business_rules"] = [*RULES[:2], {"rule_id": "bad_one", "description": "A broken rule.", **rule}]
    spec = ESpec.model_validate(raw)
    issues = check_e_spec(spec)
    assert [(i.code, i.path) for i in issues] == [(IssueCode.BAD_RULE, "business_rules[2]")], issues
    assert "bad_one" in issues[0].message and why in issues[0].message, issues[0].message
    res = compile_package(spec, TSpec(), [], tmp_path, scenario={})
    assert [r["rule_id"] for r in _spec_rules(res.rules)] == ["refund_needs_delivery", "refund_limit"]
    assert any(d.startswith("rule bad_one not enforced: ") for d in res.defaults), res.defaults


def test_prose_rules_stay_prose_and_compile_unchanged(tmp_path: Path) -> None:
    raw = copy.deepcopy(SHOP)
    raw["business_rules"] = [{"rule_id": "be_kind", "description": "Answer customers politely."}]
    res = compile_package(ESpec.model_validate(raw), TSpec(), [], tmp_path, scenario={})
    assert _spec_rules(res.rules) == [] and "approve_refund" not in res.tools
    assert "## Other rules (guidance, not enforced)" in (res.path / "SKILL.md").read_text()


def test_a_reference_the_attributes_declare_is_inferred_and_enforced_when_set(shop: CompileResult) -> None:
    """order.customer_id is named after customer's id field: set, it must name a customer; left out, the
    order is still created (the spec did not make it required)."""
    env = load_env_package(shop.path).env_cls()
    sid = env.create_session("refund_broken_chair")
    out = _err(env.call(sid, "create_order", title="Sofa", customer_id="c9"))
    assert (
        out.startswith("rule_violation: order_customer_exists: ") and "'c9' names no existing customer" in out
    )
    _ok(env.call(sid, "create_order", title="Sofa", customer_id="c2"))
    _ok(env.call(sid, "create_order", title="Rug"))
    assert env.scenario("rule_order_customer_exists").reference_solution[0]["tool"] == "search_customers"


@pytest.mark.parametrize("limits", [FULL, dataclasses.replace(COMPACT, rules=True)], ids=["full", "compact"])
def test_the_rule_language_fits_a_llama_cpp_grammar(limits: Any) -> None:
    """The model fills rules through the state answer's schema; its grammar stays buildable, and the rules
    above are answers it allows."""
    pytest.importorskip("llama_cpp")
    from dataclaw.models.backends.local import decoding_schema

    schema = state_schema({e["name"]: [a["name"] for a in e["attributes"]] for e in SHOP["entities"]}, limits)
    rule = schema["properties"]["business_rules"]["items"]
    wanted = {"kind", "entity", "on", "field", "op", "value", "related", "via", "of", "role"}
    assert wanted <= set(rule["properties"])
    assert set(rule["properties"]["kind"]["enum"]) == {r["kind"] for r in RULES}
    decoding_schema(schema, "local:test")  # raises when llama.cpp could not hold the grammar
    for r in RULES:  # (COMPACT allows one entity per rule)
        jsonschema.validate({**r, "entities": r["entities"][:1]}, rule)


def test_the_embedded_model_s_compact_schema_keeps_rules_as_prose() -> None:
    """SmolLM2-135M does not fill the rule language meaningfully; its recorded answers stay replayable."""
    rule = state_schema({"order": ["order_id"]}, COMPACT)["properties"]["business_rules"]["items"]
    assert set(rule["properties"]) == {"rule_id", "description", "entities"}


def test_no_other_write_path_gets_round_a_rule(tmp_path: Path) -> None:
    """Gaming attempts: the archetype mechanics' write paths (stage + commit, advance) and updates that move
    a pointer or copy a value run the same guards as the canonical tools."""
    from dataclaw.envcraft.synth import retrieve

    spec = ESpec.model_validate(SHOP)
    found = retrieve(spec, TSpec(), pinned=["transactional_workspace", "workflow_orchestration"])
    res = compile_package(spec, TSpec(), found, tmp_path, scenario={})
    assert {"stage_refund_changes", "commit_changes", "advance_refund"} <= set(res.tools), res.tools
    env = load_env_package(res.path).env_cls()
    sid = env.create_session("refund_broken_chair")
    refused = {
        "refund_limit": ("advance_refund", {"refund_id": "r2"}),
        "refund_order": ("update_refund", {"refund_id": "r1", "order_id": "o9"}),
        "refunds_per_order": ("update_refund", {"refund_id": "r1", "order_id": "o1"}),
        "unique_email": ("update_customer", {"customer_id": "c2", "email": "lena@example.com"}),
    }
    for rule_id, (tool, params) in refused.items():
        assert _err(env.call(sid, tool, **params)).startswith(f"rule_violation: {rule_id}: ")
    _ok(env.call(sid, "stage_refund_changes", refund_id="r1", amount=900.0))
    assert _err(env.call(sid, "commit_changes")).startswith("rule_violation: refund_cap: ")
    state = env.get_session_state(sid)
    assert state["refunds"]["r1"]["amount"] == 250.0 and state["refunds"]["r2"]["status"] == "approved"
    assert state["customers"]["c2"]["email"] == "tom@example.com"
    assert run_contract(res.path).passed


def test_a_rule_naming_its_entity_only_in_entities_still_compiles(tmp_path: Path) -> None:
    raw = copy.deepcopy(SHOP)
    raw["business_rules"] = [{**RULES[2], "entity": ""}]  # refund_cap, entities ["refund"]
    spec = ESpec.model_validate(raw)
    assert check_e_spec(spec) == []
    res = compile_package(spec, TSpec(), [], tmp_path, scenario={})
    assert [r["rule_id"] for r in _spec_rules(res.rules)] == ["refund_cap"]


def test_a_precondition_on_a_status_the_lifecycle_lacks_is_not_enforced(tmp_path: Path) -> None:
    """It would refuse every move for ever: the compiler leaves it out and says why."""
    raw = copy.deepcopy(SHOP)
    raw["business_rules"] = [{**RULES[0], "value": "refunded_twice"}]
    res = compile_package(ESpec.model_validate(raw), TSpec(), [], tmp_path, scenario={})
    assert _spec_rules(res.rules) == []
    assert any(
        "refund_needs_delivery not enforced: 'refunded_twice' is not a status of order" in d
        for d in res.defaults
    )
