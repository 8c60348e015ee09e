"""``dataclaw sandbox check|run`` through the real CLI entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dataclaw.sandbox.cli import app

runner = CliRunner()


@pytest.mark.usefixtures("require_bwrap")
def test_check_and_run_print_the_outcome(workspace, tmp_path):
    assert runner.invoke(app, ["check"]).exit_code == 0
    res = runner.invoke(app, ["run", "-w", str(workspace), "--", "bash", "-c", "echo hi > f; cat f"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["stdout"] == "hi\n"
    script = tmp_path / "net.py"
    script.write_text("import socket\nsocket.create_connection(('93.184.216.34', 80))")
    res = runner.invoke(app, ["run", "-w", str(workspace), "--python", str(script)])
    assert res.exit_code == 1
    assert json.loads(res.stdout)["status"] == "violation"


def test_unsafe_flag_is_spelled_out_and_bad_usage_is_named(workspace):
    res = runner.invoke(app, ["run", "-w", str(workspace), "--unsafe-no-sandbox", "--", "true"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout.splitlines()[-1])["sandboxed"] is False
    res = runner.invoke(app, ["run", "-w", str(workspace)])
    assert res.exit_code != 0 and "either a command" in str(res.exception)


def test_the_unsafe_warning_is_printed_once_per_run(workspace) -> None:
    """Through the installed entry point, as a user sees it: one warning line on stderr, not two."""
    dataclaw = Path(sys.executable).parent / "dataclaw"
    cmd = [str(dataclaw), "sandbox", "run", "-w", str(workspace), "--unsafe-no-sandbox", "--", "true"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("UNSAFE: running untrusted code WITHOUT the sandbox") == 1, proc.stderr


@pytest.mark.usefixtures("require_bwrap")
def test_stdlib_only_and_disk_quota_options(workspace, tmp_path):
    script = tmp_path / "third_party.py"
    script.write_text("import yaml\n")
    res = runner.invoke(app, ["run", "-w", str(workspace), "--python", str(script)])
    assert res.exit_code == 0, res.output  # dataclaw's own environment has PyYAML
    res = runner.invoke(app, ["run", "-w", str(workspace), "--stdlib-only", "--python", str(script)])
    assert res.exit_code == 1
    assert json.loads(res.stdout)["module"] == "yaml"
    writer = "for i in $(seq 64); do head -c 1000000 /dev/zero > f$i; done"
    res = runner.invoke(app, ["run", "-w", str(workspace), "--disk-mb", "8", "--", "bash", "-c", writer])
    out = json.loads(res.stdout)
    assert res.exit_code == 1 and (out["status"], out["resource"]) == ("resource_limit", "disk")
