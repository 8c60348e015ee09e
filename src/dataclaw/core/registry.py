"""Registries of named components (readers, extractors, miners, validators, exporters …).

One class instead of a hand-rolled dict per kind: a duplicate name is refused, an unknown name is an
error listing the known ones, and built-in modules are imported on first use so that each registers
itself (a new component is one module, no central importer).

Plugins extend a registry from outside the package, without forking (DESIGN.md "rules of the house"):

- an installed distribution declares a Python entry point in the registry's group (``dataclaw.validators``,
  ``dataclaw.readers``, ``dataclaw.anchors`` …, see :data:`ENTRY_POINT_GROUPS`); the entry point's name
  is the component's name and its value the object (``pkg.mod:check_x``), or a module that registers
  its components when imported (``pkg.mod``). They are loaded with the built-ins, on first lookup, in
  every process (pool workers included).
- ``--plugin MODULE`` on the tailor commands (:func:`load_plugins`): a module importable from the current
  directory or ``sys.path`` that registers its components with the ordinary decorators
  (``register_validator("my_check")`` …). The module names travel to worker processes in the
  ``DATACLAW_PLUGINS`` environment variable.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import pkgutil
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from dataclaw.core.errors import ConfigError

T = TypeVar("T")

PLUGINS_ENV = "DATACLAW_PLUGINS"
"""Comma-separated plugin modules every registry imports on first use (set by :func:`load_plugins`)."""

ENTRY_POINT_GROUPS: dict[str, str] = {
    "validator": "dataclaw.validators",
    "stream reader": "dataclaw.readers",
    "anchor extractor": "dataclaw.anchors",
    "miner": "dataclaw.miners",
    "materialiser": "dataclaw.materialisers",
    "export format": "dataclaw.exporters",
    "OCR backend": "dataclaw.ocr_backends",
    "video codec profile": "dataclaw.codecs",
    "trainer export": "dataclaw.trainer_exports",
    "importer": "dataclaw.importers",
    "archetype": "dataclaw.archetypes",
    "compiler mechanic": "dataclaw.mechanics",
    "audit rule": "dataclaw.audit_rules",
    "executor": "dataclaw.executors",
    "model backend": "dataclaw.model_backends",
    "server kind": "dataclaw.server_kinds",
}
"""Entry-point group of each registry kind (a registry may also name its own with ``group=``)."""


UNKNOWN = "unknown {kind} '{name}': expected one of {known}"
"""How a registry says a name is unknown, unless it words it its own way (``unknown=``)."""


class Registry(Generic[T]):
    """Components of one ``kind`` by name. ``builtins``: a package whose public modules, or a list of
    modules, to import before the first lookup. ``unknown`` (with ``{kind}``, ``{name}``, ``{known}``) and
    ``error``: the message and the :class:`ConfigError` class of an unknown name."""

    def __init__(
        self,
        kind: str,
        builtins: str | list[str] | None = None,
        group: str | None = None,
        *,
        unknown: str = UNKNOWN,
        error: type[ConfigError] = ConfigError,
    ) -> None:
        self.kind = kind
        self.group = group or ENTRY_POINT_GROUPS.get(kind)
        self._builtins = builtins
        self._unknown = unknown
        self._error = error
        self._loaded = False
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
            raise self.unknown(name)
        return self._items[name]

    def unknown(self, name: str) -> ConfigError:
        """The error of an unknown ``name``, listing the known ones."""
        return self._error(self._unknown.format(kind=self.kind, name=name, known=", ".join(self.names())))

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
        """Import the built-ins, then the ``--plugin`` modules, then the entry points of ``group``."""
        if self._loaded:
            return
        self._loaded = True
        self._load_builtins()
        for module in plugin_modules():
            import_plugin(module)
        if self.group:
            for ep in _entry_points(self.group):
                self._load_entry_point(ep)

    def _load_entry_point(self, ep: importlib.metadata.EntryPoint) -> None:
        dist = getattr(getattr(ep, "dist", None), "name", None) or "an installed package"
        where = f"entry point '{ep.name} = {ep.value}' in group {self.group} (from {dist})"
        try:
            obj = ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin is user input: one clear error
            raise ConfigError(f"{where} could not be loaded: {type(exc).__name__}: {exc}") from None
        if isinstance(obj, type(sys)):
            return  # a module registers its components when imported
        if self._items.get(ep.name) is obj:
            return
        try:
            self.register(ep.name, obj)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None

    def _load_builtins(self) -> None:
        if self._builtins is None:
            return
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


def _entry_points(group: str) -> list[importlib.metadata.EntryPoint]:
    """Entry points of ``group`` across installed distributions (a distribution seen twice on
    ``sys.path`` counts once)."""
    seen: dict[tuple[str, str], importlib.metadata.EntryPoint] = {}
    for ep in importlib.metadata.entry_points(group=group):
        seen.setdefault((ep.name, ep.value), ep)
    return sorted(seen.values(), key=lambda ep: ep.name)


def plugin_modules() -> list[str]:
    """The ``--plugin`` modules of this process and its parent (``DATACLAW_PLUGINS``)."""
    return [m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(",") if m.strip()]


_IMPORTED: set[str] = set()


def import_plugin(module: str) -> Any:
    """Import one plugin module; a missing or broken one is a :class:`ConfigError` naming it."""
    if not module.replace(".", "").replace("_", "").isalnum() or module.startswith("."):
        raise ConfigError(f"--plugin '{module}' is not a module name (e.g. my_validators or pkg.checks)")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            raise ConfigError(
                f"plugin module '{module}' not found: put {module.replace('.', '/')}.py in the current "
                "directory or install the package that provides it"
            ) from None
        raise ConfigError(f"plugin module '{module}' could not be imported: {exc}") from None
    except ConfigError as exc:
        raise ConfigError(f"plugin module '{module}': {exc}") from None
    except Exception as exc:  # noqa: BLE001 - whatever a plugin raises on import is reported
        raise ConfigError(f"plugin module '{module}' failed on import: {type(exc).__name__}: {exc}") from None
    _IMPORTED.add(module)
    return mod


def load_plugins(modules: Sequence[str]) -> list[str]:
    """Import ``modules`` (``--plugin``) now and make worker processes import them too; the current
    directory is importable, as it is for ``python -m``. Returns the modules loaded."""
    names = [m.strip() for m in modules if m and m.strip()]
    if not names:
        return []
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        if cwd not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join([cwd, *paths])
    for module in names:
        import_plugin(module)
    merged = list(dict.fromkeys([*plugin_modules(), *names]))
    os.environ[PLUGINS_ENV] = ",".join(merged)
    return names
