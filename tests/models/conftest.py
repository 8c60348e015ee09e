"""Fixtures for the model layer: a live OpenAI-compatible test server and an isolated response cache."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: makes `support` importable

from support.llama_server import LlamaServer, llama_cpp_server  # noqa: F401  (the real llama_cpp.server)
from support.openai_server import OpenAIServer


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default response cache lives in the test's tmp dir, never in ~/.cache."""
    monkeypatch.setenv("DATACLAW_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as srv:
        yield srv
