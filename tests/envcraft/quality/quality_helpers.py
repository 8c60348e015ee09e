"""Tool tasks for the quality tests: the rollout helpers' reference-solution task with its verifier derived
as every task synthesised now is (with the ``unchanged`` guard), so it passes the soundness suite."""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft import archetypes
from dataclaw.envcraft.tasks.tool.execute import run_calls
from dataclaw.envcraft.tasks.tool.initial import env_allowance
from dataclaw.envcraft.tasks.tool.verifier import derive_verifier
from envcraft.rollout.rollout_helpers import ENV, tool_task


def guarded_tool_task(env: str = ENV) -> dict[str, Any]:
    task = tool_task(env)
    env_cls = archetypes.get(env).env_cls
    initial, final = (
        run_calls(env_cls, task["scenario_id"], task["initial_state"], calls)[1]
        for calls in ([], task["gold_chain"])
    )
    fields = {f for c in task["gold_chain"] for f in env_cls.tools.get(c["tool"]).state_fields_affected}
    allow = env_allowance(env_cls, initial)
    return {**task, "verifier": derive_verifier(initial, final, fields, guard=True, allow=allow)}
