"""Mechanics of the temporal-scheduling archetype: timezones and working hours, eager pairwise conflict
detection, the four resolution strategies, filtered listing and cursor-based availability."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dataclaw.envcraft.archetypes.temporal_scheduling import TemporalSchedulingEnv
from dataclaw.envcraft.archetypes.temporal_scheduling.engine import free_gaps, minutes_between, overlaps
from dataclaw.envcraft.archetypes.temporal_scheduling.events import STRATEGIES, Strategy

SPREE, HAVEL, AUSTIN = "room-berlin-spree", "room-berlin-havel", "room-austin-pecan"


@pytest.fixture
def env(tmp_path: Path) -> TemporalSchedulingEnv:
    return TemporalSchedulingEnv(tmp_path)


def _ok(out: dict) -> dict:
    assert out["status"] == "ok", out
    return out["data"]


def _err(out: dict, category: str) -> str:
    assert out["status"] == "error" and out["error"]["category"] == category, out
    return out["error"]["message"]


def _events(env: TemporalSchedulingEnv, sid: str) -> dict:
    return env.get_session_state(sid)["events"]


# ---- pure pieces ----------------------------------------------------------------------------------------


def test_overlap_is_half_open() -> None:
    a = ("2026-04-14T07:00:00Z", "2026-04-14T08:00:00Z")
    assert overlaps(*a, "2026-04-14T07:59:00Z", "2026-04-14T09:00:00Z")
    assert not overlaps(*a, "2026-04-14T08:00:00Z", "2026-04-14T09:00:00Z")  # touching
    assert overlaps(*a, "2026-04-14T06:00:00Z", "2026-04-14T10:00:00Z")  # containment


def _hm(m: int) -> str:
    return f"2026-04-14T{m // 60:02d}:{m % 60:02d}:00Z"


@given(
    busy=st.lists(st.tuples(st.integers(0, 1400), st.integers(1, 300)), max_size=8),
    min_minutes=st.integers(1, 120),
)
def test_free_gaps_are_disjoint_from_busy_and_long_enough(busy: list, min_minutes: int) -> None:
    intervals = [(_hm(s), _hm(min(s + d, 1439))) for s, d in busy if s + 1 <= 1439]
    intervals = [(a, b) for a, b in intervals if a < b]
    window = (_hm(480), _hm(1080))
    gaps = free_gaps(intervals, window, min_minutes)
    for g in gaps:
        assert window[0] <= g[0] < g[1] <= window[1] and minutes_between(*g) >= min_minutes
        assert not any(overlaps(*g, *b) for b in intervals)
    assert gaps == sorted(gaps)
    # every free minute of the window long enough is covered: brute force by minute
    free = [m for m in range(480, 1080) if not any(overlaps(_hm(m), _hm(m + 1), *b) for b in intervals)]
    covered = {
        m for g in gaps for m in range(int(minutes_between(_hm(0), g[0])), int(minutes_between(_hm(0), g[1])))
    }
    assert covered <= set(free)


# ---- detection and working hours ------------------------------------------------------------------------


def test_world_conflicts_are_detected_eagerly(env: TemporalSchedulingEnv) -> None:
    sid = env.create_session("spree_double_bookings")
    ev = _events(env, sid)
    assert ev["E-102"]["conflicts_with"] == ["E-101", "E-103"] and ev["E-102"]["status"] == "conflicted"
    assert ev["E-104"]["conflicts_with"] == ["E-105"] and ev["E-106"]["conflicts_with"] == ["E-107"]
    assert ev["E-108"]["status"] == "confirmed"
    pairs = _ok(env.call(sid, "list_conflicts", calendar_id=SPREE))
    assert pairs["count"] == 4
    assert {p["overlap_minutes"] for p in pairs["conflicts"]} == {30.0, 60.0}


def test_schedule_marks_new_conflict_and_local_time_is_calendar_time(env: TemporalSchedulingEnv) -> None:
    sid = env.create_session("spree_double_bookings")
    out = _ok(
        env.call(
            sid,
            "schedule_event",
            calendar_id=HAVEL,
            title="Ad-hoc",
            start="2026-04-14T08:30",
            end="2026-04-14T09:15",
        )
    )
    e = out["event"]
    assert (e["start"], e["local_start"]) == ("2026-04-14T06:30:00Z", "2026-04-14T08:30:00+02:00")
    assert e["status"] == "conflicted" and e["conflicts_with"] == ["E-110", "E-111"]
    assert {c["event_id"] for c in out["conflicts"]} == {"E-110", "E-111"}
    assert _events(env, sid)["E-110"]["status"] == "conflicted"
    # an explicit offset is honoured; touching the previous booking is no conflict
    ok = _ok(
        env.call(
            sid,
            "schedule_event",
            calendar_id=AUSTIN,
            title="X",
            start="2026-04-15T16:30:00Z",
            end="2026-04-15T17:00:00Z",
        )
    )
    assert ok["event"]["status"] == "confirmed" and ok["event"]["local_end"] == "2026-04-15T12:00:00-05:00"


def test_working_hours_and_bad_times_are_refused(env: TemporalSchedulingEnv) -> None:
    sid = env.create_session("spree_double_bookings")
    n = len(_events(env, sid))
    msg = _err(
        env.call(
            sid,
            "schedule_event",
            calendar_id=HAVEL,
            title="Late",
            start="2026-04-14T17:30",
            end="2026-04-14T18:30",
        ),
        "invalid_argument",
    )
    assert "working hours" in msg and "08:00-18:00 Europe/Berlin" in msg
    _err(
        env.call(
            sid,
            "schedule_event",
            calendar_id=HAVEL,
            title="Sat",
            start="2026-04-18T10:00",
            end="2026-04-18T11:00",
        ),
        "invalid_argument",
    )
    _err(
        env.call(
            sid, "schedule_event", calendar_id=HAVEL, title="x", start="tomorrow", end="2026-04-14T11:00"
        ),
        "invalid_argument",
    )
    seconds = env.call(
        sid,
        "schedule_event",
        calendar_id=HAVEL,
        title="x",
        start="2026-04-14T10:15:30",
        end="2026-04-14T11:00",
    )
    assert "to the minute" in _err(seconds, "invalid_argument")
    _err(
        env.call(
            sid,
            "schedule_event",
            calendar_id=HAVEL,
            title="x",
            start="2026-04-14T11:00",
            end="2026-04-14T10:00",
        ),
        "invalid_argument",
    )
    _err(
        env.call(
            sid,
            "schedule_event",
            calendar_id="room-nowhere",
            title="x",
            start="2026-04-14T11:00",
            end="2026-04-14T12:00",
        ),
        "invalid_reference",
    )
    _err(
        env.call(
            sid,
            "schedule_event",
            calendar_id=HAVEL,
            title="x",
            start="2026-04-14T11:00",
            end="2026-04-14T12:00",
            priority=11,
        ),
        "invalid_argument",
    )
    assert len(_events(env, sid)) == n


# ---- the four strategies --------------------------------------------------------------------------------


def test_strategy_registry_matches_the_tool_enum() -> None:
    assert list(STRATEGIES) == list(Strategy.__args__) == ["reschedule", "cancel", "override", "split"]


def test_override_cascades_over_lower_priority_only(env: TemporalSchedulingEnv) -> None:
    sid = env.create_session("spree_double_bookings")
    msg = _err(env.call(sid, "resolve_conflict", event_id="E-101", strategy="override"), "invalid_transition")
    assert "E-102 (priority 9)" in msg
    _err(
        env.call(sid, "resolve_conflict", event_id="E-106", strategy="override"), "invalid_transition"
    )  # equal
    out = _ok(env.call(sid, "resolve_conflict", event_id="E-102", strategy="override"))
    assert out["outcome"]["cancelled"] == ["E-101", "E-103"] and out["remaining_conflicts"] == []
    ev = _events(env, sid)
    assert ev["E-102"]["status"] == "confirmed" and ev["E-101"]["cancelled_by"] == "E-102"
    assert (
        ev["E-101"]["status"] == ev["E-103"]["status"] == "cancelled" and ev["E-101"]["conflicts_with"] == []
    )
    _err(
        env.call(sid, "resolve_conflict", event_id="E-102", strategy="override"), "invalid_transition"
    )  # none left
    log = env.get_session_state(sid)["resolution_log"]
    assert log[-1]["strategy"] == "override" and log[-1]["event_id"] == "E-102"


def test_split_truncates_and_spawns_inheriting_continuation(env: TemporalSchedulingEnv) -> None:
    sid = env.create_session("spree_double_bookings")
    _err(
        env.call(sid, "resolve_conflict", event_id="E-104", strategy="split", split_at="2026-04-14T16:00"),
        "invalid_argument",
    )
    _err(env.call(sid, "resolve_conflict", event_id="E-104", strategy="split"), "missing_field")
    out = _ok(
        env.call(
            sid,
            "resolve_conflict",
            event_id="E-104",
            strategy="split",
            split_at="2026-04-14T14:00",
            new_start="2026-04-14T15:00",
        )
    )
    cid = out["outcome"]["continuation"]
    ev = _events(env, sid)
    orig, cont = ev["E-104"], ev[cid]
    assert (orig["end"], orig["status"], orig["continued_by"]) == ("2026-04-14T12:00:00Z", "confirmed", cid)
    assert (cont["start"], cont["end"]) == ("2026-04-14T13:00:00Z", "2026-04-14T14:30:00Z")
    assert cont["split_from"] == "E-104" and cont["status"] == "confirmed"
    assert (cont["priority"], cont["organizer"], cont["description"]) == (
        6,
        "tomas.novak",
        orig["description"],
    )
    assert ev["E-105"]["status"] == "confirmed"
    # split of an event without conflict is refused
    _err(
        env.call(sid, "resolve_conflict", event_id=cid, strategy="split", split_at="2026-04-14T16:00"),
        "invalid_transition",
    )


def test_split_continuation_defaults_to_split_point_and_can_conflict(env: TemporalSchedulingEnv) -> None:
    sid = env.create_session("spree_double_bookings")
    out = _ok(
        env.call(sid, "resolve_conflict", event_id="E-104", strategy="split", split_at="2026-04-14T14:30")
    )
    cont = _events(env, sid)[out["outcome"]["continuation"]]
    assert (
        cont["start"] == "2026-04-14T12:30:00Z" and cont["status"] == "conflicted"
    )  # still overlaps the call


def test_reschedule_keeps_duration_and_cancel_is_final(env: TemporalSchedulingEnv) -> None:
    sid = env.create_session("austin_tokyo_week")
    _err(env.call(sid, "resolve_conflict", event_id="E-202", strategy="reschedule"), "missing_field")
    _err(
        env.call(
            sid, "resolve_conflict", event_id="E-202", strategy="reschedule", new_start="2026-04-15T16:00"
        ),
        "invalid_argument",
    )  # 16:00 + 90 min is after 17:00
    out = _ok(
        env.call(
            sid, "resolve_conflict", event_id="E-202", strategy="reschedule", new_start="2026-04-15T12:30"
        )
    )
    assert (
        out["event"]["end"] == "2026-04-15T19:00:00Z" and out["event"]["status"] == "conflicted"
    )  # lands on E-203
    ev = _events(env, sid)
    assert ev["E-201"]["status"] == "confirmed" and ev["E-203"]["status"] == "conflicted"
    _ok(env.call(sid, "resolve_conflict", event_id="E-202", strategy="cancel"))
    ev = _events(env, sid)
    assert ev["E-202"]["status"] == "cancelled" and ev["E-203"]["status"] == "confirmed"
    msg = _err(
        env.call(
            sid, "resolve_conflict", event_id="E-202", strategy="reschedule", new_start="2026-04-15T09:00"
        ),
        "invalid_transition",
    )
    assert "final" in msg
    _err(env.call(sid, "resolve_conflict", event_id="E-999", strategy="cancel"), "invalid_reference")


# ---- listing and availability ---------------------------------------------------------------------------


def test_list_events_filters_by_calendar_status_and_local_date_prefix(env: TemporalSchedulingEnv) -> None:
    sid = env.create_session("spree_double_bookings")
    tue = _ok(env.call(sid, "list_events", calendar_id=SPREE, date_prefix="2026-04-14"))
    assert [e["event_id"] for e in tue["events"]] == [
        "E-101",
        "E-102",
        "E-103",
        "E-104",
        "E-105",
        "E-106",
        "E-107",
    ]
    conflicted = _ok(env.call(sid, "list_events", status="conflicted"))
    assert {e["calendar_id"] for e in conflicted["events"]} == {SPREE, AUSTIN}
    tokyo = _ok(env.call(sid, "list_events", date_prefix="2026-04-16T10"))  # 10:00 local Tokyo, 01:00 UTC
    assert [e["event_id"] for e in tokyo["events"]] == ["E-301"]
    _err(env.call(sid, "list_events", calendar_id="nope"), "invalid_reference")


def test_availability_scans_working_hours_with_cursor(env: TemporalSchedulingEnv) -> None:
    sid = env.create_session("spree_double_bookings")
    out = _ok(
        env.call(sid, "find_availability", calendar_id=HAVEL, date="2026-04-14", min_duration_minutes=45)
    )
    assert [(f["start"][11:16], f["end"][11:16]) for f in out["free"]] == [
        ("10:15", "11:30"),
        ("13:00", "14:00"),
        ("15:00", "18:00"),
    ]
    short = _ok(
        env.call(sid, "find_availability", calendar_id=HAVEL, date="2026-04-14", min_duration_minutes=5)
    )
    assert short["free"][0]["minutes"] == 10.0  # the 09:30-09:40 gap
    # overlapping events (the lab's endurance run and calibration) are merged by the cursor
    lab = _ok(
        env.call(
            sid, "find_availability", calendar_id="lab-berlin-hil", date="2026-04-14", min_duration_minutes=30
        )
    )
    assert [(f["start"][11:16], f["end"][11:16]) for f in lab["free"]] == [
        ("12:00", "13:00"),
        ("15:00", "19:00"),
    ]
    weekend = _ok(env.call(sid, "find_availability", calendar_id=HAVEL, date="2026-04-18"))
    assert weekend["free"] == [] and "not a working day" in weekend["note"]
    _err(env.call(sid, "find_availability", calendar_id=HAVEL, date="14.04.2026"), "invalid_argument")
    # cancelling frees time
    _ok(env.call(sid, "resolve_conflict", event_id="E-114", strategy="cancel"))
    out = _ok(
        env.call(sid, "find_availability", calendar_id=HAVEL, date="2026-04-14", min_duration_minutes=45)
    )
    assert ("12:00", "14:00") in [(f["start"][11:16], f["end"][11:16]) for f in out["free"]]


def test_create_calendar_validates_and_is_usable(env: TemporalSchedulingEnv) -> None:
    sid = env.create_session("austin_tokyo_week")
    lab = {
        "calendar_id": "lab-x",
        "name": "X",
        "timezone": "Asia/Tokyo",
        "work_start": "09:00",
        "work_end": "18:00",
    }
    for bad in (
        {"timezone": "Mars/Olympus"},
        {"work_start": "18:00", "work_end": "09:00"},
        {"work_start": "9am"},
        {"calendar_id": HAVEL},
    ):
        _err(env.call(sid, "create_calendar", **(lab | bad)), "invalid_argument")
    cal = _ok(env.call(sid, "create_calendar", **lab, work_days=["sat", "mon"]))["calendar"]
    assert cal["work_days"] == ["mon", "sat"]
    _ok(
        env.call(
            sid,
            "schedule_event",
            calendar_id="lab-x",
            title="Sat run",
            start="2026-04-18T09:00",
            end="2026-04-18T10:00",
        )
    )
    _err(
        env.call(
            sid,
            "schedule_event",
            calendar_id="lab-x",
            title="Tue run",
            start="2026-04-14T09:00",
            end="2026-04-14T10:00",
        ),
        "invalid_argument",
    )


def test_evaluator_rewards_reference_and_penalises_wrong_choices(env: TemporalSchedulingEnv) -> None:
    for sc in TemporalSchedulingEnv.scenarios().values():
        sid = env.create_session(sc.scenario_id)
        for step in sc.reference_solution:
            _ok(env.call(sid, step["tool"], **step["params"]))
        assert env.evaluate_session(sid)["overall_score"] == 1.0
    sid = env.create_session("spree_double_bookings")
    _ok(env.call(sid, "resolve_conflict", event_id="E-105", strategy="override"))  # cancels the workshop
    dims = env.evaluate_session(sid)["dimensions"]
    assert dims["goal_state"]["score"] < 1 and dims["collateral"]["score"] < 1
    assert dims["conflicts_cleared"]["score"] < 1  # the board-demo and interview conflicts remain


def test_split_around_an_urgent_booking_and_search_across_days(env: TemporalSchedulingEnv) -> None:
    sid = env.create_session("hil_rig_recall_weekend")
    lab = "lab-berlin-hil"
    out = _ok(
        env.call(
            sid,
            "schedule_event",
            calendar_id=lab,
            title="Recall",
            start="2026-04-18T09:00",
            end="2026-04-18T11:00",
            priority=10,
        )
    )
    assert out["event"]["conflicts_with"] == ["E-118"] and out["event"]["event_id"] == "E-400"
    _ok(
        env.call(
            sid,
            "resolve_conflict",
            event_id="E-118",
            strategy="split",
            split_at="2026-04-18T09:00",
            new_start="2026-04-18T11:00",
        )
    )
    ev = _events(env, sid)
    assert ev["E-400"]["status"] == "confirmed" and ev["E-401"]["end"] == "2026-04-18T14:00:00Z"
    sat = _ok(
        env.call(sid, "find_availability", calendar_id=lab, date="2026-04-18", min_duration_minutes=240)
    )
    assert sat["free"] == []  # 16:00-19:00 is only three hours
    sat3 = _ok(
        env.call(sid, "find_availability", calendar_id=lab, date="2026-04-18", min_duration_minutes=180)
    )
    assert [(f["start"][11:16], f["end"][11:16]) for f in sat3["free"]] == [("16:00", "19:00")]
    assert (
        "not a working day"
        in _ok(env.call(sid, "find_availability", calendar_id=lab, date="2026-04-19"))["note"]
    )
    mon = _ok(
        env.call(sid, "find_availability", calendar_id=lab, date="2026-04-20", min_duration_minutes=240)
    )
    assert mon["free"][0]["start_utc"] == "2026-04-20T05:00:00Z"


def test_long_context_adds_past_bookings_without_conflicts(env: TemporalSchedulingEnv) -> None:
    sc = TemporalSchedulingEnv.scenario("spree_double_bookings")
    sid = env.create_session(sc.scenario_id, long_context=True)
    past = [e for e in _events(env, sid).values() if e["event_id"].startswith("E-0")]
    assert len(past) == 60 and all(e["status"] in ("confirmed", "cancelled") for e in past)
    for step in sc.reference_solution:
        _ok(env.call(sid, step["tool"], **step["params"]))
    assert env.evaluate_session(sid)["overall_score"] == 1.0
