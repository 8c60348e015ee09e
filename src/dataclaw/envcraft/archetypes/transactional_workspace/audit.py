"""The append-only audit log: every mutation is recorded, and agents can read it."""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft.archetypes.transactional_workspace.auth import require
from dataclaw.envcraft.runtime import invalid_argument, now, tool


def record(session: dict[str, Any], actor: str, action: str, ticket_id: str, changes: dict[str, Any]) -> None:
    """Append one audit entry (called by every write tool after its guards passed)."""
    log = session["audit_log"]
    log.append(
        {
            "seq": len(log) + 1,
            "at": now(session),
            "actor": actor,
            "action": action,
            "ticket_id": ticket_id,
            "changes": changes,
        }
    )


@tool("read", returns=["entries", "count"])
def list_audit_log(session: dict, ticket_id: str | None = None, limit: int = 20) -> dict:
    """Show the most recent audit entries, optionally for one ticket.

    Args:
        ticket_id: only entries about this ticket.
        limit: at most this many entries (1-200).
    """
    require(session, "view", "the audit log")
    if not 1 <= limit <= 200:
        raise invalid_argument("limit", "must be between 1 and 200")
    rows = [e for e in session["audit_log"] if ticket_id is None or e["ticket_id"] == ticket_id]
    return {"entries": rows[-limit:], "count": len(rows)}
