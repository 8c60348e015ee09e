"""Fixtures: environment packages that are NOT built in (archetype copies, the counter fixture, hostile
variants of it), each in a temp folder, so every one of them must go through the env worker."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dataclaw.envcraft.archetypes import ARCHETYPES_DIR
from dataclaw.sandbox import sandbox_available

COUNTER_DIR = Path(__file__).parent.parent / "fixtures" / "counter_env"


@pytest.fixture(autouse=True)
def require_bwrap() -> None:
    avail = sandbox_available()
    if not avail:
        pytest.skip(avail.reason)


def copy_archetype(name: str, dest: Path, as_name: str) -> Path:
    """An archetype copied to ``dest/as_name`` with its absolute imports pointing at the copy: a package
    like one a user or the synthesiser writes, which dataclaw must not import."""
    folder = dest / as_name
    shutil.copytree(ARCHETYPES_DIR / name, folder, ignore=shutil.ignore_patterns("__pycache__"))
    for py in folder.rglob("*.py"):
        py.write_text(py.read_text().replace(f"dataclaw.envcraft.archetypes.{name}", as_name))
    return folder


def counter_copy(dest: Path, as_name: str, *, tools: str = "", at_import: str = "") -> Path:
    """The counter fixture package copied as ``as_name``, with extra ``@tool`` functions (``tools``,
    defined before the environment class collects them) and code run at import (``at_import``)."""
    folder = dest / as_name
    shutil.copytree(COUNTER_DIR, folder, ignore=shutil.ignore_patterns("__pycache__"))
    env_py = folder / "env.py"
    text = env_py.read_text()
    if tools:
        text = text.replace("EVALUATOR = Evaluator()", tools.strip() + "\n\n\nEVALUATOR = Evaluator()", 1)
    env_py.write_text(text)
    if at_import:
        init = folder / "__init__.py"
        init.write_text(at_import.strip() + "\n\n" + init.read_text())
    return folder


@pytest.fixture(scope="module")
def pkgs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pkgs")
