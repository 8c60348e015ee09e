"""The env worker's server: runs INSIDE the sandbox, imports the package once, serves many sessions.

Started by :class:`~dataclaw.envcraft.worker.client.EnvWorker` as one long job of a
:class:`~dataclaw.sandbox.WarmWorker` (so it has the sandbox's mounts, rlimits, no network, private /tmp
and the unprivileged uid). It listens on a Unix socket in the workspace, accepts the one host connection,
loads the package (``load_env_package`` on the copied folder) and answers requests one at a time.

Containment inside the worker, on top of the sandbox's own:

* every request runs under a wall-clock alarm (``call_timeout_s``); a tool that loops is interrupted and
  the call answers with a ``timeout`` incident (a loop that swallows the interruption is killed by the
  host's own deadline, which restarts the worker);
* any process forked by package code exits at once (environment tools are functions of the session
  state; a fork bomb gets nowhere), and the call reports a ``processes`` violation;
* an exception a tool raises is classified with the sandbox's own rules (network, a path outside the
  sandbox, read-only, memory, …) and reported beside the environment's agent-safe envelope.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from dataclaw.envcraft.worker.protocol import FrameError, FrameReader, Op, send_frame
from dataclaw.sandbox import _inner

ACCEPT_TIMEOUT_S = 60.0


class CallTimeout(BaseException):
    """Raised by the alarm in whatever package code is running; a BaseException so that an
    ``except Exception`` in the package or in the runtime's error mapping does not swallow it."""


class ProcessRefused(BaseException):
    """Raised in package code right after it forks (the child has already exited): environment code may
    not start processes. A BaseException, like :class:`CallTimeout`, so the package cannot swallow it."""


class _Watch:
    """What package code did during the current request: forked, opened an IP socket, raised."""

    def __init__(self, server_pid: int) -> None:
        self.server_pid = server_pid
        self.forked = False
        self.network = False
        self.raised: BaseException | None = None

    def clear(self) -> None:
        self.forked = self.network = False
        self.raised = None


class RunStopped(Exception):
    """A run of calls (``Op.RUN``) stopped at a call that tripped a containment."""


def _incident(status: str, resource: str | None, message: str) -> dict[str, Any]:
    return {"status": status, "resource": resource, "message": message}


class Server:
    """One loaded package, its environments (one per state folder) and the request loop."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.timeout_s = float(cfg["call_timeout_s"])
        self.state_dir = Path(cfg["state_dir"])
        self.watch = _Watch(os.getpid())
        self.env_cls: Any = None
        self.envs: dict[str, Any] = {}
        self.handlers = {
            Op.DESCRIBE: self.describe,
            Op.CREATE: self.create,
            Op.LOAD_SCENARIO: self.load_scenario,
            Op.RESET: lambda r: self.env(r).reset_session(r["sid"]),
            Op.DELETE: lambda r: self.env(r).delete_session(r["sid"]),
            Op.EXISTS: lambda r: self.env(r).store.exists(r["sid"]),
            Op.STATE: lambda r: self.env(r).get_session_state(r["sid"]),
            Op.RESTORE: self.restore,
            Op.CALL: self.call,
            Op.RUN: self.run,
            Op.EVALUATE: lambda r: self.env(r).evaluate_session(r["sid"]),
            Op.DROP: self.drop,
            Op.PING: lambda r: "pong",
        }

    # ---- containment -----------------------------------------------------------------------------------

    def install(self) -> None:
        """Alarm handler, fork guard and network hook; before any package code runs."""
        signal.signal(signal.SIGALRM, _on_alarm)
        watch = self.watch

        def child_exits() -> None:  # a process forked by package code: never let it run on
            os._exit(0)

        def parent_notes() -> None:
            watch.forked = True

        os.register_at_fork(after_in_child=child_exits, after_in_parent=parent_notes)

        def refuse_fork() -> int:  # os.fork itself refuses; the hooks above catch a fork by other means
            watch.forked = True
            raise ProcessRefused()

        os.fork = refuse_fork  # type: ignore[assignment]

        def net_hook(event: str, args: tuple[Any, ...]) -> None:
            if event == "socket.__new__" and len(args) > 1 and args[1] in (socket.AF_INET, socket.AF_INET6):
                watch.network = True

        sys.addaudithook(net_hook)

    def classify(self, exc: BaseException | None) -> dict[str, Any] | None:
        """The incident of what package code did in this request, or None when it behaved."""
        if isinstance(exc, CallTimeout):
            return _incident("timeout", "wall", f"timed out after {self.timeout_s:g} s")
        if self.watch.forked or isinstance(exc, ProcessRefused):
            return _incident("violation", "processes", "blocked: environment code may not start processes")
        if self.watch.network:
            return _incident("violation", "network", _inner.MESSAGES["network"])
        if exc is None:
            return None
        status, kind = _inner.classify_exception(
            exc, self.cfg["roots"], self.cfg["writable"], self.cfg.get("hidden", [])
        )
        if kind is None:
            return None
        return _incident(status, kind, _inner.MESSAGES[kind])

    def _wrap_tools(self) -> None:
        """Wrap each tool so the exception it raises is seen here before the runtime maps it to an
        agent-safe envelope (the runtime keeps doing exactly that)."""
        tools = self.env_cls.tools
        for spec in list(tools):
            tools._specs[spec.name] = dataclasses.replace(spec, fn=self._watched(spec.fn))

    def _watched(self, fn: Any) -> Any:
        watch = self.watch

        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except BaseException as exc:
                watch.raised = exc
                raise

        return run

    # ---- requests --------------------------------------------------------------------------------------

    def load(self) -> dict[str, Any]:
        from dataclaw.envcraft.runtime import load_env_package

        self.env_cls = load_env_package(Path(self.cfg["package"])).env_cls
        self._wrap_tools()
        return {"name": self.env_cls.name}

    def env(self, req: dict[str, Any]) -> Any:
        key = str(req["inst"])
        env = self.envs.get(key)
        if env is None:
            if not key.isalnum():
                raise ValueError(f"bad instance key {key!r}")
            # an instance asked for in memory (the soundness suite's throwaway runs) writes no files
            env = self.envs[key] = self.env_cls(self.state_dir / key, memory=bool(req.get("mem")))
        return env

    def describe(self, req: dict[str, Any]) -> dict[str, Any]:
        from dataclaw.envcraft.runtime.loader import EnvPackage

        cls = self.env_cls
        pkg = EnvPackage(
            cls.name, cls.__module__.rsplit(".", 1)[0], Path(self.cfg["package"]), Path("."), cls
        )
        return {
            "name": cls.name,
            "class_name": cls.__name__,
            "doc": cls.__doc__ or "",
            "module": pkg.module,
            "env_var_prefix": cls.env_var_prefix,
            "prefix": cls.prefix(),
            "time_step_s": cls.time_step_s,
            "default_state": cls.DEFAULT_STATE,
            "tools": [_spec_dict(s) for s in cls.tools],
            "scenarios": [dataclasses.asdict(s) for s in cls.scenarios().values()],
            "evaluator": [{"name": d.name, "weight": d.weight} for d in cls.evaluator.dimensions],
            "layout_problems": pkg.layout_problems(),
            "enforced_rules": getattr(cls, "enforced_rules", None),
        }

    def create(self, req: dict[str, Any]) -> str:
        env = self.env(req)
        return str(env.create_session(req["scenario_id"], req.get("sid"), long_context=bool(req.get("lc"))))

    def load_scenario(self, req: dict[str, Any]) -> str | None:
        env = self.env(req)
        env.session_id = req.get("sid")
        env._load_scenario(req["scenario"], bool(req.get("lc")))
        return env.session_id

    def restore(self, req: dict[str, Any]) -> None:
        env = self.env(req)
        env.session_id = req["sid"]
        env.restore_env_state(req["state"])

    def call(self, req: dict[str, Any]) -> dict[str, Any]:
        return {"envelope": self.env(req).call(req["sid"], req["tool"], **dict(req.get("params") or {}))}

    def run(self, req: dict[str, Any]) -> dict[str, Any]:
        """Restore, calls, state: one request for a run of calls. A call that trips a containment stops
        the run (an error the host answers by making the run again a request per call, where each
        incident is reported with its own call)."""
        env, sid = self.env(req), req["sid"]
        env.session_id = sid
        env.restore_env_state(req["state"])
        envelopes = []
        for c in req["calls"]:
            self.watch.clear()
            signal.setitimer(signal.ITIMER_REAL, self.timeout_s)  # each call its own limit, as alone
            envelopes.append(env.call(sid, c["tool"], **dict(c.get("params") or {})))
            if self.classify(self.watch.raised) is not None:
                self.watch.clear()  # reported by the call made alone, not twice
                raise RunStopped(f"{c['tool']} tripped a containment")
        return {"envelopes": envelopes, "state": env.get_session_state(sid)}

    def drop(self, req: dict[str, Any]) -> None:
        key = str(req["inst"])
        env = self.envs.pop(key, None)
        store = getattr(env, "store", None)
        if store is not None:  # its cached sessions pin open journals: past the fd limit every load fails
            store.close()
        if key.isalnum():
            shutil.rmtree(self.state_dir / key, ignore_errors=True)

    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        """One request → its reply; never raises but for CallTimeout escaping nothing else."""
        rid = req.get("id")
        self.watch.clear()
        exc: BaseException | None = None
        value: Any = None
        signal.setitimer(signal.ITIMER_REAL, self.timeout_s)
        try:
            value = self.handlers[Op(req["op"])](req)
        except (CallTimeout, ProcessRefused, SystemExit) as e:  # contained, classified below
            exc = e
        except Exception as e:  # noqa: BLE001 - reported to the host, the worker goes on
            exc = e
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        incident = self.classify(exc if exc is not None else self.watch.raised)
        if exc is None:
            reply: dict[str, Any] = {"id": rid, "ok": True, "value": value}
            if incident is not None:
                reply["incident"] = incident
            return reply
        return {"id": rid, "ok": False, "error": _error(exc, incident)}


def _on_alarm(signum: int, frame: Any) -> None:
    raise CallTimeout()


def _error(exc: BaseException, incident: dict[str, Any] | None) -> dict[str, Any]:
    from dataclaw.envcraft.runtime.errors import EnvError

    if isinstance(exc, EnvError):
        return {"kind": "env", **exc.to_dict()}
    if incident is not None:
        return {"kind": "incident", **incident}
    text = " ".join(str(exc).split())[:300]
    return {"kind": "error", "type": type(exc).__name__, "message": text or type(exc).__name__}


def _spec_dict(spec: Any) -> dict[str, Any]:
    return {
        "name": spec.name,
        "description": spec.description,
        "params": [dataclasses.asdict(p) for p in spec.params],
        "side_effect": spec.side_effect,
        "state_fields_affected": list(spec.state_fields_affected),
        "returns_description": spec.returns_description,
        "success_keys": list(spec.success_keys),
    }


def serve(cfg: dict[str, Any]) -> dict[str, Any]:
    """The job's entry point: listen, accept the host, load, serve until the host hangs up."""
    path = cfg["socket"]
    if os.path.exists(path):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    listener.settimeout(ACCEPT_TIMEOUT_S)
    try:
        conn, _ = listener.accept()
    except TimeoutError:
        return {"served": 0, "why": "the host never connected"}
    finally:
        listener.close()
        os.unlink(path)
    conn.settimeout(None)
    server = Server(cfg)
    server.install()
    reader = FrameReader(conn)
    t0 = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, float(cfg["load_timeout_s"]))
    exc: BaseException | None = None
    try:
        server.load()
    except BaseException as e:  # noqa: BLE001 - the package failed to import: classified, reported
        exc = e
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if exc is not None:
        incident = server.classify(exc)
        if isinstance(exc, CallTimeout):
            incident = _incident(
                "timeout", "wall", f"loading the package timed out after {cfg['load_timeout_s']:g} s"
            )
        send_frame(conn, {"event": "failed", "error": _error(exc, incident)})
        return {"served": 0, "why": "load failed"}
    send_frame(conn, {"event": "ready", "load_s": time.monotonic() - t0, "pid": os.getpid()})
    served = 0
    while True:
        try:
            req = reader.read()
        except (FrameError, OSError):
            return {"served": served}
        try:
            reply = server.handle(req)
        except CallTimeout:  # the alarm fired between the handler and disarming it
            reply = {
                "id": req.get("id"),
                "ok": False,
                "error": {"kind": "incident", **server.classify(CallTimeout())},
            }
        except Exception as e:  # noqa: BLE001 - a malformed request: reported, the worker goes on
            reply = {"id": req.get("id"), "ok": False, "error": _error(e, None)}
        try:
            send_frame(conn, reply)
        except (TypeError, ValueError) as e:  # a value that is not JSON (a tool returned an object)
            send_frame(conn, {"id": req.get("id"), "ok": False, "error": _error(e, None)})
        except OSError:
            return {"served": served}
        served += 1
