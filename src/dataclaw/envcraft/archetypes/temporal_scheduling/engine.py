"""The temporal-constraint engine: time parsing, the pure overlap predicate, eager conflict marking,
working-hour windows and the cursor-based gap scan (EnvCraft B.3, archetype 6).

Instants are stored as UTC strings ``YYYY-MM-DDTHH:MM:SSZ`` so ISO-8601 string comparison orders them;
``datetime`` is used only to convert local times and for duration arithmetic.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dataclaw.envcraft.runtime import invalid_argument
from dataclaw.envcraft.runtime.errors import echo

UTC_FMT = "%Y-%m-%dT%H:%M:%SZ"
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_HHMM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TZ = re.compile(r"^[A-Za-z_]+(/[A-Za-z0-9_+-]+){0,2}$")
MIN_YEAR, MAX_YEAR = 2000, 2100


def zone(name: str, param: str = "timezone") -> ZoneInfo:
    """The IANA zone ``name`` (e.g. "Europe/Berlin"), or an ``invalid_argument`` error."""
    if not isinstance(name, str) or not _TZ.match(name) or len(name) > 40:
        raise invalid_argument(param, f"{echo(name)} is not an IANA timezone like 'Europe/Berlin'")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise invalid_argument(param, f"unknown timezone {echo(name)}; use e.g. 'America/Chicago'") from None


def hhmm(text: str, param: str) -> time:
    m = _HHMM.match(text) if isinstance(text, str) else None
    if m is None:
        raise invalid_argument(param, f"{echo(text)} must be a 24-hour time HH:MM, e.g. '08:30'")
    return time(int(m.group(1)), int(m.group(2)))


def parse_day(text: str, param: str = "date") -> date:
    try:
        if not _DATE.match(text):
            raise ValueError
        day = date.fromisoformat(text)
    except ValueError:
        raise invalid_argument(param, f"{echo(text)} must be a date YYYY-MM-DD") from None
    if not MIN_YEAR <= day.year <= MAX_YEAR:
        raise invalid_argument(param, f"year must be between {MIN_YEAR} and {MAX_YEAR}")
    return day


def to_utc(text: str, tz: ZoneInfo, param: str) -> str:
    """An ISO-8601 instant as a UTC string; a value without offset is local time of ``tz``."""
    try:
        if not isinstance(text, str) or not 16 <= len(text) <= 32 or text[4:5] != "-":
            raise ValueError
        dt = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise invalid_argument(
            param, f"{echo(text)} must be ISO-8601 like '2026-04-14T09:30' (calendar time) or with an offset"
        ) from None
    if not MIN_YEAR <= dt.year <= MAX_YEAR:
        raise invalid_argument(param, f"year must be between {MIN_YEAR} and {MAX_YEAR}")
    if dt.second or dt.microsecond:
        raise invalid_argument(param, "times are kept to the minute; drop the seconds")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=tz)
    return dt.astimezone(UTC).strftime(UTC_FMT)


def as_dt(utc: str) -> datetime:
    return datetime.strptime(utc, UTC_FMT).replace(tzinfo=UTC)


def shift(utc: str, minutes: float) -> str:
    return (as_dt(utc) + timedelta(minutes=minutes)).strftime(UTC_FMT)


def minutes_between(start: str, end: str) -> float:
    return (as_dt(end) - as_dt(start)).total_seconds() / 60


def local(utc: str, tz: str) -> str:
    """The instant in the calendar's own timezone, with its offset."""
    return as_dt(utc).astimezone(ZoneInfo(tz)).isoformat()


def overlaps(a_start: str, a_end: str, b_start: str, b_end: str) -> bool:
    """Pure half-open interval overlap: [a_start, a_end) ∩ [b_start, b_end) ≠ ∅ (touching is fine)."""
    return a_start < b_end and b_start < a_end


def live(session: dict[str, Any], calendar_id: str) -> list[dict[str, Any]]:
    """Non-cancelled events of one calendar, sorted by start (then id)."""
    rows = [
        e
        for e in session["events"].values()
        if e["calendar_id"] == calendar_id and e["status"] != "cancelled"
    ]
    return sorted(rows, key=lambda e: (e["start"], e["event_id"]))


def mark_conflicts(session: dict[str, Any], calendar_id: str) -> None:
    """Pairwise overlap detection over the calendar's live events; sets ``conflicts_with`` and status.

    Cancelled events keep no conflicts. A live event is 'conflicted' while it overlaps any other."""
    rows = live(session, calendar_id)
    found: dict[str, list[str]] = {e["event_id"]: [] for e in rows}
    for i, a in enumerate(rows):
        for b in rows[i + 1 :]:
            if b["start"] >= a["end"]:
                break  # sorted by start: no later event can overlap a
            if overlaps(a["start"], a["end"], b["start"], b["end"]):
                found[a["event_id"]].append(b["event_id"])
                found[b["event_id"]].append(a["event_id"])
    for e in session["events"].values():
        if e["calendar_id"] != calendar_id:
            continue
        e["conflicts_with"] = sorted(found.get(e["event_id"], []))
        if e["status"] != "cancelled":
            e["status"] = "conflicted" if e["conflicts_with"] else "confirmed"


def work_window(cal: dict[str, Any], day: date) -> tuple[str, str] | None:
    """The calendar's working hours on ``day`` (its local date) as UTC strings; None on a day off."""
    if WEEKDAYS[day.weekday()] not in cal["work_days"]:
        return None
    tz = ZoneInfo(cal["timezone"])
    start = datetime.combine(day, hhmm(cal["work_start"], "work_start"), tz).astimezone(UTC)
    end = datetime.combine(day, hhmm(cal["work_end"], "work_end"), tz).astimezone(UTC)
    return start.strftime(UTC_FMT), end.strftime(UTC_FMT)


def check_within_hours(cal: dict[str, Any], start: str, end: str, param: str = "start") -> None:
    """Refuse an interval that does not lie inside one working day of the calendar."""
    day = as_dt(start).astimezone(ZoneInfo(cal["timezone"])).date()
    window = work_window(cal, day)
    hours = f"{cal['work_start']}-{cal['work_end']} {cal['timezone']} on {', '.join(cal['work_days'])}"
    if window is None or not (window[0] <= start and end <= window[1]):
        raise invalid_argument(
            param,
            f"{local(start, cal['timezone'])} to {local(end, cal['timezone'])} is outside the working hours "
            f"of calendar {cal['calendar_id']} ({hours})",
        )


def free_gaps(
    busy: list[tuple[str, str]], window: tuple[str, str], min_minutes: float
) -> list[tuple[str, str]]:
    """Cursor scan over busy intervals sorted by start: the free intervals of ``window`` ≥ min_minutes."""
    cursor, end = window
    gaps: list[tuple[str, str]] = []
    for b_start, b_end in sorted(busy):
        if b_start >= end:
            break
        if b_end <= cursor:
            continue
        if b_start > cursor:
            gaps.append((cursor, b_start))
        cursor = max(cursor, b_end)
    if cursor < end:
        gaps.append((cursor, end))
    return [g for g in gaps if minutes_between(*g) >= min_minutes]
