"""The start-up line of `dataclaw env serve` advertises only URLs that answer: the real command is started
and every URL it prints is requested with the method and body it names (it once printed
/<name>/tasks, a 404 whenever the name typed was not the environment's, and a 405 to a browser's GET)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envcraft.serve.conftest import free_port

pytest.importorskip("openenv.core.env_server", reason="env serve needs the openenv extra (.venv-openenv)")
httpx = pytest.importorskip("httpx")

LINE = re.compile(r"^\s+(GET|POST|WS)\s+(\S+)(?: (\{.*\}))?\s+\(")


def _serve(args: list[str]) -> tuple[subprocess.Popen, list[str]]:
    """Start `dataclaw env serve …` and return it with its start-up lines, once the server answers."""
    exe = shutil.which("dataclaw", path=str(Path(sys.executable).parent))
    assert exe
    proc = subprocess.Popen([exe, "env", "serve", *args], stderr=subprocess.PIPE, text=True)
    lines = [proc.stderr.readline()]
    assert lines[0].startswith("serving "), lines
    while len(lines) < 7:
        lines.append(proc.stderr.readline())
    return proc, [line.rstrip("\n") for line in lines]


def _wait_up(base: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise AssertionError("the server did not come up")


@pytest.mark.parametrize("named", ["archetype", "task_file"])
def test_every_url_the_startup_line_prints_answers(gold_tasks, named) -> None:
    from websockets.sync.client import connect

    port = free_port()
    args = ["transactional_workspace", "--port", str(port)]
    if named == "task_file":
        args += ["--tasks", str(gold_tasks[0])]
    proc, lines = _serve(args)
    try:
        base = f"http://127.0.0.1:{port}"
        assert lines[0].startswith(f"serving 2 {'tasks' if named == 'task_file' else 'scenarios'} of ")
        _wait_up(base)
        urls = [LINE.match(line) for line in lines[1:]]
        assert all(urls), lines
        assert {m.group(1) for m in urls} == {"GET", "POST", "WS"}
        for m in urls:
            method, url, body = m.group(1), m.group(2), m.group(3)
            assert url.startswith((base, f"ws://127.0.0.1:{port}")), url
            if method == "WS":
                with connect(url, open_timeout=10) as ws:
                    ws.send(json.dumps({"type": "state"}))
                    assert ws.recv(timeout=10)
                continue
            if method == "GET":
                res = httpx.get(url, timeout=10)
            elif url.endswith("/mcp"):
                rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
                res = httpx.post(url, json=rpc, timeout=10)
            else:
                res = httpx.post(url, json=json.loads(body or "{}"), timeout=10)
            assert res.status_code == 200, (method, url, res.status_code, res.text[:200])
            assert res.json() is not None
        tasks_url = next(m.group(2) for m in urls if m.group(2).endswith("/tasks"))
        listed = httpx.post(tasks_url, json={"split": "train"}, timeout=10).json()["tasks"]
        assert len(listed) == 2
    finally:
        proc.terminate()
        proc.wait(timeout=20)
