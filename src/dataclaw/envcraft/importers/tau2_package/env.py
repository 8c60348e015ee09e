"""A τ²-bench domain on the EnvCraft runtime (copied into each imported package as ``env.py``).

Written by dataclaw's tau2 importer; it runs only inside the env worker's sandbox. ``vendor/tau2`` is the
user's tau2-bench source (``src/tau2``) and ``data/db.json`` the domain's database, both as shipped. The
domain's tools are the ``@is_tool`` methods of the ``ToolKitBase`` subclass in
``tau2.domains.<domain>.tools``; its database is the pydantic model named by that class's ``db``
annotation.

The session state is plain JSON: the task's setup (``tau2``: initialization data and actions, env
assertions), the state-mutating calls applied so far (``calls``, as tau2 replays a trajectory: only the
tools with ``mutates_state``), ``db_hash`` (sha256 of the canonical JSON of the database after them) and
``assertions`` (each env assertion of the task, evaluated on that database). The live database is rebuilt
by replaying ``calls`` (cached per process). A task's verifier compares ``db_hash`` with the hash its
gold actions reach (tau2's DB check) and requires every env assertion.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import inspect
import json
import sys
import typing
from collections import OrderedDict
from pathlib import Path
from typing import Any, ClassVar

from dataclaw.envcraft.runtime import EnvError, Environment, ErrorCategory, Evaluator, ToolSet, ToolSpec
from dataclaw.envcraft.runtime.tools import Param, parse_docstring

HERE = Path(__file__).resolve().parent
CONFIG = json.loads((HERE / "data" / "domain.json").read_text(encoding="utf-8"))
sys.path.insert(0, str(HERE / "vendor"))
TOOLS_MODULE = importlib.import_module(f"tau2.domains.{CONFIG['domain']}.tools")


def _toolkit_class() -> type:
    """The toolkit class the domain's tools module defines (the one carrying ``@is_tool`` methods)."""
    for value in vars(TOOLS_MODULE).values():
        if (
            inspect.isclass(value)
            and value.__module__ == TOOLS_MODULE.__name__
            and any(getattr(m, "__tool__", False) for m in vars(value).values())
        ):
            return value
    raise ImportError(f"tau2.domains.{CONFIG['domain']}.tools defines no class with @is_tool methods")


TOOLKIT = _toolkit_class()
DB_CLASS = typing.get_type_hints(TOOLKIT).get("db")
if DB_CLASS is None or not hasattr(DB_CLASS, "model_validate"):
    raise ImportError(f"{TOOLKIT.__name__} has no pydantic `db` annotation")
DB_JSON = json.loads((HERE / "data" / "db.json").read_text(encoding="utf-8"))
_CACHE_SIZE = 16


def _dump(db: Any) -> Any:
    return db.model_dump(mode="json")


def db_hash(db: Any) -> str:
    """sha256 of the database's canonical JSON (tau2 hashes ``model_dump`` the same way on both sides)."""
    return hashlib.sha256(json.dumps(_dump(db), sort_keys=True, default=str).encode()).hexdigest()


def _merge(base: Any, update: Any) -> Any:
    """tau2's ``update_pydantic_model_with_dict``: objects merge key by key, anything else replaces."""
    if isinstance(base, dict) and isinstance(update, dict):
        out = dict(base)
        for k, v in update.items():
            out[k] = _merge(base.get(k), v) if k in base else v
        return out
    return update


def _result(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [_result(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _result(v) for k, v in value.items()}
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def _fresh(setup: dict[str, Any]) -> Any:
    """The toolkit on the domain's database with the task's initialization data and actions applied."""
    data = DB_JSON
    if setup.get("init_data"):
        data = _merge(copy.deepcopy(DB_JSON), setup["init_data"])
    kit = TOOLKIT(DB_CLASS.model_validate(copy.deepcopy(data)))
    for action in setup.get("init_actions", []):
        getattr(kit, action["name"])(**copy.deepcopy(action["arguments"]))
    return kit


_RUNS: OrderedDict[str, Any] = OrderedDict()


def _key(setup: dict[str, Any], calls: list[dict[str, Any]]) -> str:
    return hashlib.sha1(json.dumps([setup, calls], sort_keys=True, default=str).encode()).hexdigest()


def _kit(session: dict[str, Any]) -> Any:
    found = _RUNS.pop(_key(session["tau2"], session["calls"]), None)
    if found is None:
        found = _fresh(session["tau2"])
        for c in session["calls"]:
            getattr(found, c["tool"])(**copy.deepcopy(c["arguments"]))
    return found


def _remember(session: dict[str, Any], kit: Any) -> None:
    _RUNS[_key(session["tau2"], session["calls"])] = kit
    while len(_RUNS) > _CACHE_SIZE:
        _RUNS.popitem(last=False)


def assertions(kit: Any, setup: dict[str, Any]) -> list[bool]:
    """Each env assertion of the task on the current database (tau2's ``run_env_assertion``)."""
    out = []
    for a in setup.get("env_assertions", []):
        try:
            value = getattr(kit, a["func_name"])(**copy.deepcopy(a.get("arguments") or {}))
            out.append(value == a.get("assert_value", True))
        except Exception:  # noqa: BLE001 - an assertion that cannot run is not met
            out.append(False)
    return out


def refresh(state: dict[str, Any], kit: Any | None = None) -> None:
    kit = kit if kit is not None else _kit(state)
    state["db_hash"] = db_hash(kit.db)
    state["assertions"] = assertions(kit, state["tau2"])
    state["assertions_ok"] = all(state["assertions"])


def _schema(hint: Any) -> dict[str, Any]:
    """JSON schema of a parameter hint (pydantic's), without titles."""
    from pydantic import TypeAdapter

    try:
        schema = TypeAdapter(hint).json_schema()
    except Exception:  # noqa: BLE001 - an exotic hint: accept any value, tau2's own code checks it
        return {}

    def clean(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: clean(v) for k, v in node.items() if k != "title"}
        if isinstance(node, list):
            return [clean(v) for v in node]
        return node

    return clean(schema)


def _tool(name: str, method: Any) -> ToolSpec:
    sig = inspect.signature(method)
    hints = typing.get_type_hints(method)
    description, docs, returns = parse_docstring(method.__doc__)
    params = []
    for pname, p in list(sig.parameters.items())[1:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        optional = p.default is not inspect.Parameter.empty
        params.append(
            Param(
                pname,
                _schema(hints.get(pname, Any)),
                docs.get(pname, pname),
                not optional,
                p.default if optional else None,
                nullable=optional and p.default is None,
            )
        )
    mutates = bool(getattr(method, "__mutates_state__", False))

    def call(session: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        kit = _kit(session)
        try:
            value = getattr(kit, name)(**copy.deepcopy(kwargs))
        except Exception as exc:  # noqa: BLE001 - tau2 shows the tool's error to the agent as the result
            if not mutates:  # a failed write may have half-applied: the next call replays from the log
                _remember(session, kit)
            raise EnvError(ErrorCategory.INVALID_ARGUMENT, f"Error: {exc}") from None
        if mutates:
            session["calls"].append({"tool": name, "arguments": kwargs})
            refresh(session, kit)
        _remember(session, kit)
        return {"result": _result(value)}

    return ToolSpec(
        name=name,
        fn=call,
        description=description or name,
        params=tuple(params),
        side_effect="write" if mutates else "read",
        state_fields_affected=("calls", "db_hash", "assertions", "assertions_ok") if mutates else (),
        returns_description=returns,
        success_keys=("result",),
    )


def _tools() -> ToolSet:
    out = ToolSet()
    for name in sorted(dir(TOOLKIT)):
        method = getattr(TOOLKIT, name, None)
        if callable(method) and getattr(method, "__tool__", False) and not name.startswith("_"):
            out.add(_tool(name, method))
    return out


EVALUATOR = Evaluator()


@EVALUATOR.dimension("db", 1.0, "the database reached the hash of the task's gold actions (tau2 DB check)")
def db_check(state: dict[str, Any], scenario: Any) -> tuple[float, str]:
    goal = scenario.evaluation.get("db_hash")
    if not goal:
        return 1.0, "no DB goal"
    return (1.0, "database matches") if state.get("db_hash") == goal else (0.0, "database differs")


@EVALUATOR.dimension("env_assertions", 1.0, "every env assertion of the task holds")
def env_assertions(state: dict[str, Any], scenario: Any) -> tuple[float, str]:
    return (1.0, "all hold") if state.get("assertions_ok", True) else (0.0, "an env assertion fails")


class Tau2Environment(Environment):
    """One τ²-bench domain: its toolkit over its database; one scenario per task."""

    name = CONFIG["name"]
    env_var_prefix = CONFIG["name"].upper()
    DEFAULT_STATE: ClassVar[dict[str, Any]] = {
        "tau2": {"domain": CONFIG["domain"], "init_data": None, "init_actions": [], "env_assertions": []},
        "calls": [],
        "db_hash": "",
        "assertions": [],
        "assertions_ok": True,
    }
    tools = _tools()
    evaluator = EVALUATOR

    def on_scenario_loaded(self, state: dict[str, Any], scenario: Any) -> None:
        refresh(state)


ENVIRONMENT = Tau2Environment
