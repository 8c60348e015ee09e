"""A line-offset index of one JSONL stage file: a page of a 100k-record run seeks, it never rereads.

The index is built by one scan (each line parsed once, for its id, producer and the few facet values the
list pages filter on) and kept in memory. A stage file only grows (the store appends), so
:meth:`LineIndex.refresh` scans just the bytes added since the last look; a file that shrank or was
replaced is scanned again from the start. Like the store, a last line without its newline (a torn line
from a crash, or a line a live writer is still writing) is not a record yet; a bad line anywhere else is
a *problem* the page shows, and the other lines stay viewable.
"""

from __future__ import annotations

import gc
import threading
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

Facets = dict[str, str]
Keep = Callable[[dict[str, Any]], bool]
FacetFn = Callable[[dict[str, Any]], Facets]


FREEZE_AFTER = 10_000
"""Records one scan must add before the index's objects are moved out of the cyclic GC's reach."""


@dataclass
class Problem:
    """Something wrong in a file that the viewer shows instead of failing the page."""

    file: str
    message: str


@dataclass
class LineIndex:
    """Byte offsets of the current records of ``path`` (``keep`` says which are current)."""

    path: Path
    keep: Keep = lambda rec: True
    facet_fn: FacetFn | None = None
    stats: Any = None
    """A :class:`dataclaw.viewer.stats.StageStats` that counts each current record as it is scanned."""
    offsets: array = field(default_factory=lambda: array("Q"))
    ids: dict[str, int] = field(default_factory=dict)
    facets: list[Facets] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    torn_bytes: int = 0
    superseded: int = 0
    _scanned: int = 0
    _ino: int | None = None
    _line_no: int = 0
    _posting_cache: dict[str, tuple[int, dict[str, list[int]]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __len__(self) -> int:
        return len(self.offsets)

    def refresh(self) -> None:
        """Index what was appended since the last scan (everything, the first time)."""
        with self._lock:
            try:
                st = self.path.stat()
            except OSError:
                self._reset()
                return
            if st.st_ino != self._ino or st.st_size < self._scanned:
                self._reset()
                self._ino = st.st_ino
            if st.st_size == self._scanned:
                return
            before = len(self.offsets)
            self._scan(st.st_size)
            if len(self.offsets) - before >= FREEZE_AFTER:
                # a large index lives as long as the server: frozen, the cyclic GC stops walking its
                # facets and ids on every full collection (an ~80 ms pause of one page in a hundred on a
                # 100k-sample run); refcounting still frees what a rescan drops
                gc.freeze()

    def _reset(self) -> None:
        self.offsets = array("Q")
        self.ids.clear()
        self.facets.clear()
        self.problems.clear()
        self._posting_cache.clear()
        self.torn_bytes = self.superseded = self._scanned = 0
        self._ino = None
        if self.stats is not None:
            self.stats.reset()

    def _scan(self, size: int) -> None:
        pos = self._scanned
        line_no = self._line_no
        with self.path.open("rb") as fh:
            fh.seek(pos)
            for raw in fh:
                if not raw.endswith(b"\n"):
                    # torn or still being written: not a record until its newline lands
                    self.torn_bytes = len(raw)
                    break
                start, pos = pos, pos + len(raw)
                line_no += 1
                if not raw.strip():
                    continue
                try:
                    rec = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    self.problems.append(Problem(self.path.name, f"line {line_no} is not valid JSON ({exc})"))
                    continue
                if not isinstance(rec, dict):
                    self.problems.append(Problem(self.path.name, f"line {line_no} is not a JSON object"))
                    continue
                if not self.keep(rec):
                    self.superseded += 1
                    continue
                rid = rec.get("id")
                if isinstance(rid, str):
                    self.ids[rid] = len(self.offsets)
                self.offsets.append(start)
                if self.stats is not None:
                    self.stats.add(rec)
                if self.facet_fn is not None:
                    try:
                        self.facets.append(self.facet_fn(rec))
                    except Exception as exc:  # noqa: BLE001 - a record of an unexpected shape is listed plainly
                        self.facets.append({})
                        self.problems.append(
                            Problem(
                                self.path.name, f"line {line_no}: unexpected shape ({type(exc).__name__})"
                            )
                        )
            else:
                self.torn_bytes = 0
        self._scanned = pos
        self._line_no = line_no

    def get(self, n: int) -> dict[str, Any]:
        """The ``n``-th current record (0-based); IndexError when there is none."""
        if not 0 <= n < len(self.offsets):
            raise IndexError(n)
        with self.path.open("rb") as fh:
            fh.seek(self.offsets[n])
            return orjson.loads(fh.readline())

    def raw(self, n: int) -> bytes:
        """The ``n``-th current record's line as stored."""
        with self.path.open("rb") as fh:
            fh.seek(self.offsets[n])
            return fh.readline()

    def find(self, rid: str) -> int | None:
        """Position of the record with id ``rid`` (None: not in this file)."""
        return self.ids.get(rid)

    def select(self, want: Facets, text: str = "") -> list[int]:
        """Positions of the records whose facets match ``want`` (empty values ignored) and whose line
        contains ``text`` (case-insensitive, searched in the stored line, not in the browser)."""
        want = {k: v for k, v in want.items() if v}
        if want:
            lists = sorted((self._postings(k).get(v, []) for k, v in want.items()), key=len)
            others = [set(p) for p in lists[1:]]
            rows = [i for i in lists[0] if all(i in o for o in others)]
        else:
            rows = list(range(len(self.offsets)))
        if not text:
            return rows
        needle = text.lower().encode()
        out = []
        with self.path.open("rb") as fh:
            for i in rows:
                fh.seek(self.offsets[i])
                if needle in fh.readline().lower():
                    out.append(i)
        return out

    def _postings(self, name: str) -> dict[str, list[int]]:
        """Facet value → positions in file order, built once per length of the index."""
        cached = self._posting_cache.get(name)
        if cached is not None and cached[0] == len(self.facets):
            return cached[1]
        out: dict[str, list[int]] = {}
        for i, f in enumerate(self.facets):
            value = f.get(name)
            if value:
                out.setdefault(value, []).append(i)
        self._posting_cache[name] = (len(self.facets), out)
        return out

    def facet_values(self, name: str) -> dict[str, int]:
        """Each value of facet ``name`` with its count (for the filter menus); counted once per length
        of the index."""
        return {value: len(rows) for value, rows in sorted(self._postings(name).items())}
