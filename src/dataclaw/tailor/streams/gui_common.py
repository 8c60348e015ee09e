"""Shared GUI parsing: pyautogui action code (AgentNet / OpenCUA trajectories) -> typed action dicts.

The code is parsed with :mod:`ast` and literal evaluation only; it is never executed.
"""

from __future__ import annotations

import ast
from typing import Any

from dataclaw.core import pyast

# pyautogui / computer function -> normalised action type
_ACTION_TYPES = {
    "click": "click",
    "leftClick": "click",
    "rightClick": "right_click",
    "middleClick": "middle_click",
    "doubleClick": "double_click",
    "tripleClick": "triple_click",
    "moveTo": "move",
    "dragTo": "drag",
    "scroll": "scroll",
    "hscroll": "hscroll",
    "write": "type",
    "typewrite": "type",
    "press": "key",
    "hotkey": "hotkey",
    "keyDown": "key_down",
    "keyUp": "key_up",
    "terminate": "terminate",
    "wait": "wait",
}
_POSITIONAL = {"scroll": ["clicks"], "hscroll": ["clicks"], "write": ["message"], "typewrite": ["message"]}


class ActionParseError(ValueError):
    """Action code that is not a sequence of literal pyautogui/computer calls."""


def parse_actions(code: str) -> list[dict[str, Any]]:
    """``pyautogui.click(x=0.5, y=0.2)\\npyautogui.write(message='hi')`` -> typed action dicts.

    Each dict has ``action`` (normalised type), ``call`` (the function name) and its literal keyword
    arguments; coordinates stay as given (AgentNet uses 0-1 normalised coordinates).
    """
    try:
        tree = pyast.parse(code.strip())
    except SyntaxError as exc:
        raise ActionParseError(f"action code is not valid Python: {exc.msg}") from exc
    actions: list[dict[str, Any]] = []
    for node in tree.body:
        if not isinstance(node, ast.Expr) or not isinstance(node.value, ast.Call):
            raise ActionParseError(f"unexpected statement in action code: {ast.unparse(node)[:80]}")
        call = node.value
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
        try:
            args = [ast.literal_eval(a) for a in call.args]
            kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
        except ValueError as exc:
            raise ActionParseError(f"non-literal argument in {name}(...)") from exc
        for key, value in zip(_POSITIONAL.get(name, ["x", "y"]), args, strict=False):
            kwargs.setdefault(key, value)
        if "keys" in kwargs and isinstance(kwargs["keys"], str):
            kwargs["keys"] = [kwargs["keys"]]
        actions.append({"action": _ACTION_TYPES.get(name, name), "call": name, **kwargs})
    return actions
