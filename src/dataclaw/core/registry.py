"""Registries of named components (readers, extractors, miners, validators, exporters …).

One class instead of a hand-rolled dict per kind: a duplicate name is refused, an unknown name is an
error listing the known ones, and built-in modules are imported on first use so that each registers
itself (a new component is one module, no central importer).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from dataclaw.core.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Components of one ``kind`` by name. ``builtins``: a package whose public modules, or a list of
    modules, to import before the first lookup."""

    def __init__(self, kind: str, builtins: str | list[str] | None = None) -> None:
        self.kind = kind
        self._builtins = builtins
        self._loaded = builtins is None
        self._items: dict[str, T] = {}

    def register(self, name: str, obj: T) -> T:
        """Add ``obj`` as ``name``; registering the same object again is a no-op, another one an error."""
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{self.kind} {obj!r} has no name")
        existing = self._items.get(name)
        if existing is not None and existing is not obj:
            owner = (
                getattr(existing, "__module__", "?") + "." + getattr(existing, "__qualname__", repr(existing))
            )
            raise ConfigError(f"{self.kind} name '{name}' is already registered by {owner}")
        self._items[name] = obj
        return obj

    def add(self, obj: T) -> T:
        """Class decorator: register ``obj`` under its ``name`` attribute."""
        return self.register(getattr(obj, "name", None), obj)  # type: ignore[arg-type]

    def named(self, name: str) -> Callable[[T], T]:
        """Decorator: register the decorated object under ``name``."""
        return lambda obj: self.register(name, obj)

    def get(self, name: str) -> T:
        self._load()
        if name not in self._items:
            raise ConfigError(f"unknown {self.kind} '{name}': expected one of {', '.join(self.names())}")
        return self._items[name]

    def names(self) -> list[str]:
        self._load()
        return sorted(self._items)

    def items(self) -> Iterator[tuple[str, T]]:
        self._load()
        return iter(sorted(self._items.items()))

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._items

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        if isinstance(self._builtins, str):
            package = importlib.import_module(self._builtins)
            modules = [
                f"{self._builtins}.{info.name}"
                for info in pkgutil.iter_modules(package.__path__)
                if not info.name.startswith("_")
            ]
        else:
            modules = list(self._builtins or [])
        for module in modules:
            importlib.import_module(module)
