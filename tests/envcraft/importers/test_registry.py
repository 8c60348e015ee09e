"""The importer registry and the import commands: formats listed, auto-detection that says what it tried,
one clear error for a format of the wrong kind, plug-ins through the ``dataclaw.importers`` entry point."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dataclaw.cli.app import _run
from dataclaw.core.errors import ConfigError
from dataclaw.envcraft.importers import IMPORTERS, Produces, detect, importers_for, resolve
from dataclaw.envcraft.importers.base import _ImporterRegistry


def test_the_builtin_formats_are_registered_with_what_they_make() -> None:
    assert {"pinchbench", "clawforge"} <= set(IMPORTERS.names())
    assert "pinchbench" in importers_for(Produces.TASKS)
    assert "clawforge" in importers_for(Produces.ENVIRONMENTS)
    assert "clawforge" not in importers_for(Produces.TASKS)


def test_a_folder_of_no_format_names_every_format_tried_and_why(tmp_path: Path, capsys) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    found = detect(tmp_path, Produces.TASKS)
    assert found.name is None and "pinchbench" in found.tried
    assert _run(["tasks", "import", "auto", str(tmp_path), "-o", str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err
    assert "is none of the formats tried" in err
    for name in importers_for(Produces.TASKS):
        assert f"{name}: " in err  # each format with its reason
    assert "Traceback" not in err
    assert _run(["env", "import", "auto", str(tmp_path), "-o", str(tmp_path / "lib")]) == 1
    assert "clawforge: " in capsys.readouterr().err


def test_a_format_of_the_other_kind_or_a_missing_source_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="makes tasks, not environments"):
        resolve("pinchbench", tmp_path, Produces.ENVIRONMENTS)
    with pytest.raises(ConfigError, match="does not exist"):
        resolve("pinchbench", tmp_path / "nope", Produces.TASKS)
    with pytest.raises(ConfigError, match="unknown importer 'nosuch'"):
        resolve("nosuch", tmp_path, Produces.TASKS)
    with pytest.raises(ConfigError, match="not in the pinchbench format"):
        resolve("pinchbench", tmp_path, Produces.TASKS)


def test_list_shows_the_formats(capsys) -> None:
    assert _run(["tasks", "import", "--list"]) == 0
    assert "pinchbench" in capsys.readouterr().out
    assert _run(["env", "import", "--list"]) == 0
    assert "clawforge" in capsys.readouterr().out


PLUGIN = """
from dataclaw.envcraft.importers.base import Importer, Produces


class JsonlTasks(Importer):
    name = "jsonl-tasks"
    produces = frozenset({Produces.TASKS})

    def sniff(self, src):
        return None if src.suffix == ".jsonl" else "not a .jsonl file"

    def items(self, src, ctx):
        return iter(())

    def convert(self, item, ctx):
        return []
"""


def test_an_installed_distribution_adds_an_importer_through_its_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "dc_plugin_importer.py").write_text(PLUGIN)
    dist = tmp_path / "dc_plugin_importer-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: dc-plugin-importer\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[dataclaw.importers]\njsonl-tasks = dc_plugin_importer:JsonlTasks\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = _ImporterRegistry("importer", builtins=[])  # a fresh registry: the real loading path
    assert registry.names() == ["jsonl-tasks"]
    assert registry.get("jsonl-tasks")().sniff(tmp_path / "x.jsonl") is None
    sys.modules.pop("dc_plugin_importer", None)
