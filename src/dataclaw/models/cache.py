"""The sqlite response cache: a repeated or resumed run never pays twice for the same call.

Keys are hashes of (model, messages, schema, tools, params) (:meth:`ChatRequest.cache_key`); values are the
raw :class:`Generation`, so a hit is validated again exactly like a fresh answer. Only answers that passed
validation are stored. One connection per cache guarded by a lock (calls are sub-millisecond); WAL mode lets
several processes share one file.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

from dataclaw.core.errors import ConfigError
from dataclaw.models.types import Generation

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    created REAL NOT NULL,
    latency_s REAL NOT NULL,
    generation TEXT NOT NULL
)
"""


def default_cache_path() -> Path:
    """``$DATACLAW_CACHE_DIR/responses.sqlite``, else ``~/.cache/dataclaw/responses.sqlite``."""
    root = os.environ.get("DATACLAW_CACHE_DIR") or Path.home() / ".cache" / "dataclaw"
    return Path(root) / "responses.sqlite"


class ResponseCache:
    """A process- and thread-safe key → :class:`Generation` store in one sqlite file."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"cannot open the response cache {self.path}: {exc}") from None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, object]:
        """Pickles as its path (stages are pickled to workers); the copy reopens the same file."""
        return {"path": self.path}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__(state["path"])  # type: ignore[misc]

    def get(self, key: str) -> tuple[Generation, float] | None:
        """The stored answer and its original latency, or None."""
        with self._lock:
            row = self._db.execute(
                "SELECT generation, latency_s FROM responses WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        return Generation.model_validate_json(row[0]), float(row[1])

    def put(self, key: str, model: str, generation: Generation, latency_s: float) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses (key, model, created, latency_s, generation) "
                "VALUES (?, ?, ?, ?, ?)",
                (key, model, time.time(), latency_s, generation.model_dump_json()),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def clear(self, model: str | None = None) -> int:
        """Delete all entries (or those of one model); return how many."""
        with self._lock:
            if model is None:
                cur = self._db.execute("DELETE FROM responses")
            else:
                cur = self._db.execute("DELETE FROM responses WHERE model = ?", (model,))
            return cur.rowcount

    def close(self) -> None:
        with self._lock:
            self._db.close()
