"""The CLI as a user runs it: the installed ``dataclaw`` / ``envcraft`` console scripts in a subprocess."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def dataclaw(*args: str, script: str = "dataclaw", timeout: float = 120) -> subprocess.CompletedProcess:
    exe = shutil.which(script, path=str(BIN)) or shutil.which(script)
    assert exe, f"console script {script} is not installed"
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout)


def test_version():
    from dataclaw import __version__

    res = dataclaw("--version")
    assert res.returncode == 0
    assert res.stdout.strip() == f"dataclaw {__version__}"


def test_help_lists_command_groups():
    from dataclaw.cli.app import COMMANDS, GROUPS

    res = dataclaw("--help")
    assert res.returncode == 0
    # rows of the Commands panel ("│ name  help"), not words anywhere ("env" is in "environments")
    listed = set(re.findall(r"^│ ([a-z][\w-]*)\s", res.stdout, re.MULTILINE))
    assert listed == {*GROUPS, *COMMANDS}


def _rows(panel: str) -> dict[str, str]:
    """The rows of a help panel, ``name → description`` with the wrapped lines joined."""
    rows: dict[str, str] = {}
    name = None
    for line in panel.splitlines():
        m = re.match(r"^│ ([a-z][\w-]*)?\s+(.*?)\s*│$", line)
        if not m:
            continue
        name = m.group(1) or name
        if name:
            rows[name] = f"{rows.get(name, '')} {m.group(2)}".strip()
    return rows


def test_help_names_every_command_of_every_group():
    """`dataclaw --help` names each command of the app, and each group's row lists all its commands."""
    import typer.main

    from dataclaw.cli.app import _register, app

    _register()
    root = typer.main.get_command(app)
    rows = _rows(dataclaw("--help").stdout)
    assert set(rows) == set(root.commands)  # type: ignore[attr-defined]
    for name, command in root.commands.items():  # type: ignore[attr-defined]
        sub = getattr(command, "commands", None)
        if sub is None:
            continue
        listed = rows[name].rsplit("Commands:", 1)[-1].rstrip(".").replace(" ", "").split(",")
        assert listed == list(sub), f"dataclaw --help lists {listed} for {name}, which has {list(sub)}"


def test_envcraft_is_an_alias_of_dataclaw_env():
    alias, env = dataclaw("--help", script="envcraft"), dataclaw("env", "--help")
    assert env.returncode == 0 and "Usage: dataclaw env" in env.stdout  # not two equal empty outputs
    assert alias.stdout == env.stdout


def test_bad_model_string_is_one_clear_line_without_traceback(tmp_path):
    res = dataclaw("quickstart", "--out", str(tmp_path / "run"), "--model", "nosuchbackend:foo")
    assert res.returncode != 0
    assert "Traceback" not in res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip().startswith("error:")]
    assert len(lines) == 1 and "nosuchbackend" in lines[0]


def test_unknown_command_fails_with_usage_error():
    res = dataclaw("no-such-command")
    assert res.returncode == 2
    assert "No such command" in res.stderr
