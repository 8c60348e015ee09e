"""Records of Tailor's back half: ``Sample`` (a validated training example) and ``Artifact`` (a media file
materialised for it). Samples stay lightweight and reference artifacts by id (DESIGN.md, paper A.3.4).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


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
