"""Compiler mechanic of the human agent interaction archetype: a compiled package gets
``request_X_confirmation``; moves to final statuses are refused without it."""

from __future__ import annotations

from dataclaw.envcraft.synth.compile.mechanics import mechanic
from dataclaw.envcraft.synth.compile.plan import Param, Plan, ToolPlan, primary_collection
from dataclaw.envcraft.synth.compile.tools import id_param, status_hint


@mechanic("human_agent_interaction")
def _human(p: Plan) -> None:
    c = primary_collection(p)
    finals = [s for s, nxt in c.transitions.items() if not nxt]
    c.gated = finals
    conf = p.config.setdefault("confirmations", p.free("confirmations"))
    p.state.setdefault(conf, {})
    p.add_tool(
        ToolPlan(
            f"request_{c.entity}_confirmation",
            "request_confirmation",
            "write",
            f"Ask the user to confirm moving a {c.entity.replace('_', ' ')} record to a final status "
            f"({', '.join(finals)}); such moves are refused without it.",
            [
                id_param(c),
                Param("status", status_hint(c), "the status the user should confirm"),
                Param("note", "str | None", "what to tell the user", None, False),
            ],
            [conf, p.config["log"]],
            ["confirmation", "reply"],
            {"collection": c.name},
            ("request_confirmation", c.name),
        )
    )
