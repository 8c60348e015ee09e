"""What untrusted task code (claw builders and verifiers) meets: a stdlib-only interpreter, no IP sockets at
all (loopback included), and a disk quota on the workspace — each classified, never a plain error."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import site
import sys
import time
from pathlib import Path

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.sandbox import Limits, SandboxPolicy, Status, WarmWorker, run

pytestmark = pytest.mark.usefixtures("require_bwrap")


@pytest.fixture
def stdlib(limits: Limits) -> Limits:
    return dataclasses.replace(limits, stdlib_only=True)


def _gone(survivors) -> bool:
    """Nothing of the run is left after a short grace (the kernel reaps a killed tree asynchronously)."""
    deadline = time.monotonic() + 2
    while survivors() and time.monotonic() < deadline:
        time.sleep(0.05)
    return survivors() == []


def _du(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


# ---- stdlib only ---------------------------------------------------------------------------------------


def test_third_party_import_fails_in_stdlib_mode_though_the_host_has_it(workspace, limits, stdlib, policy):
    assert importlib.util.find_spec("yaml") is not None  # the host interpreter (dataclaw's env) has it
    src = "import yaml\nprint('imported', yaml.__name__)"
    assert run(src, workspace, limits, policy=policy).ok  # the ordinary sandbox sees dataclaw's env
    out = run(src, workspace, stdlib, policy=policy)
    assert out.status is Status.ERROR
    assert out.module == "yaml"
    assert "ModuleNotFoundError" in out.message and "'yaml'" in out.message
    assert "/" not in out.message and "imported" not in out.stdout


def test_stdlib_mode_hides_dataclaw_the_venv_and_every_site_packages_dir(workspace, stdlib, policy):
    venv = [sys.prefix] if sys.prefix != sys.base_prefix else []  # the base prefix holds the stdlib
    hidden = sorted({*site.getsitepackages(), *venv, str(Path(__file__).resolve().parents[2])})
    src = f"""
import os, sys
print("site" in sys.modules, [p for p in sys.path if "-packages" in p])
for d in {hidden!r}:
    sys.path.append(d)
    if os.path.isdir(d) and os.listdir(d):
        print("visible", d)
for mod in ("yaml", "dataclaw", "pytest"):
    try:
        __import__(mod)
        print("imported", mod)
    except ImportError:
        pass
"""
    out = run(src, workspace, stdlib, policy=policy)
    assert out.ok, out.stderr
    assert "visible" not in out.stdout and "imported" not in out.stdout
    assert out.stdout.strip().splitlines() == ["False []"]


def test_stdlib_mode_runs_the_standard_library_including_c_extensions(workspace, stdlib, policy):
    src = """
import csv, datetime, hashlib, io, json, pathlib, re, sqlite3, zlib
db = sqlite3.connect(":memory:")
db.execute("create table t (x)")
rows = list(csv.reader(io.StringIO("a,b\\n1,2")))
pathlib.Path("out.json").write_text(json.dumps({"rows": rows, "z": len(zlib.compress(b"x" * 99))}))
"""
    out = run(src, workspace, stdlib, policy=policy)
    assert out.ok, out.stderr
    assert (workspace / "out.json").read_text().startswith('{"rows": [["a", "b"], ["1", "2"]]')


def test_a_warm_worker_can_run_stdlib_only_and_refuses_mixed_jobs(workspace, limits, stdlib, policy):
    with WarmWorker(workspace, stdlib, policy=policy) as worker:
        out = worker.run("import yaml")
        assert out.status is Status.ERROR and out.module == "yaml"
        assert worker.run("import json; print(json.dumps([1]))").stdout == "[1]\n"
        with pytest.raises(ConfigError, match="stdlib_only"):
            worker.run("pass", limits=limits)


# ---- no IP sockets, loopback included ---------------------------------------------------------------


LOOPBACK_SERVER = """
import socket
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen()
conn = socket.create_connection(srv.getsockname(), timeout=2)
print("connected")
"""


@pytest.mark.parametrize("stdlib_only", [False, True])
def test_loopback_connection_is_a_network_violation(workspace, limits, policy, survivors, stdlib_only):
    lim = dataclasses.replace(limits, stdlib_only=stdlib_only)
    out = run(LOOPBACK_SERVER, workspace, lim, policy=policy)
    assert (out.status, out.resource) == (Status.VIOLATION, "network"), out.stderr
    assert "connected" not in out.stdout and "/" not in out.message
    assert _gone(survivors)


def test_connect_to_127_0_0_1_is_a_violation_even_when_the_program_catches_the_refusal(
    workspace, limits, policy
):
    src = """
import socket, sys
try:
    socket.create_connection(("127.0.0.1", 8080), timeout=2)
except OSError as exc:
    print("no server:", exc)
    sys.exit(1)
"""
    out = run(src, workspace, limits, policy=policy)
    assert (out.status, out.resource) == (Status.VIOLATION, "network"), out.stderr


def test_a_program_that_copes_without_the_network_still_succeeds(workspace, limits, policy):
    src = "import socket\ntry:\n    socket.socket()\nexcept OSError:\n    print('offline')\n"
    out = run(src, workspace, limits, policy=policy)
    assert out.ok and out.stdout == "offline\n"


def test_loopback_from_bash_and_from_a_warm_worker_is_a_network_violation(workspace, limits, policy):
    out = run(["bash", "-c", "echo x > /dev/tcp/127.0.0.1/9"], workspace, limits, policy=policy)
    assert (out.status, out.resource) == (Status.VIOLATION, "network"), out.stderr
    with WarmWorker(workspace, limits, policy=policy) as worker:
        out = worker.run(LOOPBACK_SERVER)
        assert (out.status, out.resource) == (Status.VIOLATION, "network"), out.stderr


def test_unix_sockets_and_socket_pairs_keep_working(workspace, limits, policy):
    src = """
import asyncio, socket
a, b = socket.socketpair()
a.sendall(b"ping")
assert b.recv(4) == b"ping"
srv = socket.socket(socket.AF_UNIX)
srv.bind("sock")
srv.listen()
c = socket.socket(socket.AF_UNIX)
c.connect("sock")
asyncio.run(asyncio.sleep(0))
print("ok")
"""
    out = run(src, workspace, limits, policy=policy)
    assert out.ok, out.stderr


# ---- disk quota on the workspace ------------------------------------------------------------------------


WRITER = """
import os
os.makedirs("junk", exist_ok=True)
for i in range(512):  # 2 GB in 4 MB files, each below the per-file limit
    with open(f"junk/f{i}", "wb") as fh:
        fh.write(b"x" * (4 << 20))
print("wrote it all")
"""


def test_writing_past_the_workspace_quota_is_a_disk_resource_limit(workspace, limits, policy, survivors):
    lim = dataclasses.replace(limits, disk_mb=32, file_size_mb=8)
    out = run(WRITER, workspace, lim, policy=policy)
    assert (out.status, out.resource) == (Status.RESOURCE_LIMIT, "disk"), out.stderr[-300:]
    assert "wrote it all" not in out.stdout and "/" not in out.message
    assert _du(workspace) < 1 << 30  # stopped long before the 2 GB the program meant to write
    assert _gone(survivors)


def test_many_small_files_count_against_the_quota_too(workspace, limits, policy):
    src = "import os\nfor i in range(100000):\n    open(f'f{i}', 'w').close()\nprint('done')"
    out = run(src, workspace, dataclasses.replace(limits, disk_mb=2, cpu_s=20), policy=policy)
    assert (out.status, out.resource) == (Status.RESOURCE_LIMIT, "disk")
    assert len(os.listdir(workspace)) < 100000


def test_quota_counts_growth_so_a_large_existing_workspace_still_runs(workspace, limits, policy):
    (workspace / "inputs.bin").write_bytes(b"\0" * (20 << 20))
    lim = dataclasses.replace(limits, disk_mb=8)
    assert run("open('small.txt', 'w').write('x' * 1000)", workspace, lim, policy=policy).ok
    out = run("open('big.bin', 'wb').write(b'x' * (9 << 20))", workspace, lim, policy=policy)
    assert (out.status, out.resource) == (Status.RESOURCE_LIMIT, "disk")


def test_a_warm_worker_job_past_the_quota_is_a_disk_limit_and_the_worker_recovers(workspace, limits, policy):
    lim = dataclasses.replace(limits, disk_mb=32, file_size_mb=8)
    with WarmWorker(workspace, lim, policy=policy) as worker:
        out = worker.run(WRITER)
        assert (out.status, out.resource) == (Status.RESOURCE_LIMIT, "disk")
        assert _du(workspace) < 1 << 30
        assert worker.run("print('next')").stdout == "next\n"


def test_unsafe_mode_keeps_the_quota(workspace, limits, caplog):
    lim = dataclasses.replace(limits, disk_mb=8)
    src = "open('big.bin', 'wb').write(b'x' * (9 << 20))"
    out = run(src, workspace, lim, policy=SandboxPolicy(unsafe=True))
    assert (out.status, out.resource, out.sandboxed) == (Status.RESOURCE_LIMIT, "disk", False)


def test_disk_quota_must_be_positive():
    with pytest.raises(ConfigError, match="disk_mb"):
        Limits(disk_mb=0)


def test_stdlib_mode_keeps_the_exit_and_quit_builtins_scripts_call(workspace, stdlib, policy):
    assert run("print('bye')\nexit(3)", workspace, stdlib, policy=policy).exit_code == 3
    assert run("quit()", workspace, stdlib, policy=policy).ok
    with WarmWorker(workspace, stdlib, policy=policy) as worker:
        assert worker.run("exit(4)").exit_code == 4
