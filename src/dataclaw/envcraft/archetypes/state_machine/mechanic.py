"""Compiler mechanic of the state machine archetype: a compiled package gets ``available_X_transitions`` (the
statuses a record may move to next)."""

from __future__ import annotations

from dataclaw.envcraft.synth.compile.mechanics import mechanic
from dataclaw.envcraft.synth.compile.plan import Plan, ToolPlan, primary_collection, spaced
from dataclaw.envcraft.synth.compile.tools import id_param


@mechanic("state_machine")
def _fsm(p: Plan) -> None:
    c = primary_collection(p)
    p.add_tool(
        ToolPlan(
            f"available_{c.entity}_transitions",
            "available_transitions",
            "read",
            f"Show the statuses a {spaced(c.entity)} record may move to next (and which need confirmation).",
            [id_param(c)],
            returns=["record_id", "status", "next_statuses"],
            cfg={"collection": c.name},
            key=("available_transitions", c.name),
        )
    )
