import sys
import types

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.core.registry import Registry


def test_registers_by_name_and_refuses_a_different_object_under_the_same_name():
    reg: Registry[type] = Registry("widget")

    @reg.add
    class Knob:
        name = "knob"

    assert reg.get("knob") is Knob
    reg.add(Knob)  # the same class again (a module imported twice) is fine

    class Other:
        name = "knob"

    with pytest.raises(ConfigError, match=r"widget name 'knob' is already registered by .*Knob"):
        reg.add(Other)


def test_unknown_names_list_the_known_ones_and_builtins_load_lazily(tmp_path, monkeypatch, request):
    reg: Registry[object] = Registry("stream reader", builtins=["lazy_reader_mod"])
    holder = types.ModuleType("lazy_reader_holder")
    holder.REG = reg
    monkeypatch.setitem(sys.modules, "lazy_reader_holder", holder)
    (tmp_path / "lazy_reader_mod.py").write_text(
        "import lazy_reader_holder\nlazy_reader_holder.REG.named('c')(3)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    request.addfinalizer(lambda: sys.modules.pop("lazy_reader_mod", None))
    reg.named("b")(1)
    reg.named("a")(2)
    assert "lazy_reader_mod" not in sys.modules  # registering does not import the built-ins
    with pytest.raises(ConfigError, match="unknown stream reader 'd': expected one of a, b, c"):
        reg.get("d")
    assert "lazy_reader_mod" in sys.modules and reg.get("c") == 3
    assert reg.names() == ["a", "b", "c"] and "a" in reg and [n for n, _ in reg.items()] == ["a", "b", "c"]


def test_a_registry_may_word_its_unknown_name_error_and_choose_its_class():
    class UnknownWidget(ConfigError):
        pass

    reg: Registry[int] = Registry(
        "widget", unknown="no {kind} '{name}' (known: {known})", error=UnknownWidget
    )
    reg.named("knob")(1)
    with pytest.raises(UnknownWidget, match=r"^no widget 'dial' \(known: knob\)$"):
        reg.get("dial")


def test_a_component_without_a_name_is_refused():
    with pytest.raises(ConfigError, match="has no name"):
        Registry("miner").add(type("Nameless", (), {}))


# ------------------------------------------------------------------------------------------------
# plugins: entry points of installed distributions and --plugin modules

PLUGIN_MODULE = """
from dataclaw.tailor.validation.base import Failure, ValidationIssue


def no_lorem(output, ctx, fields):
    return [
        Failure(ValidationIssue.UNGROUNDED_TEXT, f"{f}: placeholder text", span="lorem")
        for f in fields
        if "lorem" in str(output.get(f, ""))
    ]
"""


def _install(site, name: str, entry_points: str, module: str, code: str) -> None:
    """A distribution as pip installs it: a module and a ``*.dist-info`` with ``entry_points.txt``."""
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    (info / "RECORD").write_text("")
    (site / f"{module}.py").write_text(code)


def test_an_installed_entry_point_registers_a_validator(tmp_path, monkeypatch, request):
    site = tmp_path / "site-packages"
    _install(
        site,
        "dc_lorem",
        "[dataclaw.validators]\nno_lorem = dc_lorem_mod:no_lorem\n",
        "dc_lorem_mod",
        PLUGIN_MODULE,
    )
    monkeypatch.syspath_prepend(str(site))
    request.addfinalizer(lambda: sys.modules.pop("dc_lorem_mod", None))
    reg: Registry[object] = Registry("validator")  # the group of the kind: dataclaw.validators
    assert reg.group == "dataclaw.validators"
    assert "no_lorem" in reg.names()
    fails = reg.get("no_lorem")({"answer": "lorem ipsum"}, {}, fields=["answer"])  # type: ignore[operator]
    assert fails[0].span == "lorem" and fails[0].reason == "ungrounded_text"


def test_a_broken_entry_point_is_one_clear_error(tmp_path, monkeypatch):
    site = tmp_path / "site-packages"
    _install(
        site,
        "dc_broken",
        "[dataclaw.readers]\nbroken = dc_broken_mod:Reader\n",
        "dc_broken_mod",
        "raise RuntimeError('boom')\n",
    )
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(
        ConfigError,
        match=r"entry point 'broken = dc_broken_mod:Reader' in group dataclaw\.readers "
        r"\(from dc_broken\) could not be loaded: RuntimeError: boom",
    ):
        Registry("stream reader").names()


def test_plugin_module_on_the_tailor_command_line(tmp_path, monkeypatch, capsys):
    from dataclaw.cli.app import _run

    monkeypatch.setenv("DATACLAW_PLUGINS", "")
    monkeypatch.setenv("PYTHONPATH", "")
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dc_lines_plugin.py").write_text(
        "from dataclaw.tailor.export import Exporter, register_exporter\n\n\n"
        "@register_exporter\n"
        "class Lines(Exporter):\n"
        "    name = 'plugin_lines'\n\n"
        "    def write(self, run_dir, samples, out, summary):\n"
        "        (out / 'ids.txt').write_text(''.join(c.sample.id + '\\n' for c in samples))\n"
        "        return ['ids.txt']\n"
    )
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text("{}")
    out = tmp_path / "out"
    args = ["tailor", "export", str(run), "--format", "plugin_lines", "--out", str(out)]
    assert _run([*args, "--plugin", "dc_lines_plugin"]) == 1  # the plugin wrote it; nothing to export
    printed, err = capsys.readouterr()
    assert (out / "ids.txt").read_text() == "" and "0 samples: the run produced no samples" in printed
    assert "exported no sample: the run produced no samples" in err
    import os

    assert os.environ["DATACLAW_PLUGINS"] == "dc_lines_plugin"  # worker processes import it too
    assert _run([*args, "--plugin", "no_such_plugin_mod"]) == 1
    err = capsys.readouterr().err
    assert "plugin module 'no_such_plugin_mod' not found" in err and "Traceback" not in err
    sys.modules.pop("dc_lines_plugin", None)
