"""Compiler mechanics: what each retrieved archetype adds to a plan (state, config and tools): draft/commit,
pipeline stages and reports, user confirmation before gated moves, event triggers, available transitions,
time slots, bilateral matching, stream acknowledgement.

Not to be confused with :mod:`dataclaw.envcraft.synth.mechanics`, the operations the compiled package runs.
"""

from __future__ import annotations

from collections.abc import Callable

from dataclaw.core.registry import Registry
from dataclaw.envcraft.synth.compile.plan import (
    Param,
    Plan,
    ToolPlan,
    cancel_like,
    primary_collection,
    spaced,
)
from dataclaw.envcraft.synth.compile.tools import attr_params, id_param, status_hint

Mechanic = Callable[[Plan], None]
"""An archetype mechanic: adds state, config and tools to a plan."""
MECHANICS: Registry[Mechanic] = Registry("compiler mechanic")
"""Archetype name → its mechanic; out of tree, a ``dataclaw.mechanics`` entry point adds one
(``name = pkg.mod:function``)."""


def mechanic(name: str) -> Callable[[Mechanic], Mechanic]:
    """Register an archetype's mechanic under the archetype's name (a second one of that name is refused)."""
    return MECHANICS.named(name)


@mechanic("transactional_workspace")
def _transactional(p: Plan) -> None:
    c = primary_collection(p)
    drafts = p.config.setdefault("drafts", p.free("drafts"))
    p.state.setdefault(drafts, {})
    words = c.entity.replace("_", " ")
    p.add_tool(
        ToolPlan(
            f"stage_{c.entity}_changes",
            "stage_change",
            "write",
            f"Stage field changes to a {words} record as a draft; nothing changes until commit_changes.",
            [id_param(c), *attr_params(c, False)],
            [drafts],
            ["draft", "pending"],
            {"collection": c.name},
            ("stage_change", c.name),
        )
    )
    p.add_tool(
        ToolPlan(
            "commit_changes",
            "commit",
            "write",
            "Apply every staged draft at once (all or nothing) and clear the drafts.",
            [],
            list(dict.fromkeys([drafts, *p.write_fields(c.name)])),
            ["committed"],
            {},
            ("commit",),
        )
    )
    p.add_tool(
        ToolPlan(
            "list_drafts",
            "list_drafts",
            "read",
            "List the staged drafts not yet committed.",
            [],
            returns=["drafts"],
            key=("list_drafts",),
        )
    )


def add_advance_tool(p: Plan) -> None:
    c = primary_collection(p)
    c.stages = [s for s in c.statuses if not cancel_like(s)]
    p.add_tool(
        ToolPlan(
            f"advance_{c.entity}",
            "advance",
            "write",
            f"Move a {spaced(c.entity)} record to the next stage of its pipeline ({' -> '.join(c.stages)}).",
            [id_param(c)],
            p.write_fields(c.name),
            [c.entity, "stage"],
            {"collection": c.name},
            ("advance", c.name),
        )
    )


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


def add_events(p: Plan) -> str:
    if not p.config.get("events"):
        p.config["events"] = p.free("events")
        p.state[p.config["events"]] = []
        c = primary_collection(p)
        p.config["triggers"] = [
            {"collection": c.name, "status": s, "event": f"{c.entity}_{s}"} for s in c.statuses
        ]
        p.add_tool(
            ToolPlan(
                "list_events",
                "list_events",
                "read",
                "List the events the environment fired (one per status change), after an offset.",
                [Param("after_offset", "int | None", "only events with a larger offset", None, False)],
                returns=["events", "total"],
                key=("list_events",),
            )
        )
    return p.config["events"]


@mechanic("event_triggering")
def _event(p: Plan) -> None:
    add_events(p)


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


@mechanic("bilateral_matching")
def _matching(p: Plan) -> None:
    a = primary_collection(p)
    b = next((c for c in p.collections.values() if c.name != a.name), a)
    matches = p.config.setdefault("matches", p.free("matches"))
    p.state.setdefault(matches, {})
    b_param = b.id_param if b is not a else f"partner_{a.id_param}"
    p.add_tool(
        ToolPlan(
            f"match_{a.entity}_with_{b.entity}" if b is not a else f"match_{a.entity}_pair",
            "match",
            "write",
            f"Match a {spaced(a.entity)} with a {spaced(b.entity)}; each record is matched at most once.",
            [id_param(a), Param(b_param, "str", f"the {b.entity.replace('_', ' ')} id to match with")],
            list(dict.fromkeys([a.name, b.name, matches, p.config["log"]])),
            ["match"],
            {
                "collection": a.name,
                "partner": b.name,
                "a_param": a.id_param,
                "b_param": b_param,
                "matches": matches,
            },
            ("match", a.name, b.name),
        )
    )


@mechanic("workflow_orchestration")
def _workflow(p: Plan) -> None:
    add_advance_tool(p)


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
