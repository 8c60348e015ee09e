"""EnvCraft tasks (§4): tool tasks synthesised from sampled tool chains (:mod:`.tool`: ground → verifier →
text) and claw workspace tasks in the four-file protocol of C.5 (:mod:`.claw`: load, generate, audit)."""

from dataclaw.core.moved import keep_old_paths
from dataclaw.envcraft.tasks.tool.execute import GroundingError, GroundReason, ground_chain
from dataclaw.envcraft.tasks.tool.stages import GroundStage, SynthStage, chain_record, replay_task
from dataclaw.envcraft.tasks.tool.synth import SynthError, SynthReason, check_text, classify
from dataclaw.envcraft.tasks.tool.verifier import OPS, derive_verifier, evaluate

keep_old_paths(
    {
        **{
            f"dataclaw.envcraft.tasks.{name}": f"dataclaw.envcraft.tasks.tool.{name}"
            for name in ("composite", "execute", "initial", "personas", "stages", "synth", "verifier")
        },
        "dataclaw.envcraft.tasks.workspace": "dataclaw.envcraft.tasks.claw.workspace",
        "dataclaw.envcraft.tasks.claw_generate": "dataclaw.envcraft.tasks.claw.generate",
        "dataclaw.envcraft.tasks.workspace_audit": tuple(
            f"dataclaw.envcraft.tasks.claw.audit{part}"
            for part in ("", ".report", ".static", ".paths", ".fields", ".consistency", ".dynamic")
        ),
    }
)

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
