"""The stream-processing environment (EnvCraft B.3 archetype 9: fault-tolerant stream processing)."""

from __future__ import annotations

from typing import Any, ClassVar

from dataclaw.envcraft.archetypes.stream_processing import delivery, streams, subscriptions
from dataclaw.envcraft.archetypes.stream_processing.bus import publish
from dataclaw.envcraft.archetypes.stream_processing.evaluator import EVALUATOR
from dataclaw.envcraft.archetypes.stream_processing.state import DEFAULT_STATE, long_context_positions
from dataclaw.envcraft.runtime import Environment, Evaluator, Scenario, ToolSet


class StreamProcessing(Environment):
    """An asynchronous pub-sub bus: streams are schema-declared channels; subscriptions are independent
    consumer handles, each with a private pending queue; the filter is a pure exact-equality predicate;
    acknowledgement is the only way an event leaves a queue."""

    name: ClassVar[str] = "stream_processing"
    env_var_prefix: ClassVar[str] = "STREAMBUS"
    DEFAULT_STATE: ClassVar[dict[str, Any]] = DEFAULT_STATE
    tools: ClassVar[ToolSet] = ToolSet.from_modules(streams, subscriptions, delivery)
    evaluator: ClassVar[Evaluator] = EVALUATOR

    def on_scenario_loaded(self, state: dict[str, Any], scenario: Scenario) -> None:
        """Long-context sessions add the fleet.positions stream with 144 AIS pings, published through
        the bus after the recorded history (they match no subscription, so no queue changes)."""
        if state["meta"]["long_context"]:
            stream, pubs = long_context_positions()
            state["streams"][stream["stream_id"]] = stream
            for p in pubs:
                publish(state, stream, p["payload"], stream["default_priority"], "ais-feed", p["at"])
