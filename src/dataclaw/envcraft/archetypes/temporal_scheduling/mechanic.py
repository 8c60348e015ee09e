"""Compiler mechanic of the temporal scheduling archetype: a compiled package gets ``schedule_X``: time slots
that never overlap or start in the past."""

from __future__ import annotations

from dataclaw.envcraft.synth.compile.mechanics import mechanic
from dataclaw.envcraft.synth.compile.plan import Param, Plan, ToolPlan, primary_collection, spaced
from dataclaw.envcraft.synth.compile.tools import id_param


@mechanic("temporal_scheduling")
def _temporal(p: Plan) -> None:
    c = primary_collection(p)
    p.add_tool(
        ToolPlan(
            f"schedule_{c.entity}",
            "schedule",
            "write",
            f"Book a time slot for a {spaced(c.entity)} record; slots never overlap or start in the past.",
            [
                id_param(c),
                Param("start", "str", "ISO-8601 start time with zone, e.g. 2026-03-03T10:00:00Z"),
                Param("duration_minutes", "int", "length of the slot in minutes (5-1440)", 60, False),
            ],
            [c.name, p.config["log"]],
            [c.entity],
            {"collection": c.name},
            ("schedule", c.name),
        )
    )
