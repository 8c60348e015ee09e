"""``run()``: one untrusted program (Python source or argv) in bubblewrap, supervised and classified.

The host starts bubblewrap in its own session, reads stdout/stderr with byte caps, and on the wall-clock
deadline kills bubblewrap's process group; ``--die-with-parent`` then kills the sandbox's PID-namespace init,
and the kernel kills everything left in that namespace, background processes included. Python programs run
under a launcher that reports uncaught exceptions (type, errno, path) on a private pipe, so outcomes are
classified from errno values and signals. For argv programs only the exit status and, as a fallback, the
C library's own strerror text for the few errnos that matter are available.
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import logging
import marshal
import os
import secrets
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dataclaw.core.errors import ConfigError
from dataclaw.sandbox import _inner, bwrap
from dataclaw.sandbox.quota import DiskWatch
from dataclaw.sandbox.types import (
    Limits,
    Outcome,
    Runtime,
    SandboxError,
    SandboxPolicy,
    SandboxUnavailable,
    Status,
)

if TYPE_CHECKING:
    from dataclaw.sandbox.pool import WorkerPool

log = logging.getLogger(__name__)

INNER_SOURCE = Path(_inner.__file__).read_text(encoding="utf-8")
MAIN_FILE = f"{bwrap.STATUS_DIR}/main.py"
INNER_FILE = f"{bwrap.STATUS_DIR}/inner.bin"
# Loads the launcher precompiled by the host (same interpreter), saving a compile per run.
STUB = f"import marshal;exec(marshal.loads(open({INNER_FILE!r},'rb').read()))"
# A fresh host uid per run (when the caller is root) keeps RLIMIT_NPROC and signals per sandbox.
UID_BASE, UID_SPAN = 0x40000000, 0x10000000
UNSAFE_WARNING = (
    "UNSAFE: running untrusted code WITHOUT the sandbox (--unsafe-no-sandbox): no filesystem, network or "
    "process isolation, only rlimits and a timeout"
)

# Fallback for argv programs: the C library's message for an errno, as programs print it via strerror/perror.
_STDERR_ERRNOS = {
    errno.EROFS: (Status.VIOLATION, "read_only"),
    errno.EACCES: (Status.VIOLATION, "permission"),
    errno.EPERM: (Status.VIOLATION, "operation"),
    errno.ENETUNREACH: (Status.VIOLATION, "network"),
    errno.EAFNOSUPPORT: (Status.VIOLATION, "network"),  # the seccomp filter's answer to IP sockets
    errno.EFBIG: (Status.RESOURCE_LIMIT, "file_size"),
    errno.ENOSPC: (Status.RESOURCE_LIMIT, "disk"),
    errno.ENOMEM: (Status.RESOURCE_LIMIT, "memory"),
}
# getaddrinfo's messages (gai_strerror) for "no DNS": the sandbox has no resolver at all.
_GAI_MESSAGES = ("Temporary failure in name resolution", "Name or service not known")


# Every sandbox process tree this process started and has not reaped yet (one-shot runs, warm workers), so
# an interrupted caller can end them all at once (:func:`interrupt`).
_LIVE: set[subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()
_REFUSING = threading.Event()

WORKERS: ContextVar[WorkerPool | None] = ContextVar("dataclaw_sandbox_workers", default=None)
"""The warm workers that serve the Python runs of the enclosing ``reuse_workers()`` block, if any. The pool
sits on top of this runner (its workers start through it), so it sets this and :func:`run` reads it."""


def track(proc: subprocess.Popen[bytes]) -> None:
    with _LIVE_LOCK:
        _LIVE.add(proc)


def untrack(proc: subprocess.Popen[bytes]) -> None:
    """Call before reaping ``proc`` (so :func:`interrupt` never signals a reused pid)."""
    with _LIVE_LOCK:
        _LIVE.discard(proc)


@contextmanager
def interrupt() -> Iterator[int]:
    """Kill every sandbox this process is running, and refuse new runs until the block ends (so threads
    that were mid-task stop instead of starting their next program); yields how many were killed."""
    _REFUSING.set()
    try:
        with _LIVE_LOCK:
            for proc in _LIVE:
                kill_group(proc)
            killed = len(_LIVE)
        yield killed
    finally:
        _REFUSING.clear()


@dataclass
class _Raw:
    """What the supervisor saw of one process tree."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    truncated: bool
    timed_out: bool
    duration_s: float
    records: list[dict[str, Any]] = field(default_factory=list)
    disk_exceeded: bool = False


def run(
    program: str | Sequence[str],
    workspace: str | Path,
    limits: Limits | None = None,
    timeout: float | None = None,
    env: dict[str, str] | None = None,
    *,
    policy: SandboxPolicy | None = None,
    args: Sequence[str] = (),
    stdin: bytes | None = None,
    cwd: str | None = None,
) -> Outcome:
    """Run ``program`` — Python source (``str``) or an argv list — inside the sandbox and classify the end.

    ``workspace`` is the only writable host directory (mounted at ``policy.workspace_mount``); ``timeout``
    overrides ``limits.wall_s``; ``env`` is the *whole* extra environment (nothing is inherited); ``args``
    become ``sys.argv[1:]`` of a Python source; ``cwd`` is relative to the workspace.
    """
    if _REFUSING.is_set():
        raise SandboxError("the sandbox run was interrupted")
    policy = policy or SandboxPolicy()
    limits = limits or Limits()
    if timeout is not None:
        limits = dataclasses.replace(limits, wall_s=timeout)
    ws = check_workspace(workspace)
    if isinstance(program, str):
        kind = "python"
    elif program and all(isinstance(a, str) for a in program):
        kind = "argv"
    else:
        raise ConfigError("sandbox program must be Python source (str) or a non-empty list of str")
    for granted in (*policy.ro_paths, *policy.rw_paths):
        if not granted.exists():
            raise ConfigError(f"sandbox granted path {str(granted)!r} does not exist")
    if policy.unsafe:
        return _run_unsafe(program, ws, limits, env, policy, args, stdin, cwd)
    avail = bwrap.sandbox_available()
    if not avail:
        raise SandboxUnavailable(avail.refusal)
    workers = WORKERS.get()
    if workers is not None and workers.accepts(program, policy, stdin):
        inner_cwd(policy.workspace_mount, ws, cwd)  # the same checks of cwd as below
        return workers.run(str(program), ws, limits, policy, env, args, cwd)
    uid = sandbox_uid(policy)
    python = bwrap.interpreter(policy, limits)
    files: dict[str, bytes] = {}
    if kind == "python":
        files[MAIN_FILE] = str(program).encode()
        files.update(launcher_files(python))
    plan = bwrap.mount_plan(policy, limits, ws, python, uid, files, frozenset({INNER_FILE}))
    try:
        with _owned_by(ws, uid), _Pipe() as status:
            if kind == "python":
                cfg = launcher_config(
                    plan.roots, plan.writable, status.w, args, "oneshot", limits, hidden=plan.hidden
                )
                target = launcher_argv(python, cfg, limits)
            else:
                target = list(program)
            cmd = [
                bwrap_exe(),
                *bwrap.namespace_args(),
                *plan.args,
                "--chdir",
                inner_cwd(policy.workspace_mount, ws, cwd),
            ]
            cmd += [*bwrap.sandbox_env(policy, python, env), "--"]
            cmd += [*bwrap.user_switch(uid), *bwrap.rlimit_args(limits), *target]
            raw = _supervise(cmd, [*plan.pass_fds, status.w], status, stdin, limits, DiskWatch(ws, limits))
    finally:
        plan.close()
    return _outcome(raw, kind, limits, sandboxed=True)


def sandbox_uid(policy: SandboxPolicy) -> int:
    """The uid the program runs as: as root, the policy's or a fresh unprivileged one; else the caller's."""
    if not bwrap.is_root():
        return os.getuid()
    return policy.uid or UID_BASE + secrets.randbelow(UID_SPAN)


class OneShotRuntime(Runtime):
    """:func:`run` as a :class:`Runtime`: a fresh sandbox per program, nothing held in between."""

    def __init__(
        self, workspace: str | Path, limits: Limits | None = None, policy: SandboxPolicy | None = None
    ):
        self.workspace = check_workspace(workspace)
        self.limits = limits or Limits()
        self.policy = policy or SandboxPolicy()

    def run(
        self,
        program: str | list[str],
        *,
        args: Sequence[str] = (),
        timeout: float | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        limits: Limits | None = None,
    ) -> Outcome:
        lim = limits or self.limits
        return run(program, self.workspace, lim, timeout, env, policy=self.policy, args=args, cwd=cwd)

    def cleanup(self) -> None:
        """Nothing to release: every run tears its sandbox down before returning."""


def bwrap_exe() -> str:
    exe = bwrap.find_tool("bwrap")
    if exe is None:
        raise SandboxUnavailable(bwrap.Availability(False, "the bwrap executable was not found").refusal)
    return exe


def check_workspace(workspace: str | Path) -> Path:
    ws = Path(workspace).resolve()
    if not ws.is_dir():
        raise ConfigError(f"sandbox workspace {str(workspace)!r} is not an existing directory")
    return ws


def inner_cwd(mount: str, workspace: Path, cwd: str | None) -> str:
    """Where the program starts: ``cwd`` (relative, an existing dir in the workspace) under ``mount``."""
    if not cwd:
        return mount
    rel = Path(cwd)
    if rel.is_absolute() or ".." in rel.parts:
        raise ConfigError(f"sandbox cwd {cwd!r} must be a relative path inside the workspace")
    if not (workspace / rel).is_dir():
        raise ConfigError(f"sandbox cwd {cwd!r} is not a directory in the workspace")
    return f"{mount}/{rel.as_posix()}"


@functools.cache
def _inner_code() -> bytes:
    return marshal.dumps(compile(INNER_SOURCE, "<dataclaw-sandbox>", "exec"))


@functools.cache
def _same_interpreter(python: Path) -> bool:
    return os.path.realpath(python) == os.path.realpath(sys.executable)


def launcher_files(python: Path) -> dict[str, bytes]:
    """Files the launcher needs inside the sandbox: the precompiled launcher, if the interpreter matches."""
    return {INNER_FILE: _inner_code()} if _same_interpreter(python) else {}


def launcher_argv(python: Path, cfg: str, limits: Limits, *, sandboxed: bool = True) -> list[str]:
    """``python -I -B -u`` (stdlib only: ``-I -S``) running the launcher: precompiled inside the sandbox
    when possible, else source."""
    code = STUB if sandboxed and _same_interpreter(python) else INNER_SOURCE
    return [str(python), *bwrap.python_flags(limits), "-c", code, cfg]


def launcher_config(
    roots: list[str],
    writable: list[str],
    status_w: int,
    args: Sequence[str],
    mode: str,
    limits: Limits,
    *,
    sandboxed: bool = True,
    **extra: Any,
) -> str:
    """The launcher's settings, marshalled and hex-encoded into one argv string (no json import inside).
    Sandboxed runs report IP socket attempts (``net_hook``); stdlib-only runs get no dataclaw on sys.path."""
    cfg = {"mode": mode, "main": MAIN_FILE, "status_fd": status_w, "args": list(args), "roots": roots}
    sys_path = [] if limits.stdlib_only else [bwrap.src_root()]
    cfg |= {"writable": writable, "sys_path": sys_path, "net_hook": sandboxed, **extra}
    return marshal.dumps(cfg).hex()


class _Pipe:
    """A pipe whose ends are closed at most once (a double close could hit another thread's fd)."""

    def __init__(self) -> None:
        self.r, self.w = os.pipe()
        self._open = {self.r, self.w}

    def close_write(self) -> None:
        self._close(self.w)

    def close(self) -> None:
        for fd in list(self._open):
            self._close(fd)

    def _close(self, fd: int) -> None:
        if fd in self._open:
            self._open.discard(fd)
            os.close(fd)

    def __enter__(self) -> _Pipe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def chown_tree(root: Path, uid: int, gid: int) -> None:
    """``lchown`` every entry under ``root`` (never following symlinks) that is not owned by ``uid``."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [".", *dirnames, *filenames]:
            path = os.path.join(dirpath, name) if name != "." else dirpath
            try:
                st = os.lstat(path)
                if st.st_uid != uid or st.st_gid != gid:
                    os.lchown(path, uid, gid)
            except FileNotFoundError:
                continue


@contextmanager
def _owned_by(workspace: Path, uid: int) -> Iterator[None]:
    """As root: hand the workspace to the sandbox uid for the run, then back to the caller."""
    if not bwrap.is_root():
        yield
        return
    chown_tree(workspace, uid, uid)
    try:
        yield
    finally:
        chown_tree(workspace, os.geteuid(), os.getegid())


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group ``proc`` leads (call before reaping it: then its pid cannot be reused)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _supervise(
    cmd: list[str],
    pass_fds: list[int],
    status: _Pipe,
    stdin: bytes | None,
    limits: Limits,
    watch: DiskWatch | None = None,
) -> _Raw:
    """Start ``cmd`` in a new session, collect capped output until exit or deadline, kill on deadline or
    when the workspace outgrows its quota (``watch``)."""
    stdin_file = tempfile.TemporaryFile() if stdin is not None else None
    if stdin_file is not None:
        stdin_file.write(stdin or b"")
        stdin_file.seek(0)
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=stdin_file if stdin_file is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=pass_fds,
            start_new_session=True,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        )
    except OSError as exc:
        raise SandboxError(f"could not start the sandbox: {exc.strerror}") from exc
    finally:
        if stdin_file is not None:
            stdin_file.close()
    track(proc)
    status.close_write()  # our copy of the write end, so EOF arrives when the sandbox is gone
    assert proc.stdout is not None and proc.stderr is not None
    streams = {"stdout": proc.stdout.fileno(), "stderr": proc.stderr.fileno(), "status": status.r}
    try:
        got = _pump(proc, streams, limits, t0, watch)
    finally:
        untrack(proc)
        kill_group(proc)
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    if watch is not None and not got["timed_out"]:
        watch.check()  # what the last poll did not see
    records = _inner.parse_records(bytes(got["status"]))
    return _Raw(
        exit_code=None if got["timed_out"] or got["killed"] else proc.returncode,
        stdout=bytes(got["stdout"]),
        stderr=bytes(got["stderr"]),
        truncated=got["truncated"],
        timed_out=got["timed_out"],
        duration_s=time.monotonic() - t0,
        records=records,
        disk_exceeded=watch is not None and watch.exceeded and not got["timed_out"],
    )


def _pump(
    proc: subprocess.Popen[bytes],
    streams: dict[str, int],
    limits: Limits,
    t0: float,
    watch: DiskWatch | None = None,
) -> dict[str, Any]:
    """Drain the streams with caps until the process exited and every pipe hit EOF (or the deadline, or
    the disk quota: the process group is killed either way)."""
    bufs: dict[str, Any] = {name: bytearray() for name in streams}
    sel = selectors.DefaultSelector()
    for name, fd in streams.items():
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ, name)
    pidfd = os.pidfd_open(proc.pid)
    sel.register(pidfd, selectors.EVENT_READ, "exit")
    deadline = t0 + limits.wall_s
    open_streams, exited, timed_out, truncated, grace = set(streams), False, False, False, 0.0
    killed = False
    try:
        while open_streams or not exited:
            now = time.monotonic()
            if not exited and not timed_out and now >= deadline:
                timed_out, grace = True, now
                kill_group(proc)
            if watch is not None and not grace and watch.due(now) and watch.check():
                grace, killed = now, True
                kill_group(proc)  # the workspace outgrew its quota
            if grace and now > grace + 2.0:
                break  # something outside our reach holds a pipe; stop waiting for it
            wait = 0.25 if grace else deadline - now
            if watch is not None and not grace:
                wait = min(wait, watch.next_at - now)
            for key, _ in sel.select(timeout=max(wait, 0.001)):
                if key.data == "exit":
                    sel.unregister(pidfd)
                    exited, grace = True, grace or time.monotonic()
                    kill_group(proc)  # unsafe mode: leftovers of the same group would hold the pipes
                    continue
                try:
                    chunk = os.read(key.fd, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:
                    sel.unregister(key.fd)
                    open_streams.discard(key.data)
                    continue
                capped = key.data in ("stdout", "stderr")
                buf = bufs[key.data]
                room = (limits.output_bytes if capped else 1 << 24) - len(buf)
                truncated |= capped and len(chunk) > room
                buf += chunk[: max(room, 0)]
    finally:
        sel.close()
        os.close(pidfd)
    return {**bufs, "truncated": truncated, "timed_out": timed_out, "killed": killed}


def _outcome(raw: _Raw, kind: str, limits: Limits, *, sandboxed: bool) -> Outcome:
    started = next((r for r in raw.records if r.get("event") == "started"), None)
    stderr = raw.stderr.decode(errors="replace")
    if kind == "python" and started is None and not raw.timed_out:
        _raise_setup_failure(stderr, raw.exit_code)
    record = _inner.pick_record(raw.records, started["pid"] if started else None)
    blocked = _inner.network_attempted(raw.records)
    verdict = _inner.classify_exit(raw.exit_code, record, raw.timed_out, limits.wall_s, blocked=blocked)
    if kind == "argv" and verdict["status"] == Status.ERROR:
        # no launcher marks the start of an argv program, so a bubblewrap setup failure is only told
        # apart by its message: reported as an error outcome, never raised (a program could fake it)
        verdict = _argv_fallback(stderr, raw.exit_code) or verdict
    if raw.disk_exceeded:
        verdict = {"status": Status.RESOURCE_LIMIT, "resource": "disk", "message": _inner.MESSAGES["disk"]}
    return Outcome(
        status=Status(verdict["status"]),
        exit_code=raw.exit_code,
        stdout=raw.stdout.decode(errors="replace"),
        stderr=stderr,
        duration_s=raw.duration_s,
        message=verdict["message"],
        truncated=raw.truncated,
        resource=verdict["resource"],
        sandboxed=sandboxed,
        module=_inner.missing_module(record),
    )


def _raise_setup_failure(stderr: str, exit_code: int | None) -> None:
    line = next((ln for ln in stderr.splitlines() if ln.startswith(("bwrap:", "setpriv:", "prlimit:"))), "")
    raise SandboxError(f"the sandbox failed to start (exit {exit_code}): {line or stderr.strip()[:200]}")


def _argv_fallback(stderr: str, exit_code: int | None) -> dict[str, Any] | None:
    """Classify an argv program's failure from the strerror text of the errnos that matter."""
    if exit_code in (126, 127):
        return {"status": Status.ERROR, "resource": None, "message": "command not found or not executable"}
    if exit_code == 1 and stderr.startswith("bwrap: "):
        return {
            "status": Status.ERROR,
            "resource": None,
            "message": "the sandbox could not start the program",
        }
    if any(msg in stderr for msg in _GAI_MESSAGES):
        return {"status": Status.VIOLATION, "resource": "network", "message": _inner.MESSAGES["network"]}
    for num, (status, kind) in _STDERR_ERRNOS.items():
        if os.strerror(num) in stderr:
            return {"status": status, "resource": kind, "message": _inner.MESSAGES[kind]}
    return None


def warn_unsafe() -> None:
    """Say that untrusted code runs unsandboxed, once per execution: through logging, which the CLI sends
    to stderr (and which Python prints to stderr by itself when nothing configured logging)."""
    log.warning(UNSAFE_WARNING)


def _run_unsafe(
    program: str | Sequence[str],
    ws: Path,
    limits: Limits,
    env: dict[str, str] | None,
    policy: SandboxPolicy,
    args: Sequence[str],
    stdin: bytes | None,
    cwd: str | None,
) -> Outcome:
    """Explicit opt-in: rlimits and timeout only, on the host, with a loud warning every time."""
    warn_unsafe()
    python = bwrap.interpreter(policy, limits)
    run_dir = inner_cwd(str(ws), ws, cwd)
    full_env = {
        "PATH": f"{python.parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(ws),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "DATACLAW_WORKSPACE": str(ws),
        **(env or {}),
    }
    prlimit = bwrap.rlimit_args(limits) if bwrap.find_tool("prlimit") else []
    with tempfile.TemporaryDirectory() as tmp, _Pipe() as status:
        if isinstance(program, str):
            main = Path(tmp) / "main.py"
            main.write_text(program, encoding="utf-8")
            writable = [str(ws), tempfile.gettempdir()]
            cfg = launcher_config(
                ["/"], writable, status.w, args, "oneshot", limits, sandboxed=False, main=str(main)
            )
            target = launcher_argv(python, cfg, limits, sandboxed=False)
        else:
            target = list(program)
        cmd = ["/usr/bin/env", "-i", "-C", run_dir, *(f"{k}={v}" for k, v in full_env.items())]
        watch = DiskWatch(ws, limits)
        raw = _supervise([*cmd, *prlimit, *target], [status.w], status, stdin, limits, watch)
    return _outcome(raw, "python" if isinstance(program, str) else "argv", limits, sandboxed=False)
