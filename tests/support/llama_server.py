"""The real ``llama_cpp.server`` (llama-cpp-python's OpenAI-compatible server) as a session fixture, for
any test folder: ``from support.llama_server import llama_cpp_server`` in a conftest or test module."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LlamaServer:
    """A running ``llama_cpp.server``: its base URL and its access log."""

    base_url: str
    log: Path

    def statuses(self) -> list[int]:
        """HTTP status of every chat-completion request so far, from uvicorn's access log."""
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return [int(m) for m in re.findall(r'"POST /v1/chat/completions HTTP/1.1" (\d{3})', text)]


@pytest.fixture(scope="session")
def llama_cpp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """The real ``llama_cpp.server`` (llama-cpp-python's OpenAI-compatible server, the ``local`` extra)
    serving the embedded SmolLM2 GGUF on 127.0.0.1 with tool calling on."""
    import importlib.util
    import os
    import subprocess
    import time
    import urllib.request

    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("uvicorn") is None:
        pytest.skip("llama_cpp.server needs `pip install 'dataclaw[local]'`")
    from dataclaw.models.backends.local import find_gguf

    port = _free_port()
    log = tmp_path_factory.mktemp("llama_cpp_server") / "server.log"
    # one llama.cpp thread: two spin against each other at barriers on a shared machine (several times slower)
    cmd = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(find_gguf("smollm2-135m")),
        "--chat_format", "chatml-function-calling", "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "2048", "--n_threads", "1", "--n_threads_batch", "1",
    ]  # fmt: skip
    with log.open("wb") as out:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # the access log is read while the server runs
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    server = LlamaServer(f"http://127.0.0.1:{port}/v1", log)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{server.base_url}/models", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"llama_cpp.server did not start: {log.read_text()[-2000:]}")
                time.sleep(0.2)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
