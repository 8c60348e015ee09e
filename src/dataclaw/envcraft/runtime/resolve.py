"""What an environment reference names, decided once: a built-in archetype, a package folder, or an
importable package.

Commands, task records and exports name environments by an archetype name (``state_machine``), an
archetype's import name (``dataclaw.envcraft.archetypes.state_machine``), a package folder
(``lib/envs/crm`` — a synthesised library's entry, an imported package, a user's folder) or an import name
of a package elsewhere on ``sys.path``. :func:`resolve_env` tells which **without importing anything**
(importing a package, or a parent package, would run its code in this process), and every caller — the
CLI, task stages, exports, ``env serve`` and the env worker — acts on the one :class:`EnvRef` it returns;
a reference that names nothing is one :class:`UnknownEnvError`.
"""

from __future__ import annotations

import importlib.machinery
import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from dataclaw.core.errors import ConfigError


class EnvKind(StrEnum):
    ARCHETYPE = "archetype"
    """An archetype, built in or installed (``dataclaw.archetypes``): trusted code, opened in-process."""
    FOLDER = "folder"
    """A package folder given as a path."""
    MODULE = "module"
    """An importable package given by import name (found on ``sys.path``, not imported)."""


class UnknownEnvError(ConfigError):
    """A reference that names no environment package (the message says what was looked for)."""


@dataclass(frozen=True)
class EnvRef:
    """A resolved environment reference."""

    kind: EnvKind
    ref: str
    """The reference as given (an archetype's name for an archetype)."""
    folder: Path
    """The package folder."""

    @property
    def builtin(self) -> bool:
        return self.kind is EnvKind.ARCHETYPE

    @property
    def archetype(self) -> str | None:
        """The archetype's name, or None for any other package."""
        return self.ref if self.builtin else None


def archetype_name(ref: str | Path) -> str | None:
    """The archetype ``ref`` names (its name, import name or folder), else None."""
    from dataclaw.envcraft import archetypes

    if isinstance(ref, Path) or "/" in str(ref):
        path = Path(ref).resolve()
        found = next((n for n in archetypes.names() if archetypes.archetype(n).folder == path), None)
    else:
        found = next((n for n in archetypes.names() if archetypes.archetype(n).module == ref), str(ref))
    return found if found in archetypes.names() else None


def resolve_env(ref: str | Path, module: str | None = None) -> EnvRef:
    """What ``ref`` names. ``module`` is where a task record says environment ``ref`` was loaded from
    (``env_module``): an archetype's own import name (or none) keeps the archetype, anything else is
    resolved in its place. An archetype's name wins over a folder of the same name in the working
    directory; a path must be a package folder (with ``__init__.py``); an import name must be found on
    ``sys.path``."""
    from dataclaw.envcraft import archetypes

    if module is not None:
        name = archetype_name(ref)
        if name is None or module != archetypes.archetype(name).module:
            return resolve_env(module)
    name = archetype_name(ref)
    if name is not None:
        return EnvRef(EnvKind.ARCHETYPE, name, archetypes.archetype(name).folder)
    if isinstance(ref, Path) or "/" in str(ref) or Path(ref).is_dir():
        path = Path(ref)
        if not (path / "__init__.py").is_file():
            raise UnknownEnvError(f"{ref} is not an environment package folder (no __init__.py)")
        return EnvRef(EnvKind.FOLDER, str(ref), path.resolve())
    return EnvRef(EnvKind.MODULE, ref, _module_folder(ref))


def _module_folder(ref: str) -> Path:
    """The folder of the package import name ``ref``, found on ``sys.path`` without importing it."""
    from dataclaw.envcraft import archetypes

    parts = ref.split(".")
    spec = importlib.machinery.PathFinder.find_spec(parts[0], sys.path)
    if spec is None or not spec.submodule_search_locations:
        raise UnknownEnvError(
            f"unknown environment {ref!r}: not a built-in archetype ({', '.join(archetypes.names())}), "
            "a package folder or an importable package"
        )
    folder = Path(next(iter(spec.submodule_search_locations))).joinpath(*parts[1:])
    if not (folder / "__init__.py").is_file():
        raise UnknownEnvError(f"unknown environment {ref!r}: no package folder {folder}")
    return folder.resolve()
