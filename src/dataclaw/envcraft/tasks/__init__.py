"""Verifiable task synthesis from sampled tool chains (EnvCraft §4.2): ground → verifier → text."""

from dataclaw.envcraft.tasks.execute import GroundingError, GroundReason, ground_chain
from dataclaw.envcraft.tasks.stages import GroundStage, SynthStage, chain_record, replay_task
from dataclaw.envcraft.tasks.synth import SynthError, SynthReason, check_text, classify
from dataclaw.envcraft.tasks.verifier import OPS, derive_verifier, evaluate

__all__ = [
    "OPS",
    "GroundReason",
    "GroundStage",
    "GroundingError",
    "SynthError",
    "SynthReason",
    "SynthStage",
    "chain_record",
    "check_text",
    "classify",
    "derive_verifier",
    "evaluate",
    "ground_chain",
    "replay_task",
]
