"""Broken environment packages: a copy of a reference archetype with one small text mutation each."""

from __future__ import annotations

import shutil
import textwrap
from dataclasses import dataclass
from pathlib import Path

from dataclaw.envcraft import archetypes

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


def make_mutant(base: Path, *edits: Mutation, reference: str = REFERENCE) -> Path:
    """A copy of archetype ``reference`` under ``base`` (same folder name) with ``edits`` applied."""
    dst = base / reference
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(archetypes.ARCHETYPES_DIR / reference, dst, ignore=shutil.ignore_patterns("__pycache__"))
    for edit in edits:
        edit.apply(dst)
    return dst
