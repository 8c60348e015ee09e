"""Materialisation (paper A.3.1 stage 3, A.3.3, A.3.4): write the media a validated sample refers to.

A sample's output names frames of its stream (``freeze_frame``, ``output_video`` …). Named
*materialisers* (``clip``, ``freeze``, ``still``, ``keyframes``, ``stall_video``, ``fault_recovery``) turn
(output, candidate, stream source) into :class:`ArtifactSpec`s — which frames, in which order, how many
times each. Their parameters are resolved values (the plan synthesis renders from the intent's
``materialisers`` into ``sample.provenance["materialize"]``) or output field paths.
:class:`MaterializeStage` writes them frame-exactly under ``RUN/media/<safe-sample-id>/`` (lossless,
deterministic: see :mod:`dataclaw.media.writers`), records each file as an :class:`Artifact` with its
sha256, and returns the sample with :class:`MediaRef`s. Samples stay lightweight: they point at
artifacts by id (A.3.3).

The fault branch (the ``robot_fault_recovery`` intent, fault type ``approach_stall``; ``freeze`` with a
``start``, or ``fault_recovery`` on output fields) follows A.3.1: the faulty input video is the
observation clip from ``input_video.start`` up to ``freeze_frame``, followed by the freeze frame held
``repeat_count`` more times (the robot stalls where it stopped); the recovery video is
clipped from the original future according to ``output_video`` and fills ``<video_gen>``; the recall image
is the ``output_image`` frame and fills ``<image_recall>``.

Media binding (the LLaMA-Factory convention of :class:`Turn`): artifacts without a placeholder are model
*inputs* and appear as ``<image>`` / ``<video>`` tokens in the conversation, in the order of
``Sample.media``; when the conversation has no tokens of a kind, they are prepended to the first user
turn; a count that disagrees is a ``token_mismatch`` reject. Artifacts with a placeholder are *targets*;
a placeholder missing from the text is appended to the last assistant turn. What was added is noted in
``sample.provenance["materialized"]`` (the plan under ``"materialize"`` is kept), so rerunning a
materialised sample is a no-op on its text.

Run layout: the stage writes ``materialize.jsonl`` (``{"id", "sample", "artifacts"}`` per sample);
:func:`publish` splits it into ``artifacts.jsonl`` and ``samples.jsonl``, which exporters read.
"""

from dataclaw.tailor.materialize.base import (
    DEFAULT_CODEC,
    MATERIALIZERS,
    MAX_REPEAT,
    MEDIA_DIR,
    STAGE,
    ArtifactSpec,
    MaterializeIssue,
    Materializer,
    Segment,
    SpecError,
    as_frame,
    as_range,
    as_repeat,
    get_field,
    get_materializer,
    materializer_names,
    register_materializer,
)
from dataclaw.tailor.materialize.materializers import (
    ClipMaterializer,
    FaultRecoveryMaterializer,
    FreezeMaterializer,
    KeyframesMaterializer,
    StallVideoMaterializer,
    StillMaterializer,
)
from dataclaw.tailor.materialize.stage import (
    MaterializeStage,
    MediaBudgetExceeded,
    MediaEstimate,
    bind_media,
    estimate_media,
    make_item,
    materialize,
    media_dir_name,
    media_summary,
    plan_steps,
    publish,
    source_frames,
    unique_keys,
)
from dataclaw.tailor.records import ARTIFACTS, IMAGE_TOKEN, SAMPLES, TOKENS, VIDEO_TOKEN, count_tokens

__all__ = [
    "ARTIFACTS",
    "DEFAULT_CODEC",
    "IMAGE_TOKEN",
    "MATERIALIZERS",
    "MAX_REPEAT",
    "MEDIA_DIR",
    "SAMPLES",
    "STAGE",
    "TOKENS",
    "VIDEO_TOKEN",
    "ArtifactSpec",
    "ClipMaterializer",
    "FaultRecoveryMaterializer",
    "FreezeMaterializer",
    "KeyframesMaterializer",
    "MaterializeIssue",
    "MaterializeStage",
    "Materializer",
    "MediaBudgetExceeded",
    "MediaEstimate",
    "Segment",
    "SpecError",
    "StallVideoMaterializer",
    "StillMaterializer",
    "as_frame",
    "as_range",
    "as_repeat",
    "bind_media",
    "count_tokens",
    "estimate_media",
    "get_field",
    "get_materializer",
    "make_item",
    "materialize",
    "materializer_names",
    "media_dir_name",
    "media_summary",
    "plan_steps",
    "publish",
    "register_materializer",
    "source_frames",
    "unique_keys",
]
