"""Old import paths of modules that moved, kept for one release.

A package that moves a public module calls :func:`keep_old_paths` from its ``__init__`` with the old and
the new dotted names. Importing an old name then warns (``DeprecationWarning``, naming the new place) and
returns the new module itself, so ``from dataclaw.tailor.mine import MINERS`` and the new path see the same
objects (one registry, one class), and no file is left behind at the old place.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from collections.abc import Mapping
from types import ModuleType


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old module name and loads the module now at its new name in its place."""

    def __init__(self) -> None:
        self.moved: dict[str, str] = {}

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> object:
        if fullname not in self.moved:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # a placeholder: exec_module swaps the new module in under the old name

    def exec_module(self, module: ModuleType) -> None:
        new = self.moved[module.__name__]
        warnings.warn(
            f"{module.__name__} moved to {new}; the old import path will be removed in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        # the import system hands back whatever sys.modules holds for the name once exec_module returns
        sys.modules[module.__name__] = importlib.import_module(new)


_FINDER = _MovedModules()


def keep_old_paths(moves: Mapping[str, str]) -> None:
    """Make each old dotted module name in ``moves`` import as its new one (with a DeprecationWarning)."""
    _FINDER.moved.update(moves)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def old_paths() -> dict[str, str]:
    """Every moved module name and where it lives now (for tests and docs)."""
    return dict(_FINDER.moved)
