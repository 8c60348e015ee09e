"""The synchronous ECA engine: event validation, linear rule scan, condition check, in-order dispatch.

Event injection is the only thing that triggers rules. An injected event is validated against the source's
category in the fixed taxonomy, appended to the event log, then matched against every enabled rule whose
trigger type and source filter align (a linear scan in rule order); for each match the condition is
evaluated on the payload and, when it holds, every action of the rule is dispatched in definition order
into the action log (actions are log-only side effects: nothing outside the session is touched).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from dataclaw.envcraft.archetypes.event_triggering.conditions import MAX_TEXT_CHARS, evaluate, render
from dataclaw.envcraft.runtime import (
    EnvError,
    ErrorCategory,
    invalid_argument,
    invalid_reference,
    missing_field,
    now,
    tool,
)
from dataclaw.envcraft.runtime.errors import echo

MAX_PAYLOAD_FIELDS = 30
MAX_LIST_ITEMS = 50
MAX_ACTIONS = 8
_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "list": lambda v: isinstance(v, list),
}


def trigger_index(taxonomy: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """trigger type → (category, trigger spec); every trigger type belongs to exactly one category."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for category, spec in taxonomy.items():
        for trigger, tspec in spec["triggers"].items():
            if trigger in out:
                raise ValueError(f"trigger type {trigger!r} appears in two categories")
            out[trigger] = (category, tspec)
    return out


def trigger_spec(session: dict[str, Any], trigger_type: str) -> tuple[str, dict[str, Any]]:
    index = trigger_index(session["taxonomy"])
    if trigger_type not in index:
        raise invalid_reference("trigger type", trigger_type, sorted(index))
    return index[trigger_type]


def source(session: dict[str, Any], source_id: str) -> dict[str, Any]:
    if source_id not in session["sources"]:
        raise invalid_reference("source", source_id, sorted(session["sources"]))
    return session["sources"][source_id]


# ---- actions: a registry of parameter kinds; action types themselves are world data ----------------------


def _check_ref(session: dict[str, Any], spec: dict[str, Any], name: str, value: Any, params: dict) -> None:
    targets = session["directory"][spec["ref"]]
    if not isinstance(value, str) or value not in targets:
        raise invalid_reference(spec["ref"].rstrip("s"), value, sorted(targets))


def _check_template(
    session: dict[str, Any], spec: dict[str, Any], name: str, value: Any, params: dict
) -> None:
    if not isinstance(value, str) or not value.strip() or len(value) > 500:
        raise invalid_argument(name, "must be non-empty text of at most 500 characters ({field} fills in)")


def _check_enum(session: dict[str, Any], spec: dict[str, Any], name: str, value: Any, params: dict) -> None:
    if value not in spec["values"]:
        raise invalid_argument(name, f"must be one of {', '.join(spec['values'])} (got {echo(value)})")


def _device_settings(session: dict[str, Any], params: dict) -> dict[str, list[str]]:
    return session["directory"]["devices"].get(params.get("device"), {}).get("settings", {})


def _check_setting(
    session: dict[str, Any], spec: dict[str, Any], name: str, value: Any, params: dict
) -> None:
    settings = _device_settings(session, params)
    if value not in settings:
        raise invalid_argument(name, f"device {params.get('device')} has settings: {', '.join(settings)}")


def _check_device_value(
    session: dict[str, Any], spec: dict[str, Any], name: str, value: Any, params: dict
) -> None:
    allowed = _device_settings(session, params).get(params.get("setting"), [])
    if value not in allowed:
        raise invalid_argument(name, f"setting {params.get('setting')} accepts: {', '.join(allowed)}")


PARAM_KINDS: dict[str, Callable[[dict[str, Any], dict[str, Any], str, Any, dict], None]] = {
    "ref": _check_ref,
    "template": _check_template,
    "enum": _check_enum,
    "device_setting": _check_setting,
    "device_value": _check_device_value,
}


def validate_actions(session: dict[str, Any], actions: list[Any]) -> list[dict[str, Any]]:
    """Check a typed action list against the action-type catalogue; return it normalised."""
    if not 1 <= len(actions) <= MAX_ACTIONS:
        raise invalid_argument("actions", f"give 1 to {MAX_ACTIONS} actions")
    catalogue = session["action_types"]
    out = []
    for i, action in enumerate(actions):
        where = f"actions[{i}]"
        if not isinstance(action, dict) or set(action) - {"type", "params"} or "type" not in action:
            raise invalid_argument(where, 'each action is {"type": <action type>, "params": {...}}')
        kind = action["type"]
        if kind not in catalogue:
            raise invalid_reference("action type", kind, sorted(catalogue))
        params = action.get("params", {})
        if not isinstance(params, dict):
            raise invalid_argument(f"{where}.params", "must be an object")
        spec = catalogue[kind]["params"]
        extra = sorted(set(params) - set(spec))
        if extra:
            raise invalid_argument(
                f"{where}.params", f"{kind} has no parameter {echo(extra[0])}; use {', '.join(spec)}"
            )
        for pname, pspec in spec.items():
            if pname not in params:
                if pspec["required"]:
                    raise missing_field(f"{where}.params.{pname}", f"{kind} needs {pname}")
                continue
            PARAM_KINDS[pspec["kind"]](session, pspec, f"{where}.params.{pname}", params[pname], params)
        out.append({"type": kind, "params": dict(params)})
    return out


# ---- events ------------------------------------------------------------------------------------------------


def validate_payload(payload: dict[str, Any], trigger_type: str, tspec: dict[str, Any]) -> None:
    """Bounded, typed payloads: required fields present, declared fields of the declared type."""
    if len(payload) > MAX_PAYLOAD_FIELDS:
        raise invalid_argument("payload", f"at most {MAX_PAYLOAD_FIELDS} fields")
    for key, value in payload.items():
        if len(key) > 64:
            raise invalid_argument("payload", "field names are at most 64 characters")
        items = value if isinstance(value, list) else [value]
        if isinstance(value, list) and len(value) > MAX_LIST_ITEMS:
            raise invalid_argument(f"payload.{key}", f"lists hold at most {MAX_LIST_ITEMS} items")
        for item in items:
            if not (item is None or isinstance(item, str | int | float | bool)):
                raise invalid_argument(
                    f"payload.{key}", "values are text, numbers, booleans or lists of them"
                )
            if isinstance(item, str) and len(item) > MAX_TEXT_CHARS:
                raise invalid_argument(f"payload.{key}", f"text is limited to {MAX_TEXT_CHARS} characters")
            if isinstance(item, float) and item != item:
                raise invalid_argument(f"payload.{key}", "NaN is not a number")
    for name in tspec["required"]:
        if payload.get(name) is None:
            raise missing_field(f"payload.{name}", f"'{trigger_type}' events must carry {name}")
    for name, kind in tspec["fields"].items():
        if payload.get(name) is not None and not _TYPE_CHECKS[kind](payload[name]):
            raise invalid_argument(f"payload.{name}", f"must be a {kind} for '{trigger_type}' events")


def process_event(
    session: dict[str, Any], source_id: str, trigger_type: str, payload: dict[str, Any], at: str, origin: str
) -> dict[str, Any]:
    """Append the (validated) event, scan the rules, dispatch the actions of every rule that fires."""
    counters = session["counters"]
    event_id = f"E-{counters['next_event']:04d}"
    counters["next_event"] += 1
    event: dict[str, Any] = {
        "event_id": event_id,
        "source_id": source_id,
        "trigger_type": trigger_type,
        "payload": payload,
        "at": at,
        "origin": origin,
        "matched_rules": [],
        "fired_rules": [],
        "evaluations": {},
        "action_ids": [],
    }
    session["event_log"].append(event)
    session["sources"][source_id]["event_count"] += 1
    for rule in session["rules"].values():  # linear scan in rule order
        if not rule["enabled"] or rule["trigger_type"] != trigger_type:
            continue
        if rule["source_filter"] not in (None, source_id):
            continue
        event["matched_rules"].append(rule["rule_id"])
        holds, reason = evaluate(rule["condition"], payload)
        event["evaluations"][rule["rule_id"]] = reason
        if not holds:
            continue
        event["fired_rules"].append(rule["rule_id"])
        rule["fire_count"] += 1
        rule["last_fired_event"] = event_id
        for position, action in enumerate(rule["actions"]):
            event["action_ids"].append(_dispatch(session, event, rule, position, action))
    return event


def _dispatch(
    session: dict[str, Any],
    event: dict[str, Any],
    rule: dict[str, Any],
    position: int,
    action: dict[str, Any],
) -> str:
    counters = session["counters"]
    action_id = f"A-{counters['next_action']:04d}"
    counters["next_action"] += 1
    spec = session["action_types"][action["type"]]["params"]
    rendered, unresolved = {}, []
    for name, value in action["params"].items():
        if spec[name]["kind"] == "template":
            value, missing = render(value, event["payload"])
            unresolved += missing
        rendered[name] = value
    entry = {
        "action_id": action_id,
        "event_id": event["event_id"],
        "rule_id": rule["rule_id"],
        "position": position,
        "type": action["type"],
        "params": rendered,
        "status": "dispatched",
        "at": event["at"],
    }
    if unresolved:
        entry["unresolved_placeholders"] = sorted(set(unresolved))
    session["action_log"].append(entry)
    return action_id


@tool(
    "write", fields=["event_log", "action_log", "rules", "sources", "counters"], returns=["event", "actions"]
)
def inject_event(session: dict, source_id: str, trigger_type: str, payload: dict) -> dict:
    """Inject an event from a registered source; matching enabled rules fire immediately, in rule order.

    The event is validated (the trigger type must belong to the source's category, required payload fields
    present and typed), logged, matched against rules and the actions of every rule whose condition holds
    are dispatched in order. The result shows which rules matched, which fired and the dispatched actions.

    Args:
        source_id: the registered source the event comes from, e.g. "coldroom-3-probe".
        trigger_type: the event type, e.g. "reading" (see get_catalog section "triggers").
        payload: the event fields as a JSON object, e.g.
            {"device_id": "probe-cr3", "metric": "temperature", "value": 9.4}.
    """
    src = source(session, source_id)
    category, tspec = trigger_spec(session, trigger_type)
    if category != src["category"]:
        offered = ", ".join(session["taxonomy"][src["category"]]["triggers"])
        raise EnvError(
            ErrorCategory.INVALID_ARGUMENT,
            f"Source {source_id} is a {src['category']} source; it emits {offered}, "
            f"not {echo(trigger_type)}.",
            field="trigger_type",
        )
    validate_payload(payload, trigger_type, tspec)
    first = len(session["action_log"])  # this event's actions are appended after it
    event = process_event(session, source_id, trigger_type, payload, now(session), "injected")
    return {"event": event, "actions": session["action_log"][first:]}


@tool("read", returns=["events", "count"])
def query_events(
    session: dict,
    source_id: str | None = None,
    trigger_type: str | None = None,
    fired_rule: str | None = None,
    text: str | None = None,
    origin: Literal["history", "injected"] | None = None,
    limit: int = 20,
) -> dict:
    """Search the event log (newest first) by source, trigger type, a rule that fired, or payload text.

    Args:
        source_id: only events from this source.
        trigger_type: only events of this type.
        fired_rule: only events on which this rule fired, e.g. "R-4".
        text: only events whose payload values contain this text (case-insensitive), e.g. a customer name.
        origin: "history" for events before this session, "injected" for events injected in it.
        limit: at most this many events (1-100).
    """
    if not 1 <= limit <= 100:
        raise invalid_argument("limit", "must be between 1 and 100")
    needle = text.casefold() if text else None
    rows = [
        e
        for e in session["event_log"]
        if (source_id is None or e["source_id"] == source_id)
        and (trigger_type is None or e["trigger_type"] == trigger_type)
        and (fired_rule is None or fired_rule in e["fired_rules"])
        and (origin is None or e["origin"] == origin)
        and (needle is None or any(needle in str(v).casefold() for v in e["payload"].values()))
    ]
    rows.reverse()
    return {"events": rows[:limit], "count": len(rows)}


@tool("read", returns=["actions", "count"])
def query_actions(
    session: dict,
    rule_id: str | None = None,
    event_id: str | None = None,
    action_type: str | None = None,
    limit: int = 20,
) -> dict:
    """Search the action log (newest first): every action a rule dispatched, with its rendered parameters.

    Args:
        rule_id: only actions dispatched by this rule.
        event_id: only actions caused by this event, e.g. "E-0017".
        action_type: only actions of this type, e.g. "page_oncall".
        limit: at most this many actions (1-100).
    """
    if not 1 <= limit <= 100:
        raise invalid_argument("limit", "must be between 1 and 100")
    rows = [
        a
        for a in session["action_log"]
        if (rule_id is None or a["rule_id"] == rule_id)
        and (event_id is None or a["event_id"] == event_id)
        and (action_type is None or a["type"] == action_type)
    ]
    rows.reverse()
    return {"actions": rows[:limit], "count": len(rows)}
