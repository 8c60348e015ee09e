"""Fault-tolerant stream processing (EnvCraft B.3, archetype 9): a cold-chain telemetry pub-sub bus with
schema-contract streams, filtered push/poll/batch subscriptions, prioritised publication with fan-out,
at-least-once delivery (pending until acked) and observable backpressure."""

from dataclaw.envcraft.archetypes.stream_processing.env import StreamProcessing

ENVIRONMENT = StreamProcessing

__all__ = ["ENVIRONMENT", "StreamProcessing"]
