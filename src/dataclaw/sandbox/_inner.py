"""Code that runs *inside* the sandbox: the one-shot launcher, the warm worker loop and the classifiers.

Standard library only and no import-time side effects: the host compiles this file and runs it with
``python -I -B -u`` inside bubblewrap, and also imports it to share the classification rules. The launcher
catches the program's uncaught exception and reports a structured record (type, errno, path) on a private
status pipe, so outcomes are classified from errno values and exception types, not from text. Startup cost
matters (one launch per run), so only modules the interpreter has already loaded are imported at the top.
"""

from __future__ import annotations

import builtins
import errno
import os
import sys

TYPE_CHECKING = False  # importing typing would cost a few ms of every sandboxed start
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

OK, ERROR, TIMEOUT, RESOURCE, VIOLATION = "ok", "error", "timeout", "resource_limit", "violation"

MESSAGES: dict[str, str] = {
    "network": "blocked: the sandbox has no network access",
    "read_only": "blocked: that location is read-only; write inside the workspace",
    "permission": "blocked: permission denied outside the workspace",
    "outside": "blocked: that path is outside the sandbox",
    "operation": "blocked: operation not permitted in the sandbox",
    "memory": "memory limit reached",
    "cpu": "CPU time limit reached",
    "file_size": "file size limit reached",
    "disk": "disk space limit reached",
    "open_files": "open-file limit reached",
    "processes": "process limit reached",
}

# errno -> (status, kind). EACCES/ENOENT depend on where the path is, see classify_exception.
_ERRNO_CLASS: dict[int, tuple[str, str]] = {
    errno.ENETUNREACH: (VIOLATION, "network"),
    errno.EHOSTUNREACH: (VIOLATION, "network"),
    errno.ENETDOWN: (VIOLATION, "network"),
    errno.EADDRNOTAVAIL: (VIOLATION, "network"),
    errno.EAFNOSUPPORT: (VIOLATION, "network"),
    errno.EROFS: (VIOLATION, "read_only"),
    errno.EPERM: (VIOLATION, "operation"),
    errno.EFBIG: (RESOURCE, "file_size"),
    errno.ENOSPC: (RESOURCE, "disk"),
    errno.EDQUOT: (RESOURCE, "disk"),
    errno.EMFILE: (RESOURCE, "open_files"),
    errno.ENFILE: (RESOURCE, "open_files"),
    errno.ENOMEM: (RESOURCE, "memory"),
    errno.EAGAIN: (RESOURCE, "processes"),
}
# Linux signal numbers (the signal module is not loaded at startup): SIGXCPU, SIGXFSZ, SIGKILL.
# RLIMIT_CPU's hard limit and the kernel's OOM killer both end a process with SIGKILL.
_SIGNAL_CLASS: dict[int, tuple[str, str]] = {
    24: (RESOURCE, "cpu"),
    25: (RESOURCE, "file_size"),
    9: (RESOURCE, "memory"),
}


def _inside(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _classify_one(
    exc: BaseException, roots: list[str], writable: list[str], hidden: list[str]
) -> tuple[str, str] | None:
    if isinstance(exc, MemoryError):
        return RESOURCE, "memory"
    sock = sys.modules.get("socket")  # a gaierror needs the socket module, so never import it here
    if sock is not None and isinstance(exc, sock.gaierror):
        return VIOLATION, "network"
    if not isinstance(exc, OSError) or exc.errno is None:
        return None
    name = exc.filename if isinstance(exc.filename, str) else None
    path = os.path.normpath(os.path.join(os.getcwd(), name)) if name else None
    if path and _inside(path, hidden) and not _inside(path, [r for r in roots if _inside(r, hidden)]):
        # a host path next to a granted mount (the checkout around a venv): hidden, whatever the errno
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.EPERM, errno.EROFS):
            return VIOLATION, "outside"
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return (VIOLATION, "outside") if path and not _inside(path, roots) else None
    if exc.errno == errno.EACCES:
        return None if path and _inside(path, writable) else (VIOLATION, "permission")
    if exc.errno == errno.EPERM and path and _inside(path, writable):
        return None
    return _ERRNO_CLASS.get(exc.errno)


def classify_exception(
    exc: BaseException,
    roots: list[str],
    writable: list[str],
    hidden: Sequence[str] = (),
) -> tuple[str, str | None]:
    """(status, kind) of an uncaught exception, following ``__cause__``/``__context__``/``.reason``."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        cur = todo.pop(0)
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        found = _classify_one(cur, roots, writable, list(hidden))
        if found:
            return found
        for nxt in (cur.__cause__, cur.__context__, getattr(cur, "reason", None)):
            if isinstance(nxt, BaseException):
                todo.append(nxt)
    return ERROR, None


def classify_exit(
    exit_code: int | None,
    record: dict[str, Any] | None,
    timed_out: bool,
    wall_s: float,
    *,
    blocked: bool = False,
) -> dict:
    """Status, kind and agent-safe message from how a process ended plus the launcher's record.

    ``blocked``: the program tried to open an IP socket (refused); a failure after that is a ``network``
    violation whatever the program made of the refusal (caught it, printed it, exited 1)."""
    if timed_out:
        return {"status": TIMEOUT, "resource": "wall", "message": f"timed out after {wall_s:g} s"}
    verdict = _classify_end(exit_code, record)
    if blocked and verdict["status"] == ERROR:
        return {"status": VIOLATION, "resource": "network", "message": MESSAGES["network"]}
    return verdict


def _classify_end(exit_code: int | None, record: dict[str, Any] | None) -> dict:
    if record and record.get("event") == "exception":
        # the program can write to the status pipe too: accept only known values (it can at most
        # misreport its own failure) and never echo free text into the agent-facing message
        status, kind = record.get("status"), record.get("resource")
        if status not in (RESOURCE, VIOLATION) or kind not in MESSAGES:
            status, kind = ERROR, None
        name = "".join(c for c in str(record.get("type", "")) if c.isalnum() or c == "_")[:60]
        msg = MESSAGES[kind] if kind else f"the program raised {name or 'an exception'}"
        module = missing_module(record)
        if module and not kind:
            msg += f" (module {module!r} is not available)"
        return {"status": status, "resource": kind, "message": msg}
    deliberate = bool(record and record.get("event") == "exit")
    if exit_code == 0:
        return {"status": OK, "resource": None, "message": "ok"}
    if exit_code is not None and exit_code > 128 and not deliberate:
        sig = exit_code - 128
        if sig in _SIGNAL_CLASS:
            status, kind = _SIGNAL_CLASS[sig]
            return {"status": status, "resource": kind, "message": MESSAGES[kind]}
        import signal

        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return {"status": ERROR, "resource": None, "message": f"the program was killed by {name}"}
    return {"status": ERROR, "resource": None, "message": f"the program exited with status {exit_code}"}


def network_attempted(records: list[dict[str, Any]]) -> bool:
    """Whether a process of the run reported a refused IP socket (see :func:`_net_hook`)."""
    return any(r.get("event") == "blocked" and r.get("resource") == "network" for r in records)


def missing_module(record: dict[str, Any] | None) -> str | None:
    """The module an uncaught ImportError names, sanitised (a program can write records itself)."""
    name = str((record or {}).get("module") or "")[:100]
    ok = name and all(c.isalnum() or c in "._" for c in name) and not name.startswith(".")
    return name if ok else None


def _import_failure(exc: BaseException) -> str | None:
    """The module name of the first ImportError in ``exc``'s chain (what a stdlib-only run lacks)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, ImportError) and cur.name:
            return cur.name
        cur = cur.__cause__ or cur.__context__
    return None


# The reporter of the job this process runs, for the audit hook (set by the launcher, inherited by forks).
_CURRENT: dict[str, Any] = {}


def _net_hook(event: str, args: tuple) -> None:
    """Audit hook: report the first IP socket a process opens (the seccomp filter refuses it), so a failure
    after a caught refusal still reads as a network violation."""
    if event == "socket.__new__" and len(args) > 1 and args[1] in (2, 10):
        report = _CURRENT.get("report")
        if report is not None and _CURRENT.get("pid") != os.getpid():
            _CURRENT["pid"] = os.getpid()
            report.send(event="blocked", resource="network")


def _install_net_hook(cfg: dict[str, Any], report: _Reporter) -> None:
    _CURRENT["report"] = report
    _CURRENT.pop("pid", None)
    if cfg.get("net_hook") and not _CURRENT.get("hooked"):
        sys.addaudithook(_net_hook)
        _CURRENT["hooked"] = True


class _Reporter:
    """Writes one record per event to the private status pipe (not inherited by the program's children).

    A record is one line of tab-separated ``key=value`` fields; values never contain tabs or newlines.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        os.set_inheritable(fd, False)

    def send(self, **event: Any) -> None:
        event["pid"] = os.getpid()
        fields = (
            f"{k}={str(v).replace(chr(9), ' ').replace(chr(10), ' ')}"
            for k, v in event.items()
            if v is not None
        )
        line = "\t".join(fields)
        try:
            os.write(self.fd, (line + "\n").encode(errors="replace"))
        except OSError:
            pass


def parse_records(data: bytes) -> list[dict[str, Any]]:
    """Decode the status pipe's records; malformed lines (a program may write there too) are skipped."""
    out = []
    for line in data.decode(errors="replace").splitlines():
        rec: dict[str, Any] = dict(f.split("=", 1) for f in line.split("\t") if "=" in f)
        try:
            rec["pid"] = int(rec["pid"])
        except (KeyError, ValueError):
            continue
        out.append(rec)
    return out


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    print(exc.code, file=sys.stderr)
    return 1


def _execute(job: dict[str, Any], report: _Reporter) -> int:
    """Run one program (``source`` text or a ``call`` of ``module:function``); return its exit code."""
    roots, writable = job["roots"], job["writable"]
    try:
        if job.get("call"):
            import importlib

            mod_name, _, fn_name = job["call"].partition(":")
            fn = getattr(importlib.import_module(mod_name), fn_name)
            value = fn(*job.get("args", []), **job.get("kwargs", {}))
            import json

            report.send(event="result", value=json.dumps(value))
        else:
            code = compile(job["source"], "<program>", "exec")
            sys.argv = ["<program>", *job.get("args", [])]
            exec(code, {"__name__": "__main__", "__builtins__": builtins})
    except SystemExit as exc:
        code = _exit_code(exc)
        report.send(event="exit", exit_code=code)
        return code
    except BaseException as exc:  # noqa: BLE001 - whatever the program raises is classified, not lost
        import traceback

        # the program's frames only: the launcher's own frame is not the program's business
        traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None)
        status, kind = classify_exception(exc, roots, writable, job.get("hidden", []))
        module = _import_failure(exc)
        report.send(event="exception", status=status, resource=kind, type=type(exc).__name__, module=module)
        return 1
    report.send(event="exit", exit_code=0)
    return 0


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed stream at exit must not mask the program's outcome
            pass


def _site_builtins() -> None:
    """Without ``site`` (stdlib-only runs start with ``-S``) scripts would lack the ``exit()``/``quit()``
    builtins that site adds and that many scripts call: add them (and ``help``) the way site does."""
    if "site" in sys.modules or hasattr(builtins, "exit"):
        return
    import _sitebuiltins

    eof = "Ctrl-D (i.e. EOF)"
    builtins.exit = _sitebuiltins.Quitter("exit", eof)  # type: ignore[attr-defined]
    builtins.quit = _sitebuiltins.Quitter("quit", eof)  # type: ignore[attr-defined]
    builtins.help = _sitebuiltins._Helper()  # type: ignore[attr-defined]


def run_oneshot(cfg: dict[str, Any]) -> None:
    """Launcher entry: run the program file once under the limits bubblewrap and prlimit set up."""
    report = _Reporter(cfg["status_fd"])
    report.send(event="started")
    _install_net_hook(cfg, report)
    _site_builtins()
    sys.path[:0] = [os.getcwd(), *cfg.get("sys_path", [])]
    with open(cfg["main"], encoding="utf-8") as fh:
        job = {**cfg, "source": fh.read()}
    code = _execute(job, report)
    _flush()
    sys.exit(code)


def pick_record(records: list[dict[str, Any]], main_pid: int | None) -> dict[str, Any] | None:
    """The main process's final record; a forked child's record only when the main process left none."""
    finals = [r for r in records if r.get("event") in ("exit", "exception")]
    main = [r for r in finals if r.get("pid") == main_pid]
    if main:
        return main[-1]
    return finals[0] if finals else None


# ---- warm worker -------------------------------------------------------------------------------------


def _read_frame(fd: int) -> dict[str, Any] | None:
    import json
    import struct

    head = _read_exact(fd, 4)
    if head is None:
        return None
    body = _read_exact(fd, struct.unpack(">I", head)[0])
    return None if body is None else json.loads(body)


def _read_exact(fd: int, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def write_frame(fd: int, obj: dict[str, Any]) -> None:
    """Length-prefixed JSON (4-byte big-endian length), the worker protocol in both directions."""
    import json
    import struct

    data = json.dumps(obj).encode()
    view = memoryview(struct.pack(">I", len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _set_job_limits(lim: dict[str, Any]) -> None:
    """Lower this job's rlimits; never above what the worker itself got (raising would fail)."""
    import resource

    mb = 1 << 20
    cpu = max(1, int(lim["cpu_s"] + 0.999))
    wanted = {
        resource.RLIMIT_CPU: (cpu, cpu + 1),
        resource.RLIMIT_AS: (lim["memory_mb"] * mb,) * 2,
        resource.RLIMIT_FSIZE: (lim["file_size_mb"] * mb,) * 2,
        resource.RLIMIT_NOFILE: (lim["open_files"],) * 2,
    }
    for which, (soft, hard) in wanted.items():
        cap = resource.getrlimit(which)[1]
        if cap != resource.RLIM_INFINITY:
            soft, hard = min(soft, cap), min(hard, cap)
        resource.setrlimit(which, (soft, hard))


def _job_child(job: dict[str, Any], out_w: int, err_w: int, st_w: int) -> None:
    """In the forked child: redirect stdio, lower limits, run, and never return."""
    code = 1
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.chdir(job["cwd"])
        sys.path[0] = job["cwd"]
        os.environ.update(job.get("env", {}))
        _set_job_limits(job["limits"])
        report = _Reporter(st_w)
        _install_net_hook(job, report)
        code = _execute(job, report)
        _flush()
    finally:
        os._exit(code)


def _kill_job(pidns: bool, pid: int) -> None:
    """Kill the job and everything it started: the whole PID namespace but us, or its process group."""
    import signal

    if pidns:
        _kill_strays({1, os.getpid()})
    else:  # no PID namespace of our own (unsafe mode): only the job's session can be reached safely
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass


def _kill_strays(keep: set[int]) -> None:
    """Kill every live process in this PID namespace except ``keep`` (no job may outlive its call)."""
    import signal
    import time

    for _ in range(50):
        found = False
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in keep:
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as fh:
                    state = fh.read().rsplit(b")", 1)[1].split()[0]
                if state in (b"Z", b"X"):
                    continue  # already dead, waiting to be reaped
                os.kill(int(name), signal.SIGKILL)
                found = True
            except (OSError, IndexError):
                continue
        if not found:
            return
        time.sleep(0.002)


def _collect(pidns: bool, pid: int, fds: dict[str, int]) -> dict[str, Any]:
    """Read a child's output and status until it exits; its ``begin`` record starts the job's clock."""
    import selectors
    import time

    bufs = {name: bytearray() for name in fds}
    cap, deadline, began = 1 << 24, float("inf"), 0.0
    truncated, timed_out, status, ended = False, False, None, 0.0
    sel = selectors.DefaultSelector()
    for name, fd in fds.items():
        sel.register(fd, selectors.EVENT_READ, name)
    pidfd = os.pidfd_open(pid)
    sel.register(pidfd, selectors.EVENT_READ, "exit")
    while status is None or len(sel.get_map()) > 0:
        now = time.monotonic()
        if status is None and not timed_out and now >= deadline:
            timed_out, ended = True, now
            _kill_job(pidns, pid)
        if ended and now > ended + 2:
            break
        wait = 0.5 if ended else min(deadline - now, 3600.0)
        for key, _ in sel.select(timeout=max(wait, 0.001)):
            if key.data == "exit":
                sel.unregister(pidfd)
                _kill_job(pidns, pid)  # background children would hold the pipes; pid is a zombie, not reused
                status = os.waitpid(pid, 0)[1]
                ended = ended or time.monotonic()
                continue
            chunk = os.read(key.fd, 65536)
            if not chunk:
                sel.unregister(key.fd)
                continue
            buf = bufs[key.data]
            room = (1 << 24 if key.data == "status" else cap) - len(buf)
            truncated |= len(chunk) > room and key.data != "status"
            buf += chunk[: max(room, 0)]
            if not began and key.data == "status" and b"\n" in buf:
                begin = parse_records(bytes(buf).split(b"\n", 1)[0])
                if begin and begin[0].get("event") == "begin":
                    began = time.monotonic()
                    deadline = began + float(begin[0]["wall_s"])
                    cap = int(begin[0]["output_bytes"])
    if status is None:
        status = os.waitpid(pid, 0)[1]
    sel.close()
    os.close(pidfd)
    code = os.waitstatus_to_exitcode(status)
    code = 128 - code if code < 0 else code
    return {"bufs": bufs, "truncated": truncated, "exit_code": code, "to": timed_out, "began": began}


def fork_child(cfg: dict[str, Any], chan_in: int, close_fds: list[int]) -> tuple[int, dict[str, int]]:
    """Fork a fresh child that reads its own job frame from the host channel and runs it.

    The worker forks the next child right after answering, so neither the fork nor a hop through the
    worker is on a job's path in; the child announces the job (``begin``) so the worker can time it.
    """
    pipes = {name: os.pipe() for name in ("stdout", "stderr", "status")}
    pid = os.fork()
    if pid == 0:
        try:
            for r, _ in pipes.values():
                os.close(r)
            job = _read_frame(chan_in)
            for fd in close_fds:  # incl. the protocol channel: not the job's business
                os.close(fd)
            if job is not None:
                job = {**cfg, **job}
                lim = job["limits"]
                _Reporter(pipes["status"][1]).send(
                    event="begin", wall_s=lim["wall_s"], output_bytes=lim["output_bytes"]
                )
                _job_child(job, pipes["stdout"][1], pipes["stderr"][1], pipes["status"][1])
        finally:
            os._exit(0)
    for _, w in pipes.values():
        os.close(w)
    return pid, {name: r for name, (r, _) in pipes.items()}


def serve_job(pidns: bool, child: tuple[int, dict[str, int]]) -> dict[str, Any] | None:
    """Supervise one forked child through its job; None when it found no job (the host hung up)."""
    import json
    import time

    pid, reads = child
    got = _collect(pidns, pid, reads)
    for r in reads.values():
        os.close(r)
    records = parse_records(bytes(got["bufs"]["status"]))
    begin = next((r for r in records if r.get("event") == "begin" and r["pid"] == pid), None)
    if begin is None:
        return None
    record = pick_record(records, pid)
    wall_s = float(begin["wall_s"])
    verdict = classify_exit(got["exit_code"], record, got["to"], wall_s, blocked=network_attempted(records))
    value = next((r["value"] for r in records if r.get("event") == "result" and r["pid"] == pid), None)
    return {
        **verdict,
        "exit_code": None if got["to"] else got["exit_code"],
        "stdout": bytes(got["bufs"]["stdout"]).decode(errors="replace"),
        "stderr": bytes(got["bufs"]["stderr"]).decode(errors="replace"),
        "truncated": got["truncated"],
        "duration_s": time.monotonic() - got["began"],
        "result": None if value is None else json.loads(value),
        "module": missing_module(record),
    }


def _make_undumpable() -> None:
    """PR_SET_DUMPABLE=0: jobs (same uid, forked from us) may not ptrace us or open our /proc/<pid>/mem.

    Without it a job could rewrite the worker's memory and so tamper with every later job.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def _wipe_private_dirs() -> None:
    """Empty the sandbox's private /tmp and /dev/shm after a job, so no job sees another's scratch files."""
    for top in ("/tmp", "/dev/shm"):
        _empty_dir(top)


def _empty_dir(path: str) -> None:
    """Remove everything below ``path`` without following symlinks (what we cannot remove stays; shutil
    is not imported for this: it pulls in the compression modules, a cost on every worker start)."""
    try:
        entries = list(os.scandir(path))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                _empty_dir(entry.path)
                os.rmdir(entry.path)
            else:
                os.unlink(entry.path)
        except OSError:
            continue


def _in_bubblewrap_pidns() -> bool:
    """True when PID 1 is bubblewrap's init, i.e. this PID namespace is the sandbox's and ours to sweep."""
    try:
        with open("/proc/1/cmdline", "rb") as fh:
            return os.path.basename(fh.read().split(b"\0", 1)[0]) == b"bwrap"
    except OSError:
        return False


def run_worker(cfg: dict[str, Any]) -> None:
    """Worker entry: preload modules, then serve length-prefixed JSON jobs on stdin/stdout until EOF."""
    _make_undumpable()  # first: nothing of the jobs' runs before this
    chan_in, chan_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    _site_builtins()
    sys.path[:0] = [os.getcwd(), *cfg.get("sys_path", [])]
    import importlib

    # what every job needs, imported once here so forked jobs start with it
    for mod in ("json", "resource", "selectors", "signal", "struct", "time"):  # (traceback: on a failure)
        importlib.import_module(mod)
    failed = []
    for mod in cfg.get("preload", []):
        try:
            importlib.import_module(mod)
        except Exception as exc:  # noqa: BLE001 - reported to the host, which decides what to do
            failed.append(f"{mod}: {type(exc).__name__}")
    if cfg.get("pidns") and not _in_bubblewrap_pidns():
        cfg = {**cfg, "pidns": False}  # never sweep a PID namespace that is not the sandbox's own
    close = [chan_in, chan_out, null]
    child = fork_child(cfg, chan_in, close)
    write_frame(chan_out, {"event": "ready", "pid": os.getpid(), "preload_failed": failed})
    sandboxed = bool(cfg.get("pidns"))
    while True:
        reply = serve_job(sandboxed, child)
        if reply is None:
            return
        if sandboxed:
            _wipe_private_dirs()
        write_frame(chan_out, reply)
        child = fork_child(cfg, chan_in, close)


def main(argv: list[str]) -> None:
    import marshal

    cfg = marshal.loads(bytes.fromhex(argv[1]))
    if cfg["mode"] == "worker":
        run_worker(cfg)
    else:
        run_oneshot(cfg)


if __name__ == "__main__":
    main(sys.argv)
