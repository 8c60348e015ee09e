"""A ClawForge tool-API environment on the EnvCraft runtime (copied into each imported package as ``env.py``).

Written by dataclaw's ClawForge importer; it runs only inside the env worker's sandbox, beside the
environment's own file (``api_source.py``, unchanged). The class's public methods are the tools; what
each takes, says and changes was read from the source by the importer (``data/api.json``: parameters
from the signature and the docstring's ``Args:``, the side effect and the state fields from what the
method body assigns or mutates on ``self``).

Session state = the class's ``get_env_state()``, as JSON: dicts keyed by integers (common in these
classes) get string keys, and the paths of such dicts are kept in ``_int_keys`` so the object gets its
integer keys back. Every call rebuilds the object from the session (``_load_scenario`` with the state,
then each state key set on its attribute), runs the method, and — for a write tool — stores the new
state. A result ``{"error": ...}`` (how these classes report failure) becomes an agent-safe runtime error
and changes nothing. The module's ``datetime`` / ``time`` are pointed at the session clock (base time +
action index), so timestamps are deterministic and journal replays agree.
"""

from __future__ import annotations

import copy
import datetime as _real_datetime
import importlib
import json
import time as _real_time
from pathlib import Path
from typing import Any, ClassVar

from dataclaw.envcraft.runtime import (
    EnvError,
    Environment,
    ErrorCategory,
    Evaluator,
    Scenario,
    ToolSet,
    ToolSpec,
    failed_actions,
    now,
    penalty_score,
)
from dataclaw.envcraft.runtime.tools import Param

HERE = Path(__file__).resolve().parent
API: dict[str, Any] = json.loads((HERE / "data" / "api.json").read_text(encoding="utf-8"))
PACKAGE = __name__.rsplit(".", 1)[0]
KEYS_FIELD = "_int_keys"
SOURCE = importlib.import_module(f"{PACKAGE}.api_source")
CLS = getattr(SOURCE, API["class"])

# ---- the session clock, seen by the environment's own module -----------------------------------------


class _Clock(_real_datetime.datetime):
    """``datetime`` whose now()/today()/utcnow() are the session clock (set before every call)."""

    current: ClassVar[_real_datetime.datetime | None] = None

    @classmethod
    def now(cls, tz: Any = None) -> Any:  # type: ignore[override]
        t = cls.current or _real_datetime.datetime(2025, 1, 1)
        return t.astimezone(tz) if tz is not None else t.replace(tzinfo=None)

    @classmethod
    def utcnow(cls) -> Any:  # type: ignore[override]
        return cls.now()

    @classmethod
    def today(cls) -> Any:  # type: ignore[override]
        return cls.now()


class _Date(_real_datetime.date):
    @classmethod
    def today(cls) -> Any:  # type: ignore[override]
        return _Clock.now().date()


class _Proxy:
    """A module stand-in: the named attributes replaced, everything else from the real module."""

    def __init__(self, real: Any, **override: Any) -> None:
        self._real, self._override = real, override

    def __getattr__(self, name: str) -> Any:
        return self._override[name] if name in self._override else getattr(self._real, name)


def _patch_clock(module: Any) -> None:
    for name, value in list(vars(module).items()):
        if value is _real_datetime.datetime:
            setattr(module, name, _Clock)
        elif value is _real_datetime.date:
            setattr(module, name, _Date)
        elif value is _real_datetime:
            setattr(module, name, _Proxy(_real_datetime, datetime=_Clock, date=_Date))
        elif value is _real_time:
            setattr(module, name, _Proxy(_real_time, time=lambda: _Clock.now().timestamp()))
        elif value is _real_time.time:
            setattr(module, name, lambda: _Clock.now().timestamp())


_patch_clock(SOURCE)

# ---- state <-> JSON ------------------------------------------------------------------------------------


def encode(value: Any, path: tuple[str, ...] = (), int_paths: list[list[str]] | None = None) -> Any:
    """``value`` as plain JSON; the paths of integer-keyed dicts are appended to ``int_paths``."""
    if isinstance(value, dict):
        if value and all(isinstance(k, int) and not isinstance(k, bool) for k in value):
            if int_paths is not None:
                int_paths.append(list(path))
        return {str(k): encode(v, (*path, str(k)), int_paths) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
        return [encode(v, (*path, str(i)), int_paths) for i, v in enumerate(items)]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, _real_datetime.datetime | _real_datetime.date):
        return value.isoformat()
    return str(value)


def _child(parent: Any, key: str) -> Any:
    if isinstance(parent, list):
        return parent[int(key)] if key.isdigit() and int(key) < len(parent) else None
    return parent.get(key) if isinstance(parent, dict) else None


def decode(state: dict[str, Any], int_paths: list[list[str]]) -> dict[str, Any]:
    """The inverse of :func:`encode` for the recorded integer-keyed dicts (deepest first, so the way
    down still has its string keys)."""
    out = copy.deepcopy(state)
    for path in sorted((p for p in int_paths if p), key=len, reverse=True):
        parent: Any = out
        for key in path[:-1]:
            parent = _child(parent, key)
        target = _child(parent, path[-1])
        if not isinstance(target, dict):
            continue
        fixed = {int(k) if k.lstrip("-").isdigit() else k: v for k, v in target.items()}
        if isinstance(parent, list):
            parent[int(path[-1])] = fixed
        else:
            parent[path[-1]] = fixed
    return out


def snapshot(obj: Any) -> tuple[dict[str, Any], list[list[str]]]:
    """The object's state as JSON, and its integer-keyed dict paths."""
    paths: list[list[str]] = []
    state = encode(obj.get_env_state(), (), paths)
    return {k: state.get(k) for k in API["state_keys"]}, paths


def restore(session: dict[str, Any]) -> Any:
    """A fresh object holding the session's state."""
    state = decode({k: session.get(k) for k in API["state_keys"]}, session.get(KEYS_FIELD) or [])
    obj = CLS()
    obj._load_scenario(copy.deepcopy(state))
    for key, attr in API["attributes"].items():
        if key in state:
            setattr(obj, attr, copy.deepcopy(state[key]))
    return obj


# ---- tools ---------------------------------------------------------------------------------------------

_DENIED = ("permission", "not authorized", "unauthorized", "authentication", "login required", "权限", "登录")
_MISSING = ("not found", "does not exist", "no such", "unknown", "不存在", "未找到")


def _category(message: str) -> ErrorCategory:
    text = message.lower()
    if any(w in text for w in _DENIED):
        return ErrorCategory.PERMISSION_DENIED
    if any(w in text for w in _MISSING):
        return ErrorCategory.INVALID_REFERENCE
    return ErrorCategory.INVALID_ARGUMENT


def _call(method: str, write: bool) -> Any:
    def run(session: dict[str, Any], **params: Any) -> dict[str, Any]:
        obj = restore(session)
        _Clock.current = _real_datetime.datetime.fromisoformat(now(session))
        try:
            result = getattr(obj, method)(**params)
        except EnvError:
            raise
        except Exception as exc:  # noqa: BLE001 - the environment's own failure, shown agent-safe
            raise EnvError(ErrorCategory.INVALID_ARGUMENT, f"{method} failed: {exc}") from None
        if isinstance(result, dict) and result.get("error"):
            raise EnvError(_category(str(result["error"])), str(result["error"]))
        if write:
            state, paths = snapshot(obj)
            session.update(state)
            session[KEYS_FIELD] = paths
        out = encode(result)
        return out if isinstance(out, dict) else {"result": out}

    run.__name__ = method
    return run


def _spec(doc: dict[str, Any]) -> ToolSpec:
    params = tuple(
        Param(
            p["name"],
            p["schema"],
            p["description"],
            p["required"],
            p.get("default"),
            p.get("nullable", False),
        )
        for p in doc["params"]
    )
    write = doc["side_effect"] == "write"
    fields = tuple(doc["fields"]) + ((KEYS_FIELD,) if write else ())
    return ToolSpec(
        name=doc["name"], fn=_call(doc["name"], write), description=doc["description"], params=params,
        side_effect=doc["side_effect"], state_fields_affected=fields if write else (),
        returns_description=doc.get("returns", ""), success_keys=tuple(doc.get("success_keys", ())),
    )  # fmt: skip


EVALUATOR = Evaluator()


@EVALUATOR.dimension("clean_actions", 1.0, "calls the environment did not refuse")
def clean_actions(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    failed = len(failed_actions(state))
    return penalty_score(failed, 0.2), f"{failed} refused calls"


def _default_state() -> dict[str, Any]:
    obj = CLS()
    obj._load_scenario({})
    state, paths = snapshot(obj)
    return {**state, KEYS_FIELD: paths}


class ClawForgeEnvironment(Environment):
    __doc__ = API.get("description") or f"ClawForge tool environment {API['class']}."

    name: ClassVar[str] = API["name"]
    env_var_prefix: ClassVar[str] = API["name"].upper()
    DEFAULT_STATE: ClassVar[dict[str, Any]] = _default_state()
    tools: ClassVar[ToolSet] = ToolSet(_spec(doc) for doc in API["tools"])
    evaluator: ClassVar[Evaluator] = EVALUATOR

    def on_scenario_loaded(self, state: dict[str, Any], scenario: Scenario) -> None:
        """A scenario's state (``evaluation.initial_state``, loaded through the class's own
        ``_load_scenario``) replaces the default state whole: these classes replace, never merge."""
        initial = scenario.evaluation.get("initial_state")
        if isinstance(initial, dict):
            obj = CLS()
            obj._load_scenario(decode(initial, scenario.evaluation.get("int_keys") or []))
            fresh, paths = snapshot(obj)
            state.update(fresh)
            state[KEYS_FIELD] = paths
