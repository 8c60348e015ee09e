"""The intent catalogue: built-in intents from ``catalog/*.yaml`` plus user intent files.

catalog = IntentCatalog.builtin()
catalog.add_file("my_intent.yaml")          # refuses an id that is already taken
catalog.get("robot_fault_recovery")
catalog.for_candidate("keyframes", "robot")  # intents that can use such a candidate
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from dataclaw.core.errors import ConfigError
from dataclaw.tailor.intents.base import CATALOG, Intent, load_intent


class IntentCatalog:
    """Intents by id; a duplicate id is an error."""

    def __init__(self, intents: Iterable[Intent] = ()) -> None:
        self._intents: dict[str, Intent] = {}
        for intent in intents:
            self.add(intent)

    @classmethod
    def builtin(cls) -> IntentCatalog:
        """The intents shipped in ``catalog/`` (one file each, sorted by name)."""
        files = sorted(CATALOG.glob("*.yaml"))
        if not files:
            raise ConfigError(f"the built-in intent catalogue {CATALOG} is empty")
        return cls(load_intent(p) for p in files)

    def add(self, intent: Intent) -> Intent:
        existing = self._intents.get(intent.id)
        if existing is not None:
            raise ConfigError(
                f"intent id '{intent.id}' from {intent.source} is already defined by {existing.source}"
            )
        self._intents[intent.id] = intent
        return intent

    def add_file(self, path: str | Path) -> Intent:
        """Load a user intent file and add it."""
        return self.add(load_intent(path))

    def get(self, intent_id: str) -> Intent:
        try:
            return self._intents[intent_id]
        except KeyError:
            raise ConfigError(
                f"unknown intent '{intent_id}': expected one of {', '.join(sorted(self._intents))} "
                "or a path to an intent file"
            ) from None

    def resolve(self, ref: str) -> Intent:
        """An intent by id, or loaded from ``ref`` when it is a path to a file (added once)."""
        if ref in self._intents:
            return self._intents[ref]
        path = Path(ref)
        if path.suffix in (".yaml", ".yml", ".json") or path.is_file():
            intent = load_intent(path)
            if intent.id in self._intents and self._intents[intent.id].source == intent.source:
                return self._intents[intent.id]
            return self.add(intent)
        return self.get(ref)

    def for_candidate(self, kind: str, modality: str | None = None) -> list[Intent]:
        """Intents that can use a candidate of ``kind`` from a ``modality`` stream, by id."""
        return [i for i in self if i.applies(kind, modality)]

    def ids(self) -> list[str]:
        return sorted(self._intents)

    def __iter__(self) -> Iterator[Intent]:
        return iter(self._intents[k] for k in sorted(self._intents))

    def __len__(self) -> int:
        return len(self._intents)

    def __contains__(self, intent_id: object) -> bool:
        return intent_id in self._intents
