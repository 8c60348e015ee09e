"""One MiniLM embedder shared by the metric tests (loading it takes seconds)."""

from __future__ import annotations

import pytest

from dataclaw.tailor.scoring.bench import CachedEmbedder


@pytest.fixture(scope="session")
def embedder() -> CachedEmbedder:
    return CachedEmbedder(cache=None)
