"""Ingestion: raw inputs → ``streams.jsonl`` → ``anchors.jsonl`` → ``candidates.jsonl`` (paper A.3 step 1).

Three steps, each resumable per record through :class:`~dataclaw.core.store.RunStore`:

1. read every input path with the registered stream readers (a path is marked done once all its units
   are written; a unit that cannot be used is a reject of stage ``ingest``);
2. :class:`AnchorStage` runs the anchor extractors that apply to each stream (parser anchors are exact,
   perception anchors carry a confidence);
3. :class:`MineStage` runs the candidate miners over each stream and its anchors.

Bad input never stops the run: it becomes a reject with a reason code, and a rerun resumes. The
anchors' producer is the effective extractor config (names and every setting, defaults included), the
candidates' the anchors' plus the miner config: change a setting and the affected stage runs again, its
earlier records superseded (they stay in the file; readers no longer see them).
"""

from __future__ import annotations

import inspect
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from dataclaw.core.errors import ConfigError, DataclawError, Reject
from dataclaw.core.ids import root_id
from dataclaw.core.lock import run_lock
from dataclaw.core.store import RunStore
from dataclaw.media.errors import MediaError, MediaIssue
from dataclaw.pipeline import Resources, Stage, StageStats, run_stage
from dataclaw.pipeline.registry import make_executor
from dataclaw.pipeline.stage import Record, Result
from dataclaw.tailor.anchors.base import (
    EXTRACTORS,
    Anchor,
    AnchorExtractor,
    extractor_names,
    get_extractor,
)
from dataclaw.tailor.anchors.ocr import OcrError
from dataclaw.tailor.mine import MINERS, Miner, StreamView, get_miner, miner_names
from dataclaw.tailor.streams.base import Stream, detect_reader, read_streams

STREAMS = "streams"
ANCHORS = "anchors"
CANDIDATES = "candidates"
INPUTS = "inputs"


class AnchorIssue(StrEnum):
    """Why anchors could not be extracted from a stream."""

    BAD_RECORD = "bad_record"
    """The stream record does not validate (hand-edited or from another version)."""
    MISSING_MEDIA = "missing_media"
    CORRUPT_MEDIA = "corrupt_media"
    EMPTY_MEDIA = "empty_media"
    UNSUPPORTED_CODEC = "unsupported_codec"
    OUT_OF_RANGE = "out_of_range"
    """An event or frame points outside the stream."""
    OCR_FAILED = "ocr_failed"
    EXTRACTOR_FAILED = "extractor_failed"
    """An extractor refused the stream with a clear error of its own."""


_MEDIA_ISSUE = {
    MediaIssue.NOT_FOUND: AnchorIssue.MISSING_MEDIA,
    MediaIssue.CORRUPT: AnchorIssue.CORRUPT_MEDIA,
    MediaIssue.TRUNCATED: AnchorIssue.CORRUPT_MEDIA,
    MediaIssue.EMPTY: AnchorIssue.EMPTY_MEDIA,
    MediaIssue.NO_VIDEO: AnchorIssue.EMPTY_MEDIA,
    MediaIssue.UNSUPPORTED_CODEC: AnchorIssue.UNSUPPORTED_CODEC,
    MediaIssue.OUT_OF_RANGE: AnchorIssue.OUT_OF_RANGE,
}


class MineIssue(StrEnum):
    """Why a stream yielded no candidates."""

    BAD_RECORD = "bad_record"
    NO_CANDIDATES = "no_candidates"
    """No miner applies, or every miner filtered the stream out (the message says why)."""
    MINER_FAILED = "miner_failed"


@dataclass
class IngestConfig:
    """What ``dataclaw tailor ingest`` runs. Extractor/miner config maps a name to its keyword arguments."""

    extractors: list[str] | None = field(default=None, metadata={"help": "anchor extractors (None = all)"})
    miners: list[str] | None = field(default=None, metadata={"help": "candidate miners (None = all)"})
    extractor_config: dict[str, dict[str, Any]] = field(default_factory=dict)
    miner_config: dict[str, dict[str, Any]] = field(default_factory=dict)
    workers: int = field(default=2, metadata={"help": "processes for anchor extraction and mining"})

    def __post_init__(self) -> None:
        for name in [*(self.extractors or []), *self.extractor_config]:
            EXTRACTORS.get(name)  # an unknown name is a ConfigError listing the known ones
        for name in [*(self.miners or []), *self.miner_config]:
            MINERS.get(name)
        if self.workers < 1:
            raise ConfigError(f"workers must be >= 1, got {self.workers}")


class AnchorStage(Stage):
    """Stream record → anchor records (``anchors.jsonl``), or a reject with an :class:`AnchorIssue`."""

    name: ClassVar[str] = ANCHORS
    resources: ClassVar[Resources] = Resources.CPU

    def __init__(self, names: Sequence[str] | None = None, config: dict[str, dict[str, Any]] | None = None):
        self.names = list(names) if names is not None else None
        self.config = dict(config or {})
        self._extractors: list[AnchorExtractor] | None = None

    def setup(self) -> None:
        names = self.names if self.names is not None else extractor_names()
        self._extractors = [_build(get_extractor, "anchor extractor", n, self.config) for n in names]

    def process(self, item: Record) -> Result:
        from dataclaw.tailor.streams.source import StreamSource

        if self._extractors is None:
            self.setup()
        assert self._extractors is not None
        try:
            stream = Stream.model_validate(item)
        except ValidationError as exc:
            return self.reject(
                item, AnchorIssue.BAD_RECORD, f"stream record does not validate: {_first_error(exc)}"
            )
        anchors: list[Anchor] = []
        with StreamSource(stream) as source:
            for ext in self._extractors:
                if not ext.applies_to(stream):
                    continue
                try:
                    anchors.extend(ext.extract(stream, source))
                except MediaError as exc:
                    return self.reject(
                        item, _MEDIA_ISSUE[exc.reason], f"{ext.name}: {exc}", extractor=ext.name
                    )
                except OcrError as exc:
                    return self.reject(item, AnchorIssue.OCR_FAILED, f"{ext.name}: {exc}", extractor=ext.name)
                except DataclawError as exc:
                    return self.reject(
                        item, AnchorIssue.EXTRACTOR_FAILED, f"{ext.name}: {exc}", extractor=ext.name
                    )
        anchors.sort(key=lambda a: (a.t, a.kind, a.id))
        return [a.model_dump() for a in anchors]


HEAD_CAMERA = re.compile(r"high|head|top", re.IGNORECASE)


def mining_camera(stream: Stream) -> str | None:
    """The camera candidates point into: for robots the head camera when there is one (A.3.1 mines the
    ``cam_high`` stream), else the stream's main camera."""
    if stream.modality == "robot":
        for name, cam in stream.cameras.items():
            if cam.kind == "video" and HEAD_CAMERA.search(name):
                return name
    return stream.main_camera


def stream_view(stream: Stream) -> StreamView:
    """What miners see of a stream."""
    camera = mining_camera(stream)
    cam = stream.cameras.get(camera) if camera else None
    has_video = cam is not None and cam.kind == "video"
    return StreamView(
        id=stream.id,
        modality=str(stream.modality),
        fps=stream.fps if has_video else None,
        frame_count=stream.frame_count if has_video else None,
        duration=stream.duration,
        camera=camera,
        instruction=stream.task or stream.metadata.get("instruction"),
        document=next((c.path for c in stream.cameras.values() if c.kind == "pdf" and c.path), None),
        metadata=stream.metadata,
    )


class MineStage(Stage):
    """``{"id": stream id, "stream": …, "anchors": […]}`` → candidate records (``candidates.jsonl``)."""

    name: ClassVar[str] = CANDIDATES
    resources: ClassVar[Resources] = Resources.CPU

    def __init__(self, names: Sequence[str] | None = None, config: dict[str, dict[str, Any]] | None = None):
        self.names = list(names) if names is not None else None
        self.config = dict(config or {})
        self._miners: list[Miner] | None = None

    def setup(self) -> None:
        names = self.names if self.names is not None else miner_names()
        self._miners = [_build(get_miner, "miner", n, self.config) for n in names]

    def process(self, item: Record) -> Result:
        if self._miners is None:
            self.setup()
        assert self._miners is not None
        try:
            stream = Stream.model_validate(item["stream"])
            anchors = [Anchor.model_validate(a) for a in item.get("anchors", [])]
        except (ValidationError, KeyError, TypeError) as exc:
            detail = _first_error(exc) if isinstance(exc, ValidationError) else repr(exc)
            return self.reject(item, MineIssue.BAD_RECORD, f"stream or anchors do not validate: {detail}")
        view = stream_view(stream)
        out: list[Record] = []
        applied: list[str] = []
        notes: list[str] = []
        for miner in self._miners:
            if not miner.applies_to(view):
                continue
            applied.append(miner.name)
            miner.take_notes()
            try:
                out.extend(c.model_dump(mode="json") for c in miner.mine(view, anchors))
            except DataclawError as exc:
                return self.reject(item, MineIssue.MINER_FAILED, f"{miner.name}: {exc}", miner=miner.name)
            notes += [f"{miner.name}: {n}" for n in miner.take_notes()]
        if not out:
            why = (
                f"miners {', '.join(applied)} found nothing worth mining in {len(anchors)} anchors"
                + (f" ({'; '.join(notes)})" if notes else "")
                if applied
                else f"no miner applies to a {view.modality} stream" + ("" if view.fps else " without video")
            )
            return self.reject(item, MineIssue.NO_CANDIDATES, why, miners=applied, notes=notes)
        return out


def _build(factory: Callable[..., Any], what: str, name: str, config: dict[str, dict[str, Any]]) -> Any:
    """``factory(name, **config[name])`` with an unknown setting reported as a ConfigError."""
    try:
        return factory(name, **config.get(name, {}))
    except TypeError as exc:
        raise ConfigError(f"{what} '{name}': bad settings {config.get(name)} ({exc})") from None


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    return f"{'.'.join(str(p) for p in err['loc']) or 'record'}: {err['msg']}"


# ------------------------------------------------------------------------------------------------
# the run


@dataclass
class IngestSummary:
    """What an ingest run produced (cumulative over resumed runs)."""

    run: str
    streams: int
    anchors: dict[str, int]
    candidates: dict[str, int]
    rejects: dict[str, int]
    stages: dict[str, dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_inputs(
    paths: Iterable[str | Path], store: RunStore, progress: Callable[[int, int], None] | None = None
) -> int:
    """Read every input path not yet done into ``streams.jsonl``; return the streams written now."""
    paths = [Path(p) for p in paths]
    done = store.done(INPUTS)
    out = store.stage(STREAMS)
    written = 0
    for n, path in enumerate(paths, 1):
        key = root_id("input", path.name or "input", str(path.resolve()))
        if key in done:
            continue
        for unit in read_streams([path]):  # a path no reader knows is a NOT_A_DATASET reject
            if isinstance(unit, Reject):
                store.reject(unit)
            else:
                written += out.append(unit.model_dump(mode="json"))
        done.append({"id": key, "path": str(path)})
        if progress:
            progress(n, len(paths))
    return written


def discover_inputs(root: str | Path) -> list[Path]:
    """The paths under ``root`` (itself, else its entries, recursively) that a stream reader reads.

    A folder a reader claims is not searched further (a LeRobot dataset is one input, not its files).
    """
    root = Path(root)
    try:
        detect_reader(root)
        return [root]
    except ConfigError:
        pass
    if not root.is_dir():
        return []
    found: list[Path] = []
    for child in sorted(root.iterdir()):
        if not child.name.startswith("."):
            found.extend(discover_inputs(child))
    return found


def mine_items(store: RunStore) -> list[Record]:
    """One item per stream whose anchors are done (and not rejected): the stream and its anchors."""
    anchored = store.done(ANCHORS).ids()
    rejected = {r["record_id"] for r in store.rejects(ANCHORS)}
    by_stream: dict[str, list[dict[str, Any]]] = {}
    for a in store.records(ANCHORS):
        by_stream.setdefault(a["stream_id"], []).append(a)
    return [
        {"id": s["id"], "stream": s, "anchors": by_stream.get(s["id"], [])}
        for s in store.records(STREAMS)
        if s["id"] in anchored and s["id"] not in rejected
    ]


def effective_config(
    registry: Any, names: Sequence[str] | None, config: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Each component that runs (``names``, default all registered) with every setting it gets: its
    constructor's defaults overlaid with ``config``, plus its ``version`` attribute when it has one.
    Equal behaviour gives an equal config whether a setting was spelt out or left to its default."""
    out: dict[str, dict[str, Any]] = {}
    for name in names if names is not None else registry.names():
        cls = registry.get(name)
        try:
            params = inspect.signature(cls).parameters.values()
        except (TypeError, ValueError):
            params = []
        settings = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
        settings.update(config.get(name, {}))
        if getattr(cls, "version", None) is not None:
            settings["version"] = cls.version
        out[name] = settings
    return out


def ingest_producers(config: IngestConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """(anchors producer, candidates producer) of ``config``."""
    anchors = {"extractors": effective_config(EXTRACTORS, config.extractors, config.extractor_config)}
    candidates = {"anchors": anchors, "miners": effective_config(MINERS, config.miners, config.miner_config)}
    return anchors, candidates


def stats_dict(stats: StageStats) -> dict[str, Any]:
    """What a stage run did, for the manifest's ``last_run`` (the stage name is its key there)."""
    return {k: v for k, v in asdict(stats).items() if k != "stage"}


def ingest(
    inputs: Sequence[str | Path],
    run_dir: str | Path,
    config: IngestConfig | None = None,
    progress: Callable[[str], Any] | None = None,
) -> IngestSummary:
    """Run streams → anchors → candidates into ``run_dir``; resumable. ``progress(label)`` may return a
    context manager yielding ``update(done, total)`` (e.g. :func:`dataclaw.core.progress.progress_bar`)."""
    config = config or IngestConfig()
    if not inputs:
        raise ConfigError("no inputs given: pass dataset folders, recordings, videos or slide decks")
    anchor_stage = AnchorStage(config.extractors, config.extractor_config)
    mine_stage = MineStage(config.miners, config.miner_config)
    # build every extractor and miner once here, so bad settings or a missing backend fail the run up
    # front with one clear error (the stages sent to workers stay unbuilt: they build in each worker)
    AnchorStage(config.extractors, config.extractor_config).setup()
    MineStage(config.miners, config.miner_config).setup()
    executor = make_executor(workers=config.workers, stages=(anchor_stage, mine_stage))
    anchors_by, candidates_by = ingest_producers(config)
    stages: dict[str, dict[str, Any]] = {}
    with run_lock(run_dir, "tailor ingest"), RunStore(run_dir) as store:
        store.update_manifest(command="tailor ingest", inputs=[str(p) for p in inputs], config=asdict(config))
        with progress_for(progress, "streams") as update:
            read_inputs(inputs, store, update)
        with progress_for(progress, "anchors") as update:
            stats = run_stage(
                anchor_stage, list(store.records(STREAMS)), store, executor, update, producer=anchors_by
            )
        stages[ANCHORS] = stats_dict(stats)
        store.set_producer(CANDIDATES, candidates_by)
        with progress_for(progress, "candidates") as update:
            stats = run_stage(mine_stage, mine_items(store), store, executor, update)
        stages[CANDIDATES] = stats_dict(stats)
        store.update_manifest(last_run=stages)
        return summarize(store, stages)


def summarize(store: RunStore, stages: dict[str, dict[str, Any]] | None = None) -> IngestSummary:
    """Counts of a run directory: streams, anchors and candidates by kind, rejects by stage:reason."""
    anchors = Counter(a["kind"] for a in store.records(ANCHORS))
    candidates = Counter(c["kind"] for c in store.records(CANDIDATES))
    rejects = Counter(f"{r['stage']}:{r['reason']}" for r in store.rejects())
    return IngestSummary(
        run=str(store.root),
        streams=len(store.stage(STREAMS)),
        anchors=dict(sorted(anchors.items())),
        candidates=dict(sorted(candidates.items())),
        rejects=dict(sorted(rejects.items())),
        stages=stages or store.manifest().get("last_run", {}),
    )


def progress_for(progress: Callable[[str], Any] | None, label: str) -> Any:
    """``progress(label)``, or a context that yields no ``update`` when there is no progress display."""
    return progress(label) if progress is not None else nullcontext(None)
