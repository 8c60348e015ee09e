"""resolve_env: one decision of what an environment reference names, without importing it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from dataclaw.envcraft import archetypes
from dataclaw.envcraft.runtime.resolve import EnvKind, UnknownEnvError, resolve_env

COUNTER = Path(__file__).parent / "fixtures" / "counter_env"


def test_an_archetype_by_name_import_name_or_folder_is_the_builtin() -> None:
    for ref in (
        "state_machine",
        "dataclaw.envcraft.archetypes.state_machine",
        archetypes.ARCHETYPES_DIR / "state_machine",
    ):
        found = resolve_env(ref)
        assert found.kind is EnvKind.ARCHETYPE and found.builtin and found.archetype == "state_machine"
        assert found.folder == archetypes.ARCHETYPES_DIR / "state_machine"


def test_a_task_module_other_than_the_archetypes_own_wins(tmp_path: Path) -> None:
    assert resolve_env("state_machine", "dataclaw.envcraft.archetypes.state_machine").builtin
    folder = shutil.copytree(COUNTER, tmp_path / "counter_env")
    found = resolve_env("state_machine", str(folder))
    assert found.kind is EnvKind.FOLDER and found.folder == folder.resolve() and found.archetype is None


def test_a_folder_and_an_import_name_are_found_without_importing(tmp_path: Path, monkeypatch) -> None:
    folder = shutil.copytree(COUNTER, tmp_path / "resolved_counter")
    assert resolve_env(folder).kind is EnvKind.FOLDER
    assert resolve_env(str(folder)).folder == folder.resolve()
    monkeypatch.syspath_prepend(str(tmp_path))
    found = resolve_env("resolved_counter")
    assert found.kind is EnvKind.MODULE and found.folder == folder.resolve()
    assert "resolved_counter" not in sys.modules


def test_a_reference_that_names_nothing_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(UnknownEnvError, match="unknown environment 'no_such_env': not a built-in archetype"):
        resolve_env("no_such_env")
    (tmp_path / "not_a_pkg").mkdir()
    with pytest.raises(UnknownEnvError, match="not an environment package folder"):
        resolve_env(tmp_path / "not_a_pkg")
