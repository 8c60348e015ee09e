"""Candidate mining (paper A.3 step 1): find the parts of a stream worth turning into a sample.

Deterministic scripts pick compact, verifiable construction units before any model is called. Miners
register by name like anchor extractors, one family per module of this package (a miner in a new module
is found without being listed):

- ``fault_window``, ``keyframes``: robot episodes (A.3.1, :mod:`.robot`);
- ``gui_task``: heuristic multi-event filtering of a GUI trajectory into none / sequential / parallel /
  hybrid, and an initial subtask proposal (A.3.2 Stage 1 + 2, :mod:`.gui`);
- ``dynamic_segment``: shots whose motion energy is high enough (AIGC / world intents, :mod:`.video`);
- ``lecture_segment``: transcript spans aligned monotonically to slides by text similarity (Education,
  :mod:`.lecture`).

Every candidate records the anchors it used and a human-readable ``why``; its id derives from the stream
id, its own inputs and the miner's settings (a rerun with other settings makes other candidates, never
reuses the old ones). A miner that finds nothing says why with :meth:`Miner.note` (the threshold missed
and the value seen); the mine stage puts those notes into the ``no_candidates`` reject.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from dataclaw.core.errors import ConfigError
from dataclaw.core.registry import Registry
from dataclaw.media.video import sample_indices
from dataclaw.tailor.anchors.base import Anchor
from dataclaw.tailor.records import Candidate, CandidateKind, FrameRange, candidate_id


@dataclass(frozen=True)
class StreamView:
    """What miners need to know about a stream (built from the stream record by the mine stage)."""

    id: str
    modality: str
    fps: float | None = None
    frame_count: int | None = None
    duration: float | None = None
    camera: str | None = None
    instruction: str | None = None
    document: str | None = None
    """slide PDF of a lecture, if any"""
    metadata: dict[str, Any] = field(default_factory=dict)

    def time_of(self, frame: int) -> float:
        return round(frame / self.fps, 6) if self.fps else 0.0

    def frame_of(self, t: float) -> int:
        assert self.fps and self.frame_count
        return max(0, min(self.frame_count - 1, round(t * self.fps)))

    def frange(self, start: int, end: int) -> FrameRange:
        return FrameRange(start=start, end=end, t_start=self.time_of(start), t_end=self.time_of(end))


class Miner(ABC):
    """Turns a stream and its anchors into candidates. Subclasses set ``name`` and ``kind`` and keep
    their settings as public attributes (they are part of every candidate id, see :meth:`settings`)."""

    name: ClassVar[str]
    kind: ClassVar[CandidateKind]
    _notes: list[str] | None = None

    def settings(self) -> dict[str, Any]:
        """The miner's settings: its public attributes, JSON-ready (sets sorted, tuples as lists)."""

        def plain(v: Any) -> Any:
            if isinstance(v, set | frozenset):
                return sorted(plain(x) for x in v)
            if isinstance(v, tuple | list):
                return [plain(x) for x in v]
            if isinstance(v, dict):
                return {str(k): plain(x) for k, x in v.items()}
            return v

        return {k: plain(v) for k, v in sorted(vars(self).items()) if not k.startswith("_")}

    def note(self, message: str) -> None:
        """Record why something was not mined (shown when the stream yields no candidate)."""
        if self._notes is None:
            self._notes = []
        self._notes.append(message)

    def take_notes(self) -> list[str]:
        """The notes since the last call, cleared."""
        notes, self._notes = self._notes or [], []
        return notes

    @abstractmethod
    def applies_to(self, stream: StreamView) -> bool:
        """Whether this miner looks at ``stream`` at all."""

    @abstractmethod
    def mine(self, stream: StreamView, anchors: Sequence[Anchor]) -> list[Candidate]:
        """Candidates of ``stream`` (may be empty)."""

    def candidate(self, stream: StreamView, key: Any, label: str | None = None, **fields: Any) -> Candidate:
        """A candidate of this miner's kind with its deterministic id (from the stream id and ``key``)."""
        return Candidate(
            id=candidate_id(stream.id, self.name, key, self.settings(), label or self.kind.value),
            stream_id=stream.id,
            kind=self.kind,
            **fields,
        )


MINERS: Registry[type[Miner]] = Registry("miner", builtins="dataclaw.tailor.mining")
register_miner = MINERS.add
"""Class decorator: register a miner under ``cls.name``; a duplicate name is an error."""


def miner_names() -> list[str]:
    return MINERS.names()


def get_miner(name: str, **config: Any) -> Miner:
    """A new miner ``name`` built with ``config``; unknown names list the known ones, a setting the miner
    does not take is a ConfigError."""
    cls = MINERS.get(name)
    try:
        return cls(**config)
    except TypeError as exc:
        raise ConfigError(f"miner '{name}': bad settings {config} ({exc})") from None


def anchors_between(
    anchors: Sequence[Anchor], t0: float, t1: float, kinds: set[str] | None = None
) -> list[Anchor]:
    """Anchors that start in, or overlap, ``[t0, t1]`` (optionally only the given kinds)."""
    out = []
    for a in anchors:
        if kinds is not None and a.kind not in kinds:
            continue
        end = a.t_end if a.t_end is not None else a.t
        if a.t <= t1 and end >= t0:
            out.append(a)
    return out


def spread(start: int, end: int, k: int) -> list[int]:
    """``k`` distinct frame indices spread uniformly over ``start..end`` (inclusive), segment centres."""
    return [start + i for i in sample_indices(end - start + 1, k)]


def has_video(stream: StreamView) -> bool:
    """Whether the stream's mining camera is a video with frames."""
    return bool(stream.fps and stream.frame_count and stream.frame_count > 0)


def mine_stream(
    stream: StreamView, anchors: Sequence[Anchor], miners: Sequence[Miner] | None = None
) -> list[Candidate]:
    """Run every miner that applies to ``stream`` (default: all registered, default config)."""
    miners = miners if miners is not None else [get_miner(name) for name in miner_names()]
    out: list[Candidate] = []
    for miner in miners:
        if miner.applies_to(stream):
            out.extend(miner.mine(stream, anchors))
    return out
