"""The importer registry and the import commands: formats listed, auto-detection that says what it tried,
one clear error for a format of the wrong kind, plug-ins through the ``dataclaw.importers`` entry point."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dataclaw.cli.app import _run
from dataclaw.core.errors import ConfigError
from dataclaw.core.registry import Registry
from dataclaw.envcraft.importers import IMPORTERS, Produces, detect, importers_for, resolve


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
from dataclaw.envcraft.importers.base import IMPORTERS, Importer, Produces


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
SELF_REGISTERING = PLUGIN.replace("class JsonlTasks", "@IMPORTERS.add\nclass JsonlTasks")


def install(site: Path, entry_points: str, code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The module ``dc_plugin_importer`` (``code``) and a dist-info declaring ``entry_points`` in the
    ``dataclaw.importers`` group, on ``sys.path`` as pip would leave them."""
    site.mkdir(parents=True, exist_ok=True)
    (site / "dc_plugin_importer.py").write_text(code)
    dist = site / "dc_plugin_importer-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: dc-plugin-importer\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[dataclaw.importers]\n{entry_points}\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "dc_plugin_importer", raising=False)


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Registry:
    """IMPORTERS as a new process sees it: loaded again on the next lookup, and what a test registers
    gone after it."""
    monkeypatch.setattr(IMPORTERS, "_items", dict(IMPORTERS._items))
    monkeypatch.setattr(IMPORTERS, "_loaded", False)
    request.addfinalizer(lambda: sys.modules.pop("dc_plugin_importer", None))
    return IMPORTERS


def test_an_installed_distribution_adds_an_importer_through_its_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: Registry
) -> None:
    install(tmp_path, "jsonl-tasks = dc_plugin_importer:JsonlTasks", PLUGIN, monkeypatch)
    assert IMPORTERS.group == "dataclaw.importers"  # the group of its kind, as every registry's
    assert "jsonl-tasks" in importers_for(Produces.TASKS)
    assert IMPORTERS.get("jsonl-tasks")().sniff(tmp_path / "x.jsonl") is None
    (tmp_path / "x.jsonl").write_text("")
    assert resolve("auto", tmp_path / "x.jsonl", Produces.TASKS).__name__ == "JsonlTasks"


def test_an_entry_point_may_name_a_module_that_registers_its_importers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: Registry
) -> None:
    install(tmp_path, "mine = dc_plugin_importer", SELF_REGISTERING, monkeypatch)
    assert "jsonl-tasks" in IMPORTERS.names() and "mine" not in IMPORTERS.names()  # the name: a label


def test_a_broken_importer_entry_point_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: Registry
) -> None:
    install(
        tmp_path, "jsonl-tasks = dc_plugin_importer:JsonlTasks", "raise RuntimeError('boom')", monkeypatch
    )
    with pytest.raises(ConfigError) as err:
        IMPORTERS.names()
    assert str(err.value) == (
        "entry point 'jsonl-tasks = dc_plugin_importer:JsonlTasks' in group dataclaw.importers "
        "(from dc-plugin-importer) could not be loaded: RuntimeError: boom"
    )


def test_an_importer_entry_point_cannot_take_a_builtin_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: Registry
) -> None:
    install(tmp_path, "pinchbench = dc_plugin_importer:JsonlTasks", PLUGIN, monkeypatch)
    with pytest.raises(ConfigError) as err:
        IMPORTERS.names()
    assert str(err.value).startswith(
        "entry point 'pinchbench = dc_plugin_importer:JsonlTasks' in group dataclaw.importers "
        "(from dc-plugin-importer): importer name 'pinchbench' is already registered by "
        "dataclaw.envcraft.importers.pinchbench."
    )
