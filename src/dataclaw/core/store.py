"""The run directory: one JSONL file per stage, ``rejects.jsonl``, ``manifest.json``.

Each line is one record keyed by a stable ``id``. Appends are flushed per record, so a crash loses at
most the line being written; a torn last line is detected and cut off when the file is opened. A rerun
skips ids that are already present: resume is per record, not per batch.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError, Reject

REJECTS = "rejects"
MANIFEST = "manifest.json"


def _repair_torn_tail(path: Path) -> int:
    """Cut a partial or unparsable last line left by a crash; return the bytes removed."""
    if not path.exists() or path.stat().st_size == 0:
        return 0
    size = path.stat().st_size
    window = 1 << 16
    with path.open("rb+") as fh:
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
                return 0
            except ValueError:
                pass
        fh.truncate(start + nl + 1)
        return len(last)


class StageFile:
    """Append-only JSONL file of one stage's records, with the set of ids already written."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.torn_bytes = _repair_torn_tail(path)
        self._ids: set[str] = set()
        for rec in self.read():
            self._ids.add(rec["id"])
        self._fh = None

    def __contains__(self, record_id: str) -> bool:
        return record_id in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def ids(self) -> set[str]:
        return set(self._ids)

    def read(self) -> Iterator[dict[str, Any]]:
        """Records in file order. Lines that fail to parse (other than a torn tail) are a ConfigError."""
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    yield json.loads(line)
                except ValueError as exc:
                    raise ConfigError(f"{self.path}: line {n} is not valid JSON ({exc})") from None

    def append(self, record: dict[str, Any]) -> bool:
        """Write ``record`` unless its id is present; return whether it was written."""
        rid = record.get("id")
        if not isinstance(rid, str) or not rid:
            raise ValueError(f"record for {self.path.name} has no string 'id': {record!r:.200}")
        if rid in self._ids:
            return False
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.path.open("a", encoding="utf-8")
        self._fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._fh.flush()
        self._ids.add(rid)
        return True

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class RunStore:
    """A run directory. ``store.stage("anchors").append({...})``; ``store.reject(Reject(...))``."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.root = Path(run_dir)
        if self.root.exists() and not self.root.is_dir():
            raise ConfigError(f"run directory {self.root} exists and is not a directory")
        self.root.mkdir(parents=True, exist_ok=True)
        self._stages: dict[str, StageFile] = {}

    def stage(self, name: str) -> StageFile:
        if name not in self._stages:
            self._stages[name] = StageFile(self.root / f"{name}.jsonl")
        return self._stages[name]

    def done(self, name: str) -> StageFile:
        """Completion markers of a stage: ids of inputs fully processed (outputs flushed first)."""
        return self.stage(f"_progress/{name}")

    def reject(self, reject: Reject) -> bool:
        """Record a reject (once per stage and id)."""
        rec = reject.model_dump()
        rec["id"] = f"{reject.stage}::{reject.id}::{reject.reason}"
        rec["record_id"] = reject.id
        return self.stage(REJECTS).append(rec)

    def rejects(self, stage: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.stage(REJECTS).read() if stage is None or r["stage"] == stage]

    def records(self, name: str) -> Iterator[dict[str, Any]]:
        return self.stage(name).read()

    # manifest ----------------------------------------------------------------------------------
    def manifest(self) -> dict[str, Any]:
        path = self.root / MANIFEST
        if not path.exists():
            return {}
        return json.loads(path.read_text(encoding="utf-8"))

    def update_manifest(self, **fields: Any) -> dict[str, Any]:
        """Merge ``fields`` into manifest.json (atomic replace) and refresh counts and versions."""
        from dataclaw import __version__

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
        man["counts"] = self.counts()
        tmp = self.root / f".{MANIFEST}.tmp"
        tmp.write_text(json.dumps(man, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
        os.replace(tmp, self.root / MANIFEST)
        return man

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for path in sorted(self.root.glob("*.jsonl")):
            stage = self.stage(path.stem)
            out[path.stem] = len(stage)
        return out

    def close(self) -> None:
        for sf in self._stages.values():
            sf.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
