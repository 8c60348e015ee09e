"""Anchors: timestamped, checkable facts about a stream (paper §3.2) and the extractor registry.

An :class:`Anchor` says "at ``t`` seconds on the stream's clock, this happened" with a ``payload``, a
``confidence`` (1.0 for parser anchors read straight from logs and proprioception, less for perception
anchors such as shot boundaries or OCR) and the ``source`` extractor that produced it. Anchors ground
candidates, validation and rewards; their ids derive from the stream id, so reruns agree.

An extractor is one class in one module of this package, registered with :func:`register_extractor`:

    @register_extractor
    class ShotBoundaries(AnchorExtractor):
        name = "shots"
        def applies_to(self, stream): return bool(stream.cameras)
        def extract(self, stream, source): ...

Every module of ``dataclaw.tailor.anchors`` is imported when the registry is first read, so adding an
extractor is adding its file.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, Field

from dataclaw.core.errors import ConfigError
from dataclaw.core.ids import child_id
from dataclaw.core.registry import Registry

if TYPE_CHECKING:
    from dataclaw.tailor.streams import Stream, StreamSource


class Anchor(BaseModel):
    """One timestamped fact about a stream."""

    id: str = Field(description="lineage id: <stream id>/anchor-<kind>-<hash>")
    stream_id: str
    t: float = Field(ge=0.0, description="seconds on the stream's clock where the fact holds (or starts)")
    t_end: float | None = Field(default=None, description="end in seconds for interval facts, else None")
    kind: str = Field(description="what happened, e.g. click, typing, gripper_close, shot_boundary, slide")
    source: str = Field(description="name of the extractor that produced it")
    confidence: float = Field(default=1.0, ge=0.0, le=1.0, description="1.0 = exact (parser anchor)")
    payload: dict[str, Any] = Field(default_factory=dict)

    @property
    def exact(self) -> bool:
        """Whether this is a parser anchor (read from logs/state, not perceived)."""
        return self.confidence >= 1.0


def make_anchor(
    stream_id: str,
    t: float,
    kind: str,
    source: str,
    payload: dict[str, Any] | None = None,
    *,
    confidence: float = 1.0,
    t_end: float | None = None,
) -> Anchor:
    """Build an :class:`Anchor` with its deterministic id (from stream, source, kind, time and payload)."""
    payload = payload or {}
    t = max(0.0, round(float(t), 6))
    t_end = None if t_end is None else round(float(t_end), 6)
    key = [source, kind, t, t_end, payload]
    return Anchor(
        id=child_id(stream_id, "anchor", key, label=kind),
        stream_id=stream_id,
        t=t,
        t_end=t_end,
        kind=kind,
        source=source,
        confidence=confidence,
        payload=payload,
    )


class AnchorExtractor(ABC):
    """Turns one stream into anchors. Subclasses set ``name`` and implement :meth:`extract`.

    Configuration goes in ``__init__`` keyword arguments with defaults; heavy dependencies are checked
    with :func:`dataclaw.core.errors.require` when the extractor is built or first used, never at import.
    """

    name: ClassVar[str]

    def applies_to(self, stream: Stream) -> bool:
        """Whether this extractor has anything to say about ``stream`` (default: always)."""
        return True

    @abstractmethod
    def extract(self, stream: Stream, source: StreamSource) -> list[Anchor]:
        """Anchors of ``stream``; ``source`` gives frame and table access. Sorted by ``t`` is nice."""


EXTRACTORS: Registry[type[AnchorExtractor]] = Registry("anchor extractor", builtins="dataclaw.tailor.anchors")
register_extractor = EXTRACTORS.add
"""Class decorator: register ``cls`` under ``cls.name``; a duplicate name is an error."""


def extractor_names() -> list[str]:
    """Names of all registered extractors, sorted."""
    return EXTRACTORS.names()


def get_extractor(name: str, **config: Any) -> AnchorExtractor:
    """A new extractor ``name`` built with ``config``; unknown names list the known ones, a setting the
    extractor does not take is a ConfigError."""
    cls = EXTRACTORS.get(name)
    try:
        return cls(**config)
    except TypeError as exc:
        raise ConfigError(f"anchor extractor '{name}': bad settings {config} ({exc})") from None


def extract_anchors(stream: Stream, source: StreamSource, names: list[str] | None = None) -> list[Anchor]:
    """Run the named extractors (default: all registered) that apply to ``stream``; anchors sorted by time."""
    anchors: list[Anchor] = []
    for name in names if names is not None else extractor_names():
        extractor = get_extractor(name)
        if extractor.applies_to(stream):
            anchors.extend(extractor.extract(stream, source))
    anchors.sort(key=lambda a: (a.t, a.kind, a.id))
    return anchors
