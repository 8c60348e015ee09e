"""Many sessions on one worker at once, and the worker lost mid-stream: restarted, sessions kept."""

from __future__ import annotations

import threading

import pytest

from dataclaw.envcraft.worker import WorkerError, open_environment
from dataclaw.envcraft.worker.protocol import FrameError, FrameReader, send_frame

from .conftest import counter_copy


@pytest.fixture(scope="module")
def counter(pkgs):
    handle = open_environment(counter_copy(pkgs, "counter_sessions", tools=_DIE))
    yield handle
    handle.close()


_DIE = '''
@tool("read")
def die(session: dict) -> dict:
    """Kill the worker process outright (a crash in native code looks the same)."""
    import os

    os._exit(3)
'''


def test_32_concurrent_sessions_each_see_only_their_own_calls(counter):
    n_sessions, n_calls = 32, 12
    finals: dict[int, int] = {}
    errors: list[BaseException] = []
    go = threading.Barrier(n_sessions)

    def agent(i: int) -> None:
        try:
            s = counter.session("reach_three", session_id=f"agent-{i}")
            go.wait()
            for _ in range(n_calls):
                assert s.call("increment", by=i + 1)["status"] == "ok"
            assert s.call("get_counter")["data"]["value"] == n_calls * (i + 1)
            finals[i] = s.state()["counter"]["value"]
            s.close()
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    threads = [threading.Thread(target=agent, args=(i,)) for i in range(n_sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[:3]
    assert finals == {i: n_calls * (i + 1) for i in range(n_sessions)}


def test_a_crash_restarts_the_worker_and_sessions_survive(counter):
    s = counter.session("reach_three")
    assert s.call("increment", by=2)["data"]["value"] == 2
    before = counter.worker.restarts
    out = s.call("die")
    assert out["status"] == "error" and out["error"]["category"] == "infrastructure"
    assert "Traceback" not in out["error"]["message"] and "/" not in out["error"]["message"]
    assert counter.worker.restarts == before + 1
    inc = counter.worker.incidents[-1]
    assert inc.tool == "die" and inc.restarted and inc.status == "error"
    # the next call starts a fresh worker, which finds the session on disk where it was
    after = s.call("increment")
    assert after.get("data", {}).get("value") == 3, (after, list(counter.worker.incidents)[-2:])
    assert [a["tool"] for a in s.state()["actions"]] == ["increment", "increment"]


def test_a_worker_killed_from_outside_is_restarted_on_the_next_call(counter):
    s = counter.session("start_at_ten")
    counter.worker._worker.kill()
    counter.worker._job.join(timeout=30)  # the kill has landed: the server job saw its worker die
    restarts = counter.worker.restarts
    first = s.call("increment")  # the worker died while idle: this call restarts it and goes through
    assert first["status"] == "ok", (first, list(counter.worker.incidents)[-2:])
    assert counter.worker.restarts == restarts + 1
    again = s.call("get_counter")
    assert again["status"] == "ok", (again, list(counter.worker.incidents)[-2:])
    assert s.state()["counter"]["value"] == 11


def test_closed_worker_refuses_cleanly(pkgs):
    handle = open_environment(counter_copy(pkgs, "counter_closed"))
    s = handle.session("reach_three")
    handle.close()
    with pytest.raises(WorkerError, match="closed"):
        s.state()
    assert s.call("increment")["status"] == "error"


def test_frames_round_trip_and_garbage_is_refused():
    import socket

    a, b = socket.socketpair()
    with a, b:
        send_frame(a, {"id": 1, "op": "ping", "params": {"x": [1, "é"]}})
        assert FrameReader(b).read() == {"id": 1, "op": "ping", "params": {"x": [1, "é"]}}
        a.sendall(b"\x00\x00\x00\x03abc")
        with pytest.raises(FrameError, match="garbled"):
            FrameReader(b).read()
        a.sendall(b"\xff\xff\xff\xff")
        with pytest.raises(FrameError, match="over the limit"):
            FrameReader(b).read()
        a.sendall(b"\x00\x00\x00\x02[]")
        with pytest.raises(FrameError, match="JSON object"):
            FrameReader(b).read()
        a.close()
        with pytest.raises(FrameError, match="closed"):
            FrameReader(b).read()


def test_a_worker_whose_folder_sits_deep_in_a_run_directory_starts(pkgs, tmp_path, monkeypatch):
    """Its socket path is over the 107 bytes a Unix address holds (stage workers put temp files in the
    run's scratch folder: the quickstart's grounding timed out on exactly this)."""
    import tempfile

    deep = tmp_path / ("scratch-" + "x" * 60) / "w12345-abcdefgh"
    deep.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    handle = open_environment(counter_copy(pkgs, "counter_deep"))
    assert len(str(handle.worker._tmp / "env-1.sock")) > 107
    assert handle.session("start_at_ten").call("increment")["data"]["value"] == 11
    handle.close()
