"""Asynchronous event triggering (EnvCraft B.3, archetype 4): a synchronous event-condition-action engine
for a cold-chain distributor's automation hub — sources, rules, event injection, event and action logs."""

from dataclaw.envcraft.archetypes.event_triggering.env import EventTriggering

ENVIRONMENT = EventTriggering

__all__ = ["ENVIRONMENT", "EventTriggering"]
