"""The built-in materialisers: ``clip``, ``freeze``, ``still``, ``keyframes``, ``stall_video`` and
``fault_recovery`` (paper A.3.1 stage 3, A.3.3)."""

from __future__ import annotations

from typing import Any, ClassVar

from dataclaw.core.ids import slug
from dataclaw.tailor.materialize.base import (
    ArtifactSpec,
    MaterializeIssue,
    Materializer,
    Segment,
    SpecError,
    as_frame,
    as_range,
    as_repeat,
    get_field,
    register_materializer,
)
from dataclaw.tailor.records import Candidate
from dataclaw.tailor.streams import StreamSource


def _pick(output: dict[str, Any], value: Any, field: str | None, what: str) -> Any:
    """A parameter given directly (resolved by the intent's plan) or read from the output's ``field``."""
    if value is not None:
        return value
    if field is None:
        raise SpecError(MaterializeIssue.BAD_CONFIG, f"'{what}' is given neither as a value nor as a field")
    return get_field(output, field)


def _camera(camera: str | None, candidate: Candidate | None) -> str | None:
    return camera or (candidate.camera if candidate else None)


def _numbered(placeholder: str | None, i: int) -> str | None:
    """``<image_N>`` → ``<image_1>``, ``<image_2>`` … for lists of stills (paper-style numbered slots)."""
    return placeholder.replace("_N>", f"_{i + 1}>") if placeholder else None


@register_materializer
class ClipMaterializer(Materializer):
    """A frame-exact clip of ``start..end`` (given, or the range in the output's ``field``), e.g. the
    recovery ``output_video`` (``<video_gen>``) or an observation ``input_video``."""

    name: ClassVar[str] = "clip"
    description: ClassVar[str] = "frame-exact clip of a frame range"

    def __init__(
        self,
        start: int | None = None,
        end: int | None = None,
        field: str = "input_video",
        key: str | None = None,
        role: str = "observation",
        placeholder: str | None = None,
        camera: str | None = None,
    ) -> None:
        self.start, self.end, self.field = start, end, field
        self.key, self.role, self.placeholder, self.camera = key or slug(role), role, placeholder, camera

    def plan(
        self, output: dict[str, Any], candidate: Candidate | None, source: StreamSource
    ) -> list[ArtifactSpec]:
        if self.start is not None or self.end is not None:
            start, end = as_range([self.start, self.end], f"{self.role} clip")
        else:
            start, end = as_range(get_field(output, self.field), self.field)
        segment = (Segment(start, end),)
        return [
            ArtifactSpec(
                self.key, "clip", self.role, segment, self.placeholder, _camera(self.camera, candidate)
            )
        ]


@register_materializer
class FreezeMaterializer(Materializer):
    """A freeze-frame video: ``frame`` repeated ``repeat`` times. With ``start`` it is the stalled video
    of A.3.1: frames ``start..frame`` as recorded, then ``frame`` held ``repeat`` more times."""

    name: ClassVar[str] = "freeze"
    description: ClassVar[str] = "a frame held N times, optionally after the clip leading up to it"

    def __init__(
        self,
        frame: int | None = None,
        repeat: int | None = None,
        start: int | None = None,
        frame_field: str = "freeze_frame",
        repeat_field: str = "repeat_count",
        start_field: str | None = None,
        key: str | None = None,
        role: str = "freeze",
        placeholder: str | None = None,
        camera: str | None = None,
    ) -> None:
        self.frame, self.repeat, self.start = frame, repeat, start
        self.frame_field, self.repeat_field, self.start_field = frame_field, repeat_field, start_field
        self.key, self.role, self.placeholder, self.camera = key or slug(role), role, placeholder, camera

    def plan(
        self, output: dict[str, Any], candidate: Candidate | None, source: StreamSource
    ) -> list[ArtifactSpec]:
        frame = as_frame(_pick(output, self.frame, self.frame_field, "frame"), "frame")
        n = as_repeat(_pick(output, self.repeat, self.repeat_field, "repeat"), "repeat")
        segments: tuple[Segment, ...] = (Segment(frame, frame, n),)
        if self.start is not None or self.start_field is not None:
            start = as_frame(_pick(output, self.start, self.start_field, "start"), "start")
            if start > frame:
                raise SpecError(
                    MaterializeIssue.OUT_OF_RANGE,
                    f"the freeze frame {frame} comes before the clip start {start}",
                )
            segments = (Segment(start, frame), *segments)
        camera = _camera(self.camera, candidate)
        return [ArtifactSpec(self.key, "freeze", self.role, segments, self.placeholder, camera)]


@register_materializer
class StillMaterializer(Materializer):
    """Lossless stills: ``frame`` (one), ``frames`` (a list) or the output's ``field`` (either). A
    placeholder ``<image_N>`` is numbered per still."""

    name: ClassVar[str] = "still"
    description: ClassVar[str] = "frames as PNG stills"

    def __init__(
        self,
        frame: int | None = None,
        frames: list[int] | None = None,
        field: str = "output_image",
        key: str | None = None,
        role: str = "recall",
        placeholder: str | None = None,
        camera: str | None = None,
    ) -> None:
        self.frame, self.frames, self.field = frame, frames, field
        self.key, self.role, self.placeholder, self.camera = key or slug(role), role, placeholder, camera

    def plan(
        self, output: dict[str, Any], candidate: Candidate | None, source: StreamSource
    ) -> list[ArtifactSpec]:
        raw = self.frames if self.frames is not None else _pick(output, self.frame, self.field, "frame")
        camera = _camera(self.camera, candidate)
        if not isinstance(raw, list):
            frame = as_frame(raw, "frame")
            return [
                ArtifactSpec(self.key, "still", self.role, (Segment(frame, frame),), self.placeholder, camera)
            ]
        if not raw:
            raise SpecError(MaterializeIssue.BAD_OUTPUT, f"{self.role} stills: the frame list is empty")
        frames = [as_frame(v, f"frames[{i}]") for i, v in enumerate(raw)]
        width = max(2, len(str(len(frames) - 1)))
        return [
            ArtifactSpec(
                f"{self.key}-{i:0{width}d}",
                "still",
                self.role,
                (Segment(f, f),),
                _numbered(self.placeholder, i),
                camera,
            )
            for i, f in enumerate(frames)
        ]


@register_materializer
class KeyframesMaterializer(Materializer):
    """Stills of a list of frames: the output's ``field`` when given, else the candidate's sampled frames
    (A.3.1 understanding branch, tutorial-style interleaved samples)."""

    name: ClassVar[str] = "keyframes"
    description: ClassVar[str] = "the candidate's (or an output list's) frames as PNG stills"

    def __init__(
        self,
        field: str | None = None,
        key: str = "keyframe",
        role: str = "keyframe",
        camera: str | None = None,
    ) -> None:
        self.field, self.key, self.role, self.camera = field, key, role, camera

    def plan(
        self, output: dict[str, Any], candidate: Candidate | None, source: StreamSource
    ) -> list[ArtifactSpec]:
        if self.field is not None:
            frames = get_field(output, self.field)
        elif candidate is not None and candidate.frames:
            frames = list(candidate.frames)
        else:
            raise SpecError(MaterializeIssue.BAD_OUTPUT, "keyframes need an output field or candidate frames")
        frames = frames if isinstance(frames, list) else [frames]
        still = StillMaterializer(frames=frames, key=self.key, role=self.role, camera=self.camera)
        return still.plan(output, candidate, source)


@register_materializer
class StallVideoMaterializer(Materializer):
    """The faulty input video of A.3.1 read from output fields: ``input_video.start .. freeze_frame``,
    then the freeze frame held ``repeat_count`` more times, the freeze inside ``input_video``."""

    name: ClassVar[str] = "stall_video"
    description: ClassVar[str] = "observation clip up to the freeze frame + the freeze frame held N times"

    def __init__(
        self,
        input_field: str = "input_video",
        freeze_field: str = "freeze_frame",
        repeat_field: str = "repeat_count",
        key: str = "observation",
        role: str = "observation",
        camera: str | None = None,
    ) -> None:
        self.input_field, self.freeze_field, self.repeat_field = input_field, freeze_field, repeat_field
        self.key, self.role, self.camera = key, role, camera

    def plan(
        self, output: dict[str, Any], candidate: Candidate | None, source: StreamSource
    ) -> list[ArtifactSpec]:
        start, end = as_range(get_field(output, self.input_field), self.input_field)
        freeze = as_frame(get_field(output, self.freeze_field), self.freeze_field)
        if not start <= freeze <= end:
            raise SpecError(
                MaterializeIssue.OUT_OF_RANGE,
                f"'{self.freeze_field}' {freeze} is outside '{self.input_field}' {start}..{end}",
            )
        n = as_repeat(get_field(output, self.repeat_field), self.repeat_field)
        freeze_step = FreezeMaterializer(freeze, n, start, key=self.key, role=self.role, camera=self.camera)
        return freeze_step.plan(output, candidate, source)


@register_materializer
class FaultRecoveryMaterializer(Materializer):
    """The three media of a fault-diagnosis sample (A.3.1 fault branch, e.g. ``approach_stall``) read
    from the output's fields: the stalled input video, the recall still (``<image_recall>``) and the
    recovery clip (``<video_gen>``)."""

    name: ClassVar[str] = "fault_recovery"
    description: ClassVar[str] = "stall video + <image_recall> still + <video_gen> recovery clip"

    def __init__(
        self,
        input_field: str = "input_video",
        freeze_field: str = "freeze_frame",
        repeat_field: str = "repeat_count",
        recovery_field: str = "output_video",
        recall_field: str = "output_image",
        camera: str | None = None,
    ) -> None:
        self.parts: list[Materializer] = [
            StallVideoMaterializer(input_field, freeze_field, repeat_field, camera=camera),
            StillMaterializer(field=recall_field, role="recall", placeholder="<image_recall>", camera=camera),
            ClipMaterializer(field=recovery_field, role="recovery", placeholder="<video_gen>", camera=camera),
        ]

    def plan(
        self, output: dict[str, Any], candidate: Candidate | None, source: StreamSource
    ) -> list[ArtifactSpec]:
        return [spec for part in self.parts for spec in part.plan(output, candidate, source)]
