"""Shared fixtures."""

from __future__ import annotations

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
