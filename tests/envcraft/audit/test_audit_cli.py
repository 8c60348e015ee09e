"""``dataclaw env audit``: every archetype passes (table + JSON), a broken package fails with its reasons
and exit status 1, no bubblewrap → the sandbox's refusal unless --unsafe-no-sandbox (loudly logged)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dataclaw.cli.env import app as env_app
from dataclaw.envcraft import archetypes
from dataclaw.envcraft.audit import audit_package
from dataclaw.envcraft.runtime.contract import CHECKS
from dataclaw.sandbox import SandboxUnavailable, bwrap

ENTRY = "import sys; from dataclaw.cli.app import main; sys.argv[0] = 'dataclaw'; main()"


def dataclaw(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )


@pytest.mark.slow
@pytest.mark.usefixtures("require_bwrap")
@pytest.mark.parametrize("name", archetypes.names())
def test_archetype_passes_the_full_audit(name: str) -> None:
    report = audit_package(archetypes.ARCHETYPES_DIR / name)
    assert report.passed, "\n".join(report.reasons())
    assert report.env == name and report.sandboxed and report.findings == []
    assert [c.name for c in report.checks] == ["instantiate_from_s0", *CHECKS, "package_tests"]
    assert all(c.seconds >= 0 for c in report.checks) and report.timings["total_s"] > 0


@pytest.mark.slow
@pytest.mark.usefixtures("require_bwrap")
def test_cli_audits_and_writes_json(tmp_path: Path, mutant: Callable[..., Path]) -> None:
    broken = mutant(("tickets.py", "import time\n\n\ndef _stamp() -> float:\n    return time.time()\n"))
    out_json = tmp_path / "out" / "audit.json"
    out = dataclaw("env", "audit", "state_machine", str(broken), "--json", str(out_json))
    assert out.returncode == 1, out.stderr
    assert "state_machine" in out.stdout and "PASS" in out.stdout and "FAIL" in out.stdout
    assert "S020 wall-clock tickets.py" in out.stdout
    assert "1/2 environments passed; failed: transactional_workspace" in out.stdout
    doc = json.loads(out_json.read_text())
    assert doc["passed"] is False and doc["failed"] == ["transactional_workspace"]
    bad = doc["reports"][1]
    assert bad["findings"][0]["rule"] == "S020" and bad["findings"][0]["file"] == "tickets.py"
    assert {c["name"] for c in bad["checks"]} >= set(CHECKS)  # the dynamic part still ran and passed
    assert all(c["status"] in ("passed", "skipped") for c in bad["checks"])


def test_cli_static_only_needs_no_sandbox(mutant: Callable[..., Path]) -> None:
    broken = mutant(("tickets.py", "import subprocess\n"))
    result = CliRunner().invoke(env_app, ["audit", "--static-only", str(broken)])
    assert result.exit_code == 1 and "S050 network-subprocess" in result.output


def test_cli_refuses_without_bubblewrap(monkeypatch: pytest.MonkeyPatch) -> None:
    real = bwrap.find_tool
    monkeypatch.setattr(bwrap, "find_tool", lambda name: None if name == "bwrap" else real(name))
    bwrap.sandbox_available.cache_clear()
    try:
        result = CliRunner().invoke(env_app, ["audit", "transactional_workspace"])
    finally:
        bwrap.sandbox_available.cache_clear()
    assert isinstance(result.exception, SandboxUnavailable)
    assert "refusing to run untrusted code" in str(result.exception)
    assert "--unsafe-no-sandbox" in str(result.exception)


@pytest.mark.slow
def test_cli_unsafe_mode_runs_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real = bwrap.find_tool
    monkeypatch.setattr(bwrap, "find_tool", lambda name: None if name == "bwrap" else real(name))
    bwrap.sandbox_available.cache_clear()
    out_json = tmp_path / "a.json"
    try:
        result = CliRunner().invoke(
            env_app, ["audit", "temporal_scheduling", "--unsafe-no-sandbox", "--json", str(out_json)]
        )
    finally:
        bwrap.sandbox_available.cache_clear()
    assert result.exit_code == 0, result.output
    assert "UNSAFE" in caplog.text  # the sandbox warns on every unsandboxed run
    report = json.loads(out_json.read_text())["reports"][0]
    assert report["passed"] and report["sandboxed"] is False


def test_cli_rejects_unknown_target() -> None:
    result = CliRunner().invoke(env_app, ["audit", "no_such_env"])
    assert result.exit_code != 0 and "neither a package folder nor an archetype" in str(result.exception)
