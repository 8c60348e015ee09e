"""Personas for intent decomposition (EnvCraft §4.2): a shipped persona set matched to environments by
sentence-embedding similarity with the packaged MiniLM embedder (top five per environment)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from dataclaw.core.errors import ConfigError

TOP_K = 5


@dataclass(frozen=True)
class Persona:
    id: str
    description: str


@cache
def load_personas() -> tuple[Persona, ...]:
    """The shipped persona set (``tasks/data/personas.json``); ids must be unique."""
    raw = json.loads(
        resources.files("dataclaw.envcraft.tasks.tool").joinpath("data/personas.json").read_text("utf-8")
    )
    out: dict[str, Persona] = {}
    for i, p in enumerate(raw):
        if not isinstance(p, dict) or not p.get("id") or not p.get("description"):
            raise ConfigError(f"personas.json: entry {i} needs 'id' and 'description'")
        if p["id"] in out:
            raise ConfigError(f"personas.json: duplicate persona id {p['id']!r}")
        out[p["id"]] = Persona(p["id"], p["description"])
    return tuple(out.values())


def env_document(env_cls: Any, max_chars: int = 1500) -> str:
    """The environment documentation the personas are matched against: README (head) or docstring
    (for an environment group, each member's in turn)."""
    members = getattr(env_cls, "members", None)
    if members:
        share = max_chars // len(members)
        return "\n\n".join(env_document(c, share) for c in members.values())
    readme = env_cls.package_dir() / "README.md"
    text = readme.read_text(encoding="utf-8") if readme.is_file() else (env_cls.__doc__ or env_cls.name)
    return text[:max_chars]


class PersonaMatcher:
    """Top-k personas per environment document, by cosine similarity (memoised per document)."""

    def __init__(self, personas: tuple[Persona, ...] | None = None, embedder: Any = None) -> None:
        self.personas = personas or load_personas()
        if embedder is None:
            from dataclaw.models.embed import Embedder

            embedder = Embedder()
        self.embedder = embedder
        self._memo: dict[str, list[tuple[Persona, float]]] = {}

    def top(self, document: str, k: int = TOP_K) -> list[tuple[Persona, float]]:
        if document not in self._memo:
            sims = self.embedder.similarity(document, [p.description for p in self.personas])
            ranked = sorted(zip(self.personas, (float(s) for s in sims), strict=True), key=lambda x: -x[1])
            self._memo[document] = ranked
        return self._memo[document][:k]
