"""Compiler mechanic of the workflow orchestration archetype: a compiled package gets ``advance_X`` through
the pipeline stages."""

from __future__ import annotations

from dataclaw.envcraft.synth.compile.mechanics import add_advance_tool, mechanic
from dataclaw.envcraft.synth.compile.plan import Plan


@mechanic("workflow_orchestration")
def _workflow(p: Plan) -> None:
    add_advance_tool(p)
