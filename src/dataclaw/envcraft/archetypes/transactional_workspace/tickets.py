"""Ticket CRUD and the unidirectional lifecycle open → in_progress → resolved → closed.

Every mutation checks authentication, permission and the transition guard *before* changing anything,
bumps the ticket's ``version`` and appends to the audit log.
"""

from __future__ import annotations

from typing import Any, Literal

from dataclaw.envcraft.archetypes.transactional_workspace.audit import record
from dataclaw.envcraft.archetypes.transactional_workspace.auth import current_user, has_permission, require
from dataclaw.envcraft.archetypes.transactional_workspace.state import NEXT_STATUS, STATUSES
from dataclaw.envcraft.runtime import (
    EnvError,
    ErrorCategory,
    invalid_argument,
    invalid_reference,
    invalid_transition,
    missing_field,
    now,
    permission_denied,
    stale_warning,
    tool,
)

Status = Literal["open", "in_progress", "resolved", "closed"]
Priority = Literal["low", "medium", "high", "urgent"]
Category = Literal["access", "hardware", "software", "network", "billing"]
ResolutionCode = Literal["fixed", "workaround", "duplicate", "cannot_reproduce", "wont_fix"]


def _ticket(session: dict[str, Any], ticket_id: str) -> dict[str, Any]:
    tickets = session["tickets"]
    if ticket_id not in tickets:
        raise invalid_reference("ticket", ticket_id)
    return tickets[ticket_id]


def _summary(t: dict[str, Any]) -> dict[str, Any]:
    keys = ("ticket_id", "title", "category", "priority", "status", "assignee", "version", "updated_at")
    return {k: t[k] for k in keys}


def _require_owner(session: dict[str, Any], t: dict[str, Any], action: str) -> str:
    """Agents act on their own (or unassigned) tickets; ``update_any`` lifts the restriction."""
    user = require(session, "update" if action == "update" else "transition", f"ticket {t['ticket_id']}")
    if t["assignee"] not in (None, user) and not has_permission(session, user, "update_any"):
        raise permission_denied(user, action, f"ticket {t['ticket_id']} (assigned to {t['assignee']})")
    return user


def _advance(t: dict[str, Any], target: str) -> None:
    """Guard of the unidirectional lifecycle: only the next status is reachable."""
    current = t["status"]
    if current == target:
        why = "it is already in that status" + (" (duplicate terminal closure)" if target == "closed" else "")
        raise invalid_transition("ticket", t["ticket_id"], current, target, why)
    if NEXT_STATUS.get(current) != target:
        order = " → ".join(STATUSES)
        nxt = NEXT_STATUS.get(current)
        hint = f"the only next status is '{nxt}'" if nxt else "closed tickets are final"
        raise invalid_transition(
            "ticket", t["ticket_id"], current, target, f"status moves one way ({order}); {hint}"
        )


def _touch(session: dict[str, Any], t: dict[str, Any]) -> None:
    t["version"] += 1
    t["updated_at"] = now(session)


def _writable(t: dict[str, Any], action: str) -> None:
    if t["status"] == "closed":
        raise EnvError(
            ErrorCategory.INVALID_TRANSITION,
            f"ticket {t['ticket_id']} is 'closed': closed tickets are read-only, so you cannot {action} it.",
            current="closed",
        )


@tool("read", returns=["tickets", "count"])
def list_tickets(
    session: dict,
    status: Status | None = None,
    assignee: str | None = None,
    priority: Priority | None = None,
    mine: bool = False,
    limit: int = 20,
) -> dict:
    """List tickets, newest first, filtered by status, assignee, priority or your own assignments.

    Args:
        status: only tickets in this status.
        assignee: only tickets assigned to this account id.
        priority: only tickets with this priority.
        mine: only tickets assigned to the logged-in account.
        limit: at most this many tickets (1-100).
    """
    user = require(session, "view", "tickets")
    if not 1 <= limit <= 100:
        raise invalid_argument("limit", "must be between 1 and 100")
    rows = [
        t
        for t in session["tickets"].values()
        if (status is None or t["status"] == status)
        and (assignee is None or t["assignee"] == assignee)
        and (priority is None or t["priority"] == priority)
        and (not mine or t["assignee"] == user)
    ]
    rows.sort(key=lambda t: (t["created_at"], t["ticket_id"]), reverse=True)
    return {"tickets": [_summary(t) for t in rows[:limit]], "count": len(rows)}


@tool("read", returns=["ticket"])
def get_ticket(session: dict, ticket_id: str) -> dict:
    """Show one ticket with its comments, resolution and current version.

    Args:
        ticket_id: the ticket id, e.g. "T-1001".
    """
    require(session, "view", f"ticket {ticket_id}")
    return {"ticket": _ticket(session, ticket_id)}


@tool("write", fields=["tickets", "counters", "audit_log"], returns=["ticket"])
def create_ticket(
    session: dict,
    title: str,
    description: str,
    category: Category,
    priority: Priority = "medium",
    reporter: str | None = None,
) -> dict:
    """Open a new ticket (status open, unassigned).

    Args:
        title: a short summary, 5 to 120 characters.
        description: what is wrong, in the reporter's words (not empty).
        category: the ticket category.
        priority: how urgent it is.
        reporter: e-mail of the person who reported it; defaults to the logged-in account.
    """
    user = require(session, "create", "tickets")
    title = title.strip()
    if not 5 <= len(title) <= 120:
        raise invalid_argument("title", f"must be 5 to 120 characters (got {len(title)})")
    if not description.strip():
        raise missing_field("description", "describe the problem in at least a few words")
    number = session["counters"]["next_ticket_number"]
    tid = f"T-{number}"
    session["counters"]["next_ticket_number"] = number + 1
    at = now(session)
    ticket = {
        "ticket_id": tid,
        "title": title,
        "description": description.strip(),
        "category": category,
        "priority": priority,
        "status": "open",
        "assignee": None,
        "reporter": reporter or user,
        "created_at": at,
        "updated_at": at,
        "version": 1,
        "resolution": None,
        "comments": [],
    }
    session["tickets"][tid] = ticket
    record(session, user, "create_ticket", tid, {"status": [None, "open"]})
    return {"ticket": ticket}


@tool("write", fields=["tickets", "audit_log"], returns=["ticket"])
def update_ticket(
    session: dict,
    ticket_id: str,
    title: str | None = None,
    description: str | None = None,
    priority: Priority | None = None,
    category: Category | None = None,
    expected_version: int | None = None,
) -> dict:
    """Change selected fields of a ticket; fields you leave out stay as they are.

    Args:
        ticket_id: the ticket to change.
        title: new title (5 to 120 characters).
        description: new description.
        priority: new priority.
        category: new category.
        expected_version: the version you last saw (from get_ticket); a mismatch means you acted on
            outdated information and is reported as a warning.
    """
    t = _ticket(session, ticket_id)
    user = _require_owner(session, t, "update")
    _writable(t, "update")
    changes = {
        k: v
        for k, v in (
            ("title", title),
            ("description", description),
            ("priority", priority),
            ("category", category),
        )
        if v is not None
    }
    if not changes:
        raise missing_field("title/description/priority/category", "give at least one field to change")
    if "title" in changes and not 5 <= len(changes["title"].strip()) <= 120:
        raise invalid_argument("title", "must be 5 to 120 characters")
    warnings = []
    if expected_version is not None and expected_version != t["version"]:
        warnings.append(
            stale_warning(
                f"Ticket {ticket_id} is at version {t['version']}, not {expected_version}: "
                f"it changed since you "
                "last read it. The update was applied; re-read the ticket to check it.",
                ticket_id=ticket_id,
                current_version=t["version"],
                expected_version=expected_version,
            )
        )
    diff = {k: [t[k], v] for k, v in changes.items() if t[k] != v}
    t.update(changes)
    _touch(session, t)
    record(session, user, "update_ticket", ticket_id, diff)
    return {"ticket": _summary(t), "warnings": warnings}


@tool("write", fields=["tickets", "audit_log"], returns=["ticket"])
def assign_ticket(session: dict, ticket_id: str, assignee: str) -> dict:
    """Assign a ticket to an active agent or lead. Agents may only take unassigned tickets themselves.

    Args:
        ticket_id: the ticket to assign.
        assignee: account id of the new owner.
    """
    t = _ticket(session, ticket_id)
    user = current_user(session)
    if assignee not in session["accounts"]:
        raise invalid_reference("account", assignee, sorted(session["accounts"]))
    acct = session["accounts"][assignee]
    if not acct["active"]:
        raise invalid_argument("assignee", f"account '{assignee}' is deactivated and cannot own tickets")
    if acct["role"] not in ("agent", "lead"):
        raise invalid_argument("assignee", f"account '{assignee}' ({acct['role']}) cannot own tickets")
    self_take = assignee == user and t["assignee"] is None
    if not has_permission(session, user, "assign") and not (
        self_take and has_permission(session, user, "assign_self")
    ):
        raise permission_denied(user, "assign", f"ticket {ticket_id}")
    if t["status"] in ("resolved", "closed"):
        raise invalid_transition(
            "ticket", ticket_id, t["status"], t["status"], "finished tickets cannot be reassigned"
        )
    if t["assignee"] == assignee:
        raise invalid_argument("assignee", f"ticket {ticket_id} is already assigned to {assignee}")
    diff = {"assignee": [t["assignee"], assignee]}
    t["assignee"] = assignee
    _touch(session, t)
    record(session, user, "assign_ticket", ticket_id, diff)
    return {"ticket": _summary(t)}


@tool("write", fields=["tickets", "audit_log"], returns=["ticket"])
def start_progress(session: dict, ticket_id: str) -> dict:
    """Move an assigned open ticket to in_progress (only its assignee, or a lead).

    Args:
        ticket_id: the ticket to start working on.
    """
    t = _ticket(session, ticket_id)
    user = _require_owner(session, t, "start work on")
    if t["assignee"] is None:
        raise invalid_transition("ticket", ticket_id, t["status"], "in_progress", "assign the ticket first")
    _advance(t, "in_progress")
    t["status"] = "in_progress"
    _touch(session, t)
    record(session, user, "start_progress", ticket_id, {"status": ["open", "in_progress"]})
    return {"ticket": _summary(t)}


@tool("write", fields=["tickets", "audit_log"], returns=["ticket"])
def resolve_ticket(
    session: dict,
    ticket_id: str,
    resolution_code: ResolutionCode,
    resolution_note: str,
    kb_article_id: str | None = None,
) -> dict:
    """Resolve an in-progress ticket; the resolution code and a note are mandatory.

    Args:
        ticket_id: the ticket to resolve.
        resolution_code: how it was resolved.
        resolution_note: what was done, at least 10 characters.
        kb_article_id: the knowledge-base article you followed, if any.
    """
    t = _ticket(session, ticket_id)
    user = _require_owner(session, t, "resolve")
    require(session, "resolve", f"ticket {ticket_id}")
    if len(resolution_note.strip()) < 10:
        raise missing_field("resolution_note", "say what was done (at least 10 characters)")
    warnings = []
    if kb_article_id is not None:
        kb = session["kb_articles"]
        if kb_article_id not in kb:
            raise invalid_reference("knowledge-base article", kb_article_id, sorted(kb))
        if kb[kb_article_id]["status"] == "superseded":
            warnings.append(
                stale_warning(
                    f"{kb_article_id} is superseded by {kb[kb_article_id]['superseded_by']}; "
                    "the resolution cites "
                    "an outdated procedure.",
                    article_id=kb_article_id,
                )
            )
    _advance(t, "resolved")
    t["status"] = "resolved"
    t["resolution"] = {
        "code": resolution_code,
        "note": resolution_note.strip(),
        "resolved_by": user,
        "resolved_at": now(session),
        "kb_article_id": kb_article_id,
    }
    _touch(session, t)
    record(session, user, "resolve_ticket", ticket_id, {"status": ["in_progress", "resolved"]})
    return {"ticket": _summary(t), "warnings": warnings}


@tool("write", fields=["tickets", "audit_log"], returns=["ticket"])
def close_ticket(session: dict, ticket_id: str) -> dict:
    """Close a resolved ticket for good (leads only). Closing twice is refused.

    Args:
        ticket_id: the ticket to close.
    """
    t = _ticket(session, ticket_id)
    user = require(session, "close", f"ticket {ticket_id}")
    _advance(t, "closed")
    t["status"] = "closed"
    _touch(session, t)
    record(session, user, "close_ticket", ticket_id, {"status": ["resolved", "closed"]})
    return {"ticket": _summary(t)}


@tool("write", fields=["tickets", "audit_log"], returns=["comment"])
def add_comment(session: dict, ticket_id: str, body: str, internal: bool = False) -> dict:
    """Add a comment to a ticket (visible to the reporter unless internal).

    Args:
        ticket_id: the ticket to comment on.
        body: the comment text (not empty).
        internal: true for a note only staff can see.
    """
    t = _ticket(session, ticket_id)
    user = require(session, "comment", f"ticket {ticket_id}")
    _writable(t, "comment")
    if not body.strip():
        raise missing_field("body", "the comment text cannot be empty")
    comment = {"author": user, "body": body.strip(), "internal": internal, "at": now(session)}
    t["comments"].append(comment)
    _touch(session, t)
    record(
        session, user, "add_comment", ticket_id, {"comments": [len(t["comments"]) - 1, len(t["comments"])]}
    )
    return {"comment": comment, "ticket_id": ticket_id}


@tool("write", fields=["tickets", "audit_log"], returns=["deleted"])
def delete_ticket(session: dict, ticket_id: str) -> dict:
    """Delete an open, unassigned ticket created by mistake (administrators only).

    Args:
        ticket_id: the ticket to delete.
    """
    t = _ticket(session, ticket_id)
    user = require(session, "delete", f"ticket {ticket_id}")
    if t["status"] != "open" or t["assignee"] is not None:
        raise invalid_transition(
            "ticket", ticket_id, t["status"], "deleted", "only open, unassigned tickets can be deleted"
        )
    del session["tickets"][ticket_id]
    record(session, user, "delete_ticket", ticket_id, {"status": [t["status"], None]})
    return {"deleted": ticket_id}
