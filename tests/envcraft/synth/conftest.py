"""A small, valid helpdesk specification in the model's answer form (E_spec and T_spec answers)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

E_ANSWER: dict[str, Any] = {
    "domains": ["helpdesk"],
    "entities": [
        {
            "name": "ticket",
            "description": "A customer support ticket.",
            "id_field": "ticket_id",
            "attributes": [
                {"name": "ticket_id", "type": "string", "description": "id"},
                {"name": "title", "type": "string", "description": "summary"},
                {"name": "status", "type": "string", "description": "open, in_progress, resolved, closed"},
                {"name": "priority", "type": "integer", "description": "1 (urgent) to 4"},
                {"name": "assignee", "type": "string", "description": "agent account id"},
            ],
            "statuses": ["open", "in_progress", "resolved", "closed"],
        },
        {
            "name": "agent",
            "description": "A support agent.",
            "id_field": "agent_id",
            "attributes": [
                {"name": "agent_id", "type": "string", "description": "id"},
                {"name": "queue", "type": "string", "description": "the queue they serve"},
            ],
            "statuses": [],
        },
    ],
    "state_fields": [
        {"name": "tickets", "kind": "collection", "entity": "ticket", "description": "all tickets"},
        {"name": "agents", "kind": "collection", "entity": "agent", "description": "the support team"},
        {"name": "audit_log", "kind": "log", "entity": "", "description": "every change"},
    ],
    "business_rules": [
        {"rule_id": "one_way_status", "description": "Status only moves forward.", "entities": ["ticket"]},
    ],
    "world_data": {
        "accounts": [{"account_id": "ana", "name": "Ana Ruiz", "role": "agent"}],
        "contacts": [],
        "attachments": [{"attachment_id": "sla_policy", "filename": "sla.md", "content": "P1 in 4h."}],
        "records": [
            {
                "record_id": "t1",
                "entity": "ticket",
                "fields": {"ticket_id": "t1", "title": "VPN down", "priority": 1},
            },
            {"record_id": "ana", "entity": "agent", "fields": {"agent_id": "ana", "queue": "network"}},
        ],
    },
    "scenarios": [
        {
            "scenario_id": "vpn_escalation",
            "task_prompt": "Assign the urgent VPN ticket to the network agent and mark it in progress.",
            "base_time": "2026-03-02T09:00:00Z",
            "entities": ["ticket", "agent"],
            "gold_facts": ["t1 is priority 1"],
            "stale_facts": ["t1 was priority 3 last week"],
            "required_attachments": ["sla_policy"],
            "required_replies": [],
            "allowed_claims": ["t1 is assigned to ana"],
            "forbidden_claims": ["t1 is resolved"],
            "scoring_rules": [{"dimension": "assignment", "weight": 1.0, "rule": "t1.assignee == ana"}],
        }
    ],
}

T_ANSWER: dict[str, Any] = {
    "tools": [
        {
            "name": "list_tickets",
            "description": "List tickets, optionally by status.",
            "parameters": {
                "type": "object",
                "properties": {"status": {"type": "string", "description": "filter", "default": "open"}},
                "required": [],
            },
            "returns": {"type": "object", "description": "the tickets", "success_keys": ["tickets"]},
            "side_effect": "read",
            "modifies_state": False,
            "state_fields_affected": [],
        },
        {
            "name": "assign_ticket",
            "description": "Assign a ticket to an agent.",
            "parameters": {
                "type": "object",
                "properties": {
                    "ticket_id": {"type": "string", "description": "the ticket"},
                    "agent_id": {"type": "string", "description": "the agent"},
                },
                "required": ["ticket_id", "agent_id"],
            },
            "returns": {"type": "object", "description": "the ticket", "success_keys": ["ticket"]},
            "side_effect": "write",
            "modifies_state": True,
            "state_fields_affected": ["tickets", "audit_log"],
        },
    ]
}


@pytest.fixture
def e_answer() -> dict[str, Any]:
    return copy.deepcopy(E_ANSWER)


@pytest.fixture
def t_answer() -> dict[str, Any]:
    return copy.deepcopy(T_ANSWER)


ENTITY_KEYS = ("domains", "entities")


def _split(e: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    state = {k: v for k, v in e.items() if k not in (*ENTITY_KEYS, "state_fields")}
    fields = e["state_fields"]
    state["collections"] = [
        {k: f[k] for k in ("name", "entity", "description")} for f in fields if f["kind"] == "collection"
    ]
    state["other_state"] = [
        {k: f[k] for k in ("name", "kind", "description")} for f in fields if f["kind"] != "collection"
    ]
    return {k: e[k] for k in ENTITY_KEYS}, state


@pytest.fixture
def split():
    """Split an E_spec answer as the model gives it: (the entities answer, the state answer)."""
    return _split


def _as_answer(t: dict[str, Any]) -> dict[str, Any]:
    """A C.3 T_spec as the model answers it: parameters as a list with per-parameter ``required`` flags."""
    tools = []
    for tool in t["tools"]:
        req = set(tool["parameters"]["required"])
        params = [{"name": n, **d, "required": n in req} for n, d in tool["parameters"]["properties"].items()]
        returns = {k: v for k, v in tool["returns"].items() if k != "type"}
        tools.append({**tool, "parameters": params, "returns": returns})
    return {"tools": tools}


@pytest.fixture
def tool_answer():
    """Turn a C.3 T_spec into the model's answer form."""
    return _as_answer
