"""Materialisation (paper A.3.1 stage 3, A.3.3, A.3.4): write the media a validated sample refers to.

A sample's output names frames of its stream (``freeze_frame``, ``output_video`` …). Named
*materialisers* turn (output, candidate, stream source) into :class:`ArtifactSpec`s — which frames, in
which order, how many times each — and :class:`MaterializeStage` writes them frame-exactly under
``RUN/media/<safe-sample-id>/`` (lossless, deterministic: see :mod:`dataclaw.media.writers`), records each
file as an :class:`Artifact` with its sha256, and returns the sample with :class:`MediaRef`s. Samples stay
lightweight: they point at artifacts by id (A.3.3).

The fault branch (``fault_recovery``, used by the ``approach_stall`` intent) follows A.3.1: the faulty
input video is the observation clip from ``input_video.start`` up to ``freeze_frame``, followed by the
freeze frame repeated ``repeat_count`` times (the robot stalls where it stopped); the recovery video is
clipped from the original future according to ``output_video`` and fills ``<video_gen>``; the recall image
is the ``output_image`` frame and fills ``<image_recall>``.

Media binding (the LLaMA-Factory convention of :class:`Turn`): artifacts without a placeholder are model
*inputs* and appear as ``<image>`` / ``<video>`` tokens in the conversation, in the order of
``Sample.media``; when the conversation has no tokens of a kind, they are prepended to the first user
turn; a count that disagrees is a ``token_mismatch`` reject. Artifacts with a placeholder are *targets*;
a placeholder missing from the text is appended to the last assistant turn.

Run layout: the stage writes ``materialize.jsonl`` (``{"id", "sample", "artifacts"}`` per sample);
:func:`publish` splits it into ``artifacts.jsonl`` and ``samples.jsonl``, which exporters read.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import ValidationError

from dataclaw.core.errors import ConfigError, Reject
from dataclaw.core.ids import child_id, slug, stable_hash
from dataclaw.core.store import RunStore
from dataclaw.media.errors import MediaError, MediaIssue
from dataclaw.media.writers import DEFAULT_CODEC, Written, get_codec, write_clip, write_still
from dataclaw.pipeline import Resources, Result, Stage, StageStats, run_stage
from dataclaw.tailor.mine import Candidate
from dataclaw.tailor.records import Artifact, MediaRef, Sample, Turn
from dataclaw.tailor.streams import Stream, StreamSource

STAGE = "materialize"
SAMPLES = "samples"
ARTIFACTS = "artifacts"
MEDIA_DIR = "media"
IMAGE_TOKEN = "<image>"
VIDEO_TOKEN = "<video>"
TOKENS = {"image": IMAGE_TOKEN, "video": VIDEO_TOKEN}
MAX_REPEAT = 10_000


class MaterializeIssue(StrEnum):
    """Why a sample could not be materialised."""

    BAD_ITEM = "bad_item"
    """The item lacks a parseable sample or stream record."""
    BAD_CONFIG = "bad_config"
    """The intent names an unknown materialiser, bad parameters, or two artifacts with one key."""
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


_MATERIALIZERS: dict[str, type[Materializer]] = {}


def register_materializer(cls: type[Materializer]) -> type[Materializer]:
    """Class decorator: register under ``cls.name``; a duplicate name is an error."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"materialiser {cls.__qualname__} has no name")
    if name in _MATERIALIZERS and _MATERIALIZERS[name] is not cls:
        raise ConfigError(f"materialiser '{name}' is already registered")
    _MATERIALIZERS[name] = cls
    return cls


def materializer_names() -> list[str]:
    """Names of the registered materialisers."""
    return sorted(_MATERIALIZERS)


def get_materializer(spec: str | dict[str, Any]) -> Materializer:
    """A materialiser from ``"name"`` or ``{"name": ..., **params}`` (or ``{"name", "params": {...}}``)."""
    if isinstance(spec, str):
        name, params = spec, {}
    elif isinstance(spec, dict) and isinstance(spec.get("name"), str):
        params = dict(spec.get("params") or {k: v for k, v in spec.items() if k != "name"})
        name = spec["name"]
    else:
        raise ConfigError(f"a materialiser is a name or {{'name': ..., params}}, got {spec!r}")
    cls = _MATERIALIZERS.get(name)
    if cls is None:
        raise ConfigError(f"unknown materialiser '{name}': expected one of {', '.join(materializer_names())}")
    try:
        return cls(**params)
    except TypeError as exc:
        raise ConfigError(f"materialiser '{name}': bad parameters {params} ({exc})") from exc


@register_materializer
class ClipMaterializer(Materializer):
    """A frame-exact clip of the range in ``field`` (e.g. the recovery ``output_video``)."""

    name: ClassVar[str] = "clip"
    description: ClassVar[str] = "frame-exact clip of an output frame range"

    def __init__(
        self,
        field: str = "input_video",
        key: str | None = None,
        role: str = "observation",
        placeholder: str | None = None,
        camera: str | None = None,
    ) -> None:
        self.field, self.key, self.role = field, key or slug(field), role
        self.placeholder, self.camera = placeholder, camera

    def plan(
        self, output: dict[str, Any], candidate: Candidate | None, source: StreamSource
    ) -> list[ArtifactSpec]:
        start, end = as_range(get_field(output, self.field), self.field)
        camera = self.camera or (candidate.camera if candidate else None)
        return [ArtifactSpec(self.key, "clip", self.role, (Segment(start, end),), self.placeholder, camera)]


@register_materializer
class FreezeMaterializer(Materializer):
    """A freeze-frame video: the frame in ``frame_field`` repeated ``repeat_field`` (or ``repeat``) times."""

    name: ClassVar[str] = "freeze"
    description: ClassVar[str] = "one output frame repeated N times"

    def __init__(
        self,
        frame_field: str = "freeze_frame",
        repeat_field: str = "repeat_count",
        repeat: int | None = None,
        key: str = "freeze",
        role: str = "freeze",
        placeholder: str | None = None,
        camera: str | None = None,
    ) -> None:
        self.frame_field, self.repeat_field, self.repeat = frame_field, repeat_field, repeat
        self.key, self.role, self.placeholder, self.camera = key, role, placeholder, camera

    def plan(
        self, output: dict[str, Any], candidate: Candidate | None, source: StreamSource
    ) -> list[ArtifactSpec]:
        frame = as_frame(get_field(output, self.frame_field), self.frame_field)
        raw = self.repeat if self.repeat is not None else get_field(output, self.repeat_field)
        n = as_repeat(raw, self.repeat_field)
        camera = self.camera or (candidate.camera if candidate else None)
        return [
            ArtifactSpec(self.key, "freeze", self.role, (Segment(frame, frame, n),), self.placeholder, camera)
        ]


@register_materializer
class StillMaterializer(Materializer):
    """A lossless still of the frame in ``field`` (e.g. the recall image ``output_image``)."""

    name: ClassVar[str] = "still"
    description: ClassVar[str] = "one output frame as a PNG"

    def __init__(
        self,
        field: str = "output_image",
        key: str | None = None,
        role: str = "recall",
        placeholder: str | None = None,
        camera: str | None = None,
    ) -> None:
        self.field, self.key, self.role = field, key or slug(field), role
        self.placeholder, self.camera = placeholder, camera

    def plan(
        self, output: dict[str, Any], candidate: Candidate | None, source: StreamSource
    ) -> list[ArtifactSpec]:
        frame = as_frame(get_field(output, self.field), self.field)
        camera = self.camera or (candidate.camera if candidate else None)
        return [
            ArtifactSpec(self.key, "still", self.role, (Segment(frame, frame),), self.placeholder, camera)
        ]


@register_materializer
class KeyframesMaterializer(Materializer):
    """Stills of a list of frames: the output's ``field`` when given, else the candidate's sampled frames
    (A.3.1 understanding branch, tutorial-style interleaved samples)."""

    name: ClassVar[str] = "keyframes"
    description: ClassVar[str] = "a list of frames as PNG stills"

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
            raw = get_field(output, self.field)
            if not isinstance(raw, list) or not raw:
                raise SpecError(MaterializeIssue.BAD_OUTPUT, f"'{self.field}' must be a non-empty frame list")
            frames = [as_frame(v, f"{self.field}[{i}]") for i, v in enumerate(raw)]
        elif candidate is not None and candidate.frames:
            frames = list(candidate.frames)
        else:
            raise SpecError(MaterializeIssue.BAD_OUTPUT, "keyframes need an output field or candidate frames")
        camera = self.camera or (candidate.camera if candidate else None)
        width = max(2, len(str(len(frames) - 1)))
        return [
            ArtifactSpec(f"{self.key}-{i:0{width}d}", "still", self.role, (Segment(f, f),), None, camera)
            for i, f in enumerate(frames)
        ]


@register_materializer
class StallVideoMaterializer(Materializer):
    """The faulty input video of A.3.1: ``input_video.start .. freeze_frame``, then the freeze frame
    repeated ``repeat_count`` times (the stall), as one frame-exact video."""

    name: ClassVar[str] = "stall_video"
    description: ClassVar[str] = "observation clip up to the freeze frame + the freeze frame held N times"

    def __init__(
        self,
        input_field: str = "input_video",
        freeze_field: str = "freeze_frame",
        repeat_field: str = "repeat_count",
        key: str = "stall",
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
        n = as_repeat(get_field(output, self.repeat_field), self.repeat_field)
        if not start <= freeze <= end:
            raise SpecError(
                MaterializeIssue.OUT_OF_RANGE,
                f"'{self.freeze_field}' {freeze} is outside '{self.input_field}' {start}..{end}",
            )
        camera = self.camera or (candidate.camera if candidate else None)
        segments = (Segment(start, freeze), Segment(freeze, freeze, n))
        return [ArtifactSpec(self.key, "freeze", self.role, segments, None, camera)]


@register_materializer
class FaultRecoveryMaterializer(Materializer):
    """The three media of a fault-diagnosis sample (A.3.1 fault branch, e.g. ``approach_stall``):
    the stalled input video, the recall still (``<image_recall>``) and the recovery clip (``<video_gen>``)."""

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
            StillMaterializer(recall_field, "recall", "recall", "<image_recall>", camera),
            ClipMaterializer(recovery_field, "recovery", "recovery", "<video_gen>", camera),
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


def media_dir_name(sample_id: str) -> str:
    """A filesystem-safe, readable, collision-free folder name for a sample's media."""
    return f"{slug(sample_id, 48)}-{stable_hash(sample_id, 10)}"


def make_item(
    sample: Sample | dict[str, Any],
    stream: Stream | dict[str, Any],
    candidate: Candidate | dict[str, Any] | None,
    materializers: Sequence[str | dict[str, Any]],
) -> dict[str, Any]:
    """The record :class:`MaterializeStage` takes: a sample joined with its stream, candidate and the
    intent's materialiser list (names or ``{"name", **params}``)."""

    def dump(x: Any) -> Any:
        return x.model_dump(mode="json") if hasattr(x, "model_dump") else x

    sample_d = dump(sample)
    return {
        "id": sample_d["id"],
        "sample": sample_d,
        "stream": dump(stream),
        "candidate": dump(candidate),
        "materializers": list(materializers),
    }


class MaterializeStage(Stage):
    """Writes a sample's artifacts and returns ``{"id", "sample", "artifacts"}`` (CPU stage).

    Item: see :func:`make_item`. ``run_dir`` is where ``media/`` goes; ``codec`` a profile of
    :mod:`dataclaw.media.writers`; ``fallback_fps`` the rate of videos cut from clock-less image streams.
    """

    name: ClassVar[str] = STAGE
    resources: ClassVar[Resources] = Resources.CPU

    def __init__(
        self, run_dir: str | Path, codec: str = DEFAULT_CODEC, fallback_fps: float = 1.0, chunk: int = 32
    ) -> None:
        self.run_dir = str(run_dir)
        self.codec = get_codec(codec).name
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
            mats = [get_materializer(m) for m in item.get("materializers") or []]
            source = self._source(stream)
            specs = [spec for m in mats for spec in m.plan(sample.output, candidate, source)]
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
        updated.provenance = {**updated.provenance, "materialize": note}
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
        keys = [s.key for s in specs]
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            raise SpecError(MaterializeIssue.BAD_CONFIG, f"two artifacts of one sample share a key: {dupes}")
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
            codec = get_codec(self.codec)
            rel = folder / f"{spec.key}{codec.suffix}"
            written.append(Path(self.run_dir) / rel)
            fps = cam.fps or stream.fps or self.fallback_fps
            out = write_clip(self._frames(source, spec, cam.name), written[-1], fps, codec=codec)
        if out.frames != spec.frame_count:
            raise MediaError(
                MediaIssue.CORRUPT, f"{rel}: wrote {out.frames} frames, planned {spec.frame_count}"
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


def materialize(
    items: Iterable[dict[str, Any]],
    run_dir: str | Path,
    *,
    codec: str = DEFAULT_CODEC,
    executor: Any = None,
) -> StageStats:
    """Run :class:`MaterializeStage` over ``items`` (resumable) and :func:`publish` the results."""
    with RunStore(run_dir) as store:
        stats = run_stage(MaterializeStage(run_dir, codec=codec), items, store, executor)
        publish(store)
    return stats
