"""The stream-processing environment (EnvCraft B.3 archetype 9: fault-tolerant stream processing)."""

from __future__ import annotations

from typing import Any, ClassVar

from dataclaw.envcraft.archetypes.stream_processing import delivery, streams, subscriptions
from dataclaw.envcraft.archetypes.stream_processing.evaluator import EVALUATOR
from dataclaw.envcraft.archetypes.stream_processing.state import DEFAULT_STATE
from dataclaw.envcraft.runtime import Environment, Evaluator, ToolSet


class StreamProcessing(Environment):
    """An asynchronous pub-sub bus: streams are schema-declared channels; subscriptions are independent
    consumer handles, each with a private pending queue; the filter is a pure exact-equality predicate;
    acknowledgement is the only way an event leaves a queue."""

    name: ClassVar[str] = "stream_processing"
    env_var_prefix: ClassVar[str] = "STREAMBUS"
    DEFAULT_STATE: ClassVar[dict[str, Any]] = DEFAULT_STATE
    tools: ClassVar[ToolSet] = ToolSet.from_modules(streams, subscriptions, delivery)
    evaluator: ClassVar[Evaluator] = EVALUATOR
