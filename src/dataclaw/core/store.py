"""The run directory: one JSONL file per stage, ``rejects.jsonl``, ``manifest.json``.

Each line is one record keyed by a stable ``id``. Appends are flushed per record, so a crash loses at
most the line being written; a torn last line is detected when the file is opened, skipped and
*reported* (a warning naming the file and line, once per process; :meth:`RunStore.torn` lists them for
summaries), and cut off before the next append. A rerun skips ids that are already present: resume is
per record, not per batch.

**Producers.** A stage may declare what produced its records (model, intent versions, extractor or miner
config: :meth:`RunStore.set_producer`). Its records then carry ``producer`` (a hash), the manifest names
the stage's current producer under ``producers``, and a record of another producer is *superseded*: it
stays in the file, but readers (:meth:`RunStore.records`, ``len``, ``ids``, counts) see only current
records, and a record with the same id from the new producer is written next to the old one.

**One process per run directory.** The first write takes an advisory lock (:mod:`dataclaw.core.lock`);
a second process that writes gets one line naming the holder. Readers never lock and never modify files.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import platform
import sys
import threading
import uuid
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from dataclaw.core import lock
from dataclaw.core.errors import ConfigError, Reject
from dataclaw.core.ids import stable_hash

log = logging.getLogger(__name__)

REJECTS = "rejects"
MANIFEST = "manifest.json"
PROGRESS = "_progress"
SCRATCH = lock.SCRATCH


class _KeySet:
    """A set of 64-bit keys in ~8 bytes each: a sorted int64 array plus a small set of recent keys,
    merged into the array when it fills. A run holds millions of ids; a Python dict of them cost
    ~190 bytes per record, which made memory grow with the run instead of staying flat."""

    PENDING = 4096

    def __init__(self) -> None:
        self._sorted = np.empty(0, dtype=np.int64)
        self._view = memoryview(self._sorted)  # bisect on a memoryview: no numpy call per lookup
        self._pending: set[int] = set()

    def __contains__(self, key: int) -> bool:
        if key in self._pending:
            return True
        view = self._view
        i = bisect_left(view, key)
        return i < len(view) and view[i] == key

    def add(self, key: int) -> bool:
        """Add ``key``; return whether it was new."""
        if key in self:
            return False
        self.put(key)
        return True

    def put(self, key: int) -> None:
        """Add a key known to be absent."""
        self._pending.add(key)
        if len(self._pending) >= self.PENDING:
            recent = np.fromiter(self._pending, np.int64, len(self._pending))
            merged = np.concatenate([self._sorted, recent])
            merged.sort()
            self._sorted, self._view, self._pending = merged, memoryview(merged), set()

    def __len__(self) -> int:
        return len(self._sorted) + len(self._pending)


def _key(*parts: str | None) -> int:
    """64-bit key of an id (with its producer). The index lives in one process, so Python's own string
    hash (SipHash, seeded per process) serves; collisions are ~1 in 10^6 at 10^7 records."""
    return hash(parts)


def _repair_torn_tail(path: Path) -> int:
    """Cut a partial or unparsable last line left by a crash; return the bytes removed."""
    torn, keep = _torn_tail(path)
    if torn:
        with path.open("rb+") as fh:
            fh.truncate(keep)
    return torn


def _torn_tail(path: Path) -> tuple[int, int]:
    """(bytes of a partial or unparsable last line, offset where it starts); (0, size) when whole."""
    if not path.exists() or path.stat().st_size == 0:
        return 0, 0
    size = path.stat().st_size
    window = 1 << 16
    with path.open("rb") as fh:
        while True:
            start = max(0, size - window)
            fh.seek(start)
            tail = fh.read()
            nl = tail.rfind(b"\n", 0, len(tail) - 1)
            if nl != -1 or start == 0:
                break
            window *= 4
    last = tail[nl + 1 :]
    if last.endswith(b"\n"):
        try:
            json.loads(last)
            return 0, size
        except ValueError:
            pass
    return len(last), start + nl + 1


@dataclass(frozen=True)
class TornLine:
    """A last line of a JSONL file that is not a whole record (a write cut short by a crash, or one still
    in progress): readers skip it and say so with this."""

    path: str
    line: int
    bytes: int

    def message(self) -> str:
        return (
            f"{self.path}: line {self.line} is torn ({self.bytes} bytes of an unfinished write, from a crash "
            "or a writer still at work): skipped"
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_reported: set[TornLine] = set()
_reported_lock = threading.Lock()


def report_torn(torn: TornLine) -> None:
    """Log ``torn`` as a warning, once per process (a run opens its files through several stores)."""
    with _reported_lock:
        if torn in _reported:
            return
        _reported.add(torn)
    log.warning(torn.message())


def iter_jsonl(
    path: str | os.PathLike[str], on_torn: Callable[[TornLine], None] | None = report_torn
) -> Iterator[dict[str, Any]]:
    """Every record of a JSONL file read without a store. A torn *last* line is skipped and handed to
    ``on_torn`` (default: a warning); an unparsable line elsewhere is corruption: a ConfigError naming
    the file and line."""
    path = Path(path)
    if not path.exists():
        return
    torn_bytes, valid = _torn_tail(path)

    def torn(n: int) -> None:
        if on_torn is not None:
            on_torn(TornLine(str(path), n, torn_bytes))

    yield from _parse_lines(path, valid if torn_bytes else None, torn)


def _parse_lines(path: Path, limit: int | None, torn: Callable[[int], None]) -> Iterator[dict[str, Any]]:
    """The records of ``path`` up to byte ``limit`` (None: all); the line number where ``limit`` cuts is
    handed to ``torn``. Blank lines are skipped; an unparsable line is a ConfigError naming file and line."""
    pos = 0
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            if limit is not None and pos >= limit:
                torn(n)
                return
            pos += len(raw)
            if not raw.strip():
                continue
            try:
                yield json.loads(raw)
            except ValueError as exc:
                raise ConfigError(f"{path}: line {n} is not valid JSON ({exc})") from None


class StageFile:
    """Append-only JSONL file of one stage's records, with the ids already written.

    ``producer``: the stage's current producer hash (None: the stage has none and every record is
    current). Appended records are stamped with it; records of another producer are superseded.
    ``before_write``: called before the first append (the run store takes its lock there).
    """

    def __init__(
        self,
        path: Path,
        producer: str | None = None,
        before_write: Callable[[], None] | None = None,
    ) -> None:
        self.path = path
        self.producer = producer
        self._before_write = before_write
        self.torn_bytes, self._valid_bytes = _torn_tail(path)
        self.torn: TornLine | None = None
        """The torn last line found when the file was opened (reported; cut off by the first append)."""
        # the (id, producer) pairs and the ids written, as 64-bit keys; records per producer for len()
        self._pairs = _KeySet()
        self._ids = _KeySet()
        self._per_producer: dict[str | None, int] = {}
        for rec in self.read():
            self._add(rec["id"], rec.get("producer"))
        if self.torn is not None:
            report_torn(self.torn)
        self._fh = None

    def _add(self, rid: str, producer: str | None, *, new: bool = False) -> None:
        """Index a record; ``new``: its (id, producer) pair is known to be absent."""
        pair = _key(rid, producer)
        if new:
            self._pairs.put(pair)
        elif not self._pairs.add(pair):
            return
        self._ids.add(_key(rid))
        self._per_producer[producer] = self._per_producer.get(producer, 0) + 1

    def _has(self, rid: str, producer: str | None) -> bool:
        return _key(rid, producer) in self._pairs

    def is_current(self, record: dict[str, Any]) -> bool:
        """Whether ``record`` (a line of this file) is by the stage's current producer."""
        return self.producer is None or record.get("producer") == self.producer

    def __contains__(self, record_id: str) -> bool:
        if self.producer is None:
            return _key(record_id) in self._ids
        return self._has(record_id, self.producer)

    def __len__(self) -> int:
        return len(self._ids) if self.producer is None else self._per_producer.get(self.producer, 0)

    def ids(self) -> set[str]:
        """Ids of current records (read from the file: the index keeps only their hashes)."""
        return {rec["id"] for rec in self.current()}

    def read(self) -> Iterator[dict[str, Any]]:
        """Every record in file order, superseded ones included (a torn last line is skipped and kept as
        :attr:`torn`). Lines that fail to parse elsewhere are a ConfigError."""
        if not self.path.exists():
            return
        limit = self._valid_bytes if self.torn_bytes else None

        def torn(n: int) -> None:
            self.torn = TornLine(str(self.path), n, self.torn_bytes)

        yield from _parse_lines(self.path, limit, torn)

    def current(self) -> Iterator[dict[str, Any]]:
        """Current records in file order (what every reader of the run should see)."""
        return (rec for rec in self.read() if self.is_current(rec))

    def set_producer(self, producer: str | None) -> None:
        self.producer = producer

    def append(self, record: dict[str, Any]) -> bool:
        """Write ``record`` unless its id is present for this producer; return whether it was written."""
        rid = record.get("id")
        if not isinstance(rid, str) or not rid:
            raise ValueError(f"record for {self.path.name} has no string 'id': {record!r:.200}")
        if self.producer is not None and "producer" not in record:
            record = {**record, "producer": self.producer}
        producer = record.get("producer")
        if self._has(rid, producer):
            return False
        if self._fh is None:
            if self._before_write is not None:
                self._before_write()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.torn_bytes:
                _repair_torn_tail(self.path)
                self.torn_bytes = 0
            self._fh = self.path.open("a", encoding="utf-8")
        self._fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._fh.flush()
        self._add(rid, producer, new=True)
        return True

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


MAX_COMMANDS = 50


def _note_command(man: dict[str, Any]) -> None:
    """Add this process's command line to the manifest's ``commands`` (once per process): a run that
    several commands write (tasks sample, synth, rollout into one folder) says which did, in order."""
    line, pid = lock._command(), os.getpid()
    hist = [c for c in man.get("commands") or [] if isinstance(c, dict)]
    if hist and hist[-1].get("command") == line and hist[-1].get("pid") == pid:
        return
    at = datetime.now(UTC).isoformat(timespec="seconds")
    man["commands"] = [*hist, {"command": line, "pid": pid, "at": at}][-MAX_COMMANDS:]


class RunStore:
    """A run directory. ``store.stage("anchors").append({...})``; ``store.reject(Reject(...))``.

    ``command``: names the holder in the run directory's lock (default: this process's command line).
    """

    def __init__(self, run_dir: str | os.PathLike[str], *, command: str | None = None) -> None:
        self.root = Path(run_dir)
        if self.root.exists() and not self.root.is_dir():
            raise ConfigError(f"run directory {self.root} exists and is not a directory")
        self.root.mkdir(parents=True, exist_ok=True)
        self.command = command
        self._stages: dict[str, StageFile] = {}
        self._locked = False
        self._producers: dict[str, str] = {
            stage: entry["hash"]
            for stage, entry in (self.manifest().get("producers") or {}).items()
            if isinstance(entry, dict) and isinstance(entry.get("hash"), str)
        }

    # locking -----------------------------------------------------------------------------------
    def lock(self) -> None:
        """Take the run directory's lock (once per store); raises RunLockedError naming the holder."""
        if not self._locked:
            lock.acquire(self.root, self.command)
            self._locked = True

    def scratch(self) -> Path:
        """This run's folder for temporary files (``RUN/_tmp``), removed when the run ends."""
        self.lock()
        path = self.root / SCRATCH
        path.mkdir(exist_ok=True)
        return path

    # stages ------------------------------------------------------------------------------------
    @staticmethod
    def _base(name: str) -> str:
        return name.split("/", 1)[1] if name.startswith(f"{PROGRESS}/") else name

    def stage(self, name: str) -> StageFile:
        if name not in self._stages:
            producer = None if name == REJECTS else self._producers.get(self._base(name))
            self._stages[name] = StageFile(self.root / f"{name}.jsonl", producer, self.lock)
        return self._stages[name]

    def done(self, name: str) -> StageFile:
        """Completion markers of a stage: ids of inputs fully processed (outputs flushed first)."""
        return self.stage(f"{PROGRESS}/{name}")

    def producer(self, stage: str) -> str | None:
        """The current producer hash of ``stage`` (None: it has none)."""
        return self._producers.get(stage)

    def set_producer(self, stage: str, producer: Any) -> str:
        """Declare what produces ``stage``'s records now (any JSON-able config, or a hash string).
        Records of an earlier producer become superseded. Returns the hash."""
        digest = producer if isinstance(producer, str) else stable_hash(producer, 12)
        if self._producers.get(stage) != digest:
            self._producers[stage] = digest
            entry: dict[str, Any] = {"hash": digest}
            if not isinstance(producer, str):
                entry["of"] = producer
            self.update_manifest(producers={stage: entry})
        for name in (stage, f"{PROGRESS}/{stage}"):
            if name in self._stages:
                self._stages[name].set_producer(digest)
        return digest

    def reject(self, reject: Reject) -> bool:
        """Record a reject (once per stage, id, reason and producer)."""
        rec = reject.model_dump()
        rec["id"] = f"{reject.stage}::{reject.id}::{reject.reason}"
        rec["record_id"] = reject.id
        producer = self._producers.get(reject.stage)
        if producer is not None:
            rec["producer"] = producer
        return self.stage(REJECTS).append(rec)

    def rejects(self, stage: str | None = None) -> list[dict[str, Any]]:
        """Current rejects: not those of a superseded producer, nor those whose record was done later
        with another verdict (a record that failed, then succeeded on a rerun, has no reject)."""
        out = []
        verdicts: dict[str, dict[str, Any]] = {}
        for rec in self.stage(REJECTS).read():
            name = rec.get("stage")
            if stage is not None and name != stage:
                continue
            producer = self._producers.get(name)
            if producer is not None and rec.get("producer") != producer:
                continue
            if name not in verdicts:
                verdicts[name] = self._verdicts(name)
            verdict = verdicts[name].get(rec.get("record_id"))
            if verdict is not None and verdict != rec.get("reason"):
                continue
            out.append(rec)
        return out

    def _verdicts(self, stage: str) -> dict[str, str]:
        """Record id → how the runner last finished it in ``stage`` (a reject reason, or "" for
        outputs), for markers that say so."""
        path = self.root / PROGRESS / f"{stage}.jsonl"
        if not path.exists():
            return {}
        done = self.done(stage)
        out: dict[str, str] = {}
        for marker in done.current():
            if "reject" in marker:
                out[marker["id"]] = marker["reject"]
            elif "outputs" in marker:
                out[marker["id"]] = ""
        return out

    def records(self, name: str) -> Iterator[dict[str, Any]]:
        """Current records of stage ``name`` in file order."""
        return self.stage(name).current()

    # manifest ----------------------------------------------------------------------------------
    def manifest(self) -> dict[str, Any]:
        path = self.root / MANIFEST
        if not path.exists():
            return {}
        return json.loads(path.read_text(encoding="utf-8"))

    def update_manifest(self, **fields: Any) -> dict[str, Any]:
        """Merge ``fields`` into manifest.json and refresh counts and versions. Read-merge-write runs
        under a lock (threads and processes never lose each other's update) and the write is an atomic
        replace from a temp file of its own."""
        return self._merge_manifest(fields, recount=True)

    def merge_manifest(self, **fields: Any) -> dict[str, Any]:
        """:meth:`update_manifest` without recounting the stage files: cheap enough to call per model
        request (live usage)."""
        return self._merge_manifest(fields, recount=False)

    def _merge_manifest(self, fields: dict[str, Any], recount: bool) -> dict[str, Any]:
        from dataclaw import __version__

        self.lock()
        with _ManifestLock(self.root):
            man = self.manifest()
            for key, value in fields.items():
                if isinstance(value, dict) and isinstance(man.get(key), dict):
                    man[key] = {**man[key], **value}
                else:
                    man[key] = value
            man.setdefault("created", datetime.now(UTC).isoformat(timespec="seconds"))
            man["updated"] = datetime.now(UTC).isoformat(timespec="seconds")
            man["versions"] = {
                "dataclaw": __version__,
                "python": sys.version.split()[0],
                "platform": platform.platform(),
            }
            _note_command(man)
            if recount or "counts" not in man:
                man["counts"] = self.counts()
            write_json_atomic(self.root / MANIFEST, man)
        return man

    def counts(self) -> dict[str, int]:
        """Current records per stage file (rejects: current rejects)."""
        out: dict[str, int] = {}
        for path in sorted(self.root.glob("*.jsonl")):
            out[path.stem] = len(self.rejects()) if path.stem == REJECTS else len(self.stage(path.stem))
        return out

    def torn(self) -> list[TornLine]:
        """The torn last lines of the run's JSONL files (stage files, rejects, progress markers), each
        reported once as a warning too: what a reader of this run skipped."""
        out = []
        for path in sorted([*self.root.glob("*.jsonl"), *(self.root / PROGRESS).glob("*.jsonl")]):
            name = str(path.relative_to(self.root).with_suffix(""))
            sf = self._stages.get(name)
            if sf is None and _torn_tail(path)[0]:  # only a torn file is read whole, for its line number
                sf = StageFile(path)
            if sf is not None and sf.torn is not None:
                out.append(sf.torn)
        return out

    def close(self) -> None:
        for sf in self._stages.values():
            sf.close()
        if self._locked:
            self._locked = False
            lock.release(self.root)

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _ManifestLock:
    """Exclusive flock on ``RUN/.manifest.lock`` (one per update: threads and processes serialise)."""

    def __init__(self, root: Path) -> None:
        self.path = root / ".manifest.lock"

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def write_json_atomic(path: Path, value: Any) -> None:
    """Write ``value`` as JSON to ``path`` by an atomic replace from a uniquely named temp file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        tmp.write_text(json.dumps(value, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def is_current(path: str | os.PathLike[str]) -> Callable[[dict[str, Any]], bool]:
    """For a stage file of a run directory (``RUN/<stage>.jsonl``) read without a store: a predicate
    telling current records from superseded ones (by the producer the manifest names)."""
    path = Path(path)
    try:
        entry = (json.loads((path.parent / MANIFEST).read_text(encoding="utf-8")).get("producers") or {}).get(
            path.stem
        )
    except (OSError, ValueError):
        entry = None
    producer = entry.get("hash") if isinstance(entry, dict) else None
    if producer is None:
        return lambda rec: True
    return lambda rec: rec.get("producer") == producer
