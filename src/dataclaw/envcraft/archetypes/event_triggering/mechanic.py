"""Compiler mechanic of the event triggering archetype: a compiled package gets an event per status change and
``list_events``."""

from __future__ import annotations

from dataclaw.envcraft.synth.compile.mechanics import add_events, mechanic
from dataclaw.envcraft.synth.compile.plan import Plan


@mechanic("event_triggering")
def _event(p: Plan) -> None:
    add_events(p)
