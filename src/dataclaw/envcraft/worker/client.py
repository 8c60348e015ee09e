"""``EnvWorker``: the host side of one env worker — start, request, time out, restart, classify.

One worker per environment package. The package folder is copied into a fresh workspace, a
:class:`~dataclaw.sandbox.WarmWorker` is started there and runs :func:`.server.serve` as one long job; the
host connects to its Unix socket in the workspace. Requests from any number of threads (sessions) are
serialised over that one connection. Sessions live on disk in the workspace, so a restarted worker
(after a crash, a hang or a limit) serves the same sessions again.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import socket
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataclaw.envcraft.worker.protocol import FrameError, FrameReader, Op, send_frame
from dataclaw.envcraft.worker.pythons import PythonEnvMissing, package_python
from dataclaw.sandbox import Limits, Outcome, SandboxPolicy, Status, WarmWorker

log = logging.getLogger(__name__)

SERVE = "dataclaw.envcraft.worker.server:serve"
PRELOAD = ["orjson", "dataclaw.envcraft.runtime", "dataclaw.envcraft.worker.server"]
PKG_DIR = "pkg"
STATE_DIR = "state"
LIFE_S = 30 * 24 * 3600.0
"""The server job's own wall clock: it lives as long as the worker is used (calls have their own)."""
CALL_TIMEOUT_S = 10.0
LOAD_TIMEOUT_S = 30.0
GRACE_S = 2.0
"""How long past a call's own timeout the host waits before it kills the worker (a hang in C code, or
package code that swallowed the worker's interruption)."""
CONNECT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Incident:
    """Something package code did that the sandbox or the worker contained, in the sandbox's outcome
    classes: ``status`` (timeout, resource_limit, violation, error), ``resource`` and an agent-safe
    ``message``. ``op`` and ``tool`` say where."""

    status: str
    resource: str | None
    message: str
    op: str = ""
    tool: str = ""
    restarted: bool = False

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class WorkerError(Exception):
    """The env worker could not do what was asked: the package failed to load, its code raised, or the
    worker was lost (crash, hang, limit). ``incident`` holds the classification when there is one."""

    def __init__(self, message: str, incident: Incident | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.incident = incident


@dataclass(frozen=True)
class WorkerOptions:
    """Limits of one env worker: the sandbox's (memory, processes, disk), per request and for loading."""

    limits: Limits = dataclasses.field(default_factory=Limits)
    policy: SandboxPolicy | None = None
    call_timeout_s: float = CALL_TIMEOUT_S
    load_timeout_s: float = LOAD_TIMEOUT_S


class EnvWorker:
    """The sandboxed worker of one environment package folder; thread-safe."""

    def __init__(self, folder: str | Path, options: WorkerOptions | None = None) -> None:
        self.folder = Path(folder).resolve()
        self.options = options or WorkerOptions()
        self.restarts = 0
        self.incidents: deque[Incident] = deque(maxlen=256)
        self.pending_drops: deque[str] = deque()
        self.on_incident: Callable[[Incident], None] | None = None
        self._tmp = Path(tempfile.mkdtemp(prefix="dataclaw-envw-"))
        self._pkg = f"{PKG_DIR}/{self.folder.name}"
        shutil.copytree(self.folder, self._tmp / self._pkg, ignore=shutil.ignore_patterns("__pycache__"))
        (self._tmp / STATE_DIR).mkdir()
        lim = self.options.limits
        self._worker = WarmWorker(self._tmp, lim, policy=self._policy(), preload=PRELOAD)
        self._job_limits = dataclasses.replace(lim, wall_s=LIFE_S, cpu_s=LIFE_S)
        self._lock = threading.RLock()
        self._sock: socket.socket | None = None
        self._reader: FrameReader | None = None
        self._job: threading.Thread | None = None
        self._ended: list[Outcome] = []
        self._gen = 0
        self._next_id = 0
        self._closed = False
        self.load_s = 0.0
        self.description: dict[str, Any] = {}

    def _policy(self) -> SandboxPolicy | None:
        """The options' sandbox policy, on the package's own Python when its ``runtime.json`` names one."""
        try:
            python = package_python(self.folder)
        except PythonEnvMissing as exc:
            shutil.rmtree(self._tmp, ignore_errors=True)
            raise WorkerError(f"environment package {self.folder.name!r}: {exc}") from None
        if python is None:
            return self.options.policy
        return dataclasses.replace(self.options.policy or SandboxPolicy(), python=python)

    # ---- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the worker (idempotent): the sandbox, the server job, the package import."""
        with self._lock:
            self._ensure()

    def _ensure(self) -> None:
        if self._closed:
            raise WorkerError(f"the env worker of {self.folder.name!r} is closed")
        if self._sock is not None and self._ended:  # the server died while idle (killed, OOM): start anew
            log.warning("env worker %s: found its server gone (%s); restarting", self.folder.name,
                        self._ended[0].message or self._ended[0].status.value)  # fmt: skip
            self._drop_connection(kill=True)
            self.restarts += 1
        if self._sock is not None:
            return
        self._gen += 1
        sock_name = f"env-{self._gen}.sock"
        sock_path = self._tmp / sock_name
        sock_path.unlink(missing_ok=True)
        cfg = {
            "package": self._pkg,
            "socket": sock_name,
            "state_dir": STATE_DIR,
            "call_timeout_s": self.options.call_timeout_s,
            "load_timeout_s": self.options.load_timeout_s,
        }
        self._worker.start()
        cfg |= {
            "roots": self._worker._roots,
            "writable": self._worker._writable,
            "hidden": self._worker._hidden,
        }
        ended: list[Outcome] = []
        self._ended = ended

        def job() -> None:
            try:
                ended.append(self._worker.call(SERVE, cfg, limits=self._job_limits))
            except Exception as exc:  # noqa: BLE001 - the worker could not even start the job
                ended.append(Outcome(Status.ERROR, None, "", "", 0.0, f"the sandbox worker failed: {exc}"))

        self._job = threading.Thread(target=job, name=f"envw-{self.folder.name}", daemon=True)
        self._job.start()
        sock = self._connect(sock_path, ended)
        sock.settimeout(self.options.load_timeout_s + GRACE_S)
        reader = FrameReader(sock)
        try:
            ready = reader.read()
        except TimeoutError:  # not even the worker's own alarm got the import to stop
            sock.close()
            raise self._lost_start("loading", ended, timed_out=True) from None
        except (FrameError, OSError):
            sock.close()
            raise self._lost_start("loading", ended, timed_out=False) from None
        if ready.get("event") != "ready":
            sock.close()
            self._stop_job()
            err = ready.get("error") or {}
            incident = _incident_of(err, op="load")
            if incident is not None:
                self._note(incident)
            raise WorkerError(
                f"environment package {self.folder.name!r} failed to load: {_text(err)}", incident
            )
        self.load_s = float(ready.get("load_s", 0.0))
        self._sock, self._reader = sock, reader

    def _connect(self, path: Path, ended: list[Outcome]) -> socket.socket:
        # a Unix socket address holds at most 107 bytes, and the worker's folder may sit deep in a run's
        # scratch directory: connect through a short /proc/self/fd/<dir fd>/ path to the same file
        dirfd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
        address = f"/proc/self/fd/{dirfd}/{path.name}" if len(os.fsencode(path)) > 100 else str(path)
        try:
            deadline = time.monotonic() + CONNECT_TIMEOUT_S
            while time.monotonic() < deadline and not ended:
                if path.exists():
                    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    try:
                        sock.connect(address)
                        return sock
                    except OSError:
                        sock.close()
                time.sleep(0.002)
        finally:
            os.close(dirfd)
        raise self._lost_start("starting", ended, timed_out=not ended)

    def _lost_start(self, what: str, ended: list[Outcome], *, timed_out: bool) -> WorkerError:
        """The server died or stopped answering before it was ready: kill, classify from its outcome."""
        self._worker.kill()
        self._stop_job()
        out = ended[0] if ended else None
        if timed_out or out is None or out.status is Status.TIMEOUT:
            limit = self.options.load_timeout_s
            inc = Incident("timeout", "wall", f"{what} the package timed out after {limit:g} s", op="load")
        else:
            inc = Incident(out.status.value, out.resource, out.message, op="load")
        self._note(inc)
        return WorkerError(f"environment package {self.folder.name!r} failed to load: {inc.message}", inc)

    def _stop_job(self, timeout: float = 10.0) -> None:
        if self._job is not None:
            self._job.join(timeout)
            if self._job.is_alive():  # the server ignores its hang-up: the whole worker goes
                self._worker.kill()
                self._job.join(timeout)
            self._job = None

    def _drop_connection(self, *, kill: bool) -> None:
        sock, self._sock, self._reader = self._sock, None, None
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass
        if kill:
            self._worker.kill()
        self._stop_job()

    def close(self) -> None:
        """Stop the worker and delete its workspace (sessions included); safe to call more than once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._drop_connection(kill=False)
            self._worker.cleanup()
            shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> EnvWorker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- session folders -------------------------------------------------------------------------------

    def import_state(self, key: str, src: Path) -> None:
        """Copy a host folder of sessions in as instance ``key``'s state (before the key is first used):
        how ``dataclaw env call`` keeps poke sessions between runs."""
        from dataclaw.sandbox import runner

        with self._lock:
            self.request(Op.DROP, inst=key)  # the worker forgets any cached copy of these sessions
            dst = self._tmp / STATE_DIR / key
            shutil.rmtree(dst, ignore_errors=True)
            if src.is_dir():
                shutil.copytree(src, dst)
            else:
                dst.mkdir(parents=True)
            if self._worker._owned:  # the sandbox's uid owns the workspace: it must own these too
                runner.chown_tree(dst, self._worker._uid, self._worker._uid)

    def export_state(self, key: str, dst: Path) -> None:
        """Copy instance ``key``'s sessions out to a host folder (replacing what was there)."""
        with self._lock:
            src = self._tmp / STATE_DIR / key
            tmp = dst.with_name(dst.name + ".tmp-export")
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(src, tmp)
            if os.geteuid() == 0:
                from dataclaw.sandbox import runner

                runner.chown_tree(tmp, os.geteuid(), os.getegid())
            shutil.rmtree(dst, ignore_errors=True)
            dst.parent.mkdir(parents=True, exist_ok=True)
            tmp.rename(dst)

    # ---- requests --------------------------------------------------------------------------------------

    def request(self, op: Op, steps: int = 1, **args: Any) -> Any:
        """Send one request and return its value; raises EnvError (the environment's own error, as
        in-process) or WorkerError (failure, incident, lost worker). ``steps``: how many calls' time
        limits the request may take (a run of calls: one each, as one at a time)."""
        with self._lock:
            self._ensure()
            assert self._sock is not None and self._reader is not None
            if self.pending_drops and op is not Op.DROP:
                self._send_drops()
                self._ensure()  # a drop that lost the worker left no connection
            self._next_id += 1
            rid = self._next_id
            timeout = steps * self.options.call_timeout_s + GRACE_S
            self._sock.settimeout(timeout)
            try:
                send_frame(self._sock, {"id": rid, "op": str(op), **args})
                reply = self._reader.read()
            except TimeoutError:
                self._drop_connection(kill=True)
                self.restarts += 1
                limit = self.options.call_timeout_s
                inc = Incident("timeout", "wall", f"timed out after {limit:g} s", op=str(op),
                               tool=str(args.get("tool", "")), restarted=True)  # fmt: skip
                self._note(inc)
                raise WorkerError(f"{op}: {inc.message} (the env worker was restarted)", inc) from None
            except (FrameError, OSError):
                ended = self._ended
                self._drop_connection(kill=True)
                self.restarts += 1
                out = ended[0] if ended else None
                if out is not None and out.status is not Status.OK:
                    inc = Incident(out.status.value, out.resource, out.message, op=str(op),
                                   tool=str(args.get("tool", "")), restarted=True)  # fmt: skip
                else:
                    inc = Incident("error", None, "the env worker crashed", op=str(op),
                                   tool=str(args.get("tool", "")), restarted=True)  # fmt: skip
                self._note(inc)
                raise WorkerError(f"{op}: {inc.message} (the env worker was restarted)", inc) from None
            if reply.get("id") != rid:  # not our answer: trust nothing further from this worker
                self._drop_connection(kill=True)
                self.restarts += 1
                inc = Incident(
                    "error", None, "the env worker answered out of turn", op=str(op), restarted=True
                )
                self._note(inc)
                raise WorkerError(f"{op}: {inc.message}", inc)
        incident = reply.get("incident")
        if incident is not None:
            self._note(
                _incident_of({"kind": "incident", **incident}, op=str(op), tool=str(args.get("tool", "")))
            )
        if reply.get("ok"):
            return reply.get("value")
        err = reply.get("error") or {}
        if err.get("kind") == "env":
            from dataclaw.envcraft.runtime.errors import EnvError

            raise EnvError(
                err.get("category", "infrastructure"),
                str(err.get("message", "")),
                **(err.get("detail") or {}),
            )
        inc = _incident_of(err, op=str(op), tool=str(args.get("tool", "")))
        if inc is not None:
            self._note(inc)
        raise WorkerError(f"{op}: {_text(err)}", inc)

    def _send_drops(self) -> None:
        """Delete the session folders of instances that are gone (best effort, under the lock)."""
        while self.pending_drops:
            inst = self.pending_drops.popleft()
            try:
                self.request(Op.DROP, inst=inst)
            except Exception:  # noqa: BLE001 - only disk space is at stake; the workspace goes at close
                return

    def call_tool(self, inst: str, sid: str, tool: str, params: dict[str, Any]) -> dict[str, Any]:
        """One tool call as the in-process ``Environment.call``: never raises, agent-safe envelope."""
        try:
            value = self.request(Op.CALL, inst=inst, sid=sid, tool=tool, params=params)
        except WorkerError as exc:
            why = exc.incident.message if exc.incident else "the environment had an internal problem"
            msg = f"{tool} failed ({why}); try again or differently."
            return {"status": "error", "error": {"category": "infrastructure", "message": msg}}
        return dict(value["envelope"])

    def _note(self, incident: Incident) -> None:
        self.incidents.append(incident)
        log.warning(
            "env worker %s: %s %s: %s", self.folder.name, incident.op, incident.status, incident.message
        )
        if self.on_incident is not None:
            self.on_incident(incident)


def _incident_of(err: dict[str, Any], *, op: str, tool: str = "") -> Incident | None:
    if err.get("kind") != "incident":
        return None
    return Incident(
        str(err.get("status", "error")), err.get("resource"), str(err.get("message", "")), op, tool
    )


def _text(err: dict[str, Any]) -> str:
    if err.get("kind") == "error":
        return f"{err.get('type', 'error')}: {err.get('message', '')}"
    return str(err.get("message") or "unknown failure")
