"""``dataclaw env`` / ``envcraft``: list, show, tools, call, contract — run as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ENTRY = "import sys; from dataclaw.cli.app import main; sys.argv[0] = 'dataclaw'; main()"


def dataclaw(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def test_list_show_tools() -> None:
    out = dataclaw("env", "list", "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert (
        rows["transactional_workspace"]["tools"] == 16 and rows["transactional_workspace"]["scenarios"] == 2
    )
    show = json.loads(dataclaw("env", "show", "transactional_workspace").stdout)
    assert show["bindings"][0] == "WORKSPACE_SESSION_ID" and show["layout_problems"] == []
    assert abs(sum(show["evaluator"].values()) - 1.0) < 1e-9 and show["tools"]["close_ticket"] == "write"
    unified = json.loads(dataclaw("env", "tools", "transactional_workspace").stdout)
    assert {t["name"] for t in unified} >= {"login", "resolve_ticket"} and "state_fields_affected" in unified[
        0
    ]
    openai = json.loads(dataclaw("env", "tools", "transactional_workspace", "--format", "openai").stdout)
    assert openai[0]["type"] == "function"
    bad = dataclaw("env", "show", "no_such_env")
    assert bad.returncode == 1 and "unknown environment 'no_such_env'" in bad.stderr


def test_call_keeps_a_poke_session(tmp_path: Path) -> None:
    root = str(tmp_path / "poke")
    first = dataclaw(
        "env",
        "call",
        "transactional_workspace",
        "login",
        "--arg",
        "account_id=agent_lee",
        "--state-root",
        root,
    )
    assert first.returncode == 0 and json.loads(first.stdout)["status"] == "ok", first.stdout + first.stderr
    out = dataclaw(
        "env",
        "call",
        "transactional_workspace",
        "list-tickets",
        "--arg",
        "status=open",
        "--arg",
        "limit=2",
        "--state-root",
        root,
        "--evaluate",
    )
    data = json.loads(out.stdout)
    assert (
        data["data"]["count"] == 5
        and len(data["data"]["tickets"]) == 2
        and "overall_score" in data["evaluation"]
    )
    bad = dataclaw("env", "call", "transactional_workspace", "get_ticket", "--state-root", root)
    assert bad.returncode == 1 and json.loads(bad.stdout)["error"]["category"] == "missing_field"
    fresh = dataclaw("env", "call", "transactional_workspace", "whoami", "--state-root", root, "--fresh")
    assert json.loads(fresh.stdout)["error"]["category"] == "permission_denied"  # new session: not logged in


def test_contract_command() -> None:
    out = dataclaw("env", "contract", str(Path(__file__).parent / "fixtures" / "counter_env"))
    assert out.returncode == 0 and "9/9 contract checks passed" in out.stdout, out.stdout + out.stderr
