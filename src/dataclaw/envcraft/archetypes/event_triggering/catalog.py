"""The fixed taxonomy (source categories → trigger types → payload fields), action types, directory
targets, and event-source registration."""

from __future__ import annotations

import re
from typing import Any, Literal

from dataclaw.envcraft.archetypes.event_triggering.conditions import OPERATORS
from dataclaw.envcraft.runtime import invalid_argument, now, tool
from dataclaw.envcraft.runtime.errors import echo

Category = Literal[
    "iot_sensor", "monitoring", "ticketing", "payments", "version_control", "email", "calendar", "logistics"
]
_SOURCE_ID = re.compile(r"^[a-z0-9][a-z0-9-]{2,39}$")


@tool("read", returns=["catalog"])
def get_catalog(session: dict, section: Literal["triggers", "actions", "targets", "operators"]) -> dict:
    """Show the fixed catalogue: trigger types per source category (with payload fields), action types (with
    parameters), directory targets (channels, teams, contacts, queues, devices) or condition operators.

    Args:
        section: which part of the catalogue to show.
    """
    if section == "triggers":
        return {"catalog": session["taxonomy"]}
    if section == "actions":
        return {"catalog": session["action_types"]}
    if section == "targets":
        return {"catalog": session["directory"]}
    return {"catalog": {name: op.description for name, op in OPERATORS.items()}}


@tool("read", returns=["sources", "count"])
def list_sources(session: dict, category: Category | None = None) -> dict:
    """List registered event sources with their category and how many events each has emitted.

    Args:
        category: only sources of this category.
    """
    rows = [s for s in session["sources"].values() if category is None or s["category"] == category]
    return {"sources": rows, "count": len(rows)}


@tool("write", fields=["sources"], returns=["source"])
def register_source(
    session: dict, source_id: str, name: str, category: Category, description: str = ""
) -> dict:
    """Register a new event source of one category of the fixed taxonomy.

    Args:
        source_id: a new id: 3-40 lowercase letters, digits or dashes, e.g. "ops-calendar".
        name: a human-readable name (3-80 characters).
        category: the kind of external system, which fixes the trigger types it can emit.
        description: what the source is (optional).
    """
    if not _SOURCE_ID.match(source_id):
        raise invalid_argument(
            "source_id", "use 3-40 lowercase letters, digits or dashes, starting alphanumeric"
        )
    if source_id in session["sources"]:
        raise invalid_argument("source_id", f"{echo(source_id)} is already registered")
    if not 3 <= len(name.strip()) <= 80:
        raise invalid_argument("name", "must be 3 to 80 characters")
    if len(description) > 300:
        raise invalid_argument("description", "at most 300 characters")
    entry: dict[str, Any] = {
        "source_id": source_id,
        "name": name.strip(),
        "category": category,
        "description": description.strip(),
        "registered_at": now(session),
        "event_count": 0,
    }
    session["sources"][source_id] = entry
    return {"source": entry, "emits": list(session["taxonomy"][category]["triggers"])}
