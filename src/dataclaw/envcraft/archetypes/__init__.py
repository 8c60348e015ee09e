"""Registry of the reference environments (EnvCraft B.3 interaction archetypes).

An archetype is one folder here holding an environment package (``__init__.py`` exporting
``ENVIRONMENT``); it is discovered by name, so adding one needs no edit to this file.
"""

from __future__ import annotations

import functools
from pathlib import Path

from dataclaw.envcraft.runtime.loader import EnvPackage, load_env_package

ARCHETYPES_DIR = Path(__file__).resolve().parent


def names() -> list[str]:
    """Folder names of the archetype packages, sorted."""
    return sorted(
        p.name
        for p in ARCHETYPES_DIR.iterdir()
        if p.is_dir() and not p.name.startswith(("_", ".")) and (p / "__init__.py").is_file()
    )


@functools.cache
def get(name: str) -> EnvPackage:
    """Load one archetype by folder name (its ``ENVIRONMENT.name`` must equal the folder name)."""
    if name not in names():
        from dataclaw.core.errors import ConfigError

        raise ConfigError(f"unknown archetype {name!r}; known: {', '.join(names()) or 'none'}")
    package = load_env_package(f"{__name__}.{name}")
    if package.name != name:
        from dataclaw.core.errors import ConfigError

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
