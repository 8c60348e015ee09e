"""@tool: schema derivation (C.3 + OpenAI), validation before the call, declaration errors."""

from __future__ import annotations

from typing import Literal

import jsonschema
import pytest

from dataclaw.envcraft.runtime import EnvError, ErrorCategory, ToolSet, tool
from dataclaw.envcraft.runtime.tools import parse_docstring


@tool("write", fields=["things"], returns=["thing"])
def make_thing(
    session: dict,
    name: str,
    size: int,
    kind: Literal["a", "b"] = "a",
    ratio: float = 0.5,
    tags: list[str] | None = None,
    extra: dict | None = None,
    on: bool = False,
) -> dict:
    """Make a thing.

    Longer explanation on a second paragraph.

    Args:
        name: the thing's name.
        size: how big,
            continued on the next line.
        kind: its kind.
        ratio: a ratio.
        tags: labels.
        extra: free-form data.
        on: switched on.

    Returns:
        The thing.
    """
    return {"thing": name}


SPEC = make_thing.__envcraft_tool__


def test_unified_schema_has_c3_fields() -> None:
    s = SPEC.unified_schema()
    assert s["name"] == "make_thing"
    assert s["description"] == "Make a thing. Longer explanation on a second paragraph."
    assert s["side_effect"] == "write" and s["modifies_state"] is True
    assert s["state_fields_affected"] == ["things"]
    assert s["returns"]["success_keys"] == ["thing"] and s["returns"]["description"] == "The thing."
    props = s["parameters"]["properties"]
    assert s["parameters"]["required"] == ["name", "size"]
    assert props["size"] == {"type": "integer", "description": "how big, continued on the next line."}
    assert props["kind"]["enum"] == ["a", "b"] and props["kind"]["default"] == "a"
    assert props["tags"]["type"] == "array" and props["tags"]["items"] == {"type": "string"}
    assert props["extra"]["type"] == "object" and props["ratio"]["type"] == "number"
    assert props["on"]["type"] == "boolean"


def test_openai_schema_is_valid_json_schema() -> None:
    fn = SPEC.openai_schema()
    assert fn["type"] == "function" and fn["function"]["name"] == "make_thing"
    params = fn["function"]["parameters"]
    jsonschema.Draft202012Validator.check_schema(params)
    jsonschema.validate({"name": "x", "size": 3, "kind": "b"}, params)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"name": "x", "size": 3, "kind": "c"}, params)


@pytest.mark.parametrize(
    ("params", "category", "needle"),
    [
        ({"size": 1}, ErrorCategory.MISSING_FIELD, "'name'"),
        ({"name": "x", "size": "3"}, ErrorCategory.INVALID_ARGUMENT, "must be an integer"),
        ({"name": "x", "size": True}, ErrorCategory.INVALID_ARGUMENT, "must be an integer"),
        ({"name": "x", "size": 2**70}, ErrorCategory.INVALID_ARGUMENT, "64-bit"),
        ({"name": "x", "size": 1, "kind": "z"}, ErrorCategory.INVALID_ARGUMENT, "one of 'a', 'b'"),
        ({"name": "x", "size": 1, "tags": ["ok", 3]}, ErrorCategory.INVALID_ARGUMENT, "item 1"),
        (
            {"name": "x", "size": 1, "colour": "red"},
            ErrorCategory.INVALID_ARGUMENT,
            "unknown parameter 'colour'",
        ),
        ({"name": "\ud800", "size": 1}, ErrorCategory.INVALID_ARGUMENT, "UTF-8"),
        ({"name": "x", "size": 1, "ratio": float("nan")}, ErrorCategory.INVALID_ARGUMENT, "number"),
    ],
)
def test_validation_rejects_bad_params(params: dict, category: ErrorCategory, needle: str) -> None:
    with pytest.raises(EnvError) as info:
        SPEC.validate(params)
    assert info.value.category == category
    assert needle in info.value.message


def test_validation_fills_defaults_and_widens_int_to_float() -> None:
    out = SPEC.validate({"name": "x", "size": 2, "ratio": 1, "tags": None})
    assert out == {
        "name": "x",
        "size": 2,
        "kind": "a",
        "ratio": 1.0,
        "tags": None,
        "extra": None,
        "on": False,
    }
    assert isinstance(out["ratio"], float)


def test_declaration_errors_are_loud() -> None:
    with pytest.raises(TypeError, match="docstring"):
        tool("read")(lambda session: {})

    def undocumented(session: dict, x: int) -> dict:
        """Does things."""
        return {}

    with pytest.raises(TypeError, match="not described"):
        tool("read")(undocumented)

    def untyped(session, x):  # type: ignore[no-untyped-def]
        """Does things.

        Args:
            x: a thing.
        """

    with pytest.raises(TypeError, match="type hint"):
        tool("read")(untyped)
    with pytest.raises(ValueError, match="must declare"):
        tool("write")
    with pytest.raises(ValueError, match="read tool"):
        tool("read", fields=["x"])
    with pytest.raises(ValueError, match="side_effect"):
        tool("delete")  # type: ignore[arg-type]


def test_toolset_refuses_duplicates_and_reports_unknown_tools() -> None:
    ts = ToolSet([SPEC])
    with pytest.raises(ValueError, match="duplicate"):
        ts.add(SPEC)
    with pytest.raises(EnvError) as info:
        ts.get("nope")
    assert info.value.category == ErrorCategory.UNKNOWN_TOOL and "make_thing" in info.value.message
    assert ts.openai_schemas()[0]["function"]["name"] == "make_thing"


def test_parse_docstring_sections() -> None:
    desc, args, ret = parse_docstring(
        "Title line.\n\nArgs:\n    a (int): first.\n    b: second\n\nReturns:\n    x."
    )
    assert desc == "Title line." and args == {"a": "first.", "b": "second"} and ret == "x."
