"""Mechanics of the transactional-workspace archetype: auth, permissions, lifecycle, audit, staleness."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataclaw.envcraft.archetypes.transactional_workspace import TransactionalWorkspace


@pytest.fixture
def ws(tmp_path: Path) -> TransactionalWorkspace:
    return TransactionalWorkspace(tmp_path)


def _ok(out: dict) -> dict:
    assert out["status"] == "ok", out
    return out["data"]


def _err(out: dict, category: str) -> str:
    assert out["status"] == "error" and out["error"]["category"] == category, out
    return out["error"]["message"]


def test_operations_need_login_and_only_the_workspace_account(ws: TransactionalWorkspace) -> None:
    sid = ws.create_session("sso_outage_triage")
    assert "not logged in" in _err(ws.call(sid, "list_tickets"), "permission_denied")
    _err(ws.call(sid, "login", account_id="lead_kim"), "permission_denied")
    _err(ws.call(sid, "login", account_id="ghost"), "invalid_reference")
    assert _ok(ws.call(sid, "login", account_id="agent_lee"))["account"]["role"] == "agent"
    assert _ok(ws.call(sid, "whoami"))["account"]["account_id"] == "agent_lee"
    _ok(ws.call(sid, "logout"))
    _err(ws.call(sid, "get_ticket", ticket_id="T-1001"), "permission_denied")


def test_lifecycle_is_unidirectional_with_guards(ws: TransactionalWorkspace) -> None:
    sid = ws.create_session("weekly_queue_cleanup")
    _ok(ws.call(sid, "login", account_id="lead_kim"))
    assert "assign the ticket first" in _err(
        ws.call(sid, "start_progress", ticket_id="T-1003"), "invalid_transition"
    )
    _ok(ws.call(sid, "assign_ticket", ticket_id="T-1003", assignee="agent_lee"))
    msg = _err(
        ws.call(
            sid,
            "resolve_ticket",
            ticket_id="T-1003",
            resolution_code="fixed",
            resolution_note="Cleared the print queue.",
        ),
        "invalid_transition",
    )
    assert "'open'" in msg and "in_progress" in msg
    _ok(ws.call(sid, "start_progress", ticket_id="T-1003"))
    _err(ws.call(sid, "start_progress", ticket_id="T-1003"), "invalid_transition")
    _err(
        ws.call(sid, "resolve_ticket", ticket_id="T-1003", resolution_code="fixed", resolution_note="short"),
        "missing_field",
    )
    _ok(
        ws.call(
            sid,
            "resolve_ticket",
            ticket_id="T-1003",
            resolution_code="fixed",
            resolution_note="Restarted the print spooler and cleared the queue.",
        )
    )
    _ok(ws.call(sid, "close_ticket", ticket_id="T-1003"))
    assert "duplicate terminal closure" in _err(
        ws.call(sid, "close_ticket", ticket_id="T-1003"), "invalid_transition"
    )
    assert "read-only" in _err(
        ws.call(sid, "add_comment", ticket_id="T-1003", body="late"), "invalid_transition"
    )
    _err(ws.call(sid, "update_ticket", ticket_id="T-1003", priority="high"), "invalid_transition")
    t = ws.get_session_state(sid)["tickets"]["T-1003"]
    assert t["status"] == "closed" and t["version"] == 5
    assert t["resolution"]["resolved_by"] == "lead_kim" and t["resolution"]["resolved_at"].startswith(
        "2026-03-02T16:"
    )


def test_permissions_by_role(ws: TransactionalWorkspace) -> None:
    sid = ws.create_session("sso_outage_triage")
    _ok(ws.call(sid, "login", account_id="agent_lee"))
    _err(ws.call(sid, "assign_ticket", ticket_id="T-1003", assignee="agent_rao"), "permission_denied")
    _err(ws.call(sid, "assign_ticket", ticket_id="T-1002", assignee="agent_lee"), "permission_denied")
    _ok(ws.call(sid, "assign_ticket", ticket_id="T-1003", assignee="agent_lee"))  # self-take of unassigned
    _err(ws.call(sid, "close_ticket", ticket_id="T-1006"), "permission_denied")
    _err(ws.call(sid, "delete_ticket", ticket_id="T-1005"), "permission_denied")
    msg = _err(
        ws.call(sid, "update_ticket", ticket_id="T-1002", title="Battery swelling LT-4471"),
        "permission_denied",
    )
    assert "assigned to agent_rao" in msg


def test_crud_validation_audit_and_ids(ws: TransactionalWorkspace) -> None:
    sid = ws.create_session("sso_outage_triage")
    _ok(ws.call(sid, "login", account_id="agent_lee"))
    _err(ws.call(sid, "create_ticket", title="Hi", description="x", category="access"), "invalid_argument")
    _err(
        ws.call(sid, "create_ticket", title="Printer jam", description="  ", category="hardware"),
        "missing_field",
    )
    _err(
        ws.call(sid, "create_ticket", title="Printer jam", description="d", category="plumbing"),
        "invalid_argument",
    )
    t = _ok(
        ws.call(
            sid,
            "create_ticket",
            title="Printer jam on floor 2",
            description="Paper stuck.",
            category="hardware",
            priority="high",
        )
    )["ticket"]
    assert t["ticket_id"] == "T-1011" and t["status"] == "open" and t["reporter"] == "agent_lee"
    assert (
        _ok(ws.call(sid, "create_ticket", title="Second new ticket", description="d", category="software"))[
            "ticket"
        ]["ticket_id"]
        == "T-1012"
    )
    _err(ws.call(sid, "update_ticket", ticket_id="T-1011"), "missing_field")
    _ok(ws.call(sid, "update_ticket", ticket_id="T-1011", priority="low"))
    state = ws.get_session_state(sid)
    assert state["tickets"]["T-1011"]["priority"] == "low" and state["tickets"]["T-1011"]["title"].startswith(
        "Printer"
    )
    log = _ok(ws.call(sid, "list_audit_log", ticket_id="T-1011"))
    assert [e["action"] for e in log["entries"]] == ["create_ticket", "update_ticket"]
    assert (
        log["entries"][1]["changes"] == {"priority": ["high", "low"]}
        and log["entries"][1]["actor"] == "agent_lee"
    )
    assert [e["seq"] for e in state["audit_log"]] == list(range(1, len(state["audit_log"]) + 1))
    _err(ws.call(sid, "get_ticket", ticket_id="T-4040"), "invalid_reference")


def test_stale_information_warns_and_is_penalised(ws: TransactionalWorkspace) -> None:
    sid = ws.create_session("weekly_queue_cleanup")
    _ok(ws.call(sid, "login", account_id="lead_kim"))
    out = ws.call(sid, "update_ticket", ticket_id="T-1009", priority="urgent", expected_version=1)
    assert out["status"] == "ok" and out["warnings"][0]["category"] == "stale_information"
    ev = ws.evaluate_session(sid)
    assert ev["dimensions"]["information_freshness"]["score"] == 0.5
    hits = _ok(ws.call(sid, "search_kb", query="sso certificate"))["articles"]
    assert {a["article_id"] for a in hits} >= {"KB-207", "KB-112"}
    assert next(a for a in hits if a["article_id"] == "KB-112")["superseded_by"] == "KB-207"


def test_long_context_adds_distractors_without_changing_the_task(ws: TransactionalWorkspace) -> None:
    short = ws.create_session("sso_outage_triage")
    long = ws.create_session("sso_outage_triage", long_context=True)
    tickets = ws.get_session_state(long)["tickets"]
    assert len(tickets) == len(ws.get_session_state(short)["tickets"]) + 60
    assert all(tickets[f"T-{i:04d}"]["status"] == "closed" for i in range(1, 61))
    for sid in (short, long):
        for step in ws.scenario("sso_outage_triage").reference_solution:
            _ok(ws.call(sid, step["tool"], **step["params"]))
        assert ws.evaluate_session(sid)["overall_score"] == 1.0


def test_evaluator_partial_credit(ws: TransactionalWorkspace) -> None:
    sid = ws.create_session("sso_outage_triage")
    for step in ws.scenario("sso_outage_triage").reference_solution[:7]:  # stop before resolving
        _ok(ws.call(sid, step["tool"], **step["params"]))
    ev = ws.evaluate_session(sid)
    assert 0 < ev["dimensions"]["goal_state"]["score"] < 1 and ev["overall_score"] < 0.9
    assert "T-1001.status" in ev["dimensions"]["goal_state"]["reason"]
