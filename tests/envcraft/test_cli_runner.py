"""The shared environment CLI, run as an agent's bash call would run it (one process per command)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dataclaw.envcraft import archetypes

WS = "dataclaw.envcraft.archetypes.transactional_workspace"


def run(args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[int, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("WORKSPACE_")}
    proc = subprocess.run(
        [sys.executable, "-m", WS, *args],
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout


@pytest.fixture(scope="module")
def bindings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("ws")
    code, out = run(
        [
            "prepare-rollout",
            "--scenario-id",
            "sso_outage_triage",
            "--state-root",
            str(root),
            "--show-bindings",
            "--show-task",
        ]
    )
    assert code == 0, out
    data = json.loads(out)["data"]
    assert "Finance cannot log in" in data["task"]
    return data["bindings"]


def test_agent_workflow_through_the_cli(bindings: dict[str, str]) -> None:
    code, out = run(["task"], bindings)
    assert code == 0 and json.loads(out)["data"]["account"] == "agent_lee"
    steps = [
        ["login", "--account-id", "agent_lee"],
        ["assign-ticket", "--ticket-id", "T-1001", "--assignee", "agent_lee"],
        ["start-progress", "--ticket-id", "T-1001"],
        [
            "resolve-ticket",
            "--ticket-id",
            "T-1001",
            "--resolution-code",
            "fixed",
            "--resolution-note",
            "Renewed the expired SSO signing certificate.",
            "--kb-article-id",
            "KB-207",
        ],
        [
            "add-comment",
            "--ticket-id",
            "T-1004",
            "--body",
            "Please attach the VPN client logs.",
            "--internal",
            "false",
        ],
        ["list-tickets", "--mine", "true", "--limit", "5"],
    ]
    for step in steps:
        code, out = run(step, bindings)
        assert code == 0 and json.loads(out)["status"] == "ok", (step, out)
    code, out = run(["evaluate-rollout"], bindings)
    assert code == 0 and json.loads(out)["data"]["overall_score"] == 1.0
    code, out = run(["export-state"], bindings)
    assert json.loads(out)["data"]["tickets"]["T-1001"]["status"] == "resolved"
    code, out = run(["reset-rollout"], bindings)
    assert code == 0 and json.loads(out)["data"]["reset"] is True
    code, out = run(["export-state"], bindings)
    assert json.loads(out)["data"]["actions"] == []


def test_help_lists_tools_but_no_trainer_commands_or_session_flag() -> None:
    code, out = run(["--help"])
    assert code == 0 and "resolve-ticket" in out and "task" in out
    for hidden in ("prepare-rollout", "reset-rollout", "evaluate-rollout", "export-state", "--session-id"):
        assert hidden not in out
    code, out = run(["resolve-ticket", "--help"])
    assert "--resolution-code" in out and "--session-id" not in out


def test_cli_errors_are_structured(bindings: dict[str, str]) -> None:
    code, out = run(["get-ticket", "--ticket-id", "T-1001"])  # no bindings
    assert code == 1 and json.loads(out)["error"]["category"] == "missing_binding"
    code, out = run(["get-ticket"], bindings)
    assert code == 2 and json.loads(out)["error"]["category"] == "missing_field"
    code, out = run(["list-tickets", "--limit", "many"], bindings)
    assert code == 2 and json.loads(out)["error"]["category"] == "invalid_argument"
    code, out = run(["get-ticket", "--ticket-id", "T-1", "--session-id", "x"], bindings)
    assert code == 2 and "session-id" in json.loads(out)["error"]["message"]
    code, out = run(["get-ticket", "--ticket-id", "T-9"], {**bindings, "WORKSPACE_SESSION_ID": "gone"})
    err = json.loads(out)["error"]
    assert err["category"] == "session_not_found" and bindings["WORKSPACE_STATE_ROOT"] not in out
    code, out = run(
        ["get-ticket", "--ticket-id", "T-9"], {**bindings, "WORKSPACE_STATE_ROOT": "/nonexistent/root"}
    )
    assert code == 1 and "/nonexistent" not in out


@pytest.mark.parametrize("name", archetypes.names())
def test_every_archetype_cli_starts_and_shows_help(name: str) -> None:
    pkg = archetypes.get(name)
    proc = subprocess.run([*pkg.cli_command(), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "prepare-rollout" not in proc.stdout, proc.stdout + proc.stderr
