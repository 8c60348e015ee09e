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


def test_unknown_names_list_the_known_ones_and_builtins_load_lazily():
    reg: Registry[object] = Registry("stream reader", builtins=["dataclaw.core.ids"])
    reg.named("b")(1)
    reg.named("a")(2)
    with pytest.raises(ConfigError, match="unknown stream reader 'c': expected one of a, b"):
        reg.get("c")
    assert reg.names() == ["a", "b"] and "a" in reg and [n for n, _ in reg.items()] == ["a", "b"]


def test_a_component_without_a_name_is_refused():
    with pytest.raises(ConfigError, match="has no name"):
        Registry("miner").add(type("Nameless", (), {}))
