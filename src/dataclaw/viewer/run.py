"""What the viewer knows about a run directory: its manifest, one :class:`LineIndex` per stage file, and
which records are current (the manifest's producers, the completion markers that supersede rejects).

Reading never changes the run: no lock is taken, no file is written under it (a live run can be viewed
while it writes; a refresh picks up what it appended).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from dataclaw.core.errors import ConfigError
from dataclaw.viewer.index import LineIndex, Problem
from dataclaw.viewer.kinds import kind_of
from dataclaw.viewer.stats import StageStats

MANIFEST = "manifest.json"
REJECTS = "rejects"
PROGRESS = "_progress"
SKIP_DIRS = {PROGRESS, "_tmp", "media", "__pycache__", "_viewer", ".git"}
# lineage order of the stages both engines write (others follow, by name)
STAGE_ORDER = [
    "streams",
    "anchors",
    "candidates",
    "requests",
    "responses",
    "validated",
    "materialize",
    "samples",
    "artifacts",
    "index",
    "specs",
    "chains",
    "grounded",
    "tasks",
    "code_audit",
    "rubric",
    "calibration",
    "calibrated_tasks",
    "repaired_tasks",
    "rollouts",
]

LOCATE_FIRST = {"samples"}


def is_run(path: Path) -> bool:
    """A run directory holds a manifest.json or at least one stage file (``*.jsonl``)."""
    return path.is_dir() and ((path / MANIFEST).is_file() or any(path.glob("*.jsonl")))


def stage_rank(name: str) -> tuple[int, str]:
    return (STAGE_ORDER.index(name) if name in STAGE_ORDER else len(STAGE_ORDER), name)


@dataclass
class Run:
    """One run directory as the viewer sees it. ``key`` names it in URLs."""

    key: str
    root: Path
    name: str
    problems: list[Problem] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)
    indexes: dict[str, LineIndex] = field(default_factory=dict)
    verdicts: dict[str, dict[str, str]] = field(default_factory=dict)
    """stage -> record id -> how the runner finished it there (a reject reason, or "" for outputs)."""
    _verdict_cache: dict[str, tuple[Any, dict[str, str]]] = field(default_factory=dict)
    _producers_seen: dict[str, str | None] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def ok(self) -> bool:
        return is_run(self.root)

    def producer(self, stage: str) -> str | None:
        entry = (self.manifest.get("producers") or {}).get(stage)
        return entry.get("hash") if isinstance(entry, dict) and isinstance(entry.get("hash"), str) else None

    def refresh(self) -> None:
        """Reread the manifest and index what the stage files gained since the last look."""
        with self._lock:
            self.problems = [p for p in self.problems if p.file == "(run)"]
            self.manifest = self._read_manifest()
            if not self.ok:
                return
            self.verdicts = self._read_verdicts()
            names = sorted((p.stem for p in self.root.glob("*.jsonl")), key=stage_rank)
            if REJECTS in names:  # rejects first: other kinds' facets look verdicts up
                names.remove(REJECTS)
                names.insert(0, REJECTS)
            self._drop_superseded_indexes(names)
            for name in names:
                idx = self.indexes.get(name)
                if idx is None:
                    idx = self.indexes[name] = LineIndex(
                        self.root / f"{name}.jsonl",
                        self._keeper(name),
                        kind_of(name).facet_fn(self),
                        StageStats.for_stage(name),
                    )
                idx.refresh()
                self.problems.extend(idx.problems)
                if idx.torn_bytes:
                    self.problems.append(
                        Problem(
                            idx.path.name,
                            f"the last line ({idx.torn_bytes} bytes) is incomplete (a crash, or a line"
                            " being written now) and is not shown",
                        )
                    )
            for gone in set(self.indexes) - set(names):
                del self.indexes[gone]

    def _drop_superseded_indexes(self, names: list[str]) -> None:
        """A stage whose producer changed since it was indexed (a rerun with another config) is indexed
        again, and so are the rejects: records of the old producer are no longer current, and the
        counts and statistics must not keep them."""
        producers = {name: self.producer(name) for name in names if name != REJECTS}
        changed = [
            n for n, h in producers.items() if n in self._producers_seen and self._producers_seen[n] != h
        ]
        for name in [*changed, REJECTS] if changed else []:
            self.indexes.pop(name, None)
        self._producers_seen = producers

    def _read_manifest(self) -> dict[str, Any]:
        path = self.root / MANIFEST
        if not path.is_file():
            return {}
        try:
            value = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            self.problems.append(Problem(MANIFEST, f"cannot be read as JSON ({exc})"))
            return {}
        if not isinstance(value, dict):
            self.problems.append(Problem(MANIFEST, "is not a JSON object"))
            return {}
        return value

    def _read_verdicts(self) -> dict[str, dict[str, str]]:
        """Completion markers per stage, reread only for files that changed since the last look."""
        out: dict[str, dict[str, str]] = {}
        for path in sorted((self.root / PROGRESS).glob("*.jsonl")):
            producer = self.producer(path.stem)
            try:
                st = path.stat()
            except OSError:
                continue
            stamp = (st.st_ino, st.st_size, st.st_mtime_ns, producer)
            cached = self._verdict_cache.get(path.stem)
            if cached is not None and cached[0] == stamp:
                out[path.stem] = cached[1]
                continue
            seen: dict[str, str] = {}
            try:
                lines = path.read_bytes().splitlines()
            except OSError:
                continue
            for raw in lines:
                try:
                    marker = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue  # a torn marker: the store drops it too
                if not isinstance(marker, dict) or not isinstance(marker.get("id"), str):
                    continue
                if producer is not None and marker.get("producer") != producer:
                    continue
                if "reject" in marker:
                    seen[marker["id"]] = str(marker["reject"])
                elif "outputs" in marker:
                    seen[marker["id"]] = ""
            out[path.stem] = seen
            self._verdict_cache[path.stem] = (stamp, seen)
        return out

    def _keeper(self, name: str) -> Any:
        """Predicate for current lines of stage file ``name`` (as ``RunStore`` reads them)."""
        if name == REJECTS:

            def keep_reject(rec: dict[str, Any]) -> bool:
                stage = rec.get("stage")
                producer = self.producer(stage) if isinstance(stage, str) else None
                if producer is not None and rec.get("producer") != producer:
                    return False
                verdict = self.verdicts.get(stage or "", {}).get(rec.get("record_id") or "")
                return verdict is None or verdict == rec.get("reason")

            return keep_reject

        def keep(rec: dict[str, Any]) -> bool:
            producer = self.producer(name)
            return producer is None or rec.get("producer") == producer

        return keep

    def stages(self) -> list[str]:
        return sorted((s for s in self.indexes if s != REJECTS), key=stage_rank)

    def index(self, stage: str) -> LineIndex:
        idx = self.indexes.get(stage)
        if idx is None:
            raise KeyError(stage)
        return idx

    def locate(self, rid: str) -> tuple[str, int] | None:
        """Where the record with id ``rid`` is (stage, position); a sample's final record (``samples``)
        before its earlier copies (``validated``, ``materialize``)."""
        for stage in sorted(self.stages(), key=lambda s: s not in LOCATE_FIRST):
            n = self.indexes[stage].find(rid)
            if n is not None:
                return stage, n
        return None

    def record(self, stage: str, rid: str) -> dict[str, Any] | None:
        """The current record ``rid`` of ``stage`` (None: absent or no such stage)."""
        idx = self.indexes.get(stage)
        n = idx.find(rid) if idx is not None else None
        return idx.get(n) if n is not None and idx is not None else None

    def other_files(self) -> list[Path]:
        """Files of the run that are not stage files (reports, JSON, exports) — listed with a JSON or
        plain view, never interpreted."""
        out = []
        for path in sorted(self.root.iterdir()):
            if path.name.startswith(".") or path.name == MANIFEST or path.suffix == ".jsonl":
                continue
            if path.is_file():
                out.append(path)
        return out


def discover(paths: list[Path]) -> list[Run]:
    """The runs named by ``paths``: a run directory, or a folder of runs (the quickstart's ``--out``),
    with the runs nested inside a run (a library's ``LIB/``) listed after it. A path that is not a
    folder is a ConfigError; a folder with no run in it is listed with a problem, so the page says so."""
    runs: list[Run] = []
    seen: set[Path] = set()

    def add(path: Path, name: str) -> None:
        real = path.resolve()
        if real in seen:
            return
        seen.add(real)
        runs.append(Run(key=str(len(runs)), root=real, name=name))

    for path in paths:
        if not path.exists():
            raise ConfigError(f"{path}: no such run directory")
        if not path.is_dir():
            raise ConfigError(f"{path}: not a directory (give a run directory, the --out of a command)")
        found = []
        for sub in _walk(path, depth=3):
            found.append(sub)
        if not found:
            run = Run(key="", root=path.resolve(), name=str(path))
            run.problems.append(
                Problem(
                    "(run)",
                    f"{path} is not a run directory: it has no manifest.json and no .jsonl stage file,"
                    " and no folder inside it has either",
                )
            )
            if run.root not in seen:
                seen.add(run.root)
                run.key = str(len(runs))
                runs.append(run)
        for sub in found:
            rel = sub.relative_to(path)
            add(sub, str(path) if rel == Path(".") else f"{path}/{rel}")
    for run in runs:
        run.refresh()
    return runs


def _walk(path: Path, depth: int) -> list[Path]:
    out = [path] if is_run(path) else []
    if depth == 0:
        return out
    try:
        children = sorted(c for c in path.iterdir() if c.is_dir() and not c.is_symlink())
    except OSError:
        return out
    for child in children:
        if child.name in SKIP_DIRS or child.name.startswith("."):
            continue
        out.extend(_walk(child, depth - 1))
    return out
