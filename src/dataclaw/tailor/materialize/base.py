"""Materialisers: what turns a sample's output into the files to write (:class:`ArtifactSpec`), and their
registry. A materialiser in a new module of this package is found without being listed; plugins add
theirs through the entry-point group ``dataclaw.materialisers``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Literal

from dataclaw.core.errors import ConfigError
from dataclaw.core.registry import Registry
from dataclaw.tailor.records import Candidate
from dataclaw.tailor.streams import StreamSource

STAGE = "materialize"
MEDIA_DIR = "media"
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


MATERIALIZERS: Registry[type[Materializer]] = Registry("materialiser", builtins="dataclaw.tailor.materialize")
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
