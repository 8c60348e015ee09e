"""The ``Environment`` base class every EnvCraft environment subclasses (C.1 contract).

A subclass supplies data, not infrastructure: ``name``, ``DEFAULT_STATE``, ``tools`` (a :class:`ToolSet`),
``evaluator`` and its package's ``data/scenarios/*.json``. The base class owns sessions, the deterministic
clock, the action log, error mapping and persistence.
"""

from __future__ import annotations

import functools
import inspect
import os
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import orjson

from dataclaw.envcraft.runtime.errors import (
    EnvError,
    ErrorCategory,
    echo,
    infrastructure_error,
    invalid_reference,
)
from dataclaw.envcraft.runtime.evaluation import Evaluator
from dataclaw.envcraft.runtime.state import DEFAULT_TIME_STEP_S, deep_merge, jsoncopy, now
from dataclaw.envcraft.runtime.store import MemoryStore, SessionStore, Transaction
from dataclaw.envcraft.runtime.tools import ToolSet

REQUIRED_SCENARIO_KEYS = ("scenario_id", "title", "task_prompt", "base_time")
_SCENARIO_KEYS = {
    *REQUIRED_SCENARIO_KEYS,
    "workspace_account",
    "overrides",
    "long_context",
    "evaluation",
    "reference_solution",
    "forbidden_actions",
    "description",
}


class ReplayError(RuntimeError):
    """A journal entry that applied cleanly when recorded fails on replay: the tool is not deterministic
    or the package changed under a live session. Reported to the agent as an infrastructure error."""


@dataclass(frozen=True)
class Scenario:
    """One scenario of an environment (``data/scenarios/<id>.json``)."""

    scenario_id: str
    title: str
    task_prompt: str
    base_time: str
    workspace_account: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    long_context: dict[str, Any] = field(default_factory=dict)
    evaluation: dict[str, Any] = field(default_factory=dict)
    # the contract test-suite runs these: a correct workflow, and actions the evaluator must penalise
    reference_solution: list[dict[str, Any]] = field(default_factory=list)
    forbidden_actions: list[dict[str, Any]] = field(default_factory=list)
    description: str = ""

    @classmethod
    def from_dict(cls, raw: dict[str, Any], source: str) -> Scenario:
        """Validate and build; errors name the file and the key."""
        if not isinstance(raw, dict):
            raise ValueError(f"{source}: a scenario must be a JSON object")
        missing = [k for k in REQUIRED_SCENARIO_KEYS if k not in raw]
        if missing:
            raise ValueError(f"{source}: scenario is missing {', '.join(missing)}")
        unknown = sorted(set(raw) - _SCENARIO_KEYS)
        if unknown:
            raise ValueError(f"{source}: unknown scenario keys {', '.join(unknown)}")
        for key in ("reference_solution", "forbidden_actions"):
            for i, step in enumerate(raw.get(key, [])):
                if not isinstance(step, dict) or "tool" not in step:
                    raise ValueError(f"{source}: {key}[{i}] needs a 'tool' (and optional 'params')")
        return cls(**raw)


class Environment:
    """Session lifecycle, tool dispatch, action log and evaluation for one environment package."""

    name: ClassVar[str]
    DEFAULT_STATE: ClassVar[dict[str, Any]]
    tools: ClassVar[ToolSet]
    evaluator: ClassVar[Evaluator]
    # trainer bindings are <PREFIX>_SESSION_ID / _STATE_ROOT / _SCENARIO_ID (default: NAME upper-cased)
    env_var_prefix: ClassVar[str] = ""
    time_step_s: ClassVar[int] = DEFAULT_TIME_STEP_S

    def __init__(
        self,
        state_root: str | Path | None = None,
        *,
        lock_timeout_s: float = 5.0,
        compact_every: int = 256,
        durable: bool = False,
        memory: bool = False,
    ) -> None:
        self.state_root = Path(state_root) if state_root is not None else None
        self.store: SessionStore | MemoryStore
        if memory:
            # sessions live in this process only (no files, no cross-process locking), for throwaway
            # sessions one caller drives, such as the soundness suite's runs
            self.store = MemoryStore(replay=self._replay)
        else:
            if self.state_root is None:
                self.state_root = _temp_root(self)
            self.store = SessionStore(
                self.state_root,
                replay=self._replay,
                lock_timeout_s=lock_timeout_s,
                compact_every=compact_every,
                durable=durable,
            )
        self.session_id: str | None = None  # the session bound for the harness interface

    # ---- package data -------------------------------------------------------------------------------

    @classmethod
    def package_dir(cls) -> Path:
        return Path(inspect.getfile(cls)).resolve().parent

    @classmethod
    def prefix(cls) -> str:
        return cls.env_var_prefix or cls.name.upper().replace("-", "_")

    @classmethod
    def scenarios(cls) -> dict[str, Scenario]:
        return _load_scenarios(cls.package_dir() / "data" / "scenarios")

    @classmethod
    def scenario(cls, scenario_id: str) -> Scenario:
        scenarios = cls.scenarios()
        if scenario_id not in scenarios:
            raise invalid_reference("scenario", scenario_id, sorted(scenarios))
        return scenarios[scenario_id]

    # ---- state construction -------------------------------------------------------------------------

    def initial_state(
        self, scenario: Scenario, session_id: str, *, long_context: bool = False
    ) -> dict[str, Any]:
        """Deep copy of ``DEFAULT_STATE`` + scenario overrides (+ long-context overrides), with the C.1
        template fields filled in. Subclasses may post-process in :meth:`on_scenario_loaded`."""
        state = jsoncopy(self.DEFAULT_STATE)
        deep_merge(state, scenario.overrides)
        if long_context:
            deep_merge(state, scenario.long_context)
        state["session_id"] = session_id
        state["scenario_id"] = scenario.scenario_id
        state["created_at"] = scenario.base_time
        state["meta"] = {
            "base_time": scenario.base_time,
            "action_index": 0,
            "time_step_s": self.time_step_s,
            "long_context": long_context,
        }
        if scenario.workspace_account is not None:
            state["workspace_account"] = scenario.workspace_account
        state.setdefault("workspace_account", None)
        state["actions"] = []
        self.on_scenario_loaded(state, scenario)
        return state

    def on_scenario_loaded(self, state: dict[str, Any], scenario: Scenario) -> None:
        """Hook: adjust a freshly built state (e.g. derive indexes). Default: nothing."""

    # ---- session lifecycle (trainer side) -----------------------------------------------------------

    def create_session(
        self, scenario_id: str, session_id: str | None = None, *, long_context: bool = False
    ) -> str:
        """Create a session from a scenario and bind it; returns the session id."""
        return self._create(self.scenario(scenario_id), session_id, long_context)

    def _create(self, scenario: Scenario, session_id: str | None, long_context: bool) -> str:
        sid = session_id if session_id is not None else f"{scenario.scenario_id[:80]}-{os.urandom(6).hex()}"
        self.store.create(sid, self.initial_state(scenario, sid, long_context=long_context))
        self.session_id = sid
        return sid

    def reset_session(self, session_id: str) -> None:
        """Put the session back to its scenario's initial state (same id, empty action log)."""
        with self.store.transaction(session_id) as txn:
            old = txn.state
            scenario = self.scenario(old["scenario_id"])
            long_context = bool(old.get("meta", {}).get("long_context", False))
            txn.replace(self.initial_state(scenario, session_id, long_context=long_context))

    def delete_session(self, session_id: str) -> None:
        self.store.delete(session_id)
        if self.session_id == session_id:
            self.session_id = None

    def get_session_state(self, session_id: str) -> dict[str, Any]:
        """The complete session state (a private copy)."""
        return self.store.read(session_id)

    def evaluate_session(self, session_id: str) -> dict[str, Any]:
        """Per-dimension scores and ``overall_score`` in [0, 1]; deterministic, changes nothing."""
        state = self.get_session_state(session_id)
        scenario = self.scenario(state["scenario_id"])
        long_context = bool(state.get("meta", {}).get("long_context", False))
        initial = self.initial_state(scenario, session_id, long_context=long_context)
        reference = type(self).reference_state(scenario, long_context)
        result = self.evaluator.evaluate(state, scenario, initial, reference)
        result["session_id"] = session_id
        result["scenario_id"] = state["scenario_id"]
        return result

    @classmethod
    def reference_state(cls, scenario: Scenario, long_context: bool = False) -> dict[str, Any] | None:
        """The state the scenario's reference solution reaches, run once per class and scenario in a
        throwaway store: what a correct run may change (the evaluator's collateral allowance). ``None``
        when the scenario has no reference solution."""
        if not scenario.reference_solution:
            return None
        key = (
            scenario.scenario_id,
            long_context,
            orjson.dumps(scenario.__dict__, option=orjson.OPT_SORT_KEYS),
        )
        cache = _REFERENCE_STATES.setdefault(cls, {})
        if key not in cache:
            import tempfile

            with tempfile.TemporaryDirectory(prefix=f"envcraft-{cls.name}-ref-") as tmp:
                env = cls(tmp)
                sid = env._create(scenario, "reference", long_context)
                for step in scenario.reference_solution:
                    env.call(sid, step["tool"], **step.get("params", {}))
                cache[key] = env.get_session_state(sid)
        return jsoncopy(cache[key])

    # ---- harness interface (C.1 item 8) -------------------------------------------------------------

    def _bound(self) -> str:
        if self.session_id is None:
            raise EnvError(
                ErrorCategory.MISSING_BINDING, "No session is bound: create or load a scenario first."
            )
        return self.session_id

    def get_env_state(self) -> dict[str, Any]:
        """The complete state of the bound session as a plain dict."""
        return self.get_session_state(self._bound())

    def _load_scenario(self, scenario: dict[str, Any] | str, long_context: bool = False) -> None:
        """Deep-copy ``DEFAULT_STATE`` and apply the scenario's overrides into the bound session
        (creating one when none is bound), so a harness can initialise and restore deterministically."""
        if isinstance(scenario, str):
            sc = self.scenario(scenario)
        else:
            sc = Scenario.from_dict(scenario, "scenario argument")
        if self.session_id is None or not self.store.exists(self.session_id):
            self._create(sc, self.session_id, long_context)
            return
        with self.store.transaction(self.session_id) as txn:
            txn.replace(self.initial_state(sc, self.session_id, long_context=long_context))

    def restore_env_state(self, state: dict[str, Any]) -> None:
        """Make a snapshot taken with :meth:`get_env_state` the bound session's state again."""
        sid = self._bound()
        restored = jsoncopy(state)
        restored["session_id"] = sid
        with self.store.transaction(sid) as txn:
            txn.replace(restored)

    def run_from(
        self, state: dict[str, Any], calls: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """:func:`run_from` in the bound session."""
        return run_from(self, state, calls)

    # ---- tool calls (agent side) --------------------------------------------------------------------

    def call(self, session_id: str, tool: str, /, **params: Any) -> dict[str, Any]:
        """Run one tool in one session; never raises. Returns ``{"status": "ok", "data": ...}`` (plus
        ``warnings``) or ``{"status": "error", "error": {"category", "message"}}``. Every call, failed
        or not, is appended to the session's ``actions`` with a deterministic timestamp."""
        try:
            with self.store.transaction(session_id) as txn:
                return self._call_locked(txn, tool, params)
        except EnvError as exc:
            return {"status": "error", "error": exc.to_dict()}
        except Exception as exc:  # noqa: BLE001 - infrastructure: the store could not be read or written
            err = infrastructure_error(
                exc, context=f"{self.name}.call({tool})", ref_seed=f"{session_id}:{tool}"
            )
            return {"status": "error", "error": err.to_dict()}

    def _call_locked(self, txn: Transaction, tool: str, params: dict[str, Any]) -> dict[str, Any]:
        state = txn.state
        index = state["meta"]["action_index"]
        record: dict[str, Any] = {"index": index, "tool": tool, "params": _loggable(params), "at": now(state)}
        apply = False
        try:
            spec = self.tools.get(tool)
            clean = spec.validate(params)
            try:
                clean = jsoncopy(clean)  # the tool never aliases the caller's objects; replay sees the same
            except (TypeError, orjson.JSONEncodeError):
                raise EnvError(
                    ErrorCategory.INVALID_ARGUMENT, f"{tool}: parameters must be JSON values."
                ) from None
            record["params"] = clean
            try:
                result = spec.fn(state, **clean)
                if not isinstance(result, dict):
                    raise TypeError(f"tool {tool} returned {type(result).__name__}, not dict")
                result = dict(result)  # never pop from a dict the tool may share with the state
                warnings = list(result.pop("warnings", []) or [])
                data = jsoncopy(result)
            except BaseException as exc:
                if spec.side_effect == "write" or not isinstance(exc, EnvError):
                    txn.rollback()  # a half-applied write (or a crashed tool) must not survive
                    state = txn.state
                raise
            record["status"] = "ok"
            if warnings:
                record["warnings"] = jsoncopy(warnings)
            apply = spec.side_effect == "write"
            envelope: dict[str, Any] = {"status": "ok", "data": data}
            if warnings:
                envelope["warnings"] = record["warnings"]
        except EnvError as exc:
            record["status"] = "error"
            record["error"] = exc.to_dict()
            envelope = {"status": "error", "error": record["error"]}
        except Exception as exc:  # noqa: BLE001 - a bug in domain code: generic error, logged server-side
            err = infrastructure_error(
                exc, context=f"{self.name}.{tool}", ref_seed=f"{txn.session_id}:{index}"
            )
            record["status"] = "error"
            record["error"] = err.to_dict()
            envelope = {"status": "error", "error": record["error"]}
        _log_action(state, record)
        txn.commit({"record": record, "apply": apply})
        return envelope

    def _replay(self, state: dict[str, Any], entry: dict[str, Any]) -> None:
        """Re-apply one journal entry (another process's call) to a cached state."""
        record = entry["record"]
        if entry.get("apply"):
            try:
                self.tools.get(record["tool"]).fn(state, **record["params"])
            except Exception as exc:
                raise ReplayError(
                    f"replaying action {record.get('index')} ({record.get('tool')}) failed"
                ) from exc
        _log_action(state, record)


def run_from(
    env: Any, state: dict[str, Any], calls: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Restore ``state`` into ``env``'s bound session, make ``calls`` (``{tool, params}``) in order: each
    call's envelope and the state they reach (a copy). What any instance-side environment does call by
    call; an environment in a worker does it in one round trip."""
    env.restore_env_state(state)
    sid = env.session_id
    results = [env.call(sid, c["tool"], **(c.get("params") or {})) for c in calls]
    return results, env.get_session_state(sid)


_REFERENCE_STATES: weakref.WeakKeyDictionary[type, dict[tuple[Any, ...], dict[str, Any]]] = (
    weakref.WeakKeyDictionary()
)


def _temp_root(env: object) -> Path:
    """A throwaway state folder for an in-process environment, removed when the environment is."""
    import shutil
    import tempfile  # imported here: only throwaway environments need it; keeps CLI start-up lean

    root = Path(tempfile.mkdtemp(prefix=f"envcraft-{getattr(env, 'name', 'env')}-"))
    weakref.finalize(env, shutil.rmtree, root, True)
    return root


def _log_action(state: dict[str, Any], record: dict[str, Any]) -> None:
    state["actions"].append(record)
    state["meta"]["action_index"] += 1


def _loggable(params: dict[str, Any]) -> dict[str, Any]:
    """Params as they can be logged: JSON values kept, anything else reduced to a short echo."""
    try:
        return jsoncopy(params)
    except (TypeError, orjson.JSONEncodeError):
        return {str(k): echo(v) for k, v in params.items()}


@functools.cache
def _load_scenarios(directory: Path) -> dict[str, Scenario]:
    out: dict[str, Scenario] = {}
    for path in sorted(directory.glob("*.json")):
        sc = Scenario.from_dict(
            orjson.loads(path.read_bytes()), f"{directory.parent.parent.name}/{path.name}"
        )
        if sc.scenario_id in out:
            raise ValueError(f"duplicate scenario id {sc.scenario_id!r} in {directory}")
        out[sc.scenario_id] = sc
    return out
