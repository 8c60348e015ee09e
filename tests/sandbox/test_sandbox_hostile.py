"""The hostile suite: real attack programs run through the real sandbox, each contained and classified.

Every test also checks the host afterwards: no process of the test's sandbox uid survives, and what the
program went after (files, other workspaces, secrets, the test process itself) is untouched.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from dataclaw.sandbox import Limits, Outcome, SandboxPolicy, Status, run

pytestmark = pytest.mark.usefixtures("require_bwrap")


def _contained(outcome: Outcome, survivors, status: Status, resource: str | None) -> None:
    assert outcome.status is status, (outcome.status, outcome.message, outcome.stderr[-500:])
    assert outcome.resource == resource, (outcome.resource, outcome.stderr[-500:])
    assert "/" not in outcome.message and "Traceback" not in outcome.message  # agent-safe
    assert outcome.sandboxed
    deadline = time.monotonic() + 2
    while survivors() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert survivors() == [], "a sandboxed process outlived the call"


def test_tcp_connection_is_a_network_violation(workspace, limits, policy, survivors):
    src = "import socket\nsocket.create_connection(('93.184.216.34', 80), timeout=5)\nprint('connected')"
    out = run(src, workspace, limits, policy=policy)
    _contained(out, survivors, Status.VIOLATION, "network")
    assert "connected" not in out.stdout


def test_tcp_from_bash_dev_tcp_is_a_network_violation(workspace, limits, policy, survivors):
    out = run(["bash", "-c", "echo x > /dev/tcp/93.184.216.34/80"], workspace, limits, policy=policy)
    _contained(out, survivors, Status.VIOLATION, "network")


def test_hostname_resolution_is_a_network_violation(workspace, limits, policy, survivors):
    src = "import socket\nprint(socket.getaddrinfo('pypi.org', 443))"
    out = run(src, workspace, limits, policy=policy)
    _contained(out, survivors, Status.VIOLATION, "network")


def test_write_outside_the_workspace_is_a_violation(workspace, limits, policy, survivors):
    repo_file = Path(__file__).resolve().parent / "pwned.txt"
    for target, resource in (
        ("/usr/pwned", "read_only"),
        ("/etc/passwd", "permission"),
        (repo_file, "outside"),
    ):
        src = f"open({str(target)!r}, 'w').write('pwned')"
        out = run(src, workspace, limits, policy=policy)
        _contained(out, survivors, Status.VIOLATION, resource)
    assert not Path("/usr/pwned").exists() and not repo_file.exists()
    assert "pwned" not in Path("/etc/passwd").read_text()


def test_another_workspace_cannot_be_read(workspace, limits, policy, survivors):
    other = Path(tempfile.mkdtemp(prefix="dataclaw-other-ws-", dir="/var/tmp"))
    try:
        (other / "secret.txt").write_text("TOKEN-of-the-other-workspace")
        src = f"print(open({str(other / 'secret.txt')!r}).read())"
        out = run(src, workspace, limits, policy=policy)
        _contained(out, survivors, Status.VIOLATION, "outside")
        assert "TOKEN" not in out.stdout + out.stderr
    finally:
        shutil.rmtree(other)


def test_host_files_outside_the_grants_cannot_be_read(workspace, limits, policy, survivors):
    repo_file = Path(__file__).resolve()  # the repo is not granted, only the installed package source
    for target in ("/etc/shadow", "/root/.bash_history", str(repo_file), "/proc/1/environ"):
        src = f"print(open({target!r}).read()[:100])"
        out = run(src, workspace, limits, policy=policy)
        if target == "/proc/1/environ":  # /proc is the sandbox's own: pid 1 is bubblewrap's tiny init
            assert out.status in (Status.OK, Status.VIOLATION) and "PATH=" not in out.stdout
            continue
        _contained(out, survivors, Status.VIOLATION, "outside")
    src = "import os\nprint(sorted(os.listdir('/')), sorted(os.listdir('/root')))"
    out = run(src, workspace, limits, policy=policy)
    assert out.ok
    assert "home" not in out.stdout and ".ssh" not in out.stdout


def test_granted_read_only_path_is_readable_not_writable(workspace, limits, uid, survivors, tmp_path):
    granted = tmp_path / "granted"
    granted.mkdir()
    (granted / "data.txt").write_text("shared data")
    policy = SandboxPolicy(uid=uid, ro_paths=(granted,))
    src = f"print(open({str(granted / 'data.txt')!r}).read())"
    assert run(src, workspace, limits, policy=policy).stdout.strip() == "shared data"
    out = run(f"open({str(granted / 'new.txt')!r}, 'w')", workspace, limits, policy=policy)
    _contained(out, survivors, Status.VIOLATION, "read_only")


def test_fork_bomb_hits_the_process_limit(workspace, limits, policy, survivors):
    src = "import os\nwhile True:\n    os.fork()"
    t0 = time.monotonic()
    out = run(src, workspace, limits, policy=policy)
    _contained(out, survivors, Status.RESOURCE_LIMIT, "processes")
    assert time.monotonic() - t0 < limits.wall_s


def test_bash_fork_bomb_is_contained(workspace, limits, policy, survivors):
    out = run(["bash", "-c", ":(){ :|:& };:; sleep 1"], workspace, limits, policy=policy)
    assert out.status in (Status.OK, Status.ERROR, Status.RESOURCE_LIMIT)
    _contained(out, survivors, out.status, out.resource)


def test_allocating_8_gb_hits_the_memory_limit(workspace, limits, policy, survivors):
    out = run("buf = bytearray(8 << 30)\nprint(len(buf))", workspace, limits, policy=policy)
    _contained(out, survivors, Status.RESOURCE_LIMIT, "memory")


def test_growing_memory_in_steps_hits_the_memory_limit(workspace, limits, policy, survivors):
    src = "chunks = []\nwhile True:\n    chunks.append(bytearray(16 << 20))"
    out = run(src, workspace, limits, policy=policy)
    _contained(out, survivors, Status.RESOURCE_LIMIT, "memory")


def test_infinite_loop_hits_the_cpu_limit(workspace, policy, survivors):
    lim = Limits(cpu_s=1, memory_mb=256, wall_s=30)
    out = run("while True:\n    pass", workspace, lim, policy=policy)
    _contained(out, survivors, Status.RESOURCE_LIMIT, "cpu")


def test_sleeping_forever_hits_the_wall_clock_timeout(workspace, limits, policy, survivors):
    t0 = time.monotonic()
    out = run("import time\ntime.sleep(3600)", workspace, limits, timeout=1.0, policy=policy)
    _contained(out, survivors, Status.TIMEOUT, "wall")
    assert out.exit_code is None and time.monotonic() - t0 < 5


def test_writing_a_10_gb_file_hits_the_file_size_limit(workspace, limits, policy, survivors):
    src = "f = open('big.bin', 'wb')\nfor _ in range(10 * 1024):\n    f.write(b'0' * (1 << 20))"
    out = run(src, workspace, limits, policy=policy)
    _contained(out, survivors, Status.RESOURCE_LIMIT, "file_size")
    assert (workspace / "big.bin").stat().st_size <= limits.file_size_mb << 20


def test_dd_10_gb_is_killed_by_sigxfsz(workspace, limits, policy, survivors):
    argv = ["dd", "if=/dev/zero", "of=big.bin", "bs=1M", "count=10240"]
    out = run(argv, workspace, limits, policy=policy)
    _contained(out, survivors, Status.RESOURCE_LIMIT, "file_size")
    assert (workspace / "big.bin").stat().st_size <= limits.file_size_mb << 20


@pytest.mark.parametrize("tmp", ["/tmp", "/dev/shm"])
def test_filling_the_private_memory_backed_dirs_hits_their_size(workspace, limits, policy, survivors, tmp):
    src = f"for i in range(100):\n    open(f'{tmp}/f{{i}}', 'wb').write(b'0' * (8 << 20))"
    out = run(src, workspace, limits, policy=policy)
    _contained(out, survivors, Status.RESOURCE_LIMIT, "disk")


def test_opening_too_many_files_hits_the_open_file_limit(workspace, limits, policy, survivors):
    src = "handles = [open('/dev/null') for _ in range(10_000)]"
    out = run(src, workspace, limits, policy=policy)
    _contained(out, survivors, Status.RESOURCE_LIMIT, "open_files")


def test_background_process_does_not_outlive_the_call(workspace, limits, policy, survivors):
    marker = f"{os.getpid()}.{time.monotonic_ns() % 100000}"
    src = (
        "import subprocess, os\n"
        f"subprocess.Popen(['sleep', '{marker}'], start_new_session=True)\n"
        "if os.fork() == 0:\n    os.setsid()\n    import time\n    time.sleep(3600)\n"
        "print('spawned')"
    )
    out = run(src, workspace, limits, policy=policy)
    _contained(out, survivors, Status.OK, None)
    assert "spawned" in out.stdout
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            except OSError:
                continue
            assert marker.encode() not in cmdline


def test_killing_the_parent_is_a_violation_and_does_not_reach_the_host(workspace, limits, policy, survivors):
    src = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nprint('parent killed')"
    out = run(src, workspace, limits, policy=policy)
    _contained(out, survivors, Status.VIOLATION, "operation")
    assert "parent killed" not in out.stdout
    src = (
        "import os, signal\n"
        "try:\n    os.kill(-1, signal.SIGKILL)\nexcept ProcessLookupError:\n    pass\n"
        f"try:\n    os.kill({os.getpid()}, signal.SIGKILL)\n"
        "except ProcessLookupError:\n    print('host pid not visible')\n"
        "print('still here')"
    )
    out = run(src, workspace, limits, policy=policy)
    _contained(out, survivors, Status.OK, None)
    assert "still here" in out.stdout and "host pid not visible" in out.stdout
    os.kill(os.getpid(), 0)  # we are alive, and so is our parent
    os.kill(os.getppid(), 0)


def test_environment_variables_not_passed_are_invisible(workspace, limits, policy, survivors, monkeypatch):
    monkeypatch.setenv("DATACLAW_TEST_SECRET", "s3cr3t-value")
    src = "import os\nprint(dict(os.environ))\nprint(os.environ['DATACLAW_TEST_SECRET'])"
    out = run(src, workspace, limits, env={"GIVEN": "yes"}, policy=policy)
    _contained(out, survivors, Status.ERROR, None)
    assert "s3cr3t-value" not in out.stdout + out.stderr
    assert "'GIVEN': 'yes'" in out.stdout
    assert out.message == "the program raised KeyError"


def test_symlink_planted_in_the_workspace_does_not_redirect_host_chown(
    workspace, limits, policy, survivors, tmp_path
):
    victim = tmp_path / "victim.txt"  # a host file outside the workspace, as the program would aim at
    victim.write_text("host data")
    victim.chmod(0o600)
    before = os.lstat(victim)
    src = f"import os\nos.symlink({str(victim)!r}, 'link')"
    out = run(src, workspace, limits, policy=policy)
    _contained(out, survivors, Status.OK, None)
    after = os.lstat(victim)  # the workspace was handed back with lchown: the target is untouched
    assert (after.st_uid, after.st_gid, after.st_mode) == (before.st_uid, before.st_gid, before.st_mode)
    assert (workspace / "link").is_symlink() and os.lstat(workspace / "link").st_uid == os.geteuid()


def test_nothing_is_left_writable_but_the_workspace(workspace, limits, policy, survivors):
    src = (
        "import os\nbad = []\n"
        "for top in ('/', '/usr', '/etc', '/root', '/run', '/work', '/proc/sys', '/dev'):\n"
        "    for dirpath, dirs, files in os.walk(top):\n"
        "        private = dirpath.startswith(('/proc/', '/workspace', '/dev/shm', '/tmp'))\n"
        "        if private and dirpath != '/proc/sys':\n"
        "            dirs[:] = []\n            continue\n"
        "        if os.access(dirpath, os.W_OK):\n            bad.append(dirpath)\n"
        "        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(dirpath, d))][:50]\n"
        "print(bad)"
    )
    out = run(src, workspace, Limits(cpu_s=10, wall_s=30, memory_mb=512), policy=policy)
    _contained(out, survivors, Status.OK, None)
    assert out.stdout.strip() == "[]", out.stdout


def test_the_program_has_no_capabilities_and_no_new_privileges(workspace, limits, policy, survivors, uid):
    src = "print(open('/proc/self/status').read())"
    out = run(src, workspace, limits, policy=policy)
    _contained(out, survivors, Status.OK, None)
    status = dict(line.split(":\t", 1) for line in out.stdout.splitlines() if ":\t" in line)
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(status[cap], 16) == 0, (cap, status[cap])
    assert status["NoNewPrivs"].strip() == "1"
    assert status["Uid"].split()[:2] == [str(uid), str(uid)]


def test_creating_a_user_namespace_to_become_root_is_blocked(workspace, limits, policy, survivors):
    out = run(["unshare", "--user", "--map-root-user", "id"], workspace, limits, policy=policy)
    _contained(out, survivors, Status.VIOLATION, "operation")
    assert "uid=0" not in out.stdout
    src = "import threading, subprocess\n"
    src += "t = threading.Thread(target=print, args=('thread',))\nt.start()\nt.join()\n"
    src += "print(subprocess.run(['echo', 'child'], capture_output=True, text=True).stdout)"
    out = run(src, workspace, limits, policy=policy)  # threads and subprocesses still work under the filter
    _contained(out, survivors, Status.OK, None)
    assert out.stdout.split() == ["thread", "child"]


def test_host_files_around_a_granted_path_stay_hidden_and_count_as_outside(tmp_path, limits):
    """A checkout under /tmp (as CI may place it): its venv is granted, its other files must stay hidden."""
    checkout = tmp_path / "checkout"
    (checkout / "venv").mkdir(parents=True)
    (checkout / "secret.txt").write_text("host secret")
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = SandboxPolicy(ro_paths=[checkout / "venv"])
    out = run(f"print(open({str(checkout / 'secret.txt')!r}).read())", ws, limits, policy=policy)
    assert (out.status, out.resource) == (Status.VIOLATION, "outside"), (out.message, out.stderr[-400:])
    assert "host secret" not in out.stdout
    wrote = run(f"open({str(checkout / 'pwned.txt')!r}, 'w').write('x')", ws, limits, policy=policy)
    assert (wrote.status, wrote.resource) == (Status.VIOLATION, "outside"), (
        wrote.message,
        wrote.stderr[-300:],
    )
    assert not (checkout / "pwned.txt").exists()
