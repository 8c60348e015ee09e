"""Tailor's records and their ids: ``Candidate`` (a construction unit mined from a stream), ``Sample`` (a
validated training example) and ``Artifact`` (a media file materialised for it). Samples stay lightweight
and reference artifacts by id (DESIGN.md, paper A.3.4).

Ids belong to the framework: each derives from its parent's id and its own inputs (stream → candidate →
response → sample → artifact), so reruns agree and any output traces back to its stream. Every stage
makes its records' ids here, and none imports another stage to do so.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from dataclaw.core.ids import child_id, stable_hash
from dataclaw.tailor.intents.base import Intent, TemplateError, lookup, render


class CandidateKind(StrEnum):
    """What a candidate is for (one per construction branch of paper A.3)."""

    FAULT_WINDOW = "fault_window"
    KEYFRAMES = "keyframes"
    GUI_TASK = "gui_task"
    DYNAMIC_SEGMENT = "dynamic_segment"
    LECTURE_SEGMENT = "lecture_segment"


class FrameRange(BaseModel):
    """Frames ``start..end`` (both inclusive) of the stream's video, with their times in seconds."""

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    t_start: float = Field(ge=0.0)
    t_end: float = Field(ge=0.0)

    @model_validator(mode="after")
    def _ordered(self) -> FrameRange:
        if self.end < self.start or self.t_end < self.t_start:
            raise ValueError(f"range end before start: {self.start}..{self.end}")
        return self

    @property
    def length(self) -> int:
        return self.end - self.start + 1

    def contains(self, frame: int) -> bool:
        return self.start <= frame <= self.end


class Candidate(BaseModel):
    """One construction unit mined from a stream, with the evidence it was chosen on."""

    id: str
    stream_id: str
    kind: CandidateKind
    camera: str | None = Field(default=None, description="video the frame indices refer to")
    fps: float | None = None
    frame_count: int | None = Field(default=None, description="frames in the stream's video")
    span: FrameRange | None = Field(default=None, description="the whole stretch the candidate covers")
    observation: FrameRange | None = Field(default=None, description="fault windows: input range")
    future: FrameRange | None = Field(default=None, description="fault windows: continuation range")
    frames: list[int] = Field(default_factory=list, description="sampled frame indices (keyframes, segments)")
    observation_frames: list[int] = Field(default_factory=list)
    future_frames: list[int] = Field(default_factory=list)
    t_start: float | None = None
    t_end: float | None = None
    anchor_ids: list[str] = Field(default_factory=list, description="anchors this candidate was chosen on")
    why: str = Field(description="human-readable reason this candidate was chosen")
    payload: dict[str, Any] = Field(default_factory=dict, description="kind-specific data")


SAMPLES = "samples"
"""The file samples are published in (``samples.jsonl``), read by exporters."""
ARTIFACTS = "artifacts"
"""The file artifacts are published in (``artifacts.jsonl``)."""
IMAGE_TOKEN = "<image>"
VIDEO_TOKEN = "<video>"
TOKENS = {"image": IMAGE_TOKEN, "video": VIDEO_TOKEN}
"""The media token of each input kind in a :class:`Turn` (the LLaMA-Factory convention)."""


class Turn(BaseModel):
    """One conversation turn. Media appear in ``content`` as ``<image>`` / ``<video>`` tokens, in the order
    of the sample's ``media`` list (the LLaMA-Factory convention); paper placeholders such as ``<video_gen>``
    and ``<image_recall>`` stay in the text and are bound to media by ``MediaRef.placeholder``."""

    role: Literal["system", "user", "assistant"]
    content: str


class MediaRef(BaseModel):
    """A reference from a sample to one of its artifacts."""

    artifact_id: str
    kind: Literal["image", "video"]
    role: str = Field(description="what it is for: observation, freeze, recall, keyframe, slide, target …")
    placeholder: str | None = Field(default=None, description="paper placeholder it fills, e.g. <video_gen>")


class Route(BaseModel):
    """Which model answered and why (B.2.2 Omni vs Expert routing; A.4.3 fuzzy intent resolution)."""

    model: str
    router: str = Field(description="omni | expert")
    intent_choice: dict[str, Any] = Field(default_factory=dict, description="fuzzy request → intent, reason")


class Sample(BaseModel):
    """One schema-valid, evidence-grounded training sample."""

    id: str
    intent: str
    domain: str
    stream_id: str
    candidate_id: str
    output: dict[str, Any] = Field(description="the model's answer, valid against the intent's schema")
    conversation: list[Turn] = Field(description="the training conversation built from the output")
    media: list[MediaRef] = Field(default_factory=list)
    route: Route
    provenance: dict[str, Any] = Field(
        default_factory=dict, description="anchor ids used, request hash, seed, source frame indices"
    )
    checks: dict[str, bool] = Field(default_factory=dict, description="validator name → passed")
    grounding: Literal["anchors", "unchecked"] | None = Field(
        default=None,
        description="anchors: its text was checked against content anchors (task, events, proprioception, "
        "screen or lecture text); unchecked: nothing to check it against (a video with shot and motion "
        "anchors only); None: not recorded (older runs)",
    )
    evidence: Literal["perceived", "text_only"] | None = Field(
        default=None,
        description="perceived: the model was sent what its intent must perceive; text_only: a visual "
        "intent answered from text alone (allowed by --text-only-evidence); None: not recorded (older runs)",
    )


class Artifact(BaseModel):
    """A media file written for a sample: a clip, a freeze-frame video or a still."""

    id: str
    sample_id: str
    kind: Literal["clip", "freeze", "still"]
    path: str = Field(description="relative to the run directory")
    sha256: str
    media_type: Literal["image", "video"]
    frames: int = Field(ge=1)
    fps: float | None = None
    width: int
    height: int
    source: dict[str, Any] = Field(description="stream_id, camera and the source frame indices it holds")


# ------------------------------------------------------------------------------------------------
# ids and sample construction


def candidate_id(stream_id: str, miner: str, key: Any, settings: dict[str, Any], label: str) -> str:
    """A candidate's id: its stream, the miner, the miner's key for it (its frames, times …) and the
    miner's settings, so a rerun with other settings makes other candidates."""
    return child_id(stream_id, "cand", [miner, key, stable_hash(settings, 8)], label=label)


def response_id(candidate_id: str, intent_id: str, producer: Any = None) -> str:
    """A response's id: the candidate and the intent, and with ``producer`` the hash of what produces the
    answer (the model, the intent's definition, the seed …), so a changed producer is a new response."""
    key = intent_id if producer is None else [intent_id, stable_hash(producer, 8)]
    return child_id(candidate_id, "resp", key, label=intent_id)


def sample_id(candidate_id: str, intent_id: str) -> str:
    """Id of the sample built for ``candidate_id`` under ``intent_id``."""
    return child_id(candidate_id, "sample", intent_id, label=intent_id)


def _param(value: Any, ctx: dict[str, Any], where: str) -> Any:
    """A materialiser parameter: ``"{{ a.b }}"`` alone keeps the value's type; other strings render."""
    if isinstance(value, str):
        s = value.strip()
        if s.startswith("{{") and s.endswith("}}") and s.count("{{") == 1:
            try:
                return lookup(ctx, s[2:-2].strip())
            except KeyError:
                raise TemplateError(f"{where}: '{s}' is not in the output or context") from None
        return render(value, ctx, where)
    if isinstance(value, dict):
        return {k: _param(v, ctx, where) for k, v in value.items()}
    if isinstance(value, list):
        return [_param(v, ctx, where) for v in value]
    return value


def build_sample(response: dict[str, Any], intent: Intent, checks: list[str]) -> Sample:
    """The :class:`Sample` of a validated response: conversation turns from the intent's template and a
    materialisation plan (which clips, freeze videos and stills to write) in ``provenance``."""
    ctx = {**response["context"], "output": response["output"]}
    turns = [
        Turn(role=t.role, content=render(t.content, ctx, f"intent {intent.id} conversation"))
        for t in intent.conversation
    ]
    plan = []
    for step in intent.materialisers:
        params = _param(step.params, ctx, f"intent {intent.id} materialiser {step.name}")
        plan.append(
            {
                "materialiser": step.name,
                "stream_id": response["stream_id"],
                "camera": ctx["stream"].get("camera"),
                **params,
            }
        )
    return Sample(
        id=sample_id(response["candidate_id"], intent.id),
        intent=intent.id,
        domain=str(intent.domain),
        stream_id=response["stream_id"],
        candidate_id=response["candidate_id"],
        output=response["output"],
        conversation=turns,
        route=Route(
            model=response["model"],
            router=response["router"],
            intent_choice=response.get("intent_choice") or {},
        ),
        provenance={
            "response_id": response["id"],
            "request_hash": response["request_hash"],
            "seed": response.get("seed", 0),
            "anchor_ids": ctx.get("anchor_ids", []),
            "frames": response.get("frames", []),
            "sent": response.get("sent"),
            "materialize": plan,
            "usage": response.get("usage", {}),
            "cost_usd": response.get("cost_usd", 0.0),
        },
        checks=dict.fromkeys(checks, True),
        evidence=response.get("evidence"),
    )


def count_tokens(turns: Sequence[Turn], token: str) -> int:
    """How often ``token`` occurs in the conversation."""
    return sum(t.content.count(token) for t in turns)


def artifact_id(sample_id: str, kind: str, key: str) -> str:
    """An artifact's id: its sample, its kind (clip, freeze, still) and its key, unique within the sample."""
    return child_id(sample_id, kind, key, label=key)


def first_error(exc: ValidationError) -> str:
    """Where and why a record does not validate (its first error), for a ``bad_record`` reject."""
    err = exc.errors()[0]
    return f"{'.'.join(str(p) for p in err['loc']) or 'record'}: {err['msg']}"
