"""Per-session storage: snapshot + append-only journal, ``fcntl.flock`` lock, in-process cache.

Layout of ``<state_root>/<session_id>/``:

- ``session.json``: snapshot ``{"seq": n, "state": {...}}``, replaced atomically (temp + ``os.replace``).
- ``journal.jsonl``: one line per applied action after the snapshot, ``<crc32 hex> <json>\\n``.
- ``.lock``: the session lock (``flock``; the kernel releases it when the holder dies).

A step appends one short line instead of rewriting the whole state, so its cost does not grow with the
state. A line is complete only with its newline and a matching checksum; a torn or corrupt tail (a writer
killed mid-append) is ignored and cut off by the next writer, so the state always loads as *snapshot +
a prefix of the actions*. Every ``compact_every`` entries the journal is folded into a new snapshot.

Each process caches the parsed state per session keyed by file identity: the cache holds the snapshot and
journal open, so their inodes cannot be reused, and a step only checks two ``stat`` calls. When another
process appended, only its new journal lines are read and replayed (through the ``replay`` callback).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import threading
import time
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from dataclaw.envcraft.runtime.errors import EnvError, ErrorCategory, echo, infrastructure_error
from dataclaw.envcraft.runtime.state import jsoncopy

SNAPSHOT = "session.json"
JOURNAL = "journal.jsonl"
LOCK = ".lock"
_SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")

Replay = Callable[[dict[str, Any], dict[str, Any]], None]


def _rmtree(path: Path, ignore_errors: bool = False) -> None:
    import shutil  # rarely needed (create failures, deletes): imported lazily for CLI start-up

    shutil.rmtree(path, ignore_errors=ignore_errors)


def session_not_found(session_id: str) -> EnvError:
    return EnvError(
        ErrorCategory.SESSION_NOT_FOUND,
        f"Session {echo(session_id)} was not found: it may have expired or been reset. "
        "The trainer must prepare a new rollout.",
    )


def _write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is out (a write may be partial)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def encode_entry(entry: dict[str, Any]) -> bytes:
    payload = orjson.dumps(entry)
    return b"%08x " % zlib.crc32(payload) + payload + b"\n"


def decode_entry(line: bytes) -> dict[str, Any] | None:
    """The entry of one journal line, or None when it is corrupt."""
    if len(line) < 10 or line[8:9] != b" ":
        return None
    payload = line[9:]
    try:
        if int(line[:8], 16) != zlib.crc32(payload):
            return None
        return orjson.loads(payload)
    except ValueError:
        return None


@dataclass
class _Cached:
    snap_fd: int
    snap_ino: int
    journal_fd: int
    journal_ino: int
    offset: int  # bytes of the journal consumed (complete lines only)
    seq: int  # sequence number of the last applied entry (or of the snapshot)
    entries: int  # journal lines since the snapshot
    torn: bool  # a partial line follows ``offset``
    state: dict[str, Any]
    busy: bool = False
    snap_size: int = 0

    def close(self) -> None:
        for fd in (self.snap_fd, self.journal_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.snap_fd = self.journal_fd = -1


def _pin(cached: _Cached, directory: Path) -> None:
    """Open the session's snapshot and journal into ``cached`` (holding them open pins their inodes)."""
    cached.snap_fd = os.open(directory / SNAPSHOT, os.O_RDONLY)
    try:
        cached.journal_fd = os.open(directory / JOURNAL, os.O_RDWR | os.O_APPEND)
    except BaseException:
        os.close(cached.snap_fd)
        cached.snap_fd = -1
        raise
    snap_stat = os.fstat(cached.snap_fd)
    cached.snap_ino, cached.snap_size = snap_stat.st_ino, snap_stat.st_size
    cached.journal_ino = os.fstat(cached.journal_fd).st_ino
    cached.offset, cached.entries, cached.torn = 0, 0, False


class Transaction:
    """The locked session: read/mutate ``state``, then ``commit`` one journal entry (or ``replace``)."""

    def __init__(self, store: SessionStore, session_id: str, directory: Path, cached: _Cached) -> None:
        self._store, self.session_id, self._dir, self._c = store, session_id, directory, cached

    @property
    def state(self) -> dict[str, Any]:
        return self._c.state

    def commit(self, entry: dict[str, Any]) -> int:
        """Append ``entry`` (the caller already applied it to ``state``); return its sequence number."""
        return self._store._append(self._dir, self._c, entry)

    def replace(self, state: dict[str, Any]) -> None:
        """Make ``state`` the whole session state (reset/restore): new snapshot, empty journal."""
        self._c.state = state
        self._store.compact_locked(self._dir, self._c)

    def rollback(self) -> None:
        """Throw away in-memory changes since the lock was taken (a tool failed half-way): rebuild the
        state from the files, still under the lock. Costs a cold load; only failed writes pay it."""
        self._c = self._store._reload(self.session_id, self._dir)


class SessionStore:
    """File-backed session states under ``root``, safe across threads and processes."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        replay: Replay,
        lock_timeout_s: float = 5.0,
        compact_every: int = 256,
        durable: bool = False,
        cache_size: int = 32,
        cache_bytes: int = 256 * 2**20,
    ) -> None:
        self.root = Path(root)
        self.replay = replay
        self.lock_timeout_s = lock_timeout_s
        self.compact_every = max(1, compact_every)
        self.durable = durable
        self.cache_size = cache_size
        self.cache_bytes = cache_bytes  # bound on the summed snapshot sizes of cached sessions
        self._cache: OrderedDict[str, _Cached] = OrderedDict()
        self._mutex = threading.Lock()

    # ---- paths and lifecycle ------------------------------------------------------------------------

    def session_dir(self, session_id: str) -> Path:
        if not isinstance(session_id, str) or not _SESSION_ID_RE.match(session_id):
            raise EnvError(
                ErrorCategory.INVALID_ARGUMENT,
                f"Session id {echo(session_id)} is not valid: use letters, digits, '_', '-', '.' (max 128).",
            )
        return self.root / session_id

    def exists(self, session_id: str) -> bool:
        return (self.session_dir(session_id) / SNAPSHOT).is_file()

    def list_sessions(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(
            p.name for p in self.root.iterdir() if not p.name.startswith(".") and (p / SNAPSHOT).is_file()
        )

    def create(self, session_id: str, state: dict[str, Any]) -> None:
        """Create a session atomically (a fully written temp directory renamed into place)."""
        final = self.session_dir(session_id)
        if final.exists():
            raise EnvError(ErrorCategory.INVALID_ARGUMENT, f"Session {echo(session_id)} already exists.")
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".creating-{session_id}-{os.urandom(4).hex()}"
        tmp.mkdir()
        try:
            self._write_snapshot(tmp, 0, state)
            self._new_journal(tmp)
            (tmp / LOCK).touch()
            os.rename(tmp, final)
        except OSError as exc:
            _rmtree(tmp, ignore_errors=True)
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                raise EnvError(
                    ErrorCategory.INVALID_ARGUMENT, f"Session {echo(session_id)} already exists."
                ) from None
            raise

    def delete(self, session_id: str) -> None:
        """Remove a session (waits for its lock, so no writer is cut off)."""
        with self._locked_dir(session_id) as directory:
            grave = self.root / f".deleted-{session_id}-{os.urandom(4).hex()}"
            os.rename(directory, grave)
            self._evict(session_id)
        _rmtree(grave, ignore_errors=True)

    # ---- locking and loading ------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked_dir(self, session_id: str) -> Iterator[Path]:
        directory = self.session_dir(session_id)
        try:
            fd = os.open(directory / LOCK, os.O_RDWR)
        except FileNotFoundError:
            raise session_not_found(session_id) from None
        try:
            deadline = time.monotonic() + self.lock_timeout_s
            delay = 0.0001
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise EnvError(
                            ErrorCategory.LOCK_TIMEOUT,
                            "The session is busy with another command. Retry in a moment.",
                        ) from None
                    time.sleep(delay)
                    delay = min(delay * 2, 0.005)
            yield directory
        finally:
            os.close(fd)  # closing the descriptor releases the flock

    @contextlib.contextmanager
    def transaction(self, session_id: str) -> Iterator[Transaction]:
        """Lock the session, load its state (from cache when nobody else wrote) and yield it."""
        with self._locked_dir(session_id) as directory:
            try:
                cached = self._load(session_id, directory)
            except EnvError:
                self._evict(session_id)
                raise
            except Exception as exc:
                self._evict(session_id)  # a replay that failed half-way leaves nothing reusable
                raise infrastructure_error(exc, context="session load", ref_seed=session_id) from exc
            cached.busy = True
            txn = Transaction(self, session_id, directory, cached)
            try:
                yield txn
            except BaseException:
                self._evict(session_id)  # the in-memory state may be half-mutated
                raise
            finally:
                txn._c.busy = False

    def read(self, session_id: str) -> dict[str, Any]:
        """A private copy of the current state (locks for the duration of the copy)."""
        with self.transaction(session_id) as txn:
            return jsoncopy(txn.state)

    def _load(self, session_id: str, directory: Path) -> _Cached:
        try:
            snap_ino = os.stat(directory / SNAPSHOT).st_ino
            j_stat = os.stat(directory / JOURNAL)
        except FileNotFoundError:
            self._evict(session_id)
            raise session_not_found(session_id) from None
        with self._mutex:
            cached = self._cache.get(session_id)
            if cached is not None:  # busy: no other thread may evict (close) it while we use it
                cached.busy = True
                self._cache.move_to_end(session_id)
        if cached is not None and cached.snap_ino == snap_ino and cached.journal_ino == j_stat.st_ino:
            if j_stat.st_size != cached.offset:
                if j_stat.st_size < cached.offset:
                    return self._reload(session_id, directory)
                self._read_tail(cached, j_stat.st_size)
            return cached
        return self._reload(session_id, directory)

    def _reload(self, session_id: str, directory: Path) -> _Cached:
        """Parse the snapshot and replay the whole journal (a cold load)."""
        self._evict(session_id)
        cached = _Cached(-1, 0, -1, 0, 0, 0, 0, False, {}, busy=True)
        try:
            _pin(cached, directory)
            with open(cached.snap_fd, "rb", closefd=False) as fh:
                doc = orjson.loads(fh.read())
            cached.seq, cached.state = int(doc["seq"]), doc["state"]
            self._read_tail(cached, os.fstat(cached.journal_fd).st_size)
        except BaseException:
            cached.close()
            raise
        self._remember(session_id, cached)
        return cached

    def _read_tail(self, cached: _Cached, size: int) -> None:
        """Replay the complete journal lines between ``cached.offset`` and ``size``."""
        buf = os.pread(cached.journal_fd, size - cached.offset, cached.offset)
        pos = 0
        while True:
            nl = buf.find(b"\n", pos)
            if nl < 0:
                break
            entry = decode_entry(buf[pos:nl])
            if entry is None:  # corrupt line: everything from here on is a torn tail
                break
            if entry["seq"] > cached.seq:
                self.replay(cached.state, entry)
                cached.seq = entry["seq"]
            cached.entries += 1
            pos = nl + 1
        cached.offset += pos
        cached.torn = cached.offset < size

    # ---- writing ------------------------------------------------------------------------------------

    def _append(self, directory: Path, cached: _Cached, entry: dict[str, Any]) -> int:
        if cached.torn:  # cut off what a killed writer left half-written, so the journal stays a prefix
            os.ftruncate(cached.journal_fd, cached.offset)
            cached.torn = False
        seq = cached.seq + 1
        line = encode_entry({**entry, "seq": seq})
        _write_all(cached.journal_fd, line)
        if self.durable:
            os.fsync(cached.journal_fd)
        cached.seq = seq
        cached.offset += len(line)
        cached.entries += 1
        if cached.entries >= self.compact_every:
            self.compact_locked(directory, cached)
        return seq

    def compact_locked(self, directory: Path, cached: _Cached) -> None:
        """Write ``cached.state`` as the new snapshot and start an empty journal (caller holds the lock).

        A crash between the two replaces leaves old journal lines whose ``seq`` the snapshot already
        covers; loading skips them."""
        self._write_snapshot(directory, cached.seq, cached.state)
        self._new_journal(directory)
        cached.close()
        _pin(cached, directory)

    def _write_snapshot(self, directory: Path, seq: int, state: dict[str, Any]) -> None:
        data = orjson.dumps({"seq": seq, "state": state})
        self._atomic_write(directory, SNAPSHOT, data)

    def _new_journal(self, directory: Path) -> None:
        self._atomic_write(directory, JOURNAL, b"")

    def _atomic_write(self, directory: Path, name: str, data: bytes) -> None:
        tmp = directory / f".{name}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, data)
            if self.durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, directory / name)
        if self.durable:
            dfd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)

    # ---- cache --------------------------------------------------------------------------------------

    def _remember(self, session_id: str, cached: _Cached) -> None:
        with self._mutex:
            self._cache[session_id] = cached
            self._cache.move_to_end(session_id)
            while len(self._cache) > self.cache_size or (
                len(self._cache) > 1 and sum(c.snap_size for c in self._cache.values()) > self.cache_bytes
            ):
                victim = next((k for k, v in self._cache.items() if not v.busy), None)
                if victim is None or victim == session_id:
                    break
                self._cache.pop(victim).close()

    def _evict(self, session_id: str) -> None:
        """Forget the cached state of ``session_id`` (the next load rebuilds it from the files)."""
        with self._mutex:
            old = self._cache.pop(session_id, None)
        if old is not None:
            old.close()

    def close(self) -> None:
        """Close every cached descriptor."""
        with self._mutex:
            items = list(self._cache.values())
            self._cache.clear()
        for cached in items:
            cached.close()


@dataclass
class _Memo:
    """One in-memory session: the live state, the last snapshot (bytes) and the entries since it."""

    snapshot: bytes
    state: dict[str, Any]
    journal: list[dict[str, Any]]
    seq: int = 0


class _MemoryTransaction(Transaction):
    def __init__(self, store: MemoryStore, session_id: str, memo: _Memo) -> None:
        self._store, self.session_id, self._c = store, session_id, memo  # type: ignore[assignment]

    def commit(self, entry: dict[str, Any]) -> int:
        memo: _Memo = self._c  # type: ignore[assignment]
        memo.seq += 1
        memo.journal.append(orjson.loads(orjson.dumps({**entry, "seq": memo.seq})))
        return memo.seq

    def replace(self, state: dict[str, Any]) -> None:
        memo: _Memo = self._c  # type: ignore[assignment]
        memo.state, memo.snapshot, memo.journal = state, orjson.dumps(state), []

    def rollback(self) -> None:
        self._store._rollback(self._c)  # type: ignore[attr-defined]


class MemoryStore:
    """Sessions held in this process only, with :class:`SessionStore`'s semantics (a failed write rolls
    back to snapshot + journal) and none of its files or locks: for throwaway sessions one thread drives,
    such as the soundness suite's many short runs of one task, where the files would be most of the cost."""

    def __init__(self, *, replay: Replay) -> None:
        self.replay = replay
        self._sessions: dict[str, _Memo] = {}
        self._mutex = threading.Lock()

    def exists(self, session_id: str) -> bool:
        return session_id in self._sessions

    def list_sessions(self) -> list[str]:
        return sorted(self._sessions)

    def create(self, session_id: str, state: dict[str, Any]) -> None:
        if not isinstance(session_id, str) or not _SESSION_ID_RE.match(session_id):
            raise EnvError(
                ErrorCategory.INVALID_ARGUMENT,
                f"Session id {echo(session_id)} is not valid: use letters, digits, '_', '-', '.' (max 128).",
            )
        if session_id in self._sessions:
            raise EnvError(ErrorCategory.INVALID_ARGUMENT, f"Session {echo(session_id)} already exists.")
        self._sessions[session_id] = _Memo(orjson.dumps(state), state, [])

    def delete(self, session_id: str) -> None:
        if self._sessions.pop(session_id, None) is None:
            raise session_not_found(session_id)

    @contextlib.contextmanager
    def transaction(self, session_id: str) -> Iterator[Transaction]:
        memo = self._sessions.get(session_id)
        if memo is None:
            raise session_not_found(session_id)
        with self._mutex:
            txn = _MemoryTransaction(self, session_id, memo)
            try:
                yield txn
            except BaseException:
                self._rollback(memo)  # the in-memory state may be half-mutated
                raise

    def _rollback(self, memo: _Memo) -> None:
        memo.state = orjson.loads(memo.snapshot)
        for entry in memo.journal:
            self.replay(memo.state, entry)

    def read(self, session_id: str) -> dict[str, Any]:
        with self.transaction(session_id) as txn:
            return jsoncopy(txn.state)

    def close(self) -> None:
        self._sessions.clear()
