"""``reuse_workers()``: one-shot calls served by a warm worker per workspace, with the one-shot outcomes."""

from __future__ import annotations

import dataclasses
import time

import pytest

from dataclaw.sandbox import Limits, SandboxPolicy, Status, run
from dataclaw.sandbox.pool import active, reuse_workers

pytestmark = pytest.mark.usefixtures("require_bwrap")


def _gone(survivors) -> bool:
    deadline = time.monotonic() + 2
    while survivors() and time.monotonic() < deadline:
        time.sleep(0.05)
    return survivors() == []


def test_runs_on_one_workspace_share_one_worker_but_never_state(tmp_path, limits, policy, survivors):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    with reuse_workers() as pool:
        assert active() is pool
        first = run(
            "import json\njson.poisoned = True\nopen('built.txt', 'w').write('x')", a, limits, policy=policy
        )
        second = run(
            "import json\nprint(hasattr(json, 'poisoned'), open('built.txt').read())",
            a,
            limits,
            policy=policy,
        )
        other = run("import os\nprint(os.listdir('.'))", b, limits, policy=policy)
        assert pool.started == 2  # one worker per workspace
    assert active() is None
    assert first.ok and second.stdout == "False x\n" and other.stdout == "[]\n"
    assert _gone(survivors)


def test_pooled_runs_are_classified_like_one_shot_runs(workspace, limits, policy):
    stdlib = dataclasses.replace(limits, stdlib_only=True)
    programs = [
        ("import yaml", stdlib),
        ("import socket\nsocket.create_connection(('127.0.0.1', 80))", stdlib),
        ("open('big', 'wb').write(b'x' * (20 << 20))", dataclasses.replace(limits, file_size_mb=4)),
        ("import time\ntime.sleep(30)", dataclasses.replace(limits, wall_s=1)),
        ("raise SystemExit(3)", limits),
        ("print('ok')", limits),
    ]
    alone = [run(src, workspace, lim, policy=policy) for src, lim in programs]
    with reuse_workers() as pool:
        pooled = [run(src, workspace, lim, policy=policy) for src, lim in programs]
        assert pool.started == 2  # the stdlib-only runs need an interpreter of their own
    for one, two in zip(alone, pooled, strict=True):
        assert (one.status, one.resource, one.module, one.exit_code) == (
            two.status,
            two.resource,
            two.module,
            two.exit_code,
        ), (one.message, two.message)
        assert one.message == two.message
    assert pooled[0].module == "yaml" and pooled[1].resource == "network"


def test_each_pooled_run_gets_its_own_lower_limits(workspace, policy):
    roomy = Limits(file_size_mb=64, wall_s=20)
    tight = Limits(file_size_mb=4, wall_s=20)
    write = "open('f', 'wb').write(b'x' * (8 << 20))"
    with reuse_workers() as pool:
        assert run(write, workspace, roomy, policy=policy).ok
        out = run(write, workspace, tight, policy=policy)
        assert (out.status, out.resource) == (Status.RESOURCE_LIMIT, "file_size")
        assert run(write, workspace, roomy, policy=policy).ok
        assert pool.started == 1


def test_argv_programs_stdin_and_unsafe_mode_keep_the_one_shot_path(workspace, limits, policy):
    with reuse_workers() as pool:
        assert run(["bash", "-c", "echo hi"], workspace, limits, policy=policy).stdout == "hi\n"
        assert run("print(input())", workspace, limits, policy=policy, stdin=b"typed\n").stdout == "typed\n"
        unsafe = run("print('x')", workspace, limits, policy=SandboxPolicy(unsafe=True))
        assert unsafe.ok and not unsafe.sandboxed
        assert pool.started == 0


def test_a_program_that_kills_its_worker_is_an_error_and_the_next_run_works(workspace, limits, policy):
    with reuse_workers() as pool:
        out = run(
            "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)", workspace, limits, policy=policy
        )
        assert out.status is Status.ERROR and "/" not in out.message
        assert run("print('after')", workspace, limits, policy=policy).stdout == "after\n"
        assert pool.started == 1


def test_nested_scratch_dirs_are_emptied_between_programs_without_following_links(workspace, limits, policy):
    (workspace / "keep.txt").write_text("mine")
    make = "import os\nos.makedirs('/tmp/d/e/f')\nopen('/tmp/d/e/f/x', 'w').write('x')\n"
    make += "os.symlink('/workspace', '/tmp/d/ws')\nos.symlink('/workspace/keep.txt', '/dev/shm/k')"
    # what a fresh sandbox shows there: nothing, or the mount points of host paths under /tmp (a checkout
    # or virtualenv that lives in /tmp is bind-mounted at its own path)
    listing = "import os\nprint(sorted(os.listdir('/tmp')), os.listdir('/dev/shm'))"
    with reuse_workers():
        fresh = run(listing, workspace, limits, policy=policy)
        assert run(make, workspace, limits, policy=policy).ok
        seen = run(listing, workspace, limits, policy=policy)
    assert fresh.ok and "'d'" not in fresh.stdout and fresh.stdout.endswith(" []\n")
    assert seen.stdout == fresh.stdout
    assert (workspace / "keep.txt").read_text() == "mine"
