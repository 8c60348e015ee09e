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

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import ValidationError

from dataclaw.core.errors import ConfigError, Reject
from dataclaw.core.ids import child_id, slug, stable_hash
from dataclaw.core.registry import Registry
from dataclaw.core.store import RunStore
from dataclaw.media.errors import MediaError, MediaIssue
from dataclaw.media.video import VideoReader
from dataclaw.media.writers import VideoCodec, Written, get_codec, write_clip, write_still
from dataclaw.pipeline import Resources, Result, Stage, StageStats, run_stage
from dataclaw.tailor.records import Artifact, Candidate, MediaRef, Sample, Turn
from dataclaw.tailor.streams import Stream, StreamSource

STAGE = "materialize"
SAMPLES = "samples"
ARTIFACTS = "artifacts"
MEDIA_DIR = "media"
IMAGE_TOKEN = "<image>"
VIDEO_TOKEN = "<video>"
TOKENS = {"image": IMAGE_TOKEN, "video": VIDEO_TOKEN}
MAX_REPEAT = 10_000
DEFAULT_CODEC = "h264"
"""What samples' clips are written with unless asked otherwise: visually lossless yuv420p H.264 (CRF 18),
playable in a browser. ``lossless`` (RGB H.264) or ``ffv1`` when frame-exactness is needed."""


class MaterializeIssue(StrEnum):
    """Why a sample could not be materialised."""

    BAD_ITEM = "bad_item"
    """The item lacks a parseable sample or stream record."""
    BAD_CONFIG = "bad_config"
    """An unknown materialiser, bad parameters, a step for another stream, an unknown camera."""
    BAD_OUTPUT = "bad_output"
    """A field the materialiser reads is missing or has the wrong type."""
    OUT_OF_RANGE = "out_of_range"
    """A frame index outside the stream, a range that ends before it starts, a freeze outside its range."""
    MEDIA_ERROR = "media_error"
    """Decoding the source frames or encoding the artifact failed."""
    TOKEN_MISMATCH = "token_mismatch"
    """The conversation's media tokens cannot be matched to the sample's input media."""


class SpecError(Exception):
    """A per-sample failure with its reason; the stage turns it into a reject."""

    def __init__(self, reason: MaterializeIssue, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Segment:
    """Source frames ``start..end`` (inclusive), each shown ``repeat`` times in a row."""

    start: int
    end: int
    repeat: int = 1

    @property
    def frames(self) -> int:
        return (self.end - self.start + 1) * self.repeat

    def to_dict(self) -> dict[str, int]:
        return {"start": self.start, "end": self.end, "repeat": self.repeat}


@dataclass(frozen=True)
class ArtifactSpec:
    """One file to write for a sample: which source frames, what it is for, which placeholder it fills."""

    key: str
    """Unique within the sample: names the file and keys the artifact id."""
    kind: Literal["clip", "freeze", "still"]
    role: str
    segments: tuple[Segment, ...]
    placeholder: str | None = None
    camera: str | None = None

    @property
    def media_type(self) -> Literal["image", "video"]:
        return "image" if self.kind == "still" else "video"

    @property
    def frame_count(self) -> int:
        return sum(s.frames for s in self.segments)


# ------------------------------------------------------------------------------------------------
# reading the model's output


def get_field(output: dict[str, Any], path: str) -> Any:
    """``output[a][b]`` for ``path="a.b"``; a missing field is a BAD_OUTPUT error naming it."""
    value: Any = output
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            raise SpecError(MaterializeIssue.BAD_OUTPUT, f"the output has no field '{path}'")
        value = value[part]
    return value


def as_frame(value: Any, what: str) -> int:
    """A frame index: an int (or an integral float); anything else is BAD_OUTPUT."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise SpecError(MaterializeIssue.BAD_OUTPUT, f"'{what}' must be a frame index, got {value!r}")
    return int(value)


def as_range(value: Any, what: str) -> tuple[int, int]:
    """A frame range ``(start, end)``, inclusive, from ``{"start", "end"}``, ``{"start_frame",
    "end_frame"}`` or ``[start, end]``; an end before the start is OUT_OF_RANGE."""
    if isinstance(value, dict):
        keys = next((k for k in (("start", "end"), ("start_frame", "end_frame")) if k[0] in value), None)
        if keys is None or keys[1] not in value:
            raise SpecError(MaterializeIssue.BAD_OUTPUT, f"'{what}' needs 'start' and 'end', got {value!r}")
        start, end = value[keys[0]], value[keys[1]]
    elif isinstance(value, list | tuple) and len(value) == 2:
        start, end = value
    else:
        raise SpecError(MaterializeIssue.BAD_OUTPUT, f"'{what}' must be a frame range, got {value!r}")
    s, e = as_frame(start, f"{what}.start"), as_frame(end, f"{what}.end")
    if e < s:
        raise SpecError(MaterializeIssue.OUT_OF_RANGE, f"'{what}' ends at frame {e} before it starts at {s}")
    return s, e


def as_repeat(value: Any, what: str) -> int:
    """A repeat count in ``1..MAX_REPEAT``."""
    n = as_frame(value, what)
    if not 1 <= n <= MAX_REPEAT:
        raise SpecError(MaterializeIssue.BAD_OUTPUT, f"'{what}' must be between 1 and {MAX_REPEAT}, got {n}")
    return n


# ------------------------------------------------------------------------------------------------
# materialisers


class Materializer(ABC):
    """Turns a sample's output into artifact specs. Subclasses set ``name`` and take keyword params."""

    name: ClassVar[str]
    description: ClassVar[str] = ""

    @abstractmethod
    def plan(
        self, output: dict[str, Any], candidate: Candidate | None, source: StreamSource
    ) -> list[ArtifactSpec]:
        """The files to write for this output (frame bounds are checked by the stage)."""


MATERIALIZERS: Registry[type[Materializer]] = Registry("materialiser")
register_materializer = MATERIALIZERS.add
"""Class decorator: register under ``cls.name``; a duplicate name is an error."""


def materializer_names() -> list[str]:
    """Names of the registered materialisers."""
    return MATERIALIZERS.names()


def get_materializer(spec: str | dict[str, Any]) -> Materializer:
    """A materialiser from ``"name"``, ``{"name": ..., **params}``, ``{"name", "params": {...}}`` or a
    resolved plan step of the intent catalogue, ``{"materialiser": ..., "stream_id": ..., **params}``."""
    if isinstance(spec, str):
        name, params = spec, {}
    elif isinstance(spec, dict) and isinstance(spec.get("name") or spec.get("materialiser"), str):
        name = spec.get("name") or spec["materialiser"]
        rest = {k: v for k, v in spec.items() if k not in ("name", "materialiser", "stream_id")}
        params = dict(spec["params"]) if isinstance(spec.get("params"), dict) else rest
    else:
        raise ConfigError(f"a materialiser is a name or {{'name': ..., params}}, got {spec!r}")
    cls = MATERIALIZERS.get(name)
    try:
        return cls(**params)
    except TypeError as exc:
        raise ConfigError(f"materialiser '{name}': bad parameters {params} ({exc})") from exc


def plan_steps(item: dict[str, Any], sample: Sample, stream: Stream) -> list[str | dict[str, Any]]:
    """The item's materialiser list, else the plan synthesis left in ``sample.provenance["materialize"]``
    (steps for another stream are a BAD_CONFIG error)."""
    steps = item.get("materializers")
    if steps is None:
        plan = sample.provenance.get("materialize")
        steps = plan if isinstance(plan, list) else []
    for step in steps:
        if isinstance(step, dict) and step.get("stream_id") not in (None, stream.id):
            raise SpecError(
                MaterializeIssue.BAD_CONFIG,
                f"a materialiser step names stream {step['stream_id']}, not {stream.id}",
            )
    return list(steps)


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


# ------------------------------------------------------------------------------------------------
# binding media to the conversation


def count_tokens(turns: Sequence[Turn], token: str) -> int:
    """How often ``token`` occurs in the conversation."""
    return sum(t.content.count(token) for t in turns)


def bind_media(sample: Sample, refs: Sequence[MediaRef]) -> tuple[Sample, dict[str, Any]]:
    """``sample`` with ``media = refs`` and a conversation whose tokens and placeholders match them."""
    turns = [t.model_copy() for t in sample.conversation]
    inputs = [r for r in refs if r.placeholder is None]
    prefix = ""
    for kind, token in TOKENS.items():
        want = sum(1 for r in inputs if r.kind == kind)
        have = count_tokens(turns, token)
        if have == want:
            continue
        if have:
            raise SpecError(
                MaterializeIssue.TOKEN_MISMATCH,
                f"the conversation has {have} {token} tokens for {want} input {kind}s",
            )
        prefix += "".join(TOKENS[r.kind] for r in inputs if r.kind == kind)
    if prefix:
        first_user = next((t for t in turns if t.role == "user"), None)
        if first_user is None:
            raise SpecError(MaterializeIssue.TOKEN_MISMATCH, "input media but no user turn to show them in")
        first_user.content = prefix + first_user.content
    added = []
    for ref in refs:
        if ref.placeholder is None or any(ref.placeholder in t.content for t in turns):
            continue
        last = next((t for t in reversed(turns) if t.role == "assistant"), None)
        if last is None:
            raise SpecError(
                MaterializeIssue.TOKEN_MISMATCH,
                f"no assistant turn to hold the placeholder {ref.placeholder}",
            )
        last.content = f"{last.content.rstrip()}\n{ref.placeholder}"
        added.append(ref.placeholder)
    ordered = inputs + [r for r in refs if r.placeholder is not None]
    note = {"tokens_added": prefix.count("<"), "placeholders_added": added}
    return sample.model_copy(update={"media": ordered, "conversation": turns}), note


# ------------------------------------------------------------------------------------------------
# the stage


def unique_keys(specs: Sequence[ArtifactSpec]) -> list[ArtifactSpec]:
    """Specs with keys made unique in order (a second ``target`` becomes ``target-2``)."""
    seen: dict[str, int] = {}
    out = []
    for spec in specs:
        n = seen[spec.key] = seen.get(spec.key, 0) + 1
        out.append(spec if n == 1 else replace(spec, key=f"{spec.key}-{n}"))
    return out


def media_dir_name(sample_id: str) -> str:
    """A filesystem-safe, readable, collision-free folder name for a sample's media."""
    return f"{slug(sample_id, 48)}-{stable_hash(sample_id, 10)}"


def make_item(
    sample: Sample | dict[str, Any],
    stream: Stream | dict[str, Any],
    candidate: Candidate | dict[str, Any] | None = None,
    materializers: Sequence[str | dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The record :class:`MaterializeStage` takes: a sample joined with its stream and candidate, and
    optionally a materialiser list (names or ``{"name", **params}``) that overrides the plan synthesis
    left in ``sample.provenance["materialize"]``."""

    def dump(x: Any) -> Any:
        return x.model_dump(mode="json") if hasattr(x, "model_dump") else x

    sample_d = dump(sample)
    return {
        "id": sample_d["id"],
        "sample": sample_d,
        "stream": dump(stream),
        "candidate": dump(candidate),
        "materializers": None if materializers is None else list(materializers),
    }


class MaterializeStage(Stage):
    """Writes a sample's artifacts and returns ``{"id", "sample", "artifacts"}`` (CPU stage).

    Item: see :func:`make_item`. ``run_dir`` is where ``media/`` goes; ``codec`` a profile of
    :mod:`dataclaw.media.writers`; ``fallback_fps`` the rate of videos cut from clock-less image streams;
    ``verify`` reopens every video written and checks its frame count (paper A.3.4).
    """

    name: ClassVar[str] = STAGE
    resources: ClassVar[Resources] = Resources.CPU

    def __init__(
        self,
        run_dir: str | Path,
        codec: str | VideoCodec = DEFAULT_CODEC,
        fallback_fps: float = 1.0,
        chunk: int = 32,
        verify: bool = True,
        crf: int | None = None,
    ) -> None:
        self.run_dir, self.verify = str(run_dir), verify
        self.codec_spec = get_codec(codec, crf)
        self.codec = self.codec_spec.name
        self.fallback_fps, self.chunk = fallback_fps, max(1, chunk)
        self._sources: OrderedDict[str, StreamSource] = OrderedDict()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_sources"] = OrderedDict()  # open decoders stay in the process that opened them
        return state

    def process(self, item: dict[str, Any]) -> Result:
        try:
            sample = Sample.model_validate(item["sample"])
            stream = Stream.model_validate(item["stream"])
            candidate = Candidate.model_validate(item["candidate"]) if item.get("candidate") else None
        except (KeyError, TypeError, ValidationError) as exc:
            return self.reject(item, MaterializeIssue.BAD_ITEM, f"item {item.get('id')}: {_short(exc)}")
        written: list[Path] = []
        try:
            mats = [get_materializer(m) for m in plan_steps(item, sample, stream)]
            source = self._source(stream)
            specs = unique_keys([spec for m in mats for spec in m.plan(sample.output, candidate, source)])
            self._check(specs, source)
            artifacts = [self._write(sample, stream, spec, source, written) for spec in specs]
            refs = [
                MediaRef(artifact_id=a.id, kind=a.media_type, role=s.role, placeholder=s.placeholder)
                for s, a in zip(specs, artifacts, strict=True)
            ]
            updated, note = bind_media(sample, refs)
        except ConfigError as exc:
            return self._fail(item, written, MaterializeIssue.BAD_CONFIG, str(exc))
        except SpecError as exc:
            return self._fail(item, written, exc.reason, str(exc))
        except MediaError as exc:
            reason = MaterializeIssue.OUT_OF_RANGE if exc.reason is MediaIssue.OUT_OF_RANGE else None
            return self._fail(item, written, reason or MaterializeIssue.MEDIA_ERROR, str(exc))
        note["codec"] = self.codec
        updated.provenance = {**updated.provenance, "materialized": note}
        return [
            {
                "id": sample.id,
                "sample": updated.model_dump(mode="json"),
                "artifacts": [a.model_dump(mode="json") for a in artifacts],
            }
        ]

    def _fail(self, item: dict[str, Any], written: list[Path], reason: str, message: str) -> Reject:
        for path in written:  # a rejected sample leaves no orphan media behind
            path.unlink(missing_ok=True)
        return self.reject(item, reason, message)

    def _source(self, stream: Stream) -> StreamSource:
        source = self._sources.pop(stream.id, None) or StreamSource(stream)
        self._sources[stream.id] = source
        while len(self._sources) > 2:  # items of one stream usually arrive together
            self._sources.popitem(last=False)[1].close()
        return source

    def _check(self, specs: Sequence[ArtifactSpec], source: StreamSource) -> None:
        for spec in specs:
            n = source.frame_count(spec.camera)
            for seg in spec.segments:
                if not (0 <= seg.start <= seg.end < n):
                    raise SpecError(
                        MaterializeIssue.OUT_OF_RANGE,
                        f"{spec.key}: frames {seg.start}..{seg.end} are outside the stream's 0..{n - 1}",
                    )

    def _write(
        self, sample: Sample, stream: Stream, spec: ArtifactSpec, source: StreamSource, written: list[Path]
    ) -> Artifact:
        cam = source.camera(spec.camera)
        folder = Path(MEDIA_DIR) / media_dir_name(sample.id)
        if spec.kind == "still":
            rel = folder / f"{spec.key}.png"
            written.append(Path(self.run_dir) / rel)
            out = write_still(source.frame(spec.segments[0].start, cam.name), written[-1])
        else:
            codec = self.codec_spec
            rel = folder / f"{spec.key}{codec.suffix}"
            written.append(Path(self.run_dir) / rel)
            fps = cam.fps or stream.fps or self.fallback_fps
            out = write_clip(self._frames(source, spec, cam.name), written[-1], fps, codec=codec)
        if out.frames != spec.frame_count:
            raise MediaError(
                MediaIssue.CORRUPT, f"{rel}: wrote {out.frames} frames, planned {spec.frame_count}"
            )
        if self.verify and out.media_type == "video":  # A.3.4: the clip must read back, whole
            with VideoReader(out.path) as reader:
                if reader.frame_count != spec.frame_count:
                    raise MediaError(
                        MediaIssue.CORRUPT,
                        f"{rel}: reads back {reader.frame_count} of {spec.frame_count} frames",
                    )
        return self._artifact(sample, stream, spec, cam.name, rel, out)

    def _frames(self, source: StreamSource, spec: ArtifactSpec, camera: str) -> Iterator[np.ndarray]:
        for seg in spec.segments:
            for lo in range(seg.start, seg.end + 1, self.chunk):
                indices = list(range(lo, min(seg.end, lo + self.chunk - 1) + 1))
                for frame in source.frames(indices, camera):
                    for _ in range(seg.repeat):
                        yield frame

    def _artifact(
        self, sample: Sample, stream: Stream, spec: ArtifactSpec, camera: str, rel: Path, out: Written
    ) -> Artifact:
        return Artifact(
            id=child_id(sample.id, spec.kind, spec.key, label=spec.key),
            sample_id=sample.id,
            kind=spec.kind,
            path=rel.as_posix(),
            sha256=out.sha256,
            media_type=spec.media_type,
            frames=out.frames,
            fps=out.fps,
            width=out.width,
            height=out.height,
            source={
                "stream_id": stream.id,
                "camera": camera,
                "role": spec.role,
                "segments": [s.to_dict() for s in spec.segments],
                "encoding": {"codec": out.codec, "lossless": out.lossless, "bytes": out.size_bytes},
            },
        )


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def source_frames(artifact: Artifact | dict[str, Any]) -> list[int]:
    """The stream frame indices an artifact holds, in order, repeats expanded (for checks and viewers)."""
    source = artifact.source if isinstance(artifact, Artifact) else artifact["source"]
    return [
        i
        for seg in source["segments"]
        for i in range(seg["start"], seg["end"] + 1)
        for _ in range(seg.get("repeat", 1))
    ]


def publish(store: RunStore) -> tuple[int, int]:
    """Split ``materialize.jsonl`` into ``artifacts.jsonl`` and ``samples.jsonl`` (idempotent: ids
    already there are skipped). Artifacts go first so a sample never points at a missing record.
    Returns (new samples, new artifacts)."""
    samples, artifacts = store.stage(SAMPLES), store.stage(ARTIFACTS)
    n_samples = n_artifacts = 0
    for rec in store.records(STAGE):
        for art in rec["artifacts"]:
            n_artifacts += artifacts.append(art)
        n_samples += samples.append(rec["sample"])
    return n_samples, n_artifacts


class MediaBudgetExceeded(ConfigError):
    """The clips a run would write are estimated above the size budget the user set."""


@dataclass(frozen=True)
class MediaEstimate:
    """What the videos of a set of items would take: planned frames and seconds, and the bytes estimated
    from a probe clip encoded with the chosen codec (bytes per pixel of the probe x planned pixels)."""

    codec: str
    videos: int
    frames: int
    seconds: float
    pixels: int
    probe_bytes_per_pixel: float
    bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "gb": round(self.bytes / 1e9, 3)}


def estimate_media(
    items: Iterable[dict[str, Any]],
    codec: str | VideoCodec = DEFAULT_CODEC,
    crf: int | None = None,
    probe_frames: int = 24,
) -> MediaEstimate:
    """Plan every item's artifacts (nothing written) and estimate the bytes their videos take: the first
    video's first ``probe_frames`` frames are encoded to a temporary file with ``codec`` and their bytes
    per pixel scaled to all planned frames. Items that fail to plan are left out (they will be rejects)."""
    import tempfile

    spec = get_codec(codec, crf)
    stage = MaterializeStage(tempfile.gettempdir(), codec=spec)
    videos = frames = pixels = 0
    seconds = 0.0
    probe: tuple[StreamSource, ArtifactSpec, str] | None = None
    try:
        for item in items:
            try:
                sample = Sample.model_validate(item["sample"])
                stream = Stream.model_validate(item["stream"])
                candidate = Candidate.model_validate(item["candidate"]) if item.get("candidate") else None
                source = stage._source(stream)
                mats = [get_materializer(m) for m in plan_steps(item, sample, stream)]
                specs = [x for m in mats for x in m.plan(sample.output, candidate, source)]
                stage._check(specs, source)
            except (KeyError, TypeError, ValidationError, ConfigError, SpecError, MediaError):
                continue
            for x in specs:
                if x.media_type != "video":
                    continue
                cam = source.camera(x.camera)
                videos += 1
                frames += x.frame_count
                pixels += x.frame_count * int(cam.width or 0) * int(cam.height or 0)
                seconds += x.frame_count / float(cam.fps or stream.fps or stage.fallback_fps)
                if probe is None:
                    probe = (source, x, cam.name)
        per_pixel = 0.0
        if probe is not None:
            source, x, camera = probe
            first = x.segments[0]
            short = ArtifactSpec(
                x.key, "clip", x.role, (Segment(first.start, min(first.end, first.start + probe_frames - 1)),)
            )
            with tempfile.TemporaryDirectory() as tmp:
                out = write_clip(stage._frames(source, short, camera), Path(tmp) / f"probe{spec.suffix}",
                                 30.0, codec=spec)  # fmt: skip
            per_pixel = out.size_bytes / max(1, out.frames * out.width * out.height)
    finally:
        for src in stage._sources.values():
            src.close()
    return MediaEstimate(spec.name, videos, frames, round(seconds, 3), pixels, round(per_pixel, 5),
                         round(per_pixel * pixels))  # fmt: skip


def media_summary(run_dir: str | Path) -> dict[str, Any]:
    """Bytes and seconds of the run's published videos, by codec, with bytes per second (what a user
    pays in disk per second of clip)."""
    by: dict[str, dict[str, float]] = {}
    with RunStore(run_dir) as store:
        for art in store.records(ARTIFACTS):
            enc = (art.get("source") or {}).get("encoding") or {}
            if art.get("media_type") != "video" or not art.get("fps"):
                continue
            row = by.setdefault(str(enc.get("codec")), {"videos": 0, "bytes": 0, "seconds": 0.0})
            row["videos"] += 1
            row["bytes"] += int(enc.get("bytes") or 0)
            row["seconds"] += art["frames"] / art["fps"]
    for row in by.values():
        row["seconds"] = round(row["seconds"], 3)
        row["bytes_per_second"] = round(row["bytes"] / row["seconds"]) if row["seconds"] else 0
    return by


def materialize(
    items: Iterable[dict[str, Any]],
    run_dir: str | Path,
    *,
    codec: str | VideoCodec = DEFAULT_CODEC,
    executor: Any = None,
    crf: int | None = None,
    max_media_gb: float | None = None,
    **options: Any,
) -> StageStats:
    """Run :class:`MaterializeStage` over ``items`` (resumable) and :func:`publish` the results.
    ``options`` go to the stage (``fallback_fps``, ``chunk``, ``verify``). With ``max_media_gb`` the
    videos are estimated first (:func:`estimate_media`) and a run over the budget is refused before
    anything is written (:class:`MediaBudgetExceeded`)."""
    items = list(items)
    if max_media_gb is not None:
        est = estimate_media(items, codec, crf)
        if est.bytes > max_media_gb * 1e9:
            raise MediaBudgetExceeded(
                f"the clips would take about {est.bytes / 1e9:.2f} GB ({est.videos} videos, {est.frames} "
                f"frames, {est.seconds:.0f} s as {est.codec}, ~{est.probe_bytes_per_pixel:.3f} bytes/pixel "
                f"measured on a probe clip), over --max-media-gb {max_media_gb:g}: nothing was written. "
                "Raise the budget, use --codec h264 (or a higher --crf), or fewer candidates "
                "(--max-candidates)"
            )
    with RunStore(run_dir) as store:
        stage = MaterializeStage(run_dir, codec=codec, crf=crf, **options)
        stats = run_stage(stage, items, store, executor)
        publish(store)
    return stats
