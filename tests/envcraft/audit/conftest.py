"""Broken environment packages: a copy of a reference archetype with one small text mutation each.

Tests describe a mutation as a plain tuple (no helper module to import, whatever pytest's import mode):
``(file, new)`` appends ``new`` (dedented), ``(file, new, old)`` replaces ``old`` by ``new`` once,
``(file, None)`` deletes the file."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from dataclaw.envcraft import archetypes
from dataclaw.sandbox import sandbox_available

REFERENCE = "transactional_workspace"


Mutation = tuple[str, str | None] | tuple[str, str, str]


def apply(root: Path, mutation: Mutation) -> None:
    """Apply one mutation to the package copy at ``root`` (an anchor that is not found fails the test)."""
    file, new, *old = mutation
    path = root / file
    if new is None:
        path.unlink()
    elif not old:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n" + textwrap.dedent(new), encoding="utf-8")
    else:
        text = path.read_text(encoding="utf-8")
        assert old[0] and old[0] in text, f"mutation anchor not found in {file}: {old[0]!r}"
        path.write_text(text.replace(old[0], new, 1), encoding="utf-8")


def make_mutant(base: Path, *edits: Mutation, reference: str = REFERENCE) -> Path:
    """A copy of archetype ``reference`` under ``base`` (same folder name) with ``edits`` applied."""
    dst = base / reference
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(archetypes.ARCHETYPES_DIR / reference, dst, ignore=shutil.ignore_patterns("__pycache__"))
    for edit in edits:
        apply(dst, edit)
    return dst


@pytest.fixture
def mutant(tmp_path: Path) -> Callable[..., Path]:
    """``mutant(*mutations)`` → a copy of the reference archetype (same folder name), mutated."""
    return lambda *edits: make_mutant(tmp_path / "pkgs", *edits)


@pytest.fixture
def require_bwrap() -> None:
    avail = sandbox_available()
    if not avail:
        pytest.skip(avail.reason)
