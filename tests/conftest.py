"""Shared fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# CI machines are small and shared: judge generated inputs, not how fast they were generated.
settings.register_profile("shared-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("shared-machine")

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real sample inputs in ``../shared/data`` beside the repo (CI lays it there). Missing = failure."""
    if not (SHARED_DATA / "SOURCES.md").is_file():
        pytest.fail(f"sample data not found at {SHARED_DATA}: the repo expects ../shared/data beside it")
    return SHARED_DATA


@pytest.fixture(scope="session", autouse=True)
def _own_response_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Model answers cached by the run's commands go to a cache of this test run, never the user's
    (``~/.cache/dataclaw``): keys name the fake servers' ports, which recur across runs, so an answer
    cached by an earlier run was served instead of the fake server's (a CI machine starts empty too)."""
    old = os.environ.get("DATACLAW_CACHE_DIR")
    os.environ["DATACLAW_CACHE_DIR"] = str(tmp_path_factory.mktemp("response-cache"))
    yield
    if old is None:
        os.environ.pop("DATACLAW_CACHE_DIR", None)
    else:
        os.environ["DATACLAW_CACHE_DIR"] = old
