"""The nine archetype blueprints (B.3) as data: what a generation prompt quotes for a retrieved archetype.

Each entry names its reference package (a folder under ``envcraft/archetypes``), so the blueprint text
and the hand-written code that implements it travel together into the prompt.
"""

from __future__ import annotations

import functools
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

from dataclaw.core.errors import ConfigError

BLUEPRINTS_FILE = Path(__file__).resolve().parent / "data" / "archetypes.yaml"


class Blueprint(BaseModel):
    """One interaction archetype: the paper's number, title and blueprint text, plus retrieval keywords."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="folder name of the reference package under envcraft/archetypes")
    number: int = Field(ge=1, le=9)
    title: str
    blueprint: str
    keywords: tuple[str, ...] = Field(min_length=1)

    def reference_dir(self) -> Path:
        """The reference package's folder."""
        from dataclaw.envcraft.archetypes import ARCHETYPES_DIR

        return ARCHETYPES_DIR / self.name

    def reference_files(self) -> list[Path]:
        """The reference package's code and docs (``*.py`` but ``__main__``, README.md, SKILL.md), sorted."""
        folder = self.reference_dir()
        code = sorted(p for p in folder.glob("*.py") if p.name != "__main__.py")
        docs = [folder / n for n in ("README.md", "SKILL.md") if (folder / n).is_file()]
        return code + docs


@functools.cache
def blueprints() -> tuple[Blueprint, ...]:
    """All nine, in the paper's order; each must name an existing archetype package."""
    from dataclaw.envcraft import archetypes

    raw = yaml.safe_load(BLUEPRINTS_FILE.read_text(encoding="utf-8"))
    out = tuple(Blueprint.model_validate(entry) for entry in raw["archetypes"])
    known = set(archetypes.names())
    names = [b.name for b in out]
    if len(set(names)) != len(names) or set(names) != known:
        raise ConfigError(
            f"{BLUEPRINTS_FILE}: blueprints name {sorted(names)}, the archetype packages are {sorted(known)}"
        )
    return out


def blueprint(name: str) -> Blueprint:
    """The blueprint of one archetype by folder name."""
    for b in blueprints():
        if b.name == name:
            return b
    raise ConfigError(f"unknown archetype {name!r}; known: {', '.join(b.name for b in blueprints())}")
