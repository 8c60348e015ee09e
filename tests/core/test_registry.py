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


def test_a_component_without_a_name_is_refused():
    with pytest.raises(ConfigError, match="has no name"):
        Registry("miner").add(type("Nameless", (), {}))
