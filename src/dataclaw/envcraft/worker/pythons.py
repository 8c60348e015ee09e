"""Side-venv interpreters for environment packages whose code needs its own dependencies.

A package may hold ``runtime.json`` naming a Python environment (``{"python_env": "tau2"}``): its env
worker then runs on that interpreter instead of dataclaw's (the sandbox mounts it read-only and puts
dataclaw's source first on ``sys.path``, so the worker's server runs there too). The name resolves to
``$DATACLAW_<NAME>_PYTHON``, else ``.venv-<name>/bin/python`` in the working directory or in dataclaw's
checkout (``make <name>-setup`` builds it). Only names resolve, never paths the package writes: a package
cannot pick an arbitrary host binary.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

RUNTIME_FILE = "runtime.json"
_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")


class PythonEnvMissing(RuntimeError):
    """The package names a Python environment that is not installed (the message says how to get it)."""


def python_env_name(folder: Path) -> str | None:
    """The Python environment ``folder``'s ``runtime.json`` names, or None (dataclaw's own Python)."""
    path = folder / RUNTIME_FILE
    if not path.is_file():
        return None
    try:
        name = json.loads(path.read_text(encoding="utf-8")).get("python_env")
    except (OSError, ValueError, AttributeError):
        raise PythonEnvMissing(f"{folder.name}/{RUNTIME_FILE} is not a JSON object") from None
    if name is None:
        return None
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise PythonEnvMissing(f"{folder.name}/{RUNTIME_FILE}: python_env must be a short lowercase name")
    return name


def python_for(name: str) -> Path:
    """The interpreter of the named Python environment (see the module doc for where it is looked for)."""
    var = f"DATACLAW_{name.upper()}_PYTHON"
    if os.environ.get(var):
        found = Path(os.environ[var])
        if not found.is_file():
            raise PythonEnvMissing(f"${var} is {str(found)!r}, which is not a file")
        return found
    import dataclaw

    checkout = Path(dataclaw.__file__).resolve().parents[2]
    for root in dict.fromkeys([Path.cwd(), checkout]):
        cand = root / f".venv-{name}" / "bin" / "python"
        if cand.is_file():
            return cand
    raise PythonEnvMissing(
        f"this environment runs on the {name!r} Python environment, which is not installed: "
        f"run `make {name}-setup` in dataclaw's checkout (creates .venv-{name}) or set ${var}"
    )


def package_python(folder: Path) -> Path | None:
    """The interpreter ``folder``'s env worker runs on, or None for dataclaw's own."""
    name = python_env_name(folder)
    return None if name is None else python_for(name)
