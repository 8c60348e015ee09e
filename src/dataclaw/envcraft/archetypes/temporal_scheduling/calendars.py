"""Calendars (rooms, labs, people) with a timezone and working hours, and availability discovery."""

from __future__ import annotations

import re
from typing import Any, Literal

from dataclaw.envcraft.archetypes.temporal_scheduling.engine import (
    WEEKDAYS,
    free_gaps,
    hhmm,
    live,
    local,
    minutes_between,
    parse_day,
    work_window,
    zone,
)
from dataclaw.envcraft.runtime import EnvError, ErrorCategory, invalid_argument, invalid_reference, now, tool
from dataclaw.envcraft.runtime.errors import echo

Kind = Literal["room", "equipment", "person"]
_ID_RE = re.compile(r"^[a-z][a-z0-9-]{2,47}$")


def get_calendar(session: dict[str, Any], calendar_id: str) -> dict[str, Any]:
    cals = session["calendars"]
    if calendar_id not in cals:
        raise invalid_reference("calendar", calendar_id, sorted(cals))
    return cals[calendar_id]


@tool("read", returns=["calendars"])
def list_calendars(session: dict, kind: Kind | None = None) -> dict:
    """List calendars (meeting rooms, equipment, people) with timezone, working hours and working days.

    Args:
        kind: only calendars of this kind.
    """
    cals = session["calendars"]
    return {"calendars": [cals[c] for c in sorted(cals) if kind in (None, cals[c]["kind"])]}


@tool("write", fields=["calendars"], returns=["calendar"])
def create_calendar(
    session: dict,
    calendar_id: str,
    name: str,
    timezone: str,
    work_start: str,
    work_end: str,
    kind: Kind = "room",
    work_days: list[str] | None = None,
    owner: str | None = None,
) -> dict:
    """Create a calendar for a room, piece of equipment or person, with its timezone and working hours;
    events on it must lie inside those hours.

    Args:
        calendar_id: new id, lowercase letters, digits and dashes, e.g. "lab-tokyo-rig2".
        name: a descriptive name.
        timezone: IANA timezone, e.g. "Asia/Tokyo".
        work_start: start of working hours, local 24-hour "HH:MM".
        work_end: end of working hours, local "HH:MM" (after work_start).
        kind: room, equipment or person.
        work_days: working weekdays as mon..sun (default mon-fri).
        owner: the account responsible for the calendar.
    """
    if not _ID_RE.match(calendar_id):
        raise invalid_argument(
            "calendar_id", f"{echo(calendar_id)} must be 3-48 lowercase letters/digits/dashes"
        )
    if calendar_id in session["calendars"]:
        raise EnvError(ErrorCategory.INVALID_ARGUMENT, f"calendar '{calendar_id}' already exists.")
    if not name.strip() or len(name) > 120:
        raise invalid_argument("name", "needs 1-120 characters")
    zone(timezone)
    if hhmm(work_start, "work_start") >= hhmm(work_end, "work_end"):
        raise invalid_argument("work_end", "must be later than work_start (same day)")
    days = work_days if work_days is not None else list(WEEKDAYS[:5])
    bad = [d for d in days if d not in WEEKDAYS]
    if bad or not days or len(set(days)) != len(days):
        raise invalid_argument("work_days", f"use distinct values out of {', '.join(WEEKDAYS)}")
    if owner is not None and not 0 < len(owner) <= 60:
        raise invalid_argument("owner", "needs 1-60 characters")
    cal = {
        "calendar_id": calendar_id,
        "name": name.strip(),
        "kind": kind,
        "timezone": timezone,
        "work_start": work_start,
        "work_end": work_end,
        "work_days": [d for d in WEEKDAYS if d in days],
        "owner": owner,
        "created_at": now(session),
    }
    session["calendars"][calendar_id] = cal
    return {"calendar": cal}


@tool("read", returns=["free", "working_hours"])
def find_availability(session: dict, calendar_id: str, date: str, min_duration_minutes: int = 30) -> dict:
    """Find the free intervals of a calendar on one date (its local date), inside its working hours,
    between its non-cancelled events, that last at least the given number of minutes; earliest first.

    Args:
        calendar_id: the calendar to search.
        date: the local date, "YYYY-MM-DD".
        min_duration_minutes: the shortest useful gap in minutes (5-720).
    """
    cal = get_calendar(session, calendar_id)
    day = parse_day(date)
    if not 5 <= min_duration_minutes <= 720:
        raise invalid_argument("min_duration_minutes", "must be between 5 and 720")
    window = work_window(cal, day)
    if window is None:
        return {
            "calendar_id": calendar_id,
            "date": date,
            "working_hours": None,
            "free": [],
            "note": f"{day.strftime('%A')} is not a working day of this calendar "
            f"({', '.join(cal['work_days'])})",
        }
    busy = [(e["start"], e["end"]) for e in live(session, calendar_id)]
    tz = cal["timezone"]
    gaps = free_gaps(busy, window, min_duration_minutes)
    return {
        "calendar_id": calendar_id,
        "date": date,
        "timezone": tz,
        "working_hours": {"start": local(window[0], tz), "end": local(window[1], tz)},
        "free": [
            {
                "start": local(s, tz),
                "end": local(e, tz),
                "start_utc": s,
                "end_utc": e,
                "minutes": minutes_between(s, e),
            }
            for s, e in gaps
        ],
    }
