"""Registry of the reference environments (EnvCraft B.3 interaction archetypes).

An archetype is one folder, discovered by name, so adding one needs no edit outside it:

- an environment package: ``__init__.py`` exporting ``ENVIRONMENT``, its modules, README.md, SKILL.md,
  ``data/``;
- ``archetype.yaml`` (required): its blueprint entry, what synthesis quotes and retrieves it by (the
  paper's number and title, the blueprint text, the retrieval keywords; see
  :class:`dataclaw.envcraft.scenarios.Blueprint`);
- ``mechanic.py`` (optional): its compiler mechanic, registered with ``@mechanic("<name>")`` from
  :mod:`dataclaw.envcraft.synth.compile`; only the compiler imports it.

The last two are :func:`compiler_file` s: they belong to synthesis, not to the environment, so the
environment's code listings (generation prompts, the judge's material) and the audit leave them out.

Built-ins are the folders beside this file. Out of tree, an installed distribution declares an entry point
in the group ``dataclaw.archetypes`` whose value names an importable package laid out like this one (one
folder per archetype), e.g. ``[project.entry-points."dataclaw.archetypes"] my_envs = "my_envs.archetypes"``;
the entry point's name only labels it, and the package is found, not imported. A name taken twice is
refused. An installed archetype is trusted code, like any plugin: its environment opens in-process as the
built-ins do (:func:`dataclaw.envcraft.runtime.resolve.resolve_env`), its mechanic is imported to compile.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from dataclaw.core.errors import ConfigError
from dataclaw.core.registry import Registry
from dataclaw.envcraft.runtime.loader import EnvPackage, load_env_package

ARCHETYPES_DIR = Path(__file__).resolve().parent
ARCHETYPE_FILE = "archetype.yaml"
MECHANIC_FILE = "mechanic.py"
COMPILER_FILES = frozenset({ARCHETYPE_FILE, MECHANIC_FILE})


@dataclass(frozen=True)
class Archetype:
    """Where one archetype lives: its folder and the import name of its environment package."""

    name: str
    folder: Path
    module: str

    @property
    def mechanic_module(self) -> str | None:
        """Import name of its compiler mechanic (``mechanic.py``), when it has one."""
        return f"{self.module}.mechanic" if (self.folder / MECHANIC_FILE).is_file() else None


def scan(root: Path, package: str) -> list[Archetype]:
    """The archetype folders of the package ``package`` at ``root``: sub-folders with an ``__init__.py``."""
    return [
        Archetype(p.name, p.resolve(), f"{package}.{p.name}")
        for p in sorted(root.iterdir())
        if p.is_dir() and not p.name.startswith(("_", ".")) and (p / "__init__.py").is_file()
    ]


class _ArchetypeRegistry(Registry[Archetype]):
    """The folders beside this file, then those of the packages ``dataclaw.archetypes`` entry points name."""

    def _load_builtins(self) -> None:
        for archetype in scan(ARCHETYPES_DIR, __name__):
            self.register(archetype.name, archetype)

    def _load_entry_point(self, ep: importlib.metadata.EntryPoint) -> None:
        """Scan the package the entry point names: found on ``sys.path``, not imported (its folders'
        environments are imported only when opened, as the built-ins are)."""
        dist = getattr(getattr(ep, "dist", None), "name", None) or "an installed package"
        where = f"entry point '{ep.name} = {ep.value}' in group {self.group} (from {dist})"
        try:
            spec = importlib.util.find_spec(ep.value) if ":" not in ep.value else None
        except (ImportError, ValueError) as exc:
            raise ConfigError(f"{where} could not be found: {type(exc).__name__}: {exc}") from None
        if spec is None or not spec.submodule_search_locations:
            raise ConfigError(f"{where} must name an importable package of archetype folders")
        for root in spec.submodule_search_locations:
            for archetype in scan(Path(root), ep.value):
                try:
                    self.register(archetype.name, archetype)
                except ConfigError as exc:
                    raise ConfigError(f"{where}: {exc}") from None


ARCHETYPES: Registry[Archetype] = _ArchetypeRegistry("archetype")


def names() -> list[str]:
    """Names of the archetypes (their folder names), sorted."""
    return ARCHETYPES.names()


def archetype(name: str) -> Archetype:
    """One archetype's folder and import name."""
    if name not in ARCHETYPES:
        raise ConfigError(f"unknown archetype {name!r}; known: {', '.join(names()) or 'none'}")
    return ARCHETYPES.get(name)


def compiler_file(path: Path) -> bool:
    """Whether ``path`` is a synthesis-side file of an archetype folder (``archetype.yaml``, or
    ``mechanic.py`` beside one) rather than part of the environment package."""
    return path.name in COMPILER_FILES and (path.parent / ARCHETYPE_FILE).is_file()


@functools.cache
def get(name: str) -> EnvPackage:
    """Load one archetype by name (its ``ENVIRONMENT.name`` must equal the folder name)."""
    package = load_env_package(archetype(name).module)
    if package.name != name:
        raise ConfigError(f"archetype folder {name!r} holds an environment named {package.name!r}")
    return package


def all_packages() -> list[EnvPackage]:
    """Every archetype, loaded (refuses two packages with the same environment name)."""
    out: dict[str, EnvPackage] = {}
    for name in names():
        pkg = get(name)
        if pkg.name in out:
            raise ValueError(f"duplicate environment name {pkg.name!r}")
        out[pkg.name] = pkg
    return list(out.values())
