"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real sample inputs in ``../shared/data`` beside the repo (CI lays it there). Missing = failure."""
    if not (SHARED_DATA / "SOURCES.md").is_file():
        pytest.fail(f"sample data not found at {SHARED_DATA}: the repo expects ../shared/data beside it")
    return SHARED_DATA
