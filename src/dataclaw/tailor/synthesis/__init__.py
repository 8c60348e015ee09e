"""Schema-constrained synthesis (paper A.3 steps 2–3, §3.4): candidate + intent → request → response.

:mod:`.context` builds the request context, :mod:`.fragments` the GUI reconstruction fragments and their
distractors, :mod:`.route` picks the model (Omni vs Expert), :mod:`.stage` asks it.
"""

from dataclaw.tailor.intents.prompt import FOOTER, build_messages
from dataclaw.tailor.records import build_sample, response_id
from dataclaw.tailor.synthesis.context import GUI_ACTIONS, WINDOW_KINDS, build_context, plan_frames
from dataclaw.tailor.synthesis.fragments import DISTRACTORS, load_distractors, run_distractors
from dataclaw.tailor.synthesis.stage import (
    RESPONSES,
    FrameCache,
    SynthesizeStage,
    SynthIssue,
    load_frames,
    synth_item,
)

__all__ = [
    "DISTRACTORS",
    "FOOTER",
    "GUI_ACTIONS",
    "RESPONSES",
    "WINDOW_KINDS",
    "FrameCache",
    "SynthIssue",
    "SynthesizeStage",
    "build_context",
    "build_messages",
    "build_sample",
    "load_distractors",
    "load_frames",
    "plan_frames",
    "response_id",
    "run_distractors",
    "synth_item",
]
