"""A run directory never hides what a reader skipped or who held it: torn lines are reported with file and
line by every reader (store, stand-alone JSONL reads, ``tailor inspect`` and ``tailor export``); the lock
file is emptied on release and a dead holder's pid is reported as stale, never as a holder."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dataclaw.core import lock
from dataclaw.core.errors import ConfigError
from dataclaw.core.store import RunStore, TornLine, iter_jsonl


def _run_with_torn_tail(root: Path, n: int = 3) -> Path:
    with RunStore(root) as store:
        for i in range(n):
            store.stage("candidates").append({"id": f"c{i}"})
    path = root / "candidates.jsonl"
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"id": "stream:tor')  # a crash in the middle of a write
    return path


def test_a_torn_last_line_is_reported_with_file_and_line_while_the_rest_is_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _run_with_torn_tail(tmp_path)
    caplog.set_level(logging.WARNING, "dataclaw.core.store")
    store = RunStore(tmp_path)
    assert [r["id"] for r in store.records("candidates")] == ["c0", "c1", "c2"]
    want = TornLine(str(path), 4, len('{"id": "stream:tor'))
    assert store.torn() == [want]
    assert f"{path}: line 4 is torn (18 bytes" in caplog.text
    assert caplog.text.count("line 4 is torn") == 1, "reported once, however many stores open the file"
    RunStore(tmp_path).stage("candidates")
    assert caplog.text.count("line 4 is torn") == 1
    seen: list[TornLine] = []
    assert [r["id"] for r in iter_jsonl(path, seen.append)] == ["c0", "c1", "c2"] and seen == [want]
    assert path.read_bytes().endswith(b'"stream:tor'), "a reader never cuts a line a writer may be writing"


def test_a_whole_file_has_no_torn_line_and_a_bad_middle_line_is_an_error(tmp_path: Path) -> None:
    with RunStore(tmp_path) as store:
        for i in range(2):
            store.stage("a").append({"id": f"x{i}"})
    assert RunStore(tmp_path).torn() == []
    text = (tmp_path / "a.jsonl").read_text()
    (tmp_path / "a.jsonl").write_text("{broken\n" + text)
    with pytest.raises(ConfigError, match=r"a.jsonl: line 1 is not valid JSON"):
        list(iter_jsonl(tmp_path / "a.jsonl"))


def test_inspect_reports_torn_lines_and_a_stale_lock(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from dataclaw.cli.tailor import app

    with RunStore(tmp_path) as store:
        store.update_manifest(command="tailor ingest")
        store.stage("streams").append({"id": "stream:a", "modality": "video", "duration_s": 1.0})
    path = _run_with_torn_tail(tmp_path, 0)
    _killed_holder(tmp_path)
    out = CliRunner().invoke(app, ["inspect", str(tmp_path), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["torn_lines"] == [{"path": str(path), "line": 1, "bytes": 18}]
    assert data["lock"]["state"] == "stale" and "ended without releasing it" in data["lock"]["message"]
    table = CliRunner().invoke(app, ["inspect", str(tmp_path)], env={"COLUMNS": "300"})
    assert f"torn line skipped: {path} line 1 (18 bytes)" in table.stdout.replace("\n", "")
    assert table.stdout.lstrip().startswith("tailor ingest"), "titled by the command that made the run"


def _killed_holder(root: Path) -> int:
    """A process that takes the run's lock and is SIGKILLed holding it; its pid."""
    code = (
        f"from dataclaw.core import lock; lock.acquire({str(root)!r}, 'tailor run'); print('held', flush=1)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code + "; import time; time.sleep(60)"], stdout=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"held"
    assert lock.status(root)["state"] == "held" and lock.status(root)["pid"] == proc.pid
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return proc.pid


def test_a_dead_holders_pid_is_stale_reported_and_replaced(tmp_path: Path, caplog) -> None:
    assert lock.status(tmp_path)["state"] == "free"
    pid = _killed_holder(tmp_path)
    status = lock.status(tmp_path)
    assert status["state"] == "stale" and status["pid"] == pid and f"pid {pid}" in str(status["message"])
    assert json.loads((tmp_path / ".lock").read_text())["pid"] == pid, "a reader changes nothing"
    caplog.set_level(logging.WARNING, "dataclaw.core.lock")
    with RunStore(tmp_path) as store:
        store.stage("a").append({"id": "x"})
        assert f"stale lock file: pid {pid}" in caplog.text and "taking it over" in caplog.text
        assert lock.status(tmp_path)["state"] == "held"
    assert (tmp_path / ".lock").read_text() == "", "emptied on release, as the docs say"
    assert lock.status(tmp_path) == {"state": "free"}


def test_a_live_holder_is_never_called_stale(tmp_path: Path) -> None:
    code = f"from dataclaw.core import lock; lock.acquire({str(tmp_path)!r}); print('held', flush=True)"
    proc = subprocess.Popen(
        [sys.executable, "-c", code + "; import time; time.sleep(60)"], stdout=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"held"
        for _ in range(3):  # asking does not take the lock: the holder keeps it, a writer is refused
            assert lock.status(tmp_path)["state"] == "held"
            time.sleep(0.05)
        with pytest.raises(lock.RunLockedError, match=f"pid {proc.pid}"):
            lock.acquire(tmp_path)
    finally:
        proc.kill()
        proc.wait()
