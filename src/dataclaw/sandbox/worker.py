"""``WarmWorker``: one long-lived sandboxed Python process that serves many short jobs.

Starting bubblewrap and Python costs tens of milliseconds; verifiers and environment calls take far less.
The worker runs inside the same sandbox as :func:`dataclaw.sandbox.run` (same mounts, no network, private
/tmp, unprivileged uid) and speaks length-prefixed JSON on stdin/stdout. Each job runs in a freshly forked
child (so jobs share no state) with its own rlimits and timeout; after every job the worker kills whatever
the job left behind in the PID namespace. If the worker dies or stops answering, it is killed and restarted
on the next job.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import selectors
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

from dataclaw.core.errors import ConfigError
from dataclaw.sandbox import _inner, bwrap, runner
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

log = logging.getLogger(__name__)

_SPAWNER: tuple[int, ThreadPoolExecutor] | None = None
_SPAWNER_LOCK = threading.Lock()


def _spawn(cmd: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """``Popen`` from one thread that lives as long as this process. bubblewrap's ``--die-with-parent``
    is the kernel's parent-death signal, which fires when the *thread* that forked it ends: a warm worker
    started from a pool thread (an importer's, an executor's) was SIGKILLed when that thread finished."""
    global _SPAWNER
    with _SPAWNER_LOCK:
        if _SPAWNER is None or _SPAWNER[0] != os.getpid():  # a forked child has no copy of the thread
            _SPAWNER = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix="dataclaw-sandbox-spawn"))
        pool = _SPAWNER[1]
    return pool.submit(subprocess.Popen, cmd, **kwargs).result()


READY_TIMEOUT_S = 60.0
GRACE_S = 5.0


class WarmWorker(Runtime):
    """A warm sandboxed Python worker; use as a context manager, or call ``cleanup()`` when done.

    ``preload`` modules are imported once in the worker, so jobs that import them start fast. The workspace
    is mounted like in ``run()``; jobs may pick a ``cwd`` inside it. Jobs from several threads queue up:
    one worker runs one job at a time (start several workers for parallelism).
    """

    def __init__(
        self,
        workspace: str | Path,
        limits: Limits | None = None,
        *,
        policy: SandboxPolicy | None = None,
        env: dict[str, str] | None = None,
        preload: Sequence[str] = (),
    ) -> None:
        self.workspace = runner.check_workspace(workspace)
        self.limits = limits or Limits()
        self.policy = policy or SandboxPolicy()
        self.env = dict(env or {})
        self.preload = list(preload)
        self.python = bwrap.interpreter(self.policy, self.limits)
        self.restarts = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._buf = bytearray()
        self._uid = runner.sandbox_uid(self.policy)
        self._roots: list[str] = []
        self._writable: list[str] = []
        self._hidden: list[str] = []
        self._owned = False
        self._killed = False
        self._lock = threading.RLock()  # one for the worker's life: every job and restart goes through it

    # ---- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the worker (idempotent) and wait until it has imported ``preload``."""
        with self._lock:
            self._start()

    def _start(self) -> None:
        if self._killed:  # kill() was sent but the process may not be gone yet: reap it, start afresh
            self._stop_process()
        if self._proc is not None and self._proc.poll() is None:
            return
        self._stop_process()
        cmd, pass_fds, plan = self._command()
        self._stderr = tempfile.TemporaryFile()
        try:
            self._proc = _spawn(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                pass_fds=pass_fds,
                start_new_session=True,
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            )
        finally:
            plan.close()
        runner.track(self._proc)
        assert self._proc.stdout is not None
        os.set_blocking(self._proc.stdout.fileno(), False)
        self._buf.clear()
        try:
            ready = self._read_frame(time.monotonic() + READY_TIMEOUT_S)
        except (EOFError, ValueError):
            ready = None
        if ready is None or ready.get("event") != "ready":
            detail = self._stderr_tail()
            self._stop_process()
            raise SandboxError(f"the sandbox worker failed to start: {detail or 'no answer'}")
        if ready.get("preload_failed"):
            log.warning("sandbox worker could not preload %s", ", ".join(ready["preload_failed"]))

    def _command(self) -> tuple[list[str], list[int], bwrap.MountPlan]:
        if self.policy.unsafe:
            runner.warn_unsafe()
            plan = bwrap.MountPlan(roots=["/"], writable=[str(self.workspace), tempfile.gettempdir()])
            self._roots, self._writable = plan.roots, plan.writable
            cfg = self._config(pidns=False, cwd=str(self.workspace))
            env = {"PATH": f"{self.python.parent}:/usr/bin:/bin", "DATACLAW_WORKSPACE": str(self.workspace)}
            env |= self.env
            cmd = ["/usr/bin/env", "-i", "-C", str(self.workspace), *(f"{k}={v}" for k, v in env.items())]
            cmd += [
                *bwrap.rlimit_args(self.limits, cpu=False),
                *runner.launcher_argv(self.python, cfg, self.limits, sandboxed=False),
            ]
            return cmd, [], plan
        avail = bwrap.sandbox_available()
        if not avail:
            raise SandboxUnavailable(avail.refusal)
        files = runner.launcher_files(self.python)
        plan = bwrap.mount_plan(
            self.policy, self.limits, self.workspace, self.python, self._uid, files, frozenset(files)
        )
        self._roots, self._writable, self._hidden = plan.roots, plan.writable, plan.hidden
        self._own_workspace()
        cfg = self._config(pidns=True, cwd=self.policy.workspace_mount)
        cmd = [
            runner.bwrap_exe(),
            *bwrap.namespace_args(),
            *plan.args,
            "--chdir",
            self.policy.workspace_mount,
        ]
        cmd += [*bwrap.sandbox_env(self.policy, self.python, self.env), "--"]
        cmd += [*bwrap.user_switch(self._uid), *bwrap.rlimit_args(self.limits, cpu=False)]
        cmd += runner.launcher_argv(self.python, cfg, self.limits)
        return cmd, plan.pass_fds, plan

    def _config(self, *, pidns: bool, cwd: str) -> str:
        return runner.launcher_config(
            self._roots,
            self._writable,
            -1,
            [],
            "worker",
            self.limits,
            sandboxed=pidns,
            preload=self.preload,
            pidns=pidns,
            cwd=cwd,
            hidden=self._hidden,
        )

    def _own_workspace(self) -> None:
        if bwrap.is_root() and not self.policy.unsafe:
            runner.chown_tree(self.workspace, self._uid, self._uid)
            self._owned = True

    def cleanup(self) -> None:
        """Stop the worker and give the workspace back to the caller; safe to call more than once."""
        with self._lock:
            self._stop_process()
            if self._owned:
                runner.chown_tree(self.workspace, os.geteuid(), os.getegid())
                self._owned = False
        # the lock is never replaced: a thread already queued on it must not run beside a later caller

    def kill(self) -> None:
        """Kill the worker process now, without waiting for the job lock: a job blocked on it (a hung call)
        gets EOF and returns a classified outcome; the next job restarts the worker. Safe from any thread."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            self._killed = True
            runner.kill_group(proc)

    def _stop_process(self) -> None:
        proc, self._proc = self._proc, None
        self._killed = False
        if proc is not None:
            runner.untrack(proc)
            runner.kill_group(proc)
            proc.wait()
            self._await_eof(proc)
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    try:
                        stream.close()
                    except OSError:
                        pass
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    @staticmethod
    def _await_eof(proc: subprocess.Popen[bytes], timeout: float = 2.0) -> None:
        """Wait until the worker's stdout closes: the worker and its spare child are then gone too."""
        if proc.stdout is None or proc.stdout.closed:
            return
        fd = proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while (left := deadline - time.monotonic()) > 0 and sel.select(timeout=left):
                try:
                    if not os.read(fd, 1 << 16):
                        return
                except BlockingIOError:
                    continue

    def __enter__(self) -> WarmWorker:
        self.start()
        return self

    # ---- jobs ------------------------------------------------------------------------------------------

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
        """Run Python source as ``__main__`` in a fresh forked child of the worker."""
        if not isinstance(program, str):
            raise ConfigError("WarmWorker.run takes Python source; use dataclaw.sandbox.run for an argv list")
        return self._job({"source": program, "args": list(args)}, timeout, env, cwd, limits)

    def call(
        self,
        target: str,
        *args: Any,
        timeout: float | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        limits: Limits | None = None,
        **kwargs: Any,
    ) -> Outcome:
        """Call ``module:function`` with JSON arguments; its JSON return value is ``Outcome.result``."""
        mod, sep, fn = target.partition(":")
        if not (mod and sep and fn):
            raise ConfigError(f"worker call target {target!r} must look like 'package.module:function'")
        return self._job({"call": target, "args": list(args), "kwargs": kwargs}, timeout, env, cwd, limits)

    def _job(
        self,
        job: dict[str, Any],
        timeout: float | None,
        env: dict[str, str] | None,
        cwd: str | None,
        limits: Limits | None,
    ) -> Outcome:
        with self._lock:
            return self._job_locked(job, timeout, env, cwd, limits)

    def _job_locked(
        self,
        job: dict[str, Any],
        timeout: float | None,
        env: dict[str, str] | None,
        cwd: str | None,
        limits: Limits | None,
    ) -> Outcome:
        lim = limits or self.limits
        if timeout is not None:
            lim = dataclasses.replace(lim, wall_s=timeout)
        if lim.stdlib_only != self.limits.stdlib_only:
            raise ConfigError("a job's Limits.stdlib_only must match its worker's (the interpreter is fixed)")
        self.start()
        if self._owned:
            runner.chown_tree(self.workspace, self._uid, self._uid)  # files the caller added since
        base = str(self.workspace) if self.policy.unsafe else self.policy.workspace_mount
        job |= {
            "cwd": runner.inner_cwd(base, self.workspace, cwd),
            "env": env or {},
            "limits": dataclasses.asdict(lim),
        }
        watch = DiskWatch(self.workspace, lim)
        t0 = time.monotonic()
        try:
            self._write_frame(job)
            reply = self._read_frame(t0 + lim.wall_s + GRACE_S, watch)
        except (OSError, EOFError, ValueError):  # worker gone (broken pipe, EOF) or garbled
            return self._lost(lim, t0, crashed=True)
        if reply is None or watch.check():
            return self._lost(lim, t0, crashed=False, disk=watch.exceeded)
        try:
            return Outcome(
                status=Status(reply["status"]),
                exit_code=reply["exit_code"],
                stdout=str(reply["stdout"]),
                stderr=str(reply["stderr"]),
                duration_s=time.monotonic() - t0,
                message=str(reply["message"]),
                truncated=bool(reply["truncated"]),
                resource=reply["resource"],
                sandboxed=not self.policy.unsafe,
                result=reply.get("result"),
                module=reply.get("module"),
            )
        except (KeyError, TypeError, ValueError):  # not what our worker writes: do not trust it further
            return self._lost(lim, t0, crashed=True)

    def _lost(self, lim: Limits, t0: float, *, crashed: bool, disk: bool = False) -> Outcome:
        """The worker died, garbled its answer, stopped answering or its job outgrew the disk quota: kill
        it (a job's leftovers go with it), count a restart, classify."""
        self._stop_process()
        self.restarts += 1
        took = time.monotonic() - t0
        if disk:
            msg = _inner.MESSAGES["disk"]
            return Outcome(Status.RESOURCE_LIMIT, None, "", "", took, msg, resource="disk")
        if not crashed:
            msg = _inner.classify_exit(None, None, True, lim.wall_s)["message"]
            return Outcome(Status.TIMEOUT, None, "", "", took, msg, resource="wall")
        msg = "the job crashed the sandbox worker (it will be restarted)"
        return Outcome(Status.ERROR, None, "", "", took, msg)

    # ---- framing ---------------------------------------------------------------------------------------

    def _write_frame(self, obj: dict[str, Any]) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        _inner.write_frame(self._proc.stdin.fileno(), obj)

    def _read_frame(self, deadline: float, watch: DiskWatch | None = None) -> dict[str, Any] | None:
        """One length-prefixed JSON frame from the worker; None at the deadline or once ``watch`` sees the
        workspace past its quota, EOFError at EOF."""
        import json

        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                if len(self._buf) >= 4:
                    size = struct.unpack(">I", self._buf[:4])[0]
                    if len(self._buf) >= 4 + size:
                        body = bytes(self._buf[4 : 4 + size])
                        del self._buf[: 4 + size]
                        return json.loads(body)
                now = time.monotonic()
                if watch is not None and watch.due(now) and watch.check():
                    return None
                left = deadline - now
                wait = left if watch is None else min(left, watch.next_at - now)
                if left <= 0:
                    return None
                if not sel.select(timeout=max(wait, 0.001)):
                    continue
                try:
                    chunk = os.read(fd, 1 << 20)
                except BlockingIOError:
                    continue
                if not chunk:
                    raise EOFError("the sandbox worker closed its channel")
                self._buf += chunk

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        text = self._stderr.read().decode(errors="replace").strip()
        return text.splitlines()[-1][:300] if text else ""
