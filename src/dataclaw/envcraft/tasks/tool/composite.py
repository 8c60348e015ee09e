"""Several environments as one, for cross-environment tasks (EnvCraft §4.1 cross-env chains).

A cross-environment chain (``crm.find_customer`` → ``billing.refund``) runs in one session of each
environment. :func:`env_group` makes an ``Environment``-like class over them, so grounding, the
initial-state builder, replay and the rollout harness use one code path for single- and cross-env
tasks:

* tools are named ``<env>.<tool>`` (the chain's own step names); their specs are the members' own;
* a group scenario is one scenario per member, ``<env>:<scenario>+<env>:<scenario>``;
* the session state is ``{<env>: <that env's session state>}``, so a verifier's JSON pointers start
  with the environment (``/crm/customers/C-1/tier``), and a tool's state fields are ``<env>/<field>``.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from pathlib import Path
from typing import Any, ClassVar

from dataclaw.envcraft.runtime.environment import Scenario, run_from
from dataclaw.envcraft.runtime.tools import ToolSet

SEP = "."
MAX_SCENARIOS = 512


class EnvGroup:
    """Sessions of several environments behind the instance interface of ``Environment``."""

    name: ClassVar[str]
    members: ClassVar[dict[str, Any]]
    tools: ClassVar[ToolSet]
    DEFAULT_STATE: ClassVar[dict[str, Any]]

    def __init__(self, state_root: str | Path | None = None, **options: Any) -> None:
        root = Path(state_root) if state_root is not None else None  # None: each member's own default
        self.envs = {
            env: cls(root / env if root is not None else None, **options) for env, cls in self.members.items()
        }
        self.session_id: str | None = None

    @classmethod
    def scenarios(cls) -> dict[str, Scenario]:
        """Every combination of member scenarios (capped), with the members' reference solutions
        concatenated under prefixed tool names (built once per group class)."""
        return _group_scenarios(cls)

    @classmethod
    def split_scenario(cls, scenario_id: str) -> dict[str, str]:
        parts = dict(p.split(":", 1) for p in scenario_id.split("+") if ":" in p)
        if sorted(parts) != sorted(cls.members):
            raise ValueError(
                f"scenario {scenario_id!r} does not name one scenario per environment of {cls.name}"
            )
        return parts

    def create_session(
        self, scenario_id: str, session_id: str | None = None, *, long_context: bool = False
    ) -> str:
        sid = session_id or "group"
        for env, sc in self.split_scenario(scenario_id).items():
            self.envs[env].create_session(sc, session_id=sid, long_context=long_context)
        self.session_id = sid
        return sid

    def get_session_state(self, session_id: str) -> dict[str, Any]:
        return {env: e.get_session_state(session_id) for env, e in self.envs.items()}

    def restore_env_state(self, state: dict[str, Any]) -> None:
        for env, e in self.envs.items():
            e.restore_env_state(state[env])

    def run_from(
        self, state: dict[str, Any], calls: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """:func:`~dataclaw.envcraft.runtime.environment.run_from` in the group's session."""
        return run_from(self, state, calls)

    def delete_session(self, session_id: str) -> None:
        for e in self.envs.values():
            e.delete_session(session_id)
        self.session_id = None

    def call(self, session_id: str, tool: str, /, **params: Any) -> dict[str, Any]:
        """Run ``<env>.<tool>`` in that environment's session; never raises (agent-safe errors)."""
        env, _, local = tool.partition(SEP)
        if env not in self.envs or not local:
            known = ", ".join(self.tools.names())
            return {
                "status": "error",
                "error": {
                    "category": "unknown_tool",
                    "message": f"There is no tool {tool!r}. Available tools: {known}.",
                },
            }
        return self.envs[env].call(session_id, local, **params)


@functools.cache
def _group_scenarios(cls: type[EnvGroup]) -> dict[str, Scenario]:
    per_env = [[(env, sc) for _, sc in sorted(c.scenarios().items())] for env, c in cls.members.items()]
    out: dict[str, Scenario] = {}
    for combo in itertools.islice(itertools.product(*per_env), MAX_SCENARIOS):
        sid = "+".join(f"{env}:{sc.scenario_id}" for env, sc in combo)
        steps = [
            {**st, "tool": f"{env}{SEP}{st['tool']}"} for env, sc in combo for st in sc.reference_solution
        ]
        out[sid] = Scenario(
            scenario_id=sid,
            title=" + ".join(sc.title for _, sc in combo),
            task_prompt="\n".join(sc.task_prompt for _, sc in combo),
            base_time=combo[0][1].base_time,
            reference_solution=steps,
        )
    return out


def _prefixed(env: str, tools: ToolSet) -> list[Any]:
    return [
        dataclasses.replace(
            spec,
            name=f"{env}{SEP}{spec.name}",
            state_fields_affected=tuple(f"{env}/{f}" for f in spec.state_fields_affected),
        )
        for spec in tools
    ]


@functools.cache
def env_group(members: tuple[tuple[str, Any], ...]) -> type[EnvGroup]:
    """The group class over ``(name, Environment class)`` pairs, in chain order (cached)."""
    if len(members) < 2:
        raise ValueError("an environment group needs at least two environments")
    names = [n for n, _ in members]
    if len(set(names)) != len(names):
        raise ValueError(f"an environment appears twice in {names}")
    attrs = {
        "name": "+".join(names),
        "members": dict(members),
        "tools": ToolSet(spec for n, c in members for spec in _prefixed(n, c.tools)),
        "DEFAULT_STATE": {n: c.DEFAULT_STATE for n, c in members},
    }
    return type("EnvGroup_" + "_".join(names), (EnvGroup,), attrs)
