"""Old import paths of modules and names that moved, kept for one release.

A package that moves a public module calls :func:`keep_old_paths` from its ``__init__`` with the old and
the new dotted names. Importing an old name then warns (``DeprecationWarning``, naming the new place) and
returns the new module itself, so ``from dataclaw.tailor.mine import MINERS`` and the new path see the same
objects (one registry, one class), and no file is left behind at the old place. A module split in several
maps to their names in order: the old name then imports as a module that reads each attribute from the
first of them that has it.

A module that stays but whose public names moved elsewhere calls :func:`keep_old_names`: reading an old
name warns and returns the object from its new module (imported only then, so no import cycle is made).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

Target = str | Sequence[str]
"""Where an old module is now: one module, or the modules it was split into (looked up in order)."""


def _warn(old: str, new: str) -> None:
    warnings.warn(
        f"{old} moved to {new}; the old import path will be removed in the next release",
        DeprecationWarning,
        stacklevel=3,
    )


def _split_getattr(old: str, new: tuple[str, ...]) -> Callable[[str], Any]:
    """The ``__getattr__`` of a split module's old name: an attribute from the first new module with it."""

    def __getattr__(name: str) -> Any:
        for module in new:
            found = importlib.import_module(module)
            if hasattr(found, name):
                return getattr(found, name)
        raise AttributeError(f"module {old!r} has no attribute {name!r} (it moved to {', '.join(new)})")

    return __getattr__


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old module name and loads the module now at its new name in its place."""

    def __init__(self) -> None:
        self.moved: dict[str, Target] = {}

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> object:
        if fullname not in self.moved:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # a placeholder: exec_module swaps the new module in (or makes it the split's proxy)

    def exec_module(self, module: ModuleType) -> None:
        new = self.moved[module.__name__]
        if isinstance(new, str):
            _warn(module.__name__, new)
            # the import system hands back whatever sys.modules holds for the name once exec_module returns
            sys.modules[module.__name__] = importlib.import_module(new)
            return
        _warn(module.__name__, ", ".join(new))
        module.__getattr__ = _split_getattr(module.__name__, tuple(new))  # type: ignore[method-assign]


_FINDER = _MovedModules()
_NAMES: dict[str, dict[str, str]] = {}


def keep_old_paths(moves: Mapping[str, Target]) -> None:
    """Make each old dotted module name in ``moves`` import as its new one (with a DeprecationWarning)."""
    _FINDER.moved.update(moves)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def keep_old_names(module: str, moves: Mapping[str, str]) -> None:
    """Keep the public names that moved out of ``module`` (still there) readable from it for one release:
    ``moves`` maps each name to the module that defines it now. Call it at the end of ``module``."""
    mod = sys.modules[module]
    previous = mod.__dict__.get("__getattr__")

    def __getattr__(name: str) -> Any:
        new = moves.get(name)
        if new is None:
            if previous is not None:
                return previous(name)
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        _warn(f"{module}.{name}", f"{new}.{name}")
        return getattr(importlib.import_module(new), name)

    mod.__getattr__ = __getattr__  # type: ignore[method-assign]
    _NAMES[module] = dict(moves)


def old_paths() -> dict[str, Target]:
    """Every moved module name and where it lives now (for tests and docs)."""
    return dict(_FINDER.moved)


def old_names() -> dict[str, dict[str, str]]:
    """Every module that keeps moved names, with each name and the module that holds it now."""
    return {module: dict(names) for module, names in _NAMES.items()}
