"""Mechanics of the stream-processing archetype: schema contracts at creation and publication, exact-equality
filters, fan-out to active matching subscriptions, priority-then-sequence delivery order, at-least-once
redelivery until ack (poll, batch, push), backpressure, subscription lifecycle, history queries and the
evaluator (the fuzz of every tool is generic: tests/envcraft/test_fuzz.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataclaw.envcraft.archetypes.stream_processing import StreamProcessing
from dataclaw.envcraft.archetypes.stream_processing.bus import matches

BACKLOG = "reefer_alarm_backlog"
GATE = "rotterdam_gate_onboarding"
GATE_SCHEMA = {
    "gate": "string",
    "truck_plate": "string",
    "container_id": "string",
    "direction": "string",
    "flagged": "boolean",
}
READING = {
    "container_id": "MSKU-4471",
    "vessel": "MAERSK KALMAR",
    "depot": "HAM",
    "temperature_c": 12.0,
    "setpoint_c": 4.0,
    "alarm": True,
}


@pytest.fixture
def bus(tmp_path: Path) -> StreamProcessing:
    return StreamProcessing(tmp_path)


def _ok(out: dict) -> dict:
    assert out["status"] == "ok", out
    return out["data"]


def _err(out: dict, category: str) -> str:
    assert out["status"] == "error" and out["error"]["category"] == category, out
    return out["error"]["message"]


def _sub(bus: StreamProcessing, sid: str, sub_id: str) -> dict:
    return bus.get_session_state(sid)["subscriptions"][sub_id]


def _gate(bus: StreamProcessing, sid: str) -> None:
    _ok(
        bus.call(
            sid,
            "create_stream",
            stream_id="gate.rtm",
            schema=GATE_SCHEMA,
            description="Rotterdam gate passages",
        )
    )


def _passage(n: int, flagged: bool = False, direction: str = "in") -> dict:
    return {
        "gate": "G2",
        "truck_plate": f"BX-{n:02d}-KL",
        "container_id": f"TRIU-{n:04d}",
        "direction": direction,
        "flagged": flagged,
    }


# ---- world replay ------------------------------------------------------------------------------------


def test_world_history_is_replayed_through_the_bus(bus: StreamProcessing) -> None:
    sid = bus.create_session(BACKLOG)
    state = bus.get_session_state(sid)
    assert len(state["events"]) == 21 and state["streams"]["reefer.telemetry"]["length"] == 15
    alerting = state["subscriptions"]["SUB-2"]
    assert alerting["pending"] == ["EV-0003", "EV-0009", "EV-0015", "EV-0018", "EV-0019"]  # alarms only
    assert alerting["deliveries"] == {"EV-0003": 2, "EV-0009": 1}
    subs = _ok(bus.call(sid, "list_subscriptions", subscriber="alerting-svc"))["subscriptions"]
    assert subs[0]["queue_depth"] == 5 and subs[0]["max_pending"] == 4 and subs[0]["backpressure"] is True


# ---- schema contracts ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [
        ({}, "non-empty"),
        ({"Gate": "string"}, "snake_case"),
        ({"gate": "text"}, "use one of"),
        ({"gate": "string?"}, "at least one field must be required"),
        ({"gate": 3}, "use one of"),
    ],
)
def test_create_stream_refuses_bad_schemas(bus: StreamProcessing, schema: dict, fragment: str) -> None:
    sid = bus.create_session(GATE)
    assert fragment in _err(
        bus.call(
            sid, "create_stream", stream_id="gate.rtm", schema=schema, description="Rotterdam gate passages"
        ),
        "invalid_argument",
    )
    assert "gate.rtm" not in bus.get_session_state(sid)["streams"]


def test_create_stream_success_and_guards(bus: StreamProcessing) -> None:
    sid = bus.create_session(GATE)
    _gate(bus, sid)
    stream = bus.get_session_state(sid)["streams"]["gate.rtm"]
    assert (
        stream["schema"] == GATE_SCHEMA and stream["length"] == 0 and stream["default_priority"] == "normal"
    )
    assert "already exists" in _err(
        bus.call(
            sid, "create_stream", stream_id="gate.rtm", schema=GATE_SCHEMA, description="again, same name"
        ),
        "invalid_argument",
    )
    _err(
        bus.call(
            sid, "create_stream", stream_id="Gate RTM", schema=GATE_SCHEMA, description="bad identifier here"
        ),
        "invalid_argument",
    )


@pytest.mark.parametrize(
    ("payload", "fragment"),
    [
        ({**READING, "humidity": 80}, "not in the schema"),
        ({k: v for k, v in READING.items() if k != "depot"}, "required field 'depot'"),
        ({**READING, "temperature_c": "12"}, "must be number"),
        ({**READING, "temperature_c": True}, "must be number"),
        ({**READING, "alarm": 1}, "must be boolean"),
    ],
)
def test_publication_validates_the_schema_contract(
    bus: StreamProcessing, payload: dict, fragment: str
) -> None:
    sid = bus.create_session(BACKLOG)
    before = bus.get_session_state(sid)
    assert fragment in _err(
        bus.call(sid, "publish_event", stream_id="reefer.telemetry", payload=payload), "invalid_argument"
    )
    after = bus.get_session_state(sid)
    assert after["events"] == before["events"] and after["subscriptions"] == before["subscriptions"]


def test_optional_fields_may_be_omitted(bus: StreamProcessing) -> None:
    sid = bus.create_session(BACKLOG)
    order = {"order_id": "ORD-5551", "customer": "Fjordfisk AS", "status": "delivered", "amount_eur": 990}
    event = _ok(bus.call(sid, "publish_event", stream_id="orders.events", payload=order))["event"]
    assert event["offset"] == 5 and event["priority"] == "normal"  # the stream's default tier
    _ok(bus.call(sid, "publish_event", stream_id="orders.events", payload={**order, "invoice_ref": "INV-9"}))


# ---- publication and fan-out --------------------------------------------------------------------------


def test_publish_appends_and_fans_out_to_active_matching_subscriptions(bus: StreamProcessing) -> None:
    sid = bus.create_session(BACKLOG)
    out = _ok(
        bus.call(sid, "publish_event", stream_id="reefer.telemetry", payload=READING, priority="critical")
    )
    event = out["event"]
    assert event["event_id"] == "EV-0022" and event["offset"] == 16 and event["priority"] == "critical"
    fanned = {f["subscription_id"]: f for f in out["fanout"]}
    assert set(fanned) == {"SUB-1", "SUB-2", "SUB-3"}  # SUB-5 filters vessel NORDIC STAR
    assert out["backpressure"] == ["SUB-2"] and fanned["SUB-2"]["queue_depth"] == 6
    assert fanned["SUB-1"]["pushed"] == [{"event_id": "EV-0022", "delivery_count": 1, "redelivered": False}]
    calm = {**READING, "alarm": False, "temperature_c": 4.1}
    out = _ok(bus.call(sid, "publish_event", stream_id="reefer.telemetry", payload=calm))
    assert {f["subscription_id"] for f in out["fanout"]} == {"SUB-1", "SUB-3"}  # SUB-2 wants alarm=true
    # the unacked EV-0022 is pushed again to SUB-1 with the next event (at-least-once)
    pushed = {p["event_id"]: p for p in out["fanout"][0]["pushed"]}
    assert pushed["EV-0022"] == {"event_id": "EV-0022", "delivery_count": 2, "redelivered": True}
    assert _ok(bus.call(sid, "query_history", stream_id="reefer.telemetry", from_offset=16))["count"] == 2


def test_filter_is_exact_equality_without_coercion() -> None:
    assert matches({"alarm": True}, {"alarm": True, "n": 1})
    assert not matches({"alarm": True}, {"alarm": 1})
    assert not matches({"n": 1}, {"n": True})
    assert matches({"n": 4}, {"n": 4.0}) and not matches({"s": "4"}, {"s": 4})
    assert not matches({"missing": "x"}, {}) and matches({}, {"anything": 1})


# ---- delivery: poll, batch, push, ack -----------------------------------------------------------------


def test_poll_fetch_orders_by_priority_then_sequence_and_redelivers(bus: StreamProcessing) -> None:
    sid = bus.create_session(BACKLOG)
    first = _ok(bus.call(sid, "fetch_events", subscription_id="SUB-2", max_events=3))["events"]
    assert [e["event_id"] for e in first] == ["EV-0009", "EV-0018", "EV-0003"]  # critical, critical, high
    assert [e["delivery_count"] for e in first] == [2, 1, 3] and first[1]["redelivered"] is False
    again = _ok(bus.call(sid, "fetch_events", subscription_id="SUB-2", max_events=10))["events"]
    assert [e["event_id"] for e in again] == ["EV-0009", "EV-0018", "EV-0003", "EV-0015", "EV-0019"]
    assert _sub(bus, sid, "SUB-2")["pending"] == ["EV-0003", "EV-0009", "EV-0015", "EV-0018", "EV-0019"]


def test_ack_removes_only_delivered_events_all_or_nothing(bus: StreamProcessing) -> None:
    sid = bus.create_session(BACKLOG)
    assert "fetch it first" in _err(
        bus.call(sid, "ack_events", subscription_id="SUB-2", event_ids=["EV-0015"]), "invalid_transition"
    )
    # EV-0003 was delivered (before the crash) but EV-0015 was not: nothing is acked
    _err(
        bus.call(sid, "ack_events", subscription_id="SUB-2", event_ids=["EV-0003", "EV-0015"]),
        "invalid_transition",
    )
    assert len(_sub(bus, sid, "SUB-2")["pending"]) == 5
    _ok(bus.call(sid, "fetch_events", subscription_id="SUB-2", max_events=10))
    out = _ok(
        bus.call(sid, "ack_events", subscription_id="SUB-2", event_ids=["EV-0015", "EV-0019", "EV-0015"])
    )
    assert (
        out["acked"] == ["EV-0015", "EV-0019"]
        and out["queue"]["queue_depth"] == 3
        and not out["queue"]["backpressure"]
    )
    sub = _sub(bus, sid, "SUB-2")
    assert sub["pending"] == ["EV-0003", "EV-0009", "EV-0018"] and "EV-0015" in sub["acked"]
    assert "already acknowledged" in _err(
        bus.call(sid, "ack_events", subscription_id="SUB-2", event_ids=["EV-0015"]), "invalid_transition"
    )
    assert "not pending" in _err(
        bus.call(sid, "ack_events", subscription_id="SUB-2", event_ids=["EV-0001"]), "invalid_argument"
    )
    assert "not an event id" in _err(
        bus.call(sid, "ack_events", subscription_id="SUB-2", event_ids=["EV-9999"]), "invalid_argument"
    )
    _err(bus.call(sid, "ack_events", subscription_id="SUB-2", event_ids=[]), "missing_field")


def test_batch_fetch_waits_for_a_full_batch(bus: StreamProcessing) -> None:
    sid = bus.create_session(GATE)
    _gate(bus, sid)
    sub = _ok(
        bus.call(
            sid,
            "subscribe",
            stream_id="gate.rtm",
            subscriber="compliance-archive",
            delivery_mode="batch",
            batch_size=3,
        )
    )["subscription"]
    for n in (1, 2):
        _ok(bus.call(sid, "publish_event", stream_id="gate.rtm", payload=_passage(n)))
    waiting = _ok(bus.call(sid, "fetch_events", subscription_id=sub["subscription_id"]))
    assert waiting["events"] == [] and waiting["note"] == "waiting for a full batch: 2/3 pending"
    short = _ok(bus.call(sid, "fetch_events", subscription_id=sub["subscription_id"], flush=True))["events"]
    assert len(short) == 2
    for n in (3, 4):
        _ok(
            bus.call(
                sid,
                "publish_event",
                stream_id="gate.rtm",
                payload=_passage(n),
                priority="high" if n == 4 else None,
            )
        )
    batch = _ok(bus.call(sid, "fetch_events", subscription_id=sub["subscription_id"]))["events"]
    assert [e["payload"]["container_id"] for e in batch] == ["TRIU-0004", "TRIU-0001", "TRIU-0002"]
    assert [e["delivery_count"] for e in batch] == [1, 2, 2]


def test_push_subscriptions_are_not_fetched(bus: StreamProcessing) -> None:
    sid = bus.create_session(BACKLOG)
    assert "push" in _err(bus.call(sid, "fetch_events", subscription_id="SUB-1"), "invalid_transition")
    _ok(bus.call(sid, "publish_event", stream_id="reefer.telemetry", payload=READING))
    pending = _ok(bus.call(sid, "get_pending", subscription_id="SUB-1"))["pending"]
    assert [(e["event_id"], e["delivery_count"]) for e in pending] == [("EV-0022", 1)]
    _ok(bus.call(sid, "ack_events", subscription_id="SUB-1", event_ids=["EV-0022"]))  # pushed = delivered
    assert _sub(bus, sid, "SUB-1")["pending"] == []


def test_get_pending_is_ordered_and_read_only(bus: StreamProcessing) -> None:
    sid = bus.create_session(BACKLOG)
    before = bus.get_session_state(sid)["subscriptions"]
    out = _ok(bus.call(sid, "get_pending", subscription_id="SUB-2", limit=2))
    assert [e["event_id"] for e in out["pending"]] == ["EV-0009", "EV-0018"]
    assert out["queue"] == {
        "subscription_id": "SUB-2",
        "queue_depth": 5,
        "max_pending": 4,
        "backpressure": True,
        "status": "active",
    }
    assert bus.get_session_state(sid)["subscriptions"] == before


# ---- subscription lifecycle ---------------------------------------------------------------------------


def test_subscribe_validates_filter_and_sees_only_future_events(bus: StreamProcessing) -> None:
    sid = bus.create_session(BACKLOG)
    poll = {"stream_id": "reefer.telemetry", "subscriber": "customs-broker", "delivery_mode": "poll"}
    _err(bus.call(sid, "subscribe", **poll, filter={"colour": "red"}), "invalid_argument")
    assert "never match" in _err(
        bus.call(sid, "subscribe", **poll, filter={"alarm": "yes"}), "invalid_argument"
    )
    _err(bus.call(sid, "subscribe", **(poll | {"subscriber": "nobody"})), "invalid_reference")
    _err(bus.call(sid, "subscribe", **(poll | {"delivery_mode": "batch"})), "missing_field")
    _err(bus.call(sid, "subscribe", **poll, batch_size=5), "invalid_argument")
    sub = _ok(bus.call(sid, "subscribe", **poll, filter={"depot": "HAM"}))["subscription"]
    assert sub["subscription_id"] == "SUB-7" and sub["pending"] == []  # no backfill of the history
    _ok(bus.call(sid, "publish_event", stream_id="reefer.telemetry", payload=READING))
    _ok(bus.call(sid, "publish_event", stream_id="reefer.telemetry", payload={**READING, "depot": "BRV"}))
    assert _sub(bus, sid, "SUB-7")["pending"] == ["EV-0022"]


def test_update_filter_applies_to_future_events_and_keeps_pending(bus: StreamProcessing) -> None:
    sid = bus.create_session(BACKLOG)
    out = _ok(
        bus.call(sid, "update_subscription", subscription_id="SUB-2", filter={"alarm": True, "depot": "RTM"})
    )
    assert out["changed"] == {"filter": [{"alarm": True}, {"alarm": True, "depot": "RTM"}]}
    assert len(_sub(bus, sid, "SUB-2")["pending"]) == 5
    _ok(
        bus.call(sid, "publish_event", stream_id="reefer.telemetry", payload=READING)
    )  # HAM: no longer matches
    assert len(_sub(bus, sid, "SUB-2")["pending"]) == 5
    _ok(bus.call(sid, "update_subscription", subscription_id="SUB-2", delivery_mode="batch", batch_size=2))
    assert _sub(bus, sid, "SUB-2")["batch_size"] == 2
    _err(bus.call(sid, "update_subscription", subscription_id="SUB-2"), "missing_field")
    _err(
        bus.call(sid, "update_subscription", subscription_id="SUB-2", delivery_mode="poll", batch_size=3),
        "invalid_argument",
    )


def test_unsubscribe_protects_unacked_events(bus: StreamProcessing) -> None:
    sid = bus.create_session(BACKLOG)
    assert "2 event(s) are still unacknowledged" in _err(
        bus.call(sid, "unsubscribe", subscription_id="SUB-5"), "invalid_transition"
    )
    assert _sub(bus, sid, "SUB-5")["status"] == "active"
    out = _ok(bus.call(sid, "unsubscribe", subscription_id="SUB-5", drop_pending=True))
    assert out["dropped_events"] == ["EV-0004", "EV-0008"]
    sub = _sub(bus, sid, "SUB-5")
    assert sub["status"] == "cancelled" and sub["pending"] == [] and sub["dropped"] == ["EV-0004", "EV-0008"]
    nordic = {**READING, "vessel": "NORDIC STAR"}
    fanout = _ok(bus.call(sid, "publish_event", stream_id="reefer.telemetry", payload=nordic))["fanout"]
    assert "SUB-5" not in {f["subscription_id"] for f in fanout}
    _err(bus.call(sid, "unsubscribe", subscription_id="SUB-5"), "invalid_transition")
    _err(bus.call(sid, "fetch_events", subscription_id="SUB-5"), "invalid_transition")
    assert _ok(bus.call(sid, "list_subscriptions", subscriber="ops-dashboard"))["count"] == 1
    assert (
        _ok(bus.call(sid, "list_subscriptions", subscriber="ops-dashboard", include_cancelled=True))["count"]
        == 2
    )
    # an empty queue unsubscribes without dropping anything
    assert _ok(bus.call(sid, "unsubscribe", subscription_id="SUB-4"))["dropped_events"] == []


# ---- history -------------------------------------------------------------------------------------------


def test_query_history_filters_and_shows_where_events_are_pending(bus: StreamProcessing) -> None:
    sid = bus.create_session(BACKLOG)
    out = _ok(
        bus.call(sid, "query_history", stream_id="reefer.telemetry", where={"container_id": "MSKU-4471"})
    )
    assert [e["offset"] for e in out["events"]] == [1, 3, 8, 14] and out["count"] == 4
    assert out["events"][3]["pending_in"] == ["SUB-2", "SUB-3"]
    crit = _ok(bus.call(sid, "query_history", stream_id="reefer.telemetry", priority="critical"))["events"]
    assert [e["event_id"] for e in crit] == ["EV-0005", "EV-0009", "EV-0018"]
    _err(bus.call(sid, "query_history", stream_id="nope"), "invalid_reference")
    _err(bus.call(sid, "query_history", stream_id="incidents", limit=0), "invalid_argument")


# ---- evaluation ----------------------------------------------------------------------------------------


def test_evaluator_penalises_wrong_acks_and_unallowed_drops(bus: StreamProcessing) -> None:
    sid = bus.create_session(BACKLOG)
    for step in StreamProcessing.scenario(BACKLOG).reference_solution:
        _ok(bus.call(sid, step["tool"], **step["params"]))
    assert bus.evaluate_session(sid)["overall_score"] == 1.0
    _ok(bus.call(sid, "ack_events", subscription_id="SUB-2", event_ids=["EV-0009"]))
    _ok(bus.call(sid, "unsubscribe", subscription_id="SUB-6", drop_pending=True))
    dims = bus.evaluate_session(sid)["dimensions"]
    assert dims["queue_state"]["score"] == 0.5  # SUB-2 and SUB-6 queues wrong
    assert "1 event(s) dropped" in dims["delivery_discipline"]["reason"]


def test_evaluator_counts_duplicates_and_priorities(bus: StreamProcessing) -> None:
    sid = bus.create_session(GATE)
    steps = StreamProcessing.scenario(GATE).reference_solution
    for step in steps:
        params = dict(step["params"])
        if step["tool"] == "publish_event" and params["payload"]["flagged"]:
            params["priority"] = "normal"  # wrong tier for a flagged passage
        bus.call(sid, step["tool"], **params)
    report = bus.evaluate_session(sid)
    assert report["dimensions"]["publications"]["score"] < 1.0 and report["overall_score"] < 1.0


def test_long_context_adds_position_pings_without_touching_queues(bus: StreamProcessing) -> None:
    plain = bus.get_session_state(bus.create_session(BACKLOG))
    sid = bus.create_session(BACKLOG, long_context=True)
    state = bus.get_session_state(sid)
    assert state["streams"]["fleet.positions"]["length"] == 144 and len(state["events"]) == 21 + 144
    assert state["subscriptions"] == plain["subscriptions"]
    pings = _ok(
        bus.call(sid, "query_history", stream_id="fleet.positions", where={"vessel": "MSC ELODIE"}, limit=200)
    )
    assert pings["count"] == 18 and pings["events"][-1]["payload"]["lon"] == 4.152
    for step in StreamProcessing.scenario(BACKLOG).reference_solution:
        _ok(bus.call(sid, step["tool"], **step["params"]))
    assert bus.evaluate_session(sid)["overall_score"] == 1.0
