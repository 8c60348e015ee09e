"""The repository layer: immutable world data from ``data/`` and the session template built from it.

World events are given in their calendar's local time and go through the same conversion, working-hour
check and conflict detection as agent bookings, so the template's conflict marks are computed, not typed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dataclaw.envcraft.archetypes.temporal_scheduling.engine import (
    check_within_hours,
    mark_conflicts,
    to_utc,
    zone,
)

DATA = Path(__file__).resolve().parent / "data"


def _read(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def new_event(cal: dict[str, Any], event_id: str, raw: dict[str, Any], start: str, end: str, at: str) -> dict:
    """An event record (also used by ``schedule_event`` and the split strategy)."""
    return {
        "event_id": event_id,
        "calendar_id": cal["calendar_id"],
        "title": raw["title"],
        "start": start,
        "end": end,
        "priority": raw["priority"],
        "organizer": raw.get("organizer"),
        "description": raw.get("description", ""),
        "status": "confirmed",
        "conflicts_with": [],
        "split_from": raw.get("split_from"),
        "revision": 0,
        "created_at": at,
        "updated_at": at,
    }


def _default_state() -> dict[str, Any]:
    calendars = {
        c["calendar_id"]: {**c, "created_at": "2026-01-05T08:00:00Z"} for c in _read("calendars.json")
    }
    events: dict[str, Any] = {}
    raw_events = _read("events.json")
    for raw in raw_events["events"]:
        cal = calendars[raw["calendar_id"]]
        tz = zone(cal["timezone"])
        start, end = to_utc(raw["start"], tz, "start"), to_utc(raw["end"], tz, "end")
        check_within_hours(cal, start, end)
        events[raw["event_id"]] = new_event(cal, raw["event_id"], raw, start, end, raw["booked_at"])
    state: dict[str, Any] = {
        "workspace_account": None,
        "calendars": calendars,
        "events": events,
        "counters": {"next_event": raw_events["next_number"]},
        "resolution_log": [],
    }
    for cid in calendars:
        mark_conflicts(state, cid)
    return state


_PAST_TITLES = ("Sprint review", "Vendor call", "Design critique", "Hiring panel", "Safety walk", "Ops sync")


def past_events(state: dict[str, Any], count: int = 60) -> dict[str, dict[str, Any]]:
    """Deterministic past bookings (four weeks before the scenario week) for long-context sessions:
    one-hour slots inside each calendar's working hours, never overlapping, every fifth one cancelled."""
    cals = sorted(state["calendars"].values(), key=lambda c: c["calendar_id"])
    out: dict[str, dict[str, Any]] = {}
    for i in range(count):
        cal = cals[i % len(cals)]
        day = 16 + (i // len(cals)) % 5  # Mon 2026-03-16 .. Fri 2026-03-20
        hour = int(cal["work_start"][:2]) + 1 + i // (5 * len(cals))
        tz = zone(cal["timezone"])
        start = to_utc(f"2026-03-{day:02d}T{hour:02d}:00", tz, "start")
        end = to_utc(f"2026-03-{day:02d}T{hour + 1:02d}:00", tz, "end")
        check_within_hours(cal, start, end)
        raw = {"title": f"{_PAST_TITLES[i % len(_PAST_TITLES)]} (past)", "priority": 1 + i % 9}
        eid = f"E-{i + 1:04d}"
        out[eid] = new_event(cal, eid, raw, start, end, "2026-03-01T08:00:00Z")
        if i % 5 == 4:
            out[eid]["status"] = "cancelled"
    return out


# The template every session is deep-copied from (never mutated: the runtime copies it).
DEFAULT_STATE: dict[str, Any] = _default_state()
