"""Fixtures of the env-serve tests: a task file of gold tasks, and the OpenEnv server on a free port."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from envcraft.rollout.rollout_helpers import tool_task


@pytest.fixture(scope="session")
def gold_tasks(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """A tasks.jsonl with two tasks of transactional_workspace (the gold task, and a copy with a
    decomposed second user turn) and one of another environment (to be left out)."""
    gold = tool_task()
    second = {
        **gold,
        "id": f"{gold['id']}-turns",
        "user_turns": ["Log in as agent_lee.", "Now the SSO ticket."],
    }
    other = {**tool_task("state_machine"), "id": "task:other-env"}
    path = tmp_path_factory.mktemp("serve") / "tasks.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in (gold, second, other)))
    return path, [gold, second]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Served:
    """An OpenEnv app served by uvicorn in a thread of the test process."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.port = free_port()
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Served:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the OpenEnv server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def serve() -> Iterator[Any]:
    """``serve(catalogue, **kw)`` → a running :class:`Served` (stopped after the test)."""
    started: list[Served] = []

    def start(catalogue: Any, **kw: Any) -> Served:
        from dataclaw.envcraft.serve import build_app

        served = Served(build_app(catalogue, **kw)).__enter__()
        started.append(served)
        return served

    yield start
    for s in started:
        s.__exit__()


COUNTER_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "counter_env"


@pytest.fixture
def require_sandbox() -> None:
    from dataclaw.sandbox import sandbox_available

    avail = sandbox_available()
    if not avail:
        pytest.skip(avail.reason)
