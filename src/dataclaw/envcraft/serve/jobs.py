"""Jobs that run INSIDE the sandbox worker for an environment package dataclaw did not write.

Each is called by :class:`~dataclaw.sandbox.WarmWorker` in a fresh forked child, with JSON arguments and a
JSON return value; paths are relative to the job's working directory (the sandbox workspace, where the
package was copied and the sessions live). The package is imported here, in the sandbox — never in the
server process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _env(package: str, state_root: str | None = None) -> Any:
    from dataclaw.envcraft.runtime import load_env_package

    env_cls = load_env_package(Path(package)).env_cls
    return env_cls if state_root is None else env_cls(Path(state_root))


def describe(package: str) -> dict[str, Any]:
    """Name, scenarios (id → first user turn) and OpenAI tool schemas of the package."""
    env_cls = _env(package)
    return {
        "name": env_cls.name,
        "scenarios": {sid: sc.task_prompt for sid, sc in env_cls.scenarios().items()},
        "tools": env_cls.tools.openai_schemas(),
    }


def create(package: str, state_root: str, scenario_id: str, initial_state: dict[str, Any] | None) -> str:
    """A new session from the scenario, restored to ``initial_state`` when given (a task's S0)."""
    env = _env(package, state_root)
    sid = env.create_session(scenario_id)
    if initial_state is not None:
        env.restore_env_state(initial_state)
    return str(sid)


def call(package: str, state_root: str, session_id: str, tool: str, params: dict[str, Any]) -> dict[str, Any]:
    """One tool call; the environment's own agent-safe envelope."""
    return dict(_env(package, state_root).call(session_id, tool, **params))


def state(package: str, state_root: str, session_id: str) -> dict[str, Any]:
    return dict(_env(package, state_root).get_session_state(session_id))


def evaluate(package: str, state_root: str, session_id: str) -> dict[str, Any]:
    """The environment's own evaluator on the session (scenario episodes)."""
    return dict(_env(package, state_root).evaluate_session(session_id))
