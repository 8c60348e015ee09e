"""Events: scheduling with eager conflict detection, inspection, and the four-strategy resolution.

Resolution is a strategy pattern (:data:`STRATEGIES`): ``reschedule`` (new time bounds), ``cancel``
(terminal status), ``override`` (cancel every conflicting event of strictly lower priority, then promote;
refused while an equal- or higher-priority event conflicts) and ``split`` (truncate at a split point and
spawn a continuation that inherits title, priority, organizer and description). Every change re-runs the
pairwise overlap detection on the calendar, so conflict marks are always current.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from dataclaw.envcraft.archetypes.temporal_scheduling.calendars import get_calendar
from dataclaw.envcraft.archetypes.temporal_scheduling.engine import (
    check_within_hours,
    local,
    mark_conflicts,
    minutes_between,
    shift,
    to_utc,
    zone,
)
from dataclaw.envcraft.archetypes.temporal_scheduling.state import new_event
from dataclaw.envcraft.runtime import (
    invalid_argument,
    invalid_reference,
    invalid_transition,
    missing_field,
    now,
    tool,
)

Status = Literal["confirmed", "conflicted", "cancelled"]
Strategy = Literal["reschedule", "cancel", "override", "split"]
MAX_EVENT_MINUTES = 14 * 60
MAX_EVENTS = 2000


def _event(session: dict[str, Any], event_id: str) -> dict[str, Any]:
    events = session["events"]
    if event_id not in events:
        raise invalid_reference("event", event_id)
    return events[event_id]


def view(session: dict[str, Any], e: dict[str, Any]) -> dict[str, Any]:
    """An event as the agent sees it: UTC bounds plus the same bounds in the calendar's timezone."""
    tz = session["calendars"][e["calendar_id"]]["timezone"]
    return {**e, "local_start": local(e["start"], tz), "local_end": local(e["end"], tz)}


def _bounds(cal: dict[str, Any], start: str, end: str) -> tuple[str, str]:
    tz = zone(cal["timezone"])
    s, e = to_utc(start, tz, "start"), to_utc(end, tz, "end")
    if not s < e:
        raise invalid_argument("end", "must be after start")
    if minutes_between(s, e) > MAX_EVENT_MINUTES:
        raise invalid_argument("end", f"an event lasts at most {MAX_EVENT_MINUTES // 60} hours")
    check_within_hours(cal, s, e)
    return s, e


def _touch(session: dict[str, Any], e: dict[str, Any]) -> None:
    e["revision"] += 1
    e["updated_at"] = now(session)


@tool("write", fields=["events", "counters"], returns=["event", "conflicts"])
def schedule_event(
    session: dict,
    calendar_id: str,
    title: str,
    start: str,
    end: str,
    priority: int = 5,
    organizer: str | None = None,
    description: str = "",
) -> dict:
    """Book an event on a calendar. Times are ISO-8601; without an offset they are read in the
    calendar's timezone. The event must lie inside the calendar's working hours. Overlaps with other
    non-cancelled events on the same calendar are detected at once and mark both sides 'conflicted'.

    Args:
        calendar_id: the calendar (room, equipment or person) to book.
        title: what the event is.
        start: start time, e.g. "2026-04-14T10:15" (calendar time) or "2026-04-14T08:15:00Z".
        end: end time, same format, after start.
        priority: importance 1 (lowest) to 10 (highest); decides override conflicts.
        organizer: the account organising it.
        description: details for attendees.
    """
    cal = get_calendar(session, calendar_id)
    if not title.strip() or len(title) > 120:
        raise invalid_argument("title", "needs 1-120 characters")
    if not 1 <= priority <= 10:
        raise invalid_argument("priority", "must be between 1 and 10")
    if len(description) > 1000 or (organizer is not None and not 0 < len(organizer) <= 60):
        raise invalid_argument("description", "at most 1000 characters (organizer 1-60)")
    if len(session["events"]) >= MAX_EVENTS:
        raise invalid_argument("calendar_id", "the schedule is full")
    s, e = _bounds(cal, start, end)
    eid = f"E-{session['counters']['next_event']}"
    session["counters"]["next_event"] += 1
    raw = {"title": title.strip(), "priority": priority, "organizer": organizer, "description": description}
    event = new_event(cal, eid, raw, s, e, now(session))
    session["events"][eid] = event
    mark_conflicts(session, calendar_id)
    conflicts = [view(session, session["events"][c]) for c in event["conflicts_with"]]
    return {"event": view(session, event), "conflicts": conflicts}


@tool("read", returns=["event"])
def get_event(session: dict, event_id: str) -> dict:
    """Show one event with its status, priority, conflicts and local times.

    Args:
        event_id: the event, e.g. "E-104".
    """
    return {"event": view(session, _event(session, event_id))}


@tool("read", returns=["events", "count"])
def list_events(
    session: dict,
    calendar_id: str | None = None,
    status: Status | None = None,
    date_prefix: str | None = None,
    limit: int = 50,
) -> dict:
    """List events sorted by start, filtered by calendar, status and a prefix of the local start time
    (e.g. "2026-04-14" for one day, "2026-04-14T1" for 10:00-19:59 that day).

    Args:
        calendar_id: only events on this calendar.
        status: only confirmed, conflicted or cancelled events.
        date_prefix: only events whose local start time begins with this text.
        limit: at most this many events (1-200).
    """
    if calendar_id is not None:
        get_calendar(session, calendar_id)
    if not 1 <= limit <= 200:
        raise invalid_argument("limit", "must be between 1 and 200")
    rows = [
        view(session, e)
        for e in session["events"].values()
        if calendar_id in (None, e["calendar_id"]) and status in (None, e["status"])
    ]
    if date_prefix is not None:
        rows = [r for r in rows if r["local_start"].startswith(date_prefix)]
    rows.sort(key=lambda r: (r["start"], r["event_id"]))
    return {"events": rows[:limit], "count": len(rows)}


@tool("read", returns=["conflicts", "count"])
def list_conflicts(session: dict, calendar_id: str | None = None) -> dict:
    """List every pair of overlapping non-cancelled events, with both priorities and the overlap.

    Args:
        calendar_id: only conflicts on this calendar.
    """
    if calendar_id is not None:
        get_calendar(session, calendar_id)
    pairs = []
    for e in sorted(session["events"].values(), key=lambda x: (x["start"], x["event_id"])):
        if calendar_id not in (None, e["calendar_id"]) or e["status"] == "cancelled":
            continue
        for other_id in e["conflicts_with"]:
            o = session["events"][other_id]
            if (o["start"], o["event_id"]) < (e["start"], e["event_id"]):
                continue  # each pair once
            tz = session["calendars"][e["calendar_id"]]["timezone"]
            pairs.append(
                {
                    "calendar_id": e["calendar_id"],
                    "events": [
                        {k: x[k] for k in ("event_id", "title", "priority")}
                        | {"local_start": local(x["start"], tz)}
                        for x in (e, o)
                    ],
                    "overlap_minutes": minutes_between(max(e["start"], o["start"]), min(e["end"], o["end"])),
                }
            )
    return {"conflicts": pairs, "count": len(pairs)}


# ---- resolution strategies -----------------------------------------------------------------------------

StrategyFn = Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], dict[str, Any]]
STRATEGIES: dict[str, StrategyFn] = {}


def strategy(name: str) -> Callable[[StrategyFn], StrategyFn]:
    def wrap(fn: StrategyFn) -> StrategyFn:
        if name in STRATEGIES:
            raise ValueError(f"duplicate strategy {name!r}")
        STRATEGIES[name] = fn
        return fn

    return wrap


@strategy("reschedule")
def _reschedule(session: dict[str, Any], e: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    cal = session["calendars"][e["calendar_id"]]
    if args["new_start"] is None:
        raise missing_field("new_start", "reschedule needs the new start time")
    tz = zone(cal["timezone"])
    start = to_utc(args["new_start"], tz, "new_start")
    if args["new_end"] is None:
        end_text = shift(start, minutes_between(e["start"], e["end"]))  # keep the duration
    else:
        end_text = args["new_end"]
    s, t = _bounds(cal, start, end_text)
    old = (e["start"], e["end"])
    e["start"], e["end"] = s, t
    _touch(session, e)
    return {"moved_from": [local(x, cal["timezone"]) for x in old]}


@strategy("cancel")
def _cancel(session: dict[str, Any], e: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    e["status"] = "cancelled"
    _touch(session, e)
    return {"cancelled": [e["event_id"]]}


@strategy("override")
def _override(session: dict[str, Any], e: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    rivals = [session["events"][c] for c in e["conflicts_with"]]
    if not rivals:
        raise invalid_transition("event", e["event_id"], e["status"], "override", "it has no conflicts")
    strong = [r for r in rivals if r["priority"] >= e["priority"]]
    if strong:
        names = ", ".join(f"{r['event_id']} (priority {r['priority']})" for r in strong)
        raise invalid_transition(
            "event",
            e["event_id"],
            e["status"],
            "override",
            f"override only cancels strictly lower-priority events, but it conflicts with {names} and has "
            f"priority {e['priority']}; reschedule, split or cancel instead",
        )
    for r in rivals:
        r["status"] = "cancelled"
        r["cancelled_by"] = e["event_id"]
        _touch(session, r)
    _touch(session, e)
    return {"cancelled": [r["event_id"] for r in rivals]}


@strategy("split")
def _split(session: dict[str, Any], e: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    cal = session["calendars"][e["calendar_id"]]
    if args["split_at"] is None:
        raise missing_field("split_at", "split needs the time at which the event pauses")
    tz = zone(cal["timezone"])
    cut = to_utc(args["split_at"], tz, "split_at")
    if not e["start"] < cut < e["end"]:
        raise invalid_argument("split_at", "must lie strictly between the event's start and end")
    rest = minutes_between(cut, e["end"])
    resume = to_utc(args["new_start"], tz, "new_start") if args["new_start"] is not None else cut
    if resume < cut:
        raise invalid_argument("new_start", "the continuation cannot start before the split point")
    cont_start, cont_end = _bounds(cal, resume, shift(resume, rest))
    if len(session["events"]) >= MAX_EVENTS:
        raise invalid_argument("event_id", "the schedule is full")
    cid = f"E-{session['counters']['next_event']}"
    session["counters"]["next_event"] += 1
    raw = {k: e[k] for k in ("title", "priority", "organizer", "description")} | {"split_from": e["event_id"]}
    raw["title"] = f"{e['title']} (continued)"
    session["events"][cid] = new_event(cal, cid, raw, cont_start, cont_end, now(session))
    e["end"] = cut
    e["continued_by"] = cid
    _touch(session, e)
    return {"continuation": cid}


@tool("write", fields=["events", "counters", "resolution_log"], returns=["event", "outcome"])
def resolve_conflict(
    session: dict,
    event_id: str,
    strategy: Strategy,
    new_start: str | None = None,
    new_end: str | None = None,
    split_at: str | None = None,
) -> dict:
    """Resolve a scheduling conflict on one event with a strategy: 'reschedule' (move it to new_start,
    keeping its length unless new_end is given), 'cancel' (final), 'override' (cancel every conflicting
    event of strictly lower priority and confirm this one; refused if an equal or higher priority event
    conflicts) or 'split' (end it at split_at and create a continuation for the remaining time starting
    at new_start, default split_at). Reschedule and cancel also work on events without a conflict.
    Conflicts are re-detected afterwards.

    Args:
        event_id: the event to act on.
        strategy: reschedule, cancel, override or split.
        new_start: reschedule: the new start; split: where the continuation starts.
        new_end: reschedule only: the new end (default: keep the duration).
        split_at: split only: the time at which the event is cut.
    """
    e = _event(session, event_id)
    if e["status"] == "cancelled":
        raise invalid_transition("event", event_id, "cancelled", strategy, "cancelled events are final")
    if strategy in ("override", "split") and e["status"] != "conflicted":
        raise invalid_transition("event", event_id, e["status"], strategy, "it has no conflict to resolve")
    args = {"new_start": new_start, "new_end": new_end, "split_at": split_at}
    outcome = STRATEGIES[strategy](session, e, args)
    mark_conflicts(session, e["calendar_id"])
    log = session["resolution_log"]
    log.append(
        {"seq": len(log) + 1, "at": now(session), "event_id": event_id, "strategy": strategy, **outcome}
    )
    remaining = [view(session, session["events"][c]) for c in e["conflicts_with"]]
    return {"event": view(session, e), "outcome": outcome, "remaining_conflicts": remaining}
