"""Compiler mechanic of the cross tool pipeline archetype: a compiled package gets ``advance_X`` through the
pipeline stages and ``render_X_report`` (records by status)."""

from __future__ import annotations

from dataclaw.envcraft.synth.compile.mechanics import add_advance_tool, mechanic
from dataclaw.envcraft.synth.compile.plan import Param, Plan, ToolPlan, primary_collection


@mechanic("cross_tool_pipeline")
def _pipeline(p: Plan) -> None:
    c = primary_collection(p)
    add_advance_tool(p)
    reports = p.config.setdefault("reports", p.free("reports"))
    p.state.setdefault(reports, {})
    p.add_tool(
        ToolPlan(
            f"render_{c.name}_report",
            "render_report",
            "write",
            f"Aggregate the {c.entity.replace('_', ' ')} records by status into a rendered report.",
            [
                Param(
                    "format", "Literal['markdown', 'bullets', 'json']", "the output format", "markdown", False
                )
            ],
            [reports, p.config["log"]],
            ["report"],
            {"collection": c.name, "reports": reports},
            ("render_report", c.name),
        )
    )
