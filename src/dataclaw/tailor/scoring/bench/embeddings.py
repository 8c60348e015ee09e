"""Sentence embeddings for S_semantic, batched and cached per text.

Wraps :class:`dataclaw.models.embed.Embedder` (the bundled all-MiniLM-L6-v2, offline): every distinct
text of a scoring run is embedded once, in batches, and kept in an sqlite file
(``$DATACLAW_CACHE_DIR/embeddings.sqlite``, else ``~/.cache/dataclaw/embeddings.sqlite``) keyed by the
model folder and the text's hash, so references scored again (another model, another checkpoint) cost
nothing. ``cache=None`` keeps it in memory only.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from dataclaw.models.embed import Embedder

BATCH = 2048


def default_cache_path() -> Path:
    root = os.environ.get("DATACLAW_CACHE_DIR") or Path.home() / ".cache" / "dataclaw"
    return Path(root) / "embeddings.sqlite"


class CachedEmbedder:
    """Text → unit vector, from memory, then the sqlite cache, then the model (in batches)."""

    def __init__(self, embedder: Embedder | None = None, cache: str | Path | None = None) -> None:
        self.embedder = embedder or Embedder()
        self.cache_path = Path(cache) if cache is not None else None
        self._mem: dict[str, np.ndarray] = {}
        self._db: sqlite3.Connection | None = None
        self.stats = {"memory": 0, "disk": 0, "model": 0}

    def _model_key(self) -> str:
        return str(self.embedder.path or "minilm")

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self._model_key()}\0{text}".encode()).hexdigest()

    def _conn(self) -> sqlite3.Connection | None:
        if self.cache_path is None:
            return None
        if self._db is None:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.cache_path, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS emb (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")
        return self._db

    def vectors(
        self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None
    ) -> dict[str, np.ndarray]:
        """Unit vectors of the distinct non-empty ``texts``."""
        distinct = [t for t in dict.fromkeys(texts) if t]
        todo = [t for t in distinct if t not in self._mem]
        self.stats["memory"] += len(distinct) - len(todo)
        db = self._conn()
        if db is not None and todo:
            keys = {self._key(t): t for t in todo}
            found = 0
            items = list(keys)
            for i in range(0, len(items), 500):
                chunk = items[i : i + 500]
                rows = db.execute(
                    f"SELECT key, vec FROM emb WHERE key IN ({','.join('?' * len(chunk))})", chunk
                ).fetchall()
                for key, blob in rows:
                    self._mem[keys[key]] = np.frombuffer(blob, dtype=np.float32)
                    found += 1
            self.stats["disk"] += found
            todo = [t for t in todo if t not in self._mem]
        for i in range(0, len(todo), BATCH):
            batch = todo[i : i + BATCH]
            vecs = self.embedder.embed(batch)
            for text, vec in zip(batch, vecs, strict=True):
                self._mem[text] = np.asarray(vec, dtype=np.float32)
            if db is not None:
                db.executemany(
                    "INSERT OR REPLACE INTO emb (key, vec) VALUES (?, ?)",
                    [(self._key(t), self._mem[t].tobytes()) for t in batch],
                )
                db.commit()
            self.stats["model"] += len(batch)
            if progress is not None:
                progress(min(i + BATCH, len(todo)), len(todo))
        return {t: self._mem[t] for t in texts if t}

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
