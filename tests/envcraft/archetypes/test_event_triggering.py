"""Mechanics of the event-triggering archetype (ECA): validation, linear rule scan, condition semantics,
in-order dispatch, safe regex, rule CRUD guards, dual logs, behaviour-based evaluation (the fuzz of
every tool is generic: tests/envcraft/test_fuzz.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataclaw.envcraft.archetypes.event_triggering import EventTriggering
from dataclaw.envcraft.archetypes.event_triggering.conditions import evaluate

READING = {"device_id": "probe-cr3", "metric": "temperature", "unit": "C"}


@pytest.fixture
def hub(tmp_path: Path) -> EventTriggering:
    return EventTriggering(tmp_path)


def _ok(out: dict) -> dict:
    assert out["status"] == "ok", out
    return out["data"]


def _err(out: dict, category: str) -> str:
    assert out["status"] == "error" and out["error"]["category"] == category, out
    return out["error"]["message"]


def _inject(hub: EventTriggering, sid: str, source_id: str, trigger_type: str, payload: dict) -> dict:
    """The raw result of one ``inject_event`` call."""
    return hub.call(sid, "inject_event", source_id=source_id, trigger_type=trigger_type, payload=payload)


def _run_reference(hub: EventTriggering, sid: str, scenario_id: str) -> None:
    """Replay the scenario's reference solution; every step must succeed."""
    for step in hub.scenario(scenario_id).reference_solution:
        _ok(hub.call(sid, step["tool"], **step["params"]))


def test_history_was_run_through_the_engine(hub: EventTriggering) -> None:
    state = hub.get_session_state(hub.create_session("cold_room_escalation"))
    events = {e["payload"].get("invoice_id") or e["event_id"]: e for e in state["event_log"]}
    assert len(state["event_log"]) == 16 and all(e["origin"] == "history" for e in state["event_log"])
    assert events["INV-20433"]["fired_rules"] == ["R-6"]  # 12,800 > 10,000
    assert events["INV-20455"]["matched_rules"] == ["R-6"] and events["INV-20455"]["fired_rules"] == []
    push = next(e for e in state["event_log"] if e["trigger_type"] == "push")
    assert push["matched_rules"] == []  # R-7 is disabled, so it is not even matched
    page = next(a for a in state["action_log"] if a["rule_id"] == "R-1" and a["type"] == "page_oncall")
    assert page["params"]["summary"] == "wms-db: replica lag 95s"


def test_injection_fires_aligned_rules_and_dispatches_in_order(hub: EventTriggering) -> None:
    sid = hub.create_session("cold_room_escalation")
    rule = _ok(
        hub.call(
            sid,
            "create_rule",
            name="Cold room 3 hot",
            trigger_type="reading",
            source_filter="coldroom-3-probe",
            condition={"field": "value", "op": "gt", "value": 8},
            actions=[
                {
                    "type": "notify_channel",
                    "params": {"channel": "#cold-chain", "message": "CR3 {value} {unit} {nope}"},
                },
                {
                    "type": "set_device",
                    "params": {"device": "coldroom-3-compressor", "setting": "mode", "value": "boost"},
                },
            ],
        )
    )["rule"]
    assert rule["rule_id"] == "R-8" and rule["version"] == 1
    out = _ok(_inject(hub, sid, "coldroom-3-probe", "reading", {**READING, "value": 9.4}))
    event = out["event"]
    assert event["event_id"] == "E-0017" and event["matched_rules"] == ["R-3", "R-8"]
    assert event["fired_rules"] == ["R-3", "R-8"]  # R-3 has no condition; rule order is kept
    assert [(a["rule_id"], a["position"], a["type"]) for a in out["actions"]] == [
        ("R-3", 0, "notify_channel"),
        ("R-8", 0, "notify_channel"),
        ("R-8", 1, "set_device"),
    ]
    assert out["actions"][1]["params"]["message"] == "CR3 9.4 C {nope}"
    assert out["actions"][1]["unresolved_placeholders"] == ["nope"]
    cool = _ok(_inject(hub, sid, "coldroom-3-probe", "reading", {**READING, "value": 8}))["event"]
    assert cool["fired_rules"] == ["R-3"] and "value ('8') gt '8': false" in cool["evaluations"]["R-8"]
    other = _ok(_inject(hub, sid, "coldroom-1-probe", "reading", {**READING, "value": 9.4}))["event"]
    assert other["matched_rules"] == ["R-4"]  # source filters keep R-3 and R-8 out
    state = hub.get_session_state(sid)
    assert state["rules"]["R-8"]["fire_count"] == 1 and state["rules"]["R-8"]["last_fired_event"] == "E-0017"
    assert state["sources"]["coldroom-3-probe"]["event_count"] == 3 + 2
    assert _ok(hub.call(sid, "query_actions", rule_id="R-8"))["count"] == 2
    assert [e["event_id"] for e in _ok(hub.call(sid, "query_events", origin="injected"))["events"]] == [
        "E-0019",
        "E-0018",
        "E-0017",
    ]
    assert _ok(hub.call(sid, "query_events", fired_rule="R-8"))["count"] == 1


def test_invalid_events_are_refused_and_change_nothing(hub: EventTriggering) -> None:
    sid = hub.create_session("cold_room_escalation")
    before = hub.get_session_state(sid)
    _err(_inject(hub, sid, "freezer-9", "reading", READING), "invalid_reference")
    msg = _err(_inject(hub, sid, "stripe-billing", "reading", {**READING, "value": 1}), "invalid_argument")
    assert "payments source" in msg and "payment_failed" in msg
    _err(_inject(hub, sid, "coldroom-3-probe", "reading", READING), "missing_field")
    _err(_inject(hub, sid, "coldroom-3-probe", "reading", {**READING, "value": "hot"}), "invalid_argument")
    _err(
        _inject(hub, sid, "coldroom-3-probe", "reading", {**READING, "value": 1, "note": "x" * 2001}),
        "invalid_argument",
    )
    _err(
        _inject(hub, sid, "coldroom-3-probe", "reading", {**READING, "value": 1, "nested": {"a": 1}}),
        "invalid_argument",
    )
    after = hub.get_session_state(sid)
    for key in ("event_log", "action_log", "rules", "sources", "counters"):
        assert after[key] == before[key]
    assert len(after["actions"]) == 6 and all(a["status"] == "error" for a in after["actions"])


def test_condition_semantics_strings_degrade_numbers_fail_closed() -> None:
    gt = {"field": "value", "op": "gt", "value": 8.0}
    assert evaluate(gt, {"value": 9})[0] and evaluate(gt, {"value": "9.5"})[0]
    assert (
        not evaluate(gt, {})[0]
        and not evaluate(gt, {"value": "hot"})[0]
        and not evaluate(gt, {"value": True})[0]
    )
    assert not evaluate({"field": "value", "op": "lte", "value": 8.0}, {"value": None})[0]
    contains = {"field": "subject", "op": "contains", "value": "SALMON"}
    assert evaluate(contains, {"subject": "Pallet of salmon arrived warm"})[0]
    assert not evaluate(contains, {})[0]  # missing reads as "", no crash
    assert evaluate({"field": "labels", "op": "contains", "value": "hotfix"}, {"labels": ["Hotfix", "wms"]})[
        0
    ]
    assert evaluate({"field": "commits", "op": "contains", "value": "2"}, {"commits": 12})[
        0
    ]  # number as text
    assert evaluate({"field": "amount", "op": "eq", "value": 4890}, {"amount": 4890.0})[0]
    assert evaluate({"field": "amount", "op": "eq", "value": "4890"}, {"amount": 4890.0})[0]
    assert evaluate({"field": "priority", "op": "ne", "value": "urgent"}, {})[0]
    regex = {"field": "reason", "op": "regex", "value": "^(card_declined|expired_card)$"}
    assert (
        evaluate(regex, {"reason": "expired_card"})[0] and not evaluate(regex, {"reason": "bank_timeout"})[0]
    )
    assert not evaluate(regex, {})[0]
    assert evaluate(None, {}) == (True, "no condition")


def test_regex_is_bounded_and_linear(hub: EventTriggering) -> None:
    sid = hub.create_session("card_payment_failures")
    base = {"trigger_type": "payment_failed"}
    payload = {"invoice_id": "INV-1", "amount": 1, "reason": "a" * 1999 + "!"}
    evil = {"field": "reason", "op": "regex", "value": "^(a+)+$"}
    # a backtracking engine would take ~2^2000 steps here; RE2 answers in linear time
    assert _ok(hub.call(sid, "test_condition", condition=evil, payload=payload, **base))["holds"] is False
    _err(
        hub.call(sid, "test_condition", condition={**evil, "value": "(a)\\1"}, payload=payload, **base),
        "invalid_argument",
    )
    _err(
        hub.call(sid, "test_condition", condition={**evil, "value": "(?=a)a"}, payload=payload, **base),
        "invalid_argument",
    )
    _err(
        hub.call(sid, "test_condition", condition={**evil, "value": "a" * 201}, payload=payload, **base),
        "invalid_argument",
    )
    _err(
        hub.call(
            sid, "test_condition", condition={**evil, "value": "(x{999}){999}"}, payload=payload, **base
        ),
        "invalid_argument",
    )
    msg = _err(
        hub.call(
            sid,
            "create_rule",
            name="Bad regex",
            trigger_type="payment_failed",
            condition={**evil, "value": "(["},
            actions=[{"type": "send_email", "params": {"contact": "cfo", "subject": "x"}}],
        ),
        "invalid_argument",
    )
    assert "not a valid RE2" in msg
    assert sorted(hub.get_session_state(sid)["rules"]) == [f"R-{i}" for i in range(1, 8)]  # nothing created


def test_rule_validation_guards(hub: EventTriggering) -> None:
    sid = hub.create_session("card_payment_failures")
    act = [{"type": "send_email", "params": {"contact": "ar-team", "subject": "Failed {invoice_id}"}}]
    cases = [
        (
            {"name": "Large failed payments", "trigger_type": "payment_failed", "actions": act},
            "invalid_argument",
            "already called",
        ),
        ({"name": "x1", "trigger_type": "payment_failed", "actions": act}, "invalid_argument", "3 to 80"),
        (
            {"name": "Nope", "trigger_type": "payment_bounced", "actions": act},
            "invalid_reference",
            "trigger type",
        ),
        (
            {"name": "Nope", "trigger_type": "payment_failed", "source_filter": "github-wms", "actions": act},
            "invalid_argument",
            "version_control",
        ),
        (
            {
                "name": "Nope",
                "trigger_type": "payment_failed",
                "condition": {"field": "iban", "op": "eq", "value": 1},
                "actions": act,
            },
            "invalid_argument",
            "invoice_id",
        ),
        (
            {
                "name": "Nope",
                "trigger_type": "payment_failed",
                "condition": {"field": "reason", "op": "gt", "value": 5},
                "actions": act,
            },
            "invalid_argument",
            "never hold",
        ),
        (
            {
                "name": "Nope",
                "trigger_type": "payment_failed",
                "condition": {"field": "amount", "op": "gt", "value": "lots"},
                "actions": act,
            },
            "invalid_argument",
            "needs a number",
        ),
        (
            {
                "name": "Nope",
                "trigger_type": "payment_failed",
                "condition": {"field": "amount", "op": "between", "value": 1},
                "actions": act,
            },
            "invalid_argument",
            "regex",
        ),
        (
            {
                "name": "Nope",
                "trigger_type": "payment_failed",
                "condition": {"field": "amount"},
                "actions": act,
            },
            "missing_field",
            "condition.op",
        ),
        ({"name": "Nope", "trigger_type": "payment_failed", "actions": []}, "invalid_argument", "1 to 8"),
        (
            {"name": "Nope", "trigger_type": "payment_failed", "actions": [{"type": "sms", "params": {}}]},
            "invalid_reference",
            "action type",
        ),
        (
            {
                "name": "Nope",
                "trigger_type": "payment_failed",
                "actions": [{"type": "notify_channel", "params": {"channel": "#random", "message": "m"}}],
            },
            "invalid_reference",
            "#cold-chain",
        ),
        (
            {
                "name": "Nope",
                "trigger_type": "payment_failed",
                "actions": [{"type": "send_email", "params": {"contact": "cfo"}}],
            },
            "missing_field",
            "subject",
        ),
        (
            {
                "name": "Nope",
                "trigger_type": "payment_failed",
                "actions": [
                    {"type": "page_oncall", "params": {"team": "finance-oncall", "severity": "medium"}}
                ],
            },
            "invalid_argument",
            "critical",
        ),
        (
            {
                "name": "Nope",
                "trigger_type": "payment_failed",
                "actions": [
                    {
                        "type": "set_device",
                        "params": {"device": "dock-2-door", "setting": "mode", "value": "boost"},
                    }
                ],
            },
            "invalid_argument",
            "state",
        ),
        (
            {
                "name": "Nope",
                "trigger_type": "payment_failed",
                "actions": [
                    {
                        "type": "set_device",
                        "params": {"device": "dock-2-door", "setting": "state", "value": "ajar"},
                    }
                ],
            },
            "invalid_argument",
            "locked",
        ),
    ]
    for params, category, needle in cases:
        assert needle in _err(hub.call(sid, "create_rule", **params), category), params
    state = hub.get_session_state(sid)
    assert sorted(state["rules"]) == [f"R-{i}" for i in range(1, 8)] and state["counters"]["next_rule"] == 8
    rule = _ok(
        hub.call(sid, "create_rule", name="Any card failure", trigger_type="payment_failed", actions=act)
    )["rule"]
    assert rule["rule_id"] == "R-8" and rule["source_filter"] is None and rule["condition"] is None


def test_update_disable_clear_stale_and_delete(hub: EventTriggering) -> None:
    sid = hub.create_session("cold_room_escalation")
    _err(hub.call(sid, "update_rule", rule_id="R-3"), "missing_field")
    _err(hub.call(sid, "update_rule", rule_id="R-99", enabled=False), "invalid_reference")
    _err(
        hub.call(
            sid,
            "update_rule",
            rule_id="R-4",
            clear_condition=True,
            condition={"field": "value", "op": "gt", "value": 1},
        ),
        "invalid_argument",
    )
    out = hub.call(sid, "update_rule", rule_id="R-3", enabled=False, expected_version=1)
    assert "warnings" not in out and _ok(out)["rule"]["version"] == 2
    stale = hub.call(sid, "update_rule", rule_id="R-3", name="Cold room 3 debug feed", expected_version=1)
    assert stale["status"] == "ok" and stale["warnings"][0]["category"] == "stale_information"
    ev = _ok(_inject(hub, sid, "coldroom-3-probe", "reading", {**READING, "value": 3.0}))["event"]
    assert ev["matched_rules"] == [] and ev["action_ids"] == []  # disabled rules do not match
    _ok(hub.call(sid, "update_rule", rule_id="R-4", clear_condition=True))
    ev = _ok(_inject(hub, sid, "coldroom-1-probe", "reading", {**READING, "value": 1.0}))["event"]
    assert ev["fired_rules"] == ["R-4"]
    assert _ok(hub.call(sid, "delete_rule", rule_id="R-4")) == {"deleted": "R-4"}
    _err(hub.call(sid, "get_rule", rule_id="R-4"), "invalid_reference")
    ev = _ok(_inject(hub, sid, "coldroom-1-probe", "reading", {**READING, "value": 9.0}))["event"]
    assert ev["matched_rules"] == []
    assert _ok(hub.call(sid, "query_actions", rule_id="R-4"))["count"] == 2  # past actions stay traceable
    assert _ok(hub.call(sid, "list_rules", enabled=False))["count"] == 2  # R-3 and R-7


def test_register_source_and_fire_from_it(hub: EventTriggering) -> None:
    sid = hub.create_session("cold_room_escalation")
    _err(
        hub.call(sid, "register_source", source_id="Ops Calendar!", name="Ops", category="calendar"),
        "invalid_argument",
    )
    _err(
        hub.call(sid, "register_source", source_id="github-wms", name="Dup", category="version_control"),
        "invalid_argument",
    )
    _err(
        hub.call(sid, "register_source", source_id="ops-cal", name="Ops", category="fax"), "invalid_argument"
    )
    src = _ok(
        hub.call(sid, "register_source", source_id="ops-calendar", name="Ops calendar", category="calendar")
    )
    assert src["emits"] == ["event_starting"] and src["source"]["registered_at"].startswith("2026-05-11T15:")
    _ok(
        hub.call(
            sid,
            "create_rule",
            name="Standup reminder",
            trigger_type="event_starting",
            source_filter="ops-calendar",
            condition={"field": "minutes_until", "op": "lte", "value": 10},
            actions=[
                {
                    "type": "notify_channel",
                    "params": {"channel": "#dispatch", "message": "{title} in {minutes_until} min"},
                }
            ],
        )
    )
    out = _ok(
        _inject(
            hub, sid, "ops-calendar", "event_starting", {"title": "Dispatch stand-up", "minutes_until": 5}
        )
    )
    assert out["actions"][0]["params"]["message"] == "Dispatch stand-up in 5 min"
    assert _ok(hub.call(sid, "list_sources", category="calendar"))["sources"][0]["event_count"] == 1
    catalog = _ok(hub.call(sid, "get_catalog", section="operators"))["catalog"]
    assert set(catalog) == {"eq", "ne", "gt", "gte", "lt", "lte", "contains", "regex"}


def test_evaluator_judges_behaviour_not_text(hub: EventTriggering) -> None:
    scenario = hub.scenario("cold_room_escalation")
    steps = [dict(s) for s in scenario.reference_solution]
    create = next(s for s in steps if s["tool"] == "create_rule")
    variants = {
        "gte": ({"field": "value", "op": "gte", "value": 8.05}, 1.0),
        "off": ({"field": "value", "op": "gt", "value": 7}, None),
    }
    for name, (condition, expected) in variants.items():
        sid = hub.create_session("cold_room_escalation")
        for step in steps:
            params = {**step["params"], "condition": condition} if step is create else step["params"]
            _ok(hub.call(sid, step["tool"], **params))
        ev = hub.evaluate_session(sid)
        if expected is not None:
            assert ev["overall_score"] == expected, (name, ev)
        else:
            assert ev["dimensions"]["rule_configuration"]["score"] < 1.0 and ev["overall_score"] < 1.0
    sid = hub.create_session("cold_room_escalation")
    for step in steps[:4]:  # rule created, but R-3 still on and no test event
        _ok(hub.call(sid, step["tool"], **step["params"]))
    ev = hub.evaluate_session(sid)
    assert (
        ev["dimensions"]["existing_rules"]["score"] == 0.0
        and ev["dimensions"]["dispatch_trace"]["score"] == 0.0
    )
    assert ev["overall_score"] < 0.9


def test_card_scenario_traces_and_stray_events_are_penalised(hub: EventTriggering) -> None:
    sid = hub.create_session("card_payment_failures")
    _run_reference(hub, sid, "card_payment_failures")
    state = hub.get_session_state(sid)
    injected = state["event_log"][-1]
    assert injected["fired_rules"] == ["R-8"] and injected["matched_rules"] == ["R-6", "R-8"]
    ticket = next(
        a
        for a in state["action_log"]
        if a["event_id"] == injected["event_id"] and a["type"] == "create_ticket"
    )
    assert ticket["params"]["title"] == "Card payment failed: INV-20455 (Kestrel Foods)"
    assert hub.evaluate_session(sid)["overall_score"] == 1.0
    _ok(
        _inject(
            hub,
            sid,
            "grafana-prod",
            "alert_fired",
            {"service": "wms-api", "severity": "critical", "message": "test"},
        )
    )
    assert hub.evaluate_session(sid)["dimensions"]["collateral"]["score"] == 0.75


def test_rule_without_source_filter_matches_every_source_of_its_type(hub: EventTriggering) -> None:
    sid = hub.create_session("hotfix_pull_requests")
    _run_reference(hub, sid, "hotfix_pull_requests")
    assert hub.evaluate_session(sid)["overall_score"] == 1.0
    pr = {"title": "Slotting fix", "author": "lindqvist"}
    old = _ok(
        _inject(
            hub,
            sid,
            "github-wms",
            "pull_request_opened",
            {"repo": "harborfresh/wms", "labels": ["HOTFIX"], **pr},
        )
    )
    assert old["event"]["fired_rules"] == ["R-8"]  # no source filter: the old repository counts too
    assert [a["type"] for a in old["actions"]] == ["page_oncall", "notify_channel"]
    push = _ok(
        _inject(
            hub,
            sid,
            "github-wms",
            "push",
            {"repo": "harborfresh/wms", "branch": "main", "author": "ek", "commits": 1},
        )
    )
    assert push["event"]["fired_rules"] == ["R-7"]  # re-enabled, not recreated
    assert push["actions"][0]["params"]["message"] == "ek pushed 1 commit(s) to main: {message}"
    ev = hub.evaluate_session(sid)["dimensions"]["collateral"]
    assert ev["score"] == 0.5  # two stray events that paged or posted


def test_a_too_narrow_rule_scores_lower(hub: EventTriggering) -> None:
    sid = hub.create_session("hotfix_pull_requests")
    steps = hub.scenario("hotfix_pull_requests").reference_solution
    for step in steps:
        params = step["params"]
        if step["tool"] == "create_rule":
            params = {**params, "source_filter": "github-wms-mobile"}
        _ok(hub.call(sid, step["tool"], **params))
    dims = hub.evaluate_session(sid)["dimensions"]
    assert dims["rule_configuration"]["score"] < 1.0 and dims["dispatch_trace"]["score"] == 1.0


def test_long_context_adds_a_week_of_routine_events_through_the_engine(hub: EventTriggering) -> None:
    short = hub.get_session_state(hub.create_session("cold_room_escalation"))
    sid = hub.create_session("cold_room_escalation", long_context=True)
    long = hub.get_session_state(sid)
    assert len(long["event_log"]) == len(short["event_log"]) + 240
    times = [e["at"] for e in long["event_log"]]
    assert times == sorted(times) and [e["event_id"] for e in long["event_log"]][-1] == "E-0256"
    # distractors fire rules too: R-3 posts every cold room 3 reading (30 in the extra week)
    assert long["rules"]["R-3"]["fire_count"] == short["rules"]["R-3"]["fire_count"] + 30
    assert sum(long["sources"][s]["event_count"] for s in long["sources"]) == 256
    _run_reference(hub, sid, "cold_room_escalation")
    assert hub.evaluate_session(sid)["overall_score"] == 1.0
