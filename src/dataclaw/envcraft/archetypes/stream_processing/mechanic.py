"""Compiler mechanic of the stream processing archetype: a compiled package gets the events log,
``pending_events`` and ``acknowledge_events`` (at-least-once delivery, the cursor only moves forward)."""

from __future__ import annotations

from dataclaw.envcraft.synth.compile.mechanics import add_events, mechanic
from dataclaw.envcraft.synth.compile.plan import Param, Plan, ToolPlan


@mechanic("stream_processing")
def _stream(p: Plan) -> None:
    add_events(p)
    cursor = p.config.setdefault("cursor", p.free("stream_cursor"))
    p.state.setdefault(cursor, {"acked": -1})
    p.add_tool(
        ToolPlan(
            "pending_events",
            "pending_events",
            "read",
            "List the events not yet acknowledged (at-least-once delivery: they stay until acknowledged).",
            [],
            returns=["events", "pending", "acked"],
            key=("pending_events",),
        )
    )
    p.add_tool(
        ToolPlan(
            "acknowledge_events",
            "acknowledge",
            "write",
            "Acknowledge every event up to and including an offset; the consumer cursor only moves forward.",
            [Param("offset", "int", "the last event offset handled")],
            [cursor],
            ["acked", "pending"],
            {},
            ("acknowledge",),
        )
    )
