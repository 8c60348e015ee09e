"""Broken environment packages made from a reference archetype by one small text mutation each."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from dataclaw.envcraft import archetypes
from dataclaw.sandbox import sandbox_available

REFERENCE = "transactional_workspace"


@dataclass(frozen=True)
class Edit:
    """One text edit of a file in the package copy: replace ``old`` by ``new`` (``old=""`` appends)."""

    file: str
    new: str
    old: str = ""

    def apply(self, root: Path) -> None:
        path = root / self.file
        if self.old == "":
            new = textwrap.dedent(self.new)
            text = path.read_text(encoding="utf-8") if path.exists() else ""
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text + "\n" + new, encoding="utf-8")
            return
        text = path.read_text(encoding="utf-8")
        assert self.old in text, f"mutation anchor not found in {self.file}: {self.old!r}"
        path.write_text(text.replace(self.old, self.new, 1), encoding="utf-8")


@dataclass(frozen=True)
class Delete:
    file: str

    def apply(self, root: Path) -> None:
        (root / self.file).unlink()


Mutation = Edit | Delete


@pytest.fixture
def mutant(tmp_path: Path) -> Callable[..., Path]:
    """``mutant(*edits)`` → a copy of the reference archetype (same folder name) with the edits applied."""

    def make(*edits: Mutation) -> Path:
        dst = tmp_path / "pkgs" / REFERENCE
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(
            archetypes.ARCHETYPES_DIR / REFERENCE, dst, ignore=shutil.ignore_patterns("__pycache__")
        )
        for edit in edits:
            edit.apply(dst)
        return dst

    return make


@pytest.fixture
def require_bwrap() -> None:
    avail = sandbox_available()
    if not avail:
        pytest.skip(avail.reason)
