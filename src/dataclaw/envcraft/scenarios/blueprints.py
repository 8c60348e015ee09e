"""The archetype blueprints (B.3) as data: what a generation prompt quotes for a retrieved archetype.

Each archetype's entry is the ``archetype.yaml`` of its own folder (see :mod:`dataclaw.envcraft.archetypes`),
so the blueprint text and the hand-written code that implements it travel together into the prompt. The
keywords are what archetype retrieval (paper 3.2: keyword overlap with the environment specification) scores
against; they are dataclaw's, drawn from each blueprint's own vocabulary and example domains.
"""

from __future__ import annotations

import functools
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dataclaw.core.errors import ConfigError


class Blueprint(BaseModel):
    """One interaction archetype: the paper's number, title and blueprint text, plus retrieval keywords."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="the archetype's folder name")
    number: int = Field(
        ge=1, description="the paper's number (1-9 for the built-ins); orders ties and prompts"
    )
    title: str
    blueprint: str
    keywords: tuple[str, ...] = Field(min_length=1)

    def reference_dir(self) -> Path:
        """The reference package's folder."""
        from dataclaw.envcraft import archetypes

        return archetypes.archetype(self.name).folder

    def reference_files(self) -> list[Path]:
        """The reference package's code and docs (``*.py`` but ``__main__`` and the compiler mechanic,
        README.md, SKILL.md), sorted."""
        from dataclaw.envcraft import archetypes

        folder = self.reference_dir()
        code = sorted(
            p for p in folder.glob("*.py") if p.name != "__main__.py" and not archetypes.compiler_file(p)
        )
        docs = [folder / n for n in ("README.md", "SKILL.md") if (folder / n).is_file()]
        return code + docs


def _read(name: str, folder: Path) -> Blueprint:
    from dataclaw.envcraft.archetypes import ARCHETYPE_FILE

    path = folder / ARCHETYPE_FILE
    if not path.is_file():
        raise ConfigError(f"archetype {name!r} has no {ARCHETYPE_FILE} (its blueprint entry) in {folder}")
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict) or "name" in raw:
        raise ConfigError(
            f"{path}: a mapping of number, title, blueprint, keywords (the name is the folder's)"
        )
    try:
        return Blueprint.model_validate({"name": name, **raw})
    except ValidationError as exc:
        raise ConfigError(f"{path}: {exc}") from None


@functools.cache
def blueprints() -> tuple[Blueprint, ...]:
    """Every archetype's, in the paper's order (by number; a number is refused twice)."""
    from dataclaw.envcraft import archetypes

    out = tuple(
        sorted((_read(a, archetypes.archetype(a).folder) for a in archetypes.names()), key=lambda b: b.number)
    )
    numbers = [b.number for b in out]
    if len(set(numbers)) != len(numbers):
        raise ConfigError(f"archetype blueprints share a number: {[(b.number, b.name) for b in out]}")
    return out


def blueprint(name: str) -> Blueprint:
    """The blueprint of one archetype by folder name."""
    for b in blueprints():
        if b.name == name:
            return b
    raise ConfigError(f"unknown archetype {name!r}; known: {', '.join(b.name for b in blueprints())}")
