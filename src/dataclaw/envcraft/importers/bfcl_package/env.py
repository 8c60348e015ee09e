"""A BFCL-v3 multi-turn backend on the EnvCraft runtime (copied into each imported package as ``env.py``).

Written by dataclaw's BFCL importer; it runs only inside the env worker's sandbox, beside the backend
classes copied unchanged (but for their package imports) from the ``bfcl-eval`` wheel into ``backend/``.

The session state is plain JSON: the task's BFCL entry (``bfcl``: involved classes, initial config,
ground truth per turn), the calls executed so far (``calls``: method, arguments, BFCL's execution result
string) and ``check``, BFCL's state-based verdict recomputed after every call. The live backend objects
are rebuilt by replaying ``calls`` from the initial config (cached per process), which is what BFCL itself
does: one instance per class for the whole conversation. A task's verifier reads ``/check/valid``.

``check`` follows ``bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker``: after each turn whose
ground truth is not empty, the model's instances must equal the ground truth's (every public attribute,
compared with ``==``), the model must have called something in that turn, and every ground-truth execution
result of the turn must be among the model's results so far (unordered, with multiplicity). The session
does not see where one user turn ends, so the turn boundaries are searched for: the verdict is valid when
some split of the calls, in order, into the conversation's turns passes every turn's check (the split
BFCL would have seen is one of them).
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import json
from collections import OrderedDict
from pathlib import Path
from typing import Any, ClassVar

from dataclaw.envcraft.runtime import Environment, Evaluator, ToolSet, ToolSpec
from dataclaw.envcraft.runtime.tools import Param

HERE = Path(__file__).resolve().parent
CONFIG = json.loads((HERE / "data" / "backend.json").read_text(encoding="utf-8"))
PACKAGE = __name__.rsplit(".", 1)[0]
CLASSES: dict[str, type] = {
    cls: getattr(importlib.import_module(f"{PACKAGE}.backend.{mod}"), cls)
    for cls, mod in CONFIG["modules"].items()
}
STATELESS = frozenset(CONFIG.get("stateless", []))
_CACHE_SIZE = 32

# ---- executing calls the way BFCL does ---------------------------------------------------------------


def _instances(bfcl: dict[str, Any]) -> dict[str, Any]:
    """Fresh backend objects of the involved classes, loaded with the task's initial config."""
    out = {}
    for name in bfcl["classes"]:
        obj = CLASSES[name]()
        if name not in STATELESS:
            obj._load_scenario(
                copy.deepcopy(bfcl["initial_config"].get(name, {})), long_context=bfcl["long_context"]
            )
        out[name] = obj
    return out


def _owner(instances: dict[str, Any], method: str) -> Any:
    found = None
    for obj in instances.values():  # BFCL maps a method name to the last involved class that has it
        if callable(getattr(obj, method, None)) and not method.startswith("_"):
            found = obj
    return found


def execute(instances: dict[str, Any], method: str, args: list[Any], kwargs: dict[str, Any]) -> str:
    """One call, as ``execute_multi_turn_func_call`` does it: the result as BFCL's string (a dict as
    JSON), an exception as ``Error during execution: ...``."""
    try:
        obj = _owner(instances, method)
        if obj is None:
            raise NameError(f"name '{method}' is not defined")
        # fresh argument objects for every call, as BFCL's eval of the call string makes them: a backend
        # that keeps an argument list (a tweet's mentions) and mutates it later must not reach the log
        result = getattr(obj, method)(*copy.deepcopy(args), **copy.deepcopy(kwargs))
        if type(result) is str:
            return result
        if type(result) is dict:
            try:
                return json.dumps(result)
            except Exception:  # noqa: BLE001 - BFCL falls back to str() for what json cannot dump
                return str(result)
        return str(result)
    except Exception as exc:  # noqa: BLE001 - BFCL records every failure as the call's result
        return f"Error during execution: {exc}"


def _view(instances: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The public attributes of each instance (what BFCL's state checker compares), copied."""
    return {
        name: {k: copy.deepcopy(v) for k, v in vars(obj).items() if not k.startswith("_")}
        for name, obj in instances.items()
    }


def _same(model: dict[str, dict[str, Any]], truth: dict[str, dict[str, Any]]) -> bool:
    """BFCL's ``_compare_instances`` for every class: each ground-truth attribute equals the model's."""
    for name, attrs in truth.items():
        mine = model.get(name, {})
        for key, value in attrs.items():
            if key not in mine or mine[key] != value:
                return False
    return True


def _contained(needed: list[str], have: list[str]) -> bool:
    pool = list(have)
    for item in needed:
        if item in pool:
            pool.remove(item)
        else:
            return False
    return True


class _Truth:
    """The ground truth of one task executed once per process: per turn, its results and end view."""

    def __init__(self, bfcl: dict[str, Any]) -> None:
        inst = _instances(bfcl)
        self.results: list[list[str]] = []
        self.views: list[dict[str, dict[str, Any]]] = []
        for turn in bfcl["ground_truth"]:
            self.results.append([execute(inst, c["method"], c["args"], c["kwargs"]) for c in turn])
            self.views.append(_view(inst))


class _Run:
    """The model's side of one conversation: live instances, the view after every prefix of calls."""

    def __init__(self, bfcl: dict[str, Any]) -> None:
        self.instances = _instances(bfcl)
        self.views = [_view(self.instances)]
        self.results: list[str] = []
        self.matches: dict[tuple[int, int], bool] = {}

    def run(self, method: str, kwargs: dict[str, Any]) -> str:
        out = execute(self.instances, method, [], kwargs)
        self.results.append(out)
        self.views.append(_view(self.instances))
        return out


_TRUTHS: OrderedDict[str, _Truth] = OrderedDict()
_RUNS: OrderedDict[str, _Run] = OrderedDict()


def _key(*parts: Any) -> str:
    return hashlib.sha1(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _remember(cache: OrderedDict[str, Any], key: str, value: Any) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > _CACHE_SIZE:
        cache.popitem(last=False)


def _truth(bfcl: dict[str, Any]) -> _Truth:
    key = _key(bfcl)
    found = _TRUTHS.get(key)
    if found is None:
        found = _Truth(bfcl)
        _remember(_TRUTHS, key, found)
    return found


def _run(session: dict[str, Any]) -> _Run:
    """The live run of ``session``'s calls so far (replayed from the initial config on a cache miss)."""
    key = _key(session["bfcl"], [[c["method"], c["kwargs"]] for c in session["calls"]])
    found = _RUNS.pop(key, None)
    if found is None:
        found = _Run(session["bfcl"])
        for c in session["calls"]:
            found.run(c["method"], c["kwargs"])
    return found


def verdict(bfcl: dict[str, Any], run: _Run) -> dict[str, Any]:
    """BFCL's multi-turn check over every order-preserving split of the calls into turns."""
    truth = _truth(bfcl)
    n = len(run.results)
    turns = len(bfcl["ground_truth"])
    ends = {0}  # where the previous turn may have ended
    reached, why = 0, "no call was made"
    for k in range(turns):
        needed = truth.results[k]
        nxt: set[int] = set()
        for start in sorted(ends):
            for end in range(start, n + 1):
                if k == turns - 1 and end != n:
                    continue  # the last turn runs to the end of the conversation
                if bfcl["ground_truth"][k]:
                    if end == start:
                        why = f"turn {k}: no call (multi_turn:empty_turn_model_response)"
                        continue
                    key = (k, end)
                    if key not in run.matches:
                        run.matches[key] = _same(run.views[end], truth.views[k])
                    if not run.matches[key]:
                        why = f"turn {k}: instance state differs (multi_turn:instance_state_mismatch)"
                        continue
                    if not _contained(needed, run.results[:end]):
                        why = f"turn {k}: results missing (multi_turn:execution_response_mismatch)"
                        continue
                nxt.add(end)
        if not nxt:
            return {"valid": False, "turns_passed": reached, "turns": turns, "calls": n, "reason": why}
        ends, reached = nxt, k + 1
    return {"valid": True, "turns_passed": turns, "turns": turns, "calls": n, "reason": "all turns pass"}


def initial_check(bfcl: dict[str, Any]) -> dict[str, Any]:
    return verdict(bfcl, _Run(bfcl))


# ---- the runtime surface ------------------------------------------------------------------------------


def _param_schema(spec: dict[str, Any]) -> dict[str, Any]:
    """A BFCL doc type as JSON schema, wrapped in ``anyOf`` so the agent sees the type but the runtime
    neither rejects nor converts the value: BFCL executes whatever the model passed (an int for a
    ``float`` stays an int, and so does its result; a string for an ``integer`` reaches the method, whose
    answer is the result), and its own ground truth relies on that."""
    return {"anyOf": [_json_type(spec)]}


def _json_type(spec: dict[str, Any]) -> dict[str, Any]:
    kind = spec.get("type")
    mapped = {"float": "number", "dict": "object", "tuple": "array", "any": None}.get(kind, kind)
    out: dict[str, Any] = {"type": mapped} if mapped else {}
    if kind in ("array", "tuple") and isinstance(spec.get("items"), dict):
        out["items"] = _json_type(spec["items"])
    if "enum" in spec:
        out["enum"] = list(spec["enum"])
    if kind == "dict" and isinstance(spec.get("properties"), dict):  # the fields a dict takes, described
        out["properties"] = {
            name: {**_json_type(sub), "description": str(sub.get("description", "")).strip()}
            for name, sub in spec["properties"].items()
            if isinstance(sub, dict)
        }
    return out


def _tool(doc: dict[str, Any], signature: dict[str, Any]) -> ToolSpec:
    method = doc["name"]
    props = doc.get("parameters", {}).get("properties", {})
    required = set(doc.get("parameters", {}).get("required", []))
    # the method's own signature decides what is optional (BFCL calls it with what the model gave)
    optional = set(signature.get("optional", [])) if signature else set(props) - required
    defaults = signature.get("defaults", {}) if signature else {}
    params = []
    for pname, pspec in props.items():
        params.append(
            Param(
                pname,
                _param_schema(pspec),
                str(pspec.get("description", "")).strip() or pname,
                pname not in optional,
                defaults.get(pname),
                nullable=pname in optional,
            )
        )

    def call(session: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        # an argument the agent left out stays out, so the method's own default applies
        given = {k: v for k, v in kwargs.items() if not (k in optional and v == defaults.get(k))}
        run = _run(session)
        result = run.run(method, given)
        session["calls"].append({"method": method, "kwargs": given, "result": result})
        session["check"] = verdict(session["bfcl"], run)
        _remember(_RUNS, _key(session["bfcl"], [[c["method"], c["kwargs"]] for c in session["calls"]]), run)
        try:
            data = json.loads(result)
        except ValueError:
            data = result
        return {"result": data}

    return ToolSpec(
        name=method,
        fn=call,
        description=str(doc.get("description", "")).strip() or method,
        params=tuple(params),
        side_effect="write",  # every call lands in the conversation's call log that BFCL's check reads
        state_fields_affected=("calls", "check"),
        returns_description="BFCL's execution result of the call",
        success_keys=("result",),
    )


EVALUATOR = Evaluator()


@EVALUATOR.dimension("bfcl_multi_turn", 1.0, "BFCL's state-based multi-turn check (per turn)")
def bfcl_multi_turn(state: dict[str, Any], scenario: Any) -> tuple[float, str]:
    check = state.get("check") or {}
    return (1.0 if check.get("valid") else 0.0), str(check.get("reason", "not checked"))


class BFCLEnvironment(Environment):
    """The BFCL backend classes of ``data/backend.json`` as one environment; one scenario per task."""

    name = CONFIG["name"]
    env_var_prefix = CONFIG["name"].upper()
    DEFAULT_STATE: ClassVar[dict[str, Any]] = {
        "bfcl": {"id": "", "classes": list(CONFIG["modules"]), "initial_config": {}, "long_context": False,
                 "ground_truth": []},
        "calls": [],
        "check": {"valid": False, "turns_passed": 0, "turns": 0, "calls": 0, "reason": "not checked"},
    }  # fmt: skip
    tools = ToolSet(_tool(doc, CONFIG["signatures"].get(doc["name"], {})) for doc in CONFIG["func_docs"])
    evaluator = EVALUATOR

    def on_scenario_loaded(self, state: dict[str, Any], scenario: Any) -> None:
        if state["bfcl"]["ground_truth"]:
            state["check"] = initial_check(state["bfcl"])


ENVIRONMENT = BFCLEnvironment
