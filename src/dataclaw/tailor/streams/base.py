"""The `Stream` record, ingestion reject reasons and the stream-reader registry (paper A.3, B.2.1).

A reader turns a path (a dataset folder, a recording, a video, a slide deck) into `Stream` records, one
per unit of work (one LeRobot episode, one GUI recording, one video), or a `Reject` for a unit that
cannot be used (a listed episode whose file is missing, a corrupt video). A stream's ``events`` carry
``t`` in seconds on the stream's own clock (frame 0 = 0 s) so anchors and samples can point into it.
Frame and table access for a stream lives in :class:`dataclaw.tailor.streams.source.StreamSource`.

Adding a source is one module in this package with a :func:`register_reader` class.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, field_validator

from dataclaw.core.errors import ConfigError, Reject
from dataclaw.core.ids import root_id
from dataclaw.core.registry import Registry
from dataclaw.media.errors import MediaError, MediaIssue

STAGE = "ingest"


class Modality(StrEnum):
    """What kind of stream it is; decides which intents and anchor extractors apply."""

    ROBOT = "robot"
    GUI = "gui"
    VIDEO = "video"
    LECTURE = "lecture"
    IMAGES = "images"
    TRAJECTORY = "trajectory"


class IngestIssue(StrEnum):
    """Why a unit of a source was rejected at ingestion."""

    MISSING_FILE = "missing_file"
    CORRUPT_VIDEO = "corrupt_video"
    TRUNCATED_VIDEO = "truncated_video"
    EMPTY_VIDEO = "empty_video"
    NO_VIDEO_STREAM = "no_video_stream"
    UNSUPPORTED_CODEC = "unsupported_codec"
    LENGTH_MISMATCH = "length_mismatch"
    MISSING_COLUMNS = "missing_columns"
    BAD_TABLE = "bad_table"
    MALFORMED_EVENTS = "malformed_events"
    BAD_METADATA = "bad_metadata"
    CORRUPT_IMAGE = "corrupt_image"
    CORRUPT_DOCUMENT = "corrupt_document"
    NOT_A_DATASET = "not_a_dataset"
    EMPTY_SOURCE = "empty_source"


_MEDIA_TO_INGEST = {
    MediaIssue.NOT_FOUND: IngestIssue.MISSING_FILE,
    MediaIssue.CORRUPT: IngestIssue.CORRUPT_VIDEO,
    MediaIssue.TRUNCATED: IngestIssue.TRUNCATED_VIDEO,
    MediaIssue.EMPTY: IngestIssue.EMPTY_VIDEO,
    MediaIssue.NO_VIDEO: IngestIssue.NO_VIDEO_STREAM,
    MediaIssue.UNSUPPORTED_CODEC: IngestIssue.UNSUPPORTED_CODEC,
    MediaIssue.OUT_OF_RANGE: IngestIssue.LENGTH_MISMATCH,
}


class Camera(BaseModel):
    """One visual channel of a stream: a range of a video file, an image sequence or a slide PDF."""

    name: str
    kind: Literal["video", "images", "pdf"] = "video"
    path: str | None = Field(default=None, description="video file or PDF (None for image sequences)")
    images: list[str] = Field(default_factory=list, description="image files, one per frame (kind=images)")
    frame_start: int = Field(default=0, ge=0, description="first frame of this stream inside the file")
    frame_end: int = Field(default=0, ge=0, description="one past the last frame inside the file")
    time_start: float = Field(default=0.0, ge=0.0, description="seconds of frame_start on the file's clock")
    time_end: float = Field(default=0.0, ge=0.0)
    fps: float | None = None
    width: int | None = None
    height: int | None = None
    codec: str | None = None

    @property
    def frame_count(self) -> int:
        """Frames of this stream in this camera."""
        return self.frame_end - self.frame_start


class Stream(BaseModel):
    """One unit of raw material: an episode, a recording, a video, a lecture, a trajectory."""

    id: str
    reader: str = Field(description="name of the reader that produced it")
    modality: Modality
    source: str = Field(description="path of the file or folder it was read from")
    fps: float | None = Field(default=None, description="frames per second of the main camera, if any")
    frame_count: int = Field(default=0, ge=0)
    duration: float = Field(default=0.0, ge=0.0, description="seconds on the stream's clock")
    cameras: dict[str, Camera] = Field(default_factory=dict)
    events: list[dict[str, Any]] = Field(
        default_factory=list, description="typed events: each has 'type' and 't' (seconds), sorted by t"
    )
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("events")
    @classmethod
    def _events_are_typed(cls, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for i, event in enumerate(events):
            if not isinstance(event.get("type"), str) or not isinstance(event.get("t"), int | float):
                raise ValueError(f"event {i} needs a string 'type' and a numeric 't': {event}")
        return sorted(events, key=lambda e: e["t"])

    @property
    def main_camera(self) -> str | None:
        """Name of the first camera (the one frame access uses by default)."""
        return next(iter(self.cameras), None)

    @property
    def task(self) -> str | None:
        """The task / instruction text, when the source has one."""
        return self.metadata.get("task")


def stream_id(name: str, key: Any) -> str:
    """Deterministic stream id (``stream:<name>-<hash>``) from a readable name and identifying key."""
    return root_id("stream", name, key)


def reject(uid: str, reason: IngestIssue, message: str, **detail: Any) -> Reject:
    """A reject of one unit at ingestion."""
    return Reject(id=uid, stage=STAGE, reason=str(reason), message=message, detail=detail)


def media_reject(uid: str, exc: MediaError, **detail: Any) -> Reject:
    """Turn a :class:`MediaError` into an ingestion reject with the matching reason."""
    return reject(uid, _MEDIA_TO_INGEST[exc.reason], str(exc), **detail)


class StreamReader(ABC):
    """Reads one kind of source. Subclasses set ``name``/``modality`` and implement detect and read."""

    name: ClassVar[str]
    modality: ClassVar[Modality]
    description: ClassVar[str] = ""
    priority: ClassVar[int] = 50
    """Detection order: lower first. Generic readers (any video folder) use a high number."""

    @abstractmethod
    def detect(self, path: Path) -> bool:
        """Cheap check (file names, a header) whether ``path`` is this reader's kind of source."""

    @abstractmethod
    def read(self, path: Path) -> Iterator[Stream | Reject]:
        """Streams of ``path``, one per unit, with a Reject for each unit that cannot be used."""


READERS: Registry[type[StreamReader]] = Registry("stream reader", builtins="dataclaw.tailor.streams")
register_reader = READERS.add
"""Class decorator: register a reader under ``cls.name``; a duplicate name is an error."""


def reader_names() -> list[str]:
    """Names of the registered readers, sorted."""
    return READERS.names()


def get_reader(name: str) -> StreamReader:
    """The reader registered as ``name``."""
    return READERS.get(name)()


def detect_reader(path: str | Path) -> StreamReader:
    """The reader whose ``detect`` accepts ``path``, or a clear error naming what is readable."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path} does not exist")
    for _, cls in sorted(READERS.items(), key=lambda item: (item[1].priority, item[0])):
        reader = cls()
        if reader.detect(path):
            return reader
    kinds = "; ".join(f"{n} ({cls.description})" for n, cls in READERS.items())
    raise ConfigError(f"{path} is not a dataset dataclaw can read: expected one of {kinds}")


@dataclass
class Source:
    """A path bound to the reader that reads it; iterate for ``Stream | Reject``."""

    path: Path
    reader: StreamReader

    def __iter__(self) -> Iterator[Stream | Reject]:
        return self.reader.read(self.path)


def open_source(path: str | Path, reader: str | None = None) -> Source:
    """Bind ``path`` to ``reader`` (by name) or to the reader that detects it; errors clearly otherwise."""
    path = Path(path)
    if reader is None:
        return Source(path, detect_reader(path))
    if not path.exists():
        raise ConfigError(f"{path} does not exist")
    return Source(path, get_reader(reader))


def read_streams(paths: Iterable[str | Path]) -> Iterator[Stream | Reject]:
    """Streams of many paths; a path no reader recognises becomes a NOT_A_DATASET reject, not an error."""
    for raw in paths:
        path = Path(raw)
        try:
            source = open_source(path)
        except ConfigError as exc:
            yield reject(stream_id(path.name or "source", str(path)), IngestIssue.NOT_A_DATASET, str(exc))
            continue
        yield from source
