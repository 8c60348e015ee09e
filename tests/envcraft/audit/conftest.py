"""Fixtures: broken copies of a reference archetype (see audit_mutants.py), bubblewrap or skip."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from audit_mutants import make_mutant

from dataclaw.sandbox import sandbox_available


@pytest.fixture
def mutant(tmp_path: Path) -> Callable[..., Path]:
    """``mutant(*edits)`` → a copy of the reference archetype (same folder name) with the edits applied."""
    return lambda *edits: make_mutant(tmp_path / "pkgs", *edits)


@pytest.fixture
def require_bwrap() -> None:
    avail = sandbox_available()
    if not avail:
        pytest.skip(avail.reason)
