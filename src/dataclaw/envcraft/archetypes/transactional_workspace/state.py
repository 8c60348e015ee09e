"""The repository layer: immutable world data from ``data/`` and the session template built from it.

Only this module reads ``data/``; domain modules see nothing but the session dict (Table 15, rules 3, 10).
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from dataclaw.envcraft.runtime.state import parse_time

DATA = Path(__file__).resolve().parent / "data"

STATUSES = ("open", "in_progress", "resolved", "closed")
# unidirectional lifecycle: each status has exactly one successor
NEXT_STATUS = {"open": "in_progress", "in_progress": "resolved", "resolved": "closed"}


def _read(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _default_state() -> dict[str, Any]:
    accounts = _read("accounts.json")
    tickets = _read("tickets.json")
    return {
        "workspace_account": None,
        "auth": {"current_user": None, "logins": 0},
        "roles": accounts["roles"],
        "accounts": accounts["accounts"],
        "tickets": tickets["tickets"],
        "counters": {"next_ticket_number": tickets["next_number"]},
        "kb_articles": _read("kb_articles.json"),
        "audit_log": [],
    }


# The template every session is deep-copied from (never mutated: the runtime copies it).
DEFAULT_STATE: dict[str, Any] = _default_state()


def history_tickets(base_time: str) -> dict[str, dict[str, Any]]:
    """Deterministic closed tickets for long-context sessions (``data/history_templates.json``)."""
    spec = _read("history_templates.json")
    base = parse_time(base_time)
    out: dict[str, dict[str, Any]] = {}
    templates = spec["templates"]
    for i in range(spec["count"]):
        tpl = templates[i % len(templates)]
        created = (base - timedelta(days=30 + i)).isoformat()
        resolved = (base - timedelta(days=29 + i)).isoformat()
        tid = f"T-{i + 1:04d}"
        out[tid] = {
            "ticket_id": tid,
            "title": f"{tpl['title']} (#{i + 1})",
            "description": f"Historical ticket {i + 1}: {tpl['title'].lower()}.",
            "category": tpl["category"],
            "priority": tpl["priority"],
            "status": "closed",
            "assignee": ("agent_lee", "agent_rao")[i % 2],
            "reporter": f"user{i + 1}@example.com",
            "created_at": created,
            "updated_at": resolved,
            "version": 4,
            "resolution": {
                "code": tpl["code"],
                "note": "Handled per standard procedure.",
                "resolved_by": ("agent_lee", "agent_rao")[i % 2],
                "resolved_at": resolved,
                "kb_article_id": None,
            },
            "comments": [],
        }
    return out
