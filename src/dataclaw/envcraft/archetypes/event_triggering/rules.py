"""Rule CRUD: a rule binds a trigger type, an optional source filter and an optional condition to a typed,
ordered action list. Everything is validated when the rule is written, so dispatch never fails later."""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft.archetypes.event_triggering.conditions import evaluate, validate_condition
from dataclaw.envcraft.archetypes.event_triggering.engine import (
    source,
    trigger_spec,
    validate_actions,
    validate_payload,
)
from dataclaw.envcraft.runtime import (
    EnvError,
    ErrorCategory,
    invalid_argument,
    invalid_reference,
    missing_field,
    now,
    stale_warning,
    tool,
)
from dataclaw.envcraft.runtime.errors import echo


def _rule(session: dict[str, Any], rule_id: str) -> dict[str, Any]:
    if rule_id not in session["rules"]:
        raise invalid_reference("rule", rule_id, list(session["rules"]))
    return session["rules"][rule_id]


def _check_name(session: dict[str, Any], name: str, own_id: str | None = None) -> str:
    name = name.strip()
    if not 3 <= len(name) <= 80:
        raise invalid_argument("name", f"must be 3 to 80 characters (got {len(name)})")
    for rule in session["rules"].values():
        if rule["rule_id"] != own_id and rule["name"].casefold() == name.casefold():
            raise invalid_argument("name", f"rule {rule['rule_id']} is already called {echo(name)}")
    return name


def _check_source_filter(
    session: dict[str, Any], source_filter: str, category: str, trigger_type: str
) -> None:
    src = source(session, source_filter)
    if src["category"] != category:
        raise EnvError(
            ErrorCategory.INVALID_ARGUMENT,
            f"Source {source_filter} is a {src['category']} source and never emits '{trigger_type}' "
            f"events ({category}); pick a {category} source or no filter.",
            field="source_filter",
        )


def summary(rule: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "rule_id",
        "name",
        "trigger_type",
        "source_filter",
        "condition",
        "enabled",
        "fire_count",
        "version",
    )
    return {k: rule[k] for k in keys} | {"actions": [a["type"] for a in rule["actions"]]}


@tool("read", returns=["rules", "count"])
def list_rules(
    session: dict, trigger_type: str | None = None, source_id: str | None = None, enabled: bool | None = None
) -> dict:
    """List automation rules in evaluation order, optionally filtered.

    Args:
        trigger_type: only rules for this trigger type.
        source_id: only rules whose source filter is this source.
        enabled: only enabled (true) or disabled (false) rules.
    """
    rows = [
        summary(r)
        for r in session["rules"].values()
        if (trigger_type is None or r["trigger_type"] == trigger_type)
        and (source_id is None or r["source_filter"] == source_id)
        and (enabled is None or r["enabled"] == enabled)
    ]
    return {"rules": rows, "count": len(rows)}


@tool("read", returns=["rule"])
def get_rule(session: dict, rule_id: str) -> dict:
    """Show one rule in full: condition, actions with parameters, version and firing statistics.

    Args:
        rule_id: the rule id, e.g. "R-4".
    """
    return {"rule": _rule(session, rule_id)}


@tool("write", fields=["rules", "counters"], returns=["rule"])
def create_rule(
    session: dict,
    name: str,
    trigger_type: str,
    actions: list[dict],
    source_filter: str | None = None,
    condition: dict | None = None,
    enabled: bool = True,
) -> dict:
    """Create an event-condition-action rule; it is evaluated after all existing rules.

    Args:
        name: a unique, descriptive rule name (3-80 characters).
        trigger_type: the event type that triggers it, e.g. "payment_failed".
        actions: ordered typed actions, each {"type": <action type>, "params": {...}}; text parameters may use
            {field} placeholders filled from the event payload (see get_catalog section "actions").
        source_filter: only events from this registered source; omit for any source of the trigger type.
        condition: a predicate on the payload, {"field": ..., "op": ..., "value": ...}; op is one of eq, ne,
            gt, gte, lt, lte, contains, regex. Omit to fire on every matching event.
        enabled: false to create the rule switched off.
    """
    name = _check_name(session, name)
    category, tspec = trigger_spec(session, trigger_type)
    if source_filter is not None:
        _check_source_filter(session, source_filter, category, trigger_type)
    if condition is not None:
        condition = validate_condition(condition, tspec["fields"], trigger_type)
    clean_actions = validate_actions(session, actions)
    number = session["counters"]["next_rule"]
    session["counters"]["next_rule"] = number + 1
    at = now(session)
    rule = {
        "rule_id": f"R-{number}",
        "name": name,
        "trigger_type": trigger_type,
        "source_filter": source_filter,
        "condition": condition,
        "actions": clean_actions,
        "enabled": enabled,
        "version": 1,
        "created_at": at,
        "updated_at": at,
        "fire_count": 0,
        "last_fired_event": None,
    }
    session["rules"][rule["rule_id"]] = rule
    return {"rule": rule}


@tool("write", fields=["rules"], returns=["rule"])
def update_rule(
    session: dict,
    rule_id: str,
    name: str | None = None,
    condition: dict | None = None,
    actions: list[dict] | None = None,
    source_filter: str | None = None,
    enabled: bool | None = None,
    clear_condition: bool = False,
    clear_source_filter: bool = False,
    expected_version: int | None = None,
) -> dict:
    """Change selected parts of a rule (others stay); use enabled=false to switch a rule off.

    Args:
        rule_id: the rule to change.
        name: a new unique name.
        condition: a new condition {"field", "op", "value"} (replaces the old one).
        actions: a new ordered action list (replaces the old one).
        source_filter: a new source filter.
        enabled: switch the rule on (true) or off (false).
        clear_condition: true to remove the condition so the rule fires on every matching event.
        clear_source_filter: true to remove the source filter.
        expected_version: the version you last saw (get_rule); a mismatch is reported as stale information.
    """
    rule = _rule(session, rule_id)
    if clear_condition and condition is not None:
        raise invalid_argument("clear_condition", "give either a new condition or clear_condition, not both")
    if clear_source_filter and source_filter is not None:
        raise invalid_argument("clear_source_filter", "give either a source_filter or clear it, not both")
    changes: dict[str, Any] = {}
    category, tspec = trigger_spec(session, rule["trigger_type"])
    if name is not None:
        changes["name"] = _check_name(session, name, rule_id)
    if condition is not None:
        changes["condition"] = validate_condition(condition, tspec["fields"], rule["trigger_type"])
    if clear_condition:
        changes["condition"] = None
    if actions is not None:
        changes["actions"] = validate_actions(session, actions)
    if source_filter is not None:
        _check_source_filter(session, source_filter, category, rule["trigger_type"])
        changes["source_filter"] = source_filter
    if clear_source_filter:
        changes["source_filter"] = None
    if enabled is not None:
        changes["enabled"] = enabled
    if not changes:
        raise missing_field("name/condition/actions/source_filter/enabled", "give at least one change")
    warnings = []
    if expected_version is not None and expected_version != rule["version"]:
        warnings.append(
            stale_warning(
                f"Rule {rule_id} is at version {rule['version']}, not {expected_version}: it changed "
                "since you read it. The update was applied; re-read the rule to check it.",
                rule_id=rule_id,
            )
        )
    rule.update(changes)
    rule["version"] += 1
    rule["updated_at"] = now(session)
    return {"rule": rule, "changed": sorted(changes), "warnings": warnings}


@tool("write", fields=["rules"], returns=["deleted"])
def delete_rule(session: dict, rule_id: str) -> dict:
    """Delete a rule for good (its past actions stay in the action log). Prefer enabled=false to pause one.

    Args:
        rule_id: the rule to delete.
    """
    _rule(session, rule_id)
    del session["rules"][rule_id]
    return {"deleted": rule_id}


@tool("read", returns=["holds", "reason"])
def test_condition(session: dict, trigger_type: str, condition: dict, payload: dict) -> dict:
    """Dry-run a condition against a sample payload without logging or dispatching anything.

    Args:
        trigger_type: the event type the condition is for.
        condition: the condition {"field", "op", "value"} to test.
        payload: a sample event payload as a JSON object.
    """
    _, tspec = trigger_spec(session, trigger_type)
    clean = validate_condition(condition, tspec["fields"], trigger_type)
    validate_payload(payload, trigger_type, tspec)
    holds, reason = evaluate(clean, payload)
    return {"holds": holds, "reason": reason}
