"""The materialise stage: write a sample's artifacts frame-exactly, bind them to its conversation, and
publish ``samples.jsonl`` and ``artifacts.jsonl``; a size budget checked before anything is written."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import ValidationError

from dataclaw.core.errors import ConfigError, Reject
from dataclaw.core.ids import slug, stable_hash
from dataclaw.core.store import RunStore
from dataclaw.media.errors import MediaError, MediaIssue
from dataclaw.media.video import VideoReader
from dataclaw.media.writers import VideoCodec, Written, get_codec, write_clip, write_still
from dataclaw.pipeline import Resources, Result, Stage, StageStats, run_stage
from dataclaw.tailor.materialize.base import (
    DEFAULT_CODEC,
    MEDIA_DIR,
    STAGE,
    ArtifactSpec,
    MaterializeIssue,
    Segment,
    SpecError,
    get_materializer,
)
from dataclaw.tailor.records import (
    ARTIFACTS,
    SAMPLES,
    TOKENS,
    Artifact,
    Candidate,
    MediaRef,
    Sample,
    artifact_id,
    count_tokens,
)
from dataclaw.tailor.streams import Stream, StreamSource

# binding media to the conversation


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
            id=artifact_id(sample.id, spec.kind, spec.key),
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
