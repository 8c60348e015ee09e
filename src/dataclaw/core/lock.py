"""One process per run directory: an advisory ``fcntl.flock`` on ``RUN/.lock``.

The lock is taken by the first write of a :class:`~dataclaw.core.store.RunStore` (or explicitly, for a
whole command, with :func:`run_lock`) and is re-entrant within a process, because one command opens the
same run directory through several stores (ingest, synthesis, materialisation). A second process gets a
:class:`RunLockedError` naming the holder (pid, host, command, since). The kernel drops the lock when
its holder dies, however it dies, so the *lock* is never stale; but a holder that dies without releasing
(SIGKILL, a power cut) leaves its pid in ``RUN/.lock``. That text is stale: :func:`status` tells it from a
live holder without taking anything, and the next :func:`acquire` reports it (a warning naming the dead
pid) before writing its own. A release empties the file.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from dataclaw.core.errors import ConfigError

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"
SCRATCH = "_tmp"
"""A run's folder for temporary files (``RUN/_tmp``): emptied when the lock is taken (whatever is there
belongs to a run that was killed) and removed when it is released."""

_held: dict[Path, list[int]] = {}  # resolved run dir -> [fd, depth]
_guard = threading.Lock()


class RunLockedError(ConfigError):
    """Another process holds the run directory."""


def _holder(fd: int) -> dict[str, object]:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return json.loads(os.read(fd, 4096) or b"{}")
    except (OSError, ValueError):
        return {}


def _command() -> str:
    args = [os.path.basename(sys.argv[0] or "python"), *sys.argv[1:]]
    return " ".join(args)[:200]


def acquire(root: str | os.PathLike[str], command: str | None = None) -> None:
    """Take the lock of run directory ``root`` (re-entrant in this process), or raise RunLockedError."""
    key = Path(root).resolve()
    with _guard:
        if key in _held:
            _held[key][1] += 1
            return
        if key.exists() and not key.is_dir():
            raise ConfigError(f"run directory {root} exists and is not a directory")
        key.mkdir(parents=True, exist_ok=True)
        fd = os.open(key / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            who = _holder(fd)
            os.close(fd)
            raise RunLockedError(
                f"run directory {root} is in use by pid {who.get('pid', '?')} on {who.get('host', '?')} "
                f"({who.get('command', '?')!s}, since {who.get('since', '?')}); wait for it to finish or "
                "use another --out"
            ) from None
        stale = _holder(fd)
        if stale.get("pid") is not None:
            log.warning(stale_message(root, stale) + "; taking it over")
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": command or _command(),
            "since": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, json.dumps(info).encode())
        _held[key] = [fd, 1]
        shutil.rmtree(key / SCRATCH, ignore_errors=True)


def release(root: str | os.PathLike[str]) -> None:
    """Undo one :func:`acquire`; the last one unlocks."""
    key = Path(root).resolve()
    with _guard:
        entry = _held.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] > 0:
            return
        del _held[key]
        fd = entry[0]
        shutil.rmtree(key / SCRATCH, ignore_errors=True)
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def stale_message(root: str | os.PathLike[str], who: dict[str, object]) -> str:
    """One line about a lock file naming a holder that no longer holds the lock."""
    return (
        f"run directory {root}: stale lock file: pid {who.get('pid', '?')} on {who.get('host', '?')} "
        f"({who.get('command', '?')!s}, since {who.get('since', '?')}) ended without releasing it (killed?)"
    )


def status(root: str | os.PathLike[str]) -> dict[str, object]:
    """The lock of run directory ``root`` as a reader sees it, without changing anything: ``state`` is
    ``free`` (no holder named), ``held`` (a live holder: its pid, host, command, since) or ``stale`` (the
    file names a holder that died without releasing: its details, and ``message``)."""
    path = Path(root) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return {"state": "free"}
    try:
        who = _holder(fd)
        locked = Path(root).resolve() in _held or _flocked(os.fstat(fd), who)
    finally:
        os.close(fd)
    if locked:
        return {"state": "held", **who}
    if who.get("pid") is None:
        return {"state": "free"}
    return {"state": "stale", **who, "message": stale_message(root, who)}


def _flocked(st: os.stat_result, who: dict[str, object]) -> bool:
    """Whether the holder ``who`` named in the lock file still holds it, without trying the lock (a writer
    starting at that moment would be refused): a flock on the file in ``/proc/locks``, or, where that
    cannot tell (no /proc, or a filesystem such as overlayfs whose lock sits on another device's inode),
    the named pid still running on this host. Conservative: a doubt reads as held, never as stale."""
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        locks = [line.split() for line in Path("/proc/locks").read_text().splitlines()]
    except OSError:
        locks = []
    if any(f[1:2] == ["FLOCK"] and key in f for f in locks):
        return True
    pid = who.get("pid")
    if not isinstance(pid, int) or who.get("host") not in (None, socket.gethostname()):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, owned by someone else
        return True
    return True


def held(root: str | os.PathLike[str]) -> bool:
    """Whether this process holds the lock of ``root``."""
    with _guard:
        return Path(root).resolve() in _held


@contextmanager
def run_lock(root: str | os.PathLike[str], command: str | None = None) -> Iterator[None]:
    """Hold the lock of ``root`` for a whole command."""
    acquire(root, command)
    try:
        yield
    finally:
        release(root)
