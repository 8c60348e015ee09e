"""A τ²-bench domain on the EnvCraft runtime (copied into each imported package as ``env.py``).

Written by dataclaw's tau2 importer; it runs only inside the env worker's sandbox, on the Python of the
package's ``runtime.json`` (``.venv-tau2``: tau2's own runtime dependencies). ``vendor/tau2`` is the
user's tau2-bench source (``src/tau2``) as shipped and ``data/tau2/domains/<domain>/`` the domain's data,
laid out as tau2 expects under ``TAU2_DATA_DIR``. Everything domain-specific is tau2's own code: the
environment comes from ``tau2.domains.<domain>.environment.get_environment``, tool calls go through
``Environment.get_response``, the database hash is ``Environment.get_db_hash``, and scoring uses tau2's
evaluators. Only tau2's top-level ``__init__`` is skipped: it imports the runner, LLM agents and litellm,
none of which an environment needs.

The session state is plain JSON: the tau2 task (``tau2.task``), every state-mutating tool call with
tau2's response (``calls``: what tau2's ``set_state`` replays; a read changes nothing, so it is a read here
too), the database hashes, and ``reward_components`` in dataclaw's shape (``db``: tau2's DB check against
the database the task's gold actions reach; ``env_assertions``: tau2's ``run_env_assertion``), each
weighted 1 when in the task's reward basis, else 0; ``tau2_reward`` is their product over the basis, as
tau2 multiplies them. ``ACTION`` (which counts reads too), ``COMMUNICATE`` and ``NL_ASSERTION`` are
scored from the transcript by the rollout (``dataclaw.envcraft.rollout.evaluate``), not here.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import sys
import types
from collections import OrderedDict
from pathlib import Path
from typing import Any, ClassVar

from dataclaw.envcraft.runtime import EnvError, Environment, ErrorCategory, Evaluator, ToolSet, ToolSpec
from dataclaw.envcraft.runtime.tools import Param

HERE = Path(__file__).resolve().parent
CONFIG = json.loads((HERE / "data" / "domain.json").read_text(encoding="utf-8"))
DOMAIN = CONFIG["domain"]


def _load_domain() -> Any:
    """tau2's domain module, its data dir set and tau2's chatty import-time logging kept to errors."""
    os.environ["TAU2_DATA_DIR"] = str(HERE / "data")
    vendor = HERE / "vendor" / "tau2"
    if "tau2" not in sys.modules:  # the package without its __init__ (runner, agents, litellm)
        pkg = types.ModuleType("tau2")
        pkg.__path__ = [str(vendor)]
        pkg.__file__ = str(vendor / "__init__.py")
        sys.modules["tau2"] = pkg
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="ERROR")
    return importlib.import_module(f"tau2.domains.{DOMAIN}.environment")


DOMAIN_MODULE = _load_domain()
from tau2.data_model.message import AssistantMessage, ToolCall, ToolMessage  # noqa: E402
from tau2.data_model.tasks import RewardType, Task  # noqa: E402
from tau2.evaluator.evaluator_env import EnvironmentEvaluator  # noqa: E402


def _fast_loader() -> Any:
    """tau2's ``get_environment`` handed a database parsed by pydantic straight from the domain's
    ``db.json`` (the same model and data as tau2's own ``DB.load``, without the Python JSON decode: a
    fresh environment per session and per gold run is most of the cost). Used only when it yields the
    very database tau2's loader does, checked once per worker; else tau2's loader as it is."""
    base = DOMAIN_MODULE.get_environment
    pristine = base()
    path = HERE / "data" / "tau2" / "domains" / DOMAIN / "db.json"
    if "db" not in inspect.signature(base).parameters or pristine.tools is None or not path.is_file():
        return base
    db_class, raw = type(pristine.tools.db), path.read_bytes()
    try:
        same = db_class.model_validate_json(raw).model_dump() == pristine.tools.db.model_dump()
    except Exception:  # noqa: BLE001 - any doubt: tau2's own loader
        same = False
    if not same:
        return base

    def get_environment(**kwargs: Any) -> Any:
        return base(db=db_class.model_validate_json(raw), **kwargs)

    return get_environment


get_environment = _fast_loader()
_CACHE_SIZE = 16


def _task(state: dict[str, Any]) -> Any:
    raw = state["tau2"]["task"]
    key = hashlib.sha1(json.dumps(raw, sort_keys=True).encode()).hexdigest()
    found = _TASKS.get(key)
    if found is None:
        found = _TASKS[key] = Task.model_validate(raw)
    return found


_TASKS: dict[str, Any] = {}
_GOLD: dict[str, tuple[Any, Any]] = {}
_START: dict[str, tuple[Any, Any]] = {}
"""Database hashes of a task's starting point (its initial state), shared by tasks with the same one."""
_RUNS: OrderedDict[str, Any] = OrderedDict()


def _history(task: Any) -> list[Any]:
    return list(task.initial_state.message_history or []) if task.initial_state else []


def messages(calls: list[dict[str, Any]]) -> list[Any]:
    """The session's tool calls as tau2 messages: an assistant tool call, then tau2's recorded response."""
    out: list[Any] = []
    for c in calls:
        tc = ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"], requestor="assistant")
        out.append(AssistantMessage(role="assistant", content=None, tool_calls=[tc]))
        out.append(ToolMessage(id=c["id"], role="tool", content=c["content"], requestor="assistant"))
    return out


def _set_state(env: Any, task: Any, history: list[Any]) -> Any:
    init = task.initial_state
    env.set_state(
        initialization_data=init.initialization_data if init else None,
        initialization_actions=init.initialization_actions if init else None,
        message_history=history,
    )
    return env


def _live(state: dict[str, Any]) -> Any:
    """The session's tau2 environment: cached, else rebuilt as tau2 does (``set_state`` replays)."""
    found = _RUNS.pop(_key(state), None)
    if found is None:
        task = _task(state)
        found = _set_state(get_environment(), task, _history(task) + messages(state["calls"]))
    return found


def _key(state: dict[str, Any]) -> str:
    return hashlib.sha1(json.dumps([state["tau2"], state["calls"]], sort_keys=True).encode()).hexdigest()


def _remember(state: dict[str, Any], env: Any) -> None:
    _RUNS[_key(state)] = env
    while len(_RUNS) > _CACHE_SIZE:
        _RUNS.popitem(last=False)


def gold_hashes(task: Any) -> tuple[Any, Any]:
    """The agent and user database hashes the task's gold actions reach, computed as tau2's
    ``EnvironmentEvaluator`` does (a failing gold action is skipped, as there); cached per task."""
    key = task.model_dump_json()
    if key not in _GOLD:
        env = _set_state(get_environment(), task, _history(task))
        crit = task.evaluation_criteria
        for action in (crit.actions or []) if crit else []:
            try:
                env.make_tool_call(tool_name=action.name, requestor=action.requestor, **action.arguments)
            except Exception:  # noqa: BLE001 - tau2 logs and skips a failing gold action
                continue
        _GOLD[key] = (env.get_db_hash(), env.get_user_db_hash())
    return _GOLD[key]


def _component(score: float, in_basis: bool, detail: str) -> dict[str, Any]:
    return {"score": float(score), "weight": 1.0 if in_basis else 0.0, "detail": detail}


def refresh(state: dict[str, Any], env: Any) -> None:
    """Recompute the state's database hashes, env assertions and reward components."""
    task = _task(state)
    crit = task.evaluation_criteria
    basis = set(crit.reward_basis) if crit else set()
    comps: dict[str, Any] = {}
    start = None if state["calls"] else task.initial_state.model_dump_json() if task.initial_state else ""
    if start is not None and start in _START:  # many tasks start from the same database
        state["db_hash"], state["user_db_hash"] = _START[start]
    else:
        state["db_hash"], state["user_db_hash"] = env.get_db_hash(), env.get_user_db_hash()
        if start is not None:
            _START[start] = (state["db_hash"], state["user_db_hash"])
    match = (state["db_hash"], state["user_db_hash"]) == gold_hashes(task)
    comps["db"] = _component(
        match, RewardType.DB in basis, "database matches the gold actions' (tau2 DB check)"
        if match else "database differs from the one the gold actions reach (tau2 DB check)",
    )  # fmt: skip
    met = []
    for a in (crit.env_assertions or []) if crit else []:
        try:
            met.append(env.run_env_assertion(a, raise_assertion_error=False))
        except Exception:  # noqa: BLE001 - an assertion that cannot run is not met
            met.append(False)
    if met:  # a component the task has no data for is absent (tau2: "nothing to evaluate")
        comps["env_assertions"] = _component(
            all(met), RewardType.ENV_ASSERTION in basis, f"{sum(met)} of {len(met)} env assertions hold"
        )
    state["reward_components"] = comps
    weighted = [c["score"] for c in comps.values() if c["weight"] > 0]
    state["tau2_reward"] = float(all(s == 1.0 for s in weighted)) if weighted else 0.0


def _result(content: str | None) -> Any:
    try:
        return json.loads(content or "null")
    except json.JSONDecodeError:
        return content


def _params(schema: dict[str, Any]) -> tuple[Param, ...]:
    required = set(schema.get("required") or [])
    out = []
    for name, prop in (schema.get("properties") or {}).items():
        frag = {k: v for k, v in prop.items() if k not in ("title", "description", "default")}
        if "$ref" in json.dumps(frag):  # a model-typed parameter: tau2's own code validates it
            frag = {}
        out.append(
            Param(
                name,
                frag,
                prop.get("description") or name,
                name in required,
                prop.get("default"),
                nullable=name not in required and prop.get("default") is None,
            )
        )
    return tuple(out)


WRITES = ("calls", "db_hash", "user_db_hash", "reward_components", "tau2_reward")
"""What a state-mutating tool call changes in the session state."""


def _tool(name: str, schema: dict[str, Any], mutates: bool) -> ToolSpec:
    def call(session: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        env = _live(session)
        cid = f"call_{len(session['calls'])}"
        msg = env.get_response(ToolCall(id=cid, name=name, arguments=kwargs, requestor="assistant"))
        if msg.error:  # tau2 shows the tool's error to the agent as the result; the call is not kept
            if not mutates:  # a failed write may have half-applied: the next call replays from the log
                _remember(session, env)
            raise EnvError(ErrorCategory.INVALID_ARGUMENT, str(msg.content))
        if mutates:
            session["calls"].append({"id": cid, "name": name, "arguments": kwargs, "content": msg.content})
            refresh(session, env)
        _remember(session, env)
        return {"result": _result(msg.content)}

    fn = schema["function"]
    return ToolSpec(
        name=name,
        fn=call,
        description=fn.get("description") or name,
        params=_params(fn.get("parameters") or {}),
        side_effect="write" if mutates else "read",
        state_fields_affected=WRITES if mutates else (),
        success_keys=("result",),
    )


def _tools() -> ToolSet:
    env = get_environment()
    out = ToolSet()
    for tool in sorted(env.get_tools(), key=lambda t: t.name):
        out.add(_tool(tool.name, tool.openai_schema, env.tools.tool_mutates_state(tool.name)))
    return out


EVALUATOR = Evaluator()


@EVALUATOR.dimension("tau2", 1.0, "tau2's own EnvironmentEvaluator on the session")
def tau2_evaluation(state: dict[str, Any], scenario: Any) -> tuple[float, str]:
    """The session scored by tau2's ``EnvironmentEvaluator`` end to end (fresh environments, tau2's
    replay of the session's calls, its DB hash and env assertions): DB and ENV_ASSERTION multiplied over
    the task's reward basis as tau2 does. The check on the state's ``tau2_reward``; the rest of the
    basis needs the transcript."""
    if not state["tau2"].get("task"):
        return 0.0, "no tau2 task"
    task = _task(state)
    traj = _history(task) + messages(state["calls"])
    try:
        env_info = EnvironmentEvaluator.calculate_reward(get_environment, task, traj)
    except Exception as exc:  # noqa: BLE001 - tau2 lets an env assertion's own error escape: not met
        return 0.0, f"tau2's EnvironmentEvaluator raised: {type(exc).__name__}: {str(exc)[:120]}"
    parts = dict(env_info.reward_breakdown or {})
    basis = set(task.evaluation_criteria.reward_basis) if task.evaluation_criteria else set()
    used = {k: v for k, v in parts.items() if k in basis}
    score = 1.0
    for v in used.values():
        score *= v
    detail = ", ".join(f"{k.value}={v:g}" for k, v in sorted(used.items())) or "nothing scored"
    return (score if used else 0.0), detail


class Tau2Environment(Environment):
    """One τ²-bench domain: tau2's environment for it; one scenario per task."""

    name = CONFIG["name"]
    env_var_prefix = CONFIG["name"].upper()
    DEFAULT_STATE: ClassVar[dict[str, Any]] = {
        "tau2": {"domain": DOMAIN, "task": None},
        "calls": [],
        "db_hash": "",
        "user_db_hash": None,
        "reward_components": {},
        "tau2_reward": 0.0,
    }
    tools = _tools()
    evaluator = EVALUATOR

    def on_scenario_loaded(self, state: dict[str, Any], scenario: Any) -> None:
        if state["tau2"].get("task"):
            env = _live(state)
            refresh(state, env)
            _remember(state, env)


ENVIRONMENT = Tau2Environment
