"""A stand-in for an ``Environment`` class whose package runs in an env worker.

:func:`remote_env_class` builds, from the worker's description of the package, a class with the same
class-side surface as the package's ``ENVIRONMENT`` (``name``, ``tools`` as a real :class:`ToolSet` of
the tools' schemas, ``DEFAULT_STATE``, ``scenarios()``, ``evaluator.dimensions``, ``package_dir()``) and the
same instance-side surface (``create_session``, ``call``, ``get_session_state``, ``restore_env_state``,
``evaluate_session``, …), every instance method a request to the worker. Code written against an
environment class — grounding, the tool graph, the rollout harness — runs unchanged, and the package is
never imported here. ``__module__`` is ``<package folder>.env`` so the existing
``cls.__module__.rsplit(".", 1)[0]`` bookkeeping records the folder, which loads the package again.
"""

from __future__ import annotations

import uuid
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from dataclaw.envcraft.runtime.environment import Scenario, run_from
from dataclaw.envcraft.runtime.errors import EnvError, invalid_reference
from dataclaw.envcraft.runtime.tools import Param, ToolSet, ToolSpec
from dataclaw.envcraft.worker.client import EnvWorker, WorkerError
from dataclaw.envcraft.worker.protocol import Op


@dataclass(frozen=True)
class Dimension:
    """One evaluator dimension as the worker described it (the evaluator itself runs there)."""

    name: str
    weight: float


@dataclass(frozen=True)
class RemoteEvaluator:
    dimensions: tuple[Dimension, ...]


def _remote_only(*args: Any, **kwargs: Any) -> dict[str, Any]:
    raise WorkerError("this tool runs in the environment's sandboxed worker; call it through the environment")


def _spec(raw: dict[str, Any]) -> ToolSpec:
    return ToolSpec(
        name=raw["name"],
        fn=_remote_only,
        description=raw["description"],
        params=tuple(Param(**p) for p in raw["params"]),
        side_effect=raw["side_effect"],
        state_fields_affected=tuple(raw["state_fields_affected"]),
        returns_description=raw.get("returns_description", ""),
        success_keys=tuple(raw.get("success_keys", ())),
    )


class _Store:
    """The one store question callers ask of an environment instance: does this session exist?"""

    def __init__(self, env: RemoteEnvironment) -> None:
        self._env = env

    def exists(self, session_id: str) -> bool:
        return bool(self._env._req(Op.EXISTS, sid=session_id))


class RemoteEnvironment:
    """Instance side: one state folder in the worker (its sessions), addressed by a random key."""

    name: ClassVar[str]
    DEFAULT_STATE: ClassVar[dict[str, Any]]
    tools: ClassVar[ToolSet]
    evaluator: ClassVar[RemoteEvaluator]
    env_var_prefix: ClassVar[str] = ""
    time_step_s: ClassVar[int] = 60
    worker: ClassVar[EnvWorker]
    folder: ClassVar[Path]
    _scenarios: ClassVar[dict[str, Scenario]]
    _prefix: ClassVar[str]
    layout: ClassVar[list[str]]
    remote: ClassVar[bool] = True

    def __init__(
        self, state_root: str | Path | None = None, *, key: str | None = None, **_options: Any
    ) -> None:
        self.state_root = Path(state_root) if state_root is not None else None
        self.inst = key or uuid.uuid4().hex
        self.session_id: str | None = None
        self.store = _Store(self)
        # ``memory=True`` as in-process: the worker keeps this instance's sessions in memory, no files
        self.memory = bool(_options.get("memory"))
        # the worker keeps this instance's sessions until the instance is gone (a caller's temp folder)
        if key is None:  # a named instance (persistent_env) keeps its sessions: its owner exports them
            weakref.finalize(self, _drop, self.worker, self.inst)

    def _req(self, op: Op, steps: int = 1, **args: Any) -> Any:
        if self.memory:
            args["mem"] = True  # read by the worker when the request makes the instance
        return self.worker.request(op, steps=steps, inst=self.inst, **args)

    # ---- class side ------------------------------------------------------------------------------------

    @classmethod
    def package_dir(cls) -> Path:
        return cls.folder

    @classmethod
    def prefix(cls) -> str:
        return cls._prefix

    @classmethod
    def scenarios(cls) -> dict[str, Scenario]:
        return dict(cls._scenarios)

    @classmethod
    def scenario(cls, scenario_id: str) -> Scenario:
        if scenario_id not in cls._scenarios:
            raise invalid_reference("scenario", scenario_id, sorted(cls._scenarios))
        return cls._scenarios[scenario_id]

    # ---- sessions --------------------------------------------------------------------------------------

    def create_session(
        self, scenario_id: str, session_id: str | None = None, *, long_context: bool = False
    ) -> str:
        sid = str(self._req(Op.CREATE, scenario_id=scenario_id, sid=session_id, lc=long_context))
        self.session_id = sid
        return sid

    def reset_session(self, session_id: str) -> None:
        self._req(Op.RESET, sid=session_id)

    def delete_session(self, session_id: str) -> None:
        self._req(Op.DELETE, sid=session_id)
        if self.session_id == session_id:
            self.session_id = None

    def get_session_state(self, session_id: str) -> dict[str, Any]:
        return dict(self._req(Op.STATE, sid=session_id))

    def evaluate_session(self, session_id: str) -> dict[str, Any]:
        return dict(self._req(Op.EVALUATE, sid=session_id))

    def get_env_state(self) -> dict[str, Any]:
        from dataclaw.envcraft.runtime.errors import EnvError, ErrorCategory

        if self.session_id is None:
            raise EnvError(
                ErrorCategory.MISSING_BINDING, "No session is bound: create or load a scenario first."
            )
        return self.get_session_state(self.session_id)

    def _load_scenario(self, scenario: dict[str, Any] | str, long_context: bool = False) -> None:
        self.session_id = self._req(Op.LOAD_SCENARIO, sid=self.session_id, scenario=scenario, lc=long_context)

    def restore_env_state(self, state: dict[str, Any]) -> None:
        from dataclaw.envcraft.runtime.errors import EnvError, ErrorCategory

        if self.session_id is None:
            raise EnvError(
                ErrorCategory.MISSING_BINDING, "No session is bound: create or load a scenario first."
            )
        self._req(Op.RESTORE, sid=self.session_id, state=state)

    def call(self, session_id: str, tool: str, /, **params: Any) -> dict[str, Any]:
        """One tool call in the worker; never raises: the environment's envelope, or an agent-safe error
        when the call was contained (timeout, crash, limit)."""
        return self.worker.call_tool(self.inst, session_id, tool, params)

    def run_from(
        self, state: dict[str, Any], calls: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """:func:`~dataclaw.envcraft.runtime.environment.run_from` in one round trip (restore, calls,
        state), not one per step. A run the worker does not finish cleanly (an error, a call that trips a
        containment, a timeout, a lost worker) is made again a request per step: its envelopes, state and
        incidents are then exactly those of the calls made one at a time."""
        if self.session_id is not None:
            plain = [{"tool": c["tool"], "params": dict(c.get("params") or {})} for c in calls]
            try:
                value = self._req(Op.RUN, steps=len(plain) + 2, sid=self.session_id, state=state, calls=plain)
            except (EnvError, WorkerError):
                pass
            else:
                return [dict(e) for e in value["envelopes"]], dict(value["state"])
        return run_from(self, state, calls)


def _drop(worker: EnvWorker, inst: str) -> None:
    """Finalizer: queue the instance's sessions for deletion. It may run in any thread at any moment
    (garbage collection), so it never takes the worker's lock: the next request sends the drop."""
    worker.pending_drops.append(inst)


def remote_env_class(worker: EnvWorker, desc: dict[str, Any]) -> type[RemoteEnvironment]:
    """The stand-in class of the package ``worker`` serves, from its ``describe`` answer."""
    folder = worker.folder
    scenarios = {raw["scenario_id"]: Scenario.from_dict(raw, f"{folder.name}/{raw['scenario_id']}")
                 for raw in desc["scenarios"]}  # fmt: skip
    attrs: dict[str, Any] = {
        "__module__": f"{folder}.env",
        "__doc__": desc.get("doc") or desc["name"],
        "__qualname__": desc.get("class_name") or "Environment",
        "name": desc["name"],
        "DEFAULT_STATE": desc["default_state"],
        "tools": ToolSet(_spec(t) for t in desc["tools"]),
        "evaluator": RemoteEvaluator(
            tuple(Dimension(d["name"], float(d["weight"])) for d in desc["evaluator"])
        ),
        "env_var_prefix": desc.get("env_var_prefix", ""),
        "time_step_s": int(desc.get("time_step_s", 60)),
        "worker": worker,
        "folder": folder,
        "_scenarios": scenarios,
        "_prefix": desc["prefix"],
        "layout": list(desc.get("layout_problems", [])),
        "enforced_rules": desc.get("enforced_rules"),  # a compiled package's rule list (None: it says none)
    }
    return type(desc.get("class_name") or "Environment", (RemoteEnvironment,), attrs)
