"""Compiler mechanics: what each retrieved archetype adds to a plan (state, config and tools): draft/commit,
pipeline stages and reports, user confirmation before gated moves, event triggers, available transitions,
time slots, bilateral matching, stream acknowledgement.

Each archetype's mechanic lives in its own folder (``envcraft/archetypes/<name>/mechanic.py``, registered
with :func:`mechanic`); the registry imports those of every archetype, in tree and out of tree
(:data:`dataclaw.envcraft.archetypes.ARCHETYPES`), on first lookup. What several archetypes share stays
here: :func:`add_advance_tool` and :func:`add_events`.

Not to be confused with :mod:`dataclaw.envcraft.synth.mechanics`, the operations the compiled package runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from dataclaw.core.registry import Registry
from dataclaw.envcraft.archetypes import ARCHETYPES
from dataclaw.envcraft.synth.compile.plan import (
    Param,
    Plan,
    ToolPlan,
    cancel_like,
    primary_collection,
    spaced,
)
from dataclaw.envcraft.synth.compile.tools import id_param

Mechanic = Callable[[Plan], None]
"""An archetype mechanic: adds state, config and tools to a plan."""


class _MechanicRegistry(Registry[Mechanic]):
    """Built-ins: the ``mechanic.py`` of every archetype folder that has one."""

    def _load_builtins(self) -> None:
        for _, archetype in ARCHETYPES.items():
            if archetype.mechanic_module is not None:
                importlib.import_module(archetype.mechanic_module)


MECHANICS: Registry[Mechanic] = _MechanicRegistry("compiler mechanic")
"""Archetype name → its mechanic; out of tree, an archetype folder's ``mechanic.py`` or a
``dataclaw.mechanics`` entry point (``name = pkg.mod:function``) adds one."""


def mechanic(name: str) -> Callable[[Mechanic], Mechanic]:
    """Register an archetype's mechanic under the archetype's name (a second one of that name is refused)."""
    return MECHANICS.named(name)


def add_advance_tool(p: Plan) -> None:
    """Pipeline stages on the primary collection (its open statuses, in order) and ``advance_X``."""
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


def add_events(p: Plan) -> str:
    """An events log fired by every status change of the primary collection, and ``list_events`` (once);
    returns the log's state field."""
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
