"""``WarmWorker``: many jobs through one sandboxed process, isolated, classified, restartable."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.sandbox import Limits, SandboxPolicy, Status, WarmWorker

pytestmark = pytest.mark.usefixtures("require_bwrap")


def test_jobs_run_in_fresh_children_and_share_no_state(workspace, limits, policy):
    with WarmWorker(workspace, limits, policy=policy, preload=["json"]) as worker:
        assert worker.run("import os\nPREVIOUS = 1\nprint(os.getpid())").ok
        fresh = worker.run("print(PREVIOUS)")
        assert fresh.status is Status.ERROR and fresh.message == "the program raised NameError"
        assert worker.run("open('/tmp/left-behind', 'w').write('x')").ok
        # /tmp is wiped between jobs (only mount points of granted paths, if any live under /tmp, remain)
        assert "left-behind" not in worker.run("import os\nprint(os.listdir('/tmp'))").stdout
        worker.run("import json\njson.SHARED = 1")
        second = worker.run("import json\nprint(hasattr(json, 'SHARED'))")
        assert second.ok and second.stdout.strip() == "False"
        out = worker.run(
            "import sys, os\nprint(sys.argv[1:], os.getcwd(), os.environ['K'])", args=["x"], env={"K": "v"}
        )
        assert out.stdout.strip() == "['x'] /workspace v"
        assert worker.restarts == 0


def test_call_returns_the_json_value(workspace, limits, policy):
    with WarmWorker(workspace, limits, policy=policy) as worker:
        out = worker.call("os.path:join", "a", "b")
        assert out.ok and out.result == "a/b"
        out = worker.call("dataclaw.core.ids:canonical_json", {"b": 1, "a": 2})
        assert out.ok and out.result == '{"a":2,"b":1}', out.stderr
        bad = worker.call("os:getcwd_that_does_not_exist")
        assert bad.status is Status.ERROR and bad.message == "the program raised AttributeError"
        big = worker.call("json:loads", "[" + ",".join(["1234567890"] * 50_000) + "]")  # > a pipe buffer
        assert big.ok and len(big.result) == 50_000
        nonjson = worker.call("os:getcwdb")
        assert nonjson.status is Status.ERROR
    with pytest.raises(ConfigError, match="module:function"):
        worker.call("no_colon")


def test_workspace_writes_are_visible_to_the_host(workspace, limits, policy):
    with WarmWorker(workspace, limits, policy=policy) as worker:
        (workspace / "input.txt").write_text("from host")  # added after start: re-owned before the job
        out = worker.run("open('output.txt', 'w').write(open('input.txt').read().upper())")
        assert out.ok, out.stderr
    assert (workspace / "output.txt").read_text() == "FROM HOST"
    assert (workspace / "output.txt").stat().st_uid == os.geteuid()


def test_hostile_jobs_are_classified_and_the_worker_keeps_serving(workspace, limits, policy, survivors):
    cases = [
        ("import socket\nsocket.create_connection(('93.184.216.34', 80))", Status.VIOLATION, "network"),
        ("open('/usr/x', 'w')", Status.VIOLATION, "read_only"),
        ("bytearray(8 << 30)", Status.RESOURCE_LIMIT, "memory"),
        (
            "f = open('big', 'wb')\nwhile True:\n    f.write(b'0' * (1 << 20))",
            Status.RESOURCE_LIMIT,
            "file_size",
        ),
        ("import os\nwhile True:\n    os.fork()", Status.RESOURCE_LIMIT, "processes"),
    ]
    with WarmWorker(workspace, limits, policy=policy) as worker:
        for src, status, resource in cases:
            out = worker.run(src)
            assert (out.status, out.resource) == (status, resource), (src, out.message, out.stderr[-300:])
        assert worker.run("print('alive')").stdout == "alive\n"
        assert worker.restarts == 0
    deadline = time.monotonic() + 3
    while survivors() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert survivors() == []


def test_timeout_kills_the_job_and_its_background_children(workspace, limits, policy):
    marker = f"{os.getpid()}.{time.monotonic_ns() % 100000}"
    src = "import subprocess, time\n"
    src += f"subprocess.Popen(['sleep', '{marker}'], start_new_session=True)\ntime.sleep(60)"
    with WarmWorker(workspace, limits, policy=policy) as worker:
        t0 = time.monotonic()
        out = worker.run(src, timeout=1.0)
        assert out.status is Status.TIMEOUT and time.monotonic() - t0 < 5
        cmdlines = [p.read_bytes() for p in Path("/proc").glob("[0-9]*/cmdline") if p.exists()]
        assert not any(marker.encode() in c for c in cmdlines)
        assert worker.run("print(1)").ok and worker.restarts == 0


def test_cpu_limit_applies_per_job_and_job_limits_never_exceed_the_worker(workspace, policy):
    with WarmWorker(workspace, Limits(cpu_s=1, wall_s=30, memory_mb=256), policy=policy) as worker:
        out = worker.run("while True:\n    pass")
        assert (out.status, out.resource) == (Status.RESOURCE_LIMIT, "cpu")
        assert worker.run("print('next')").ok
        bigger = Limits(cpu_s=1, wall_s=30, memory_mb=4096)  # clamped to the worker's 256 MB
        out = worker.run("bytearray(1 << 30)", limits=bigger)
        assert (out.status, out.resource) == (Status.RESOURCE_LIMIT, "memory")


def test_a_job_that_kills_the_worker_gets_an_error_and_the_worker_restarts(workspace, limits, policy):
    with WarmWorker(workspace, limits, policy=policy) as worker:
        out = worker.run("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)")
        assert out.status is Status.ERROR and "worker" in out.message
        assert worker.restarts == 1
        assert worker.run("print('back')").stdout == "back\n"


def test_cleanup_is_idempotent_and_leaves_nothing_running(workspace, limits, policy, survivors):
    worker = WarmWorker(workspace, limits, policy=policy)
    worker.start()
    assert survivors() != []
    worker.cleanup()
    worker.cleanup()
    deadline = time.monotonic() + 2
    while survivors() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert survivors() == []


def test_argv_is_refused_and_unsafe_worker_runs(workspace, limits):
    import tempfile

    keep = tempfile.NamedTemporaryFile(prefix="dataclaw-host-tmp-")  # the host's /tmp is never wiped
    with keep, WarmWorker(workspace, limits, policy=SandboxPolicy(unsafe=True)) as worker:
        with pytest.raises(ConfigError, match="argv"):
            worker.run(["ls"])
        out = worker.run("import os\nprint(os.getcwd())")
        assert out.ok and not out.sandboxed and out.stdout.strip() == str(workspace.resolve())
        assert Path(keep.name).exists()


def test_jobs_from_several_threads_queue_up(workspace, limits, policy):
    from concurrent.futures import ThreadPoolExecutor

    with WarmWorker(workspace, limits, policy=policy) as worker, ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda i: worker.run(f"print({i} * 2)").stdout.strip(), range(12)))
    assert outs == [str(i * 2) for i in range(12)]


def test_a_job_cannot_tamper_with_the_worker_that_serves_later_jobs(workspace, limits, policy):
    src = "import os\nfd = os.open(f'/proc/{os.getppid()}/mem', os.O_RDWR)\nprint('opened')"
    with WarmWorker(workspace, limits, policy=policy) as worker:
        out = worker.run(src)
        assert (out.status, out.resource) == (Status.VIOLATION, "permission"), out.stderr
        assert "opened" not in out.stdout
        out = worker.run("import os\nprint(open(f'/proc/{os.getppid()}/environ').read())")
        assert out.status is Status.VIOLATION


def test_a_worker_started_from_a_thread_outlives_that_thread(workspace, limits, policy):
    """bubblewrap's --die-with-parent follows the *thread* that forked it: a worker started from a pool
    thread must not be killed when that thread ends (it was, and its next job found it dead)."""
    import threading

    with WarmWorker(workspace, limits, policy=policy) as worker:
        worker.cleanup()
        starter = threading.Thread(target=worker.start)
        starter.start()
        starter.join()
        pid = worker._proc.pid
        time.sleep(0.5)  # a parent-death SIGKILL would have landed by now
        assert worker._proc.poll() is None
        assert worker.run("print('alive')").stdout == "alive\n"
        assert worker._proc.pid == pid and worker.restarts == 0
