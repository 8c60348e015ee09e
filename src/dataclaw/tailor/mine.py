"""Candidate mining (paper A.3 step 1): find the parts of a stream worth turning into a sample.

Deterministic scripts pick compact, verifiable construction units before any model is called:

- ``fault_window`` (A.3.1 fault branch): one window per grasp when proprioception anchors show grasps
  (the observation range is the approach segment just before the hand closes, the future range holds
  the grasp), else anchors at fixed fractions of the trajectory (35/50/65%, the paper's scripts); each
  with an observation range before the anchor (where a stall is synthesised) and a future range after
  it (evidence of the correct continuation), 8 observation and 4 future frames sampled.
- ``keyframes`` (A.3.1 understanding branch): K frames (20) sampled uniformly over the episode.
- ``gui_task`` (A.3.2 Stage 1 + 2): heuristic multi-event filtering of a GUI trajectory into
  none / sequential / parallel / hybrid, and an initial subtask proposal (see :mod:`.mine_gui`).
- ``dynamic_segment`` (AIGC / world intents): shots whose motion energy is high enough.
- ``lecture_segment`` (Education): transcript spans aligned monotonically to slides by text similarity
  (see :mod:`.mine_lecture`).

Miners register by name like anchor extractors. Every candidate records the anchors it used and a
human-readable ``why``; its id derives from the stream id, its own inputs and the miner's settings (a
rerun with other settings makes other candidates, never reuses the old ones). A miner that finds
nothing says why with :meth:`Miner.note` (the threshold missed and the value seen); the mine stage puts
those notes into the ``no_candidates`` reject.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import BaseModel, Field, model_validator

from dataclaw.core.errors import ConfigError
from dataclaw.core.ids import child_id, stable_hash
from dataclaw.core.registry import Registry
from dataclaw.media.video import sample_indices
from dataclaw.tailor.anchors.base import Anchor


class CandidateKind(StrEnum):
    """What a candidate is for (one per construction branch of paper A.3)."""

    FAULT_WINDOW = "fault_window"
    KEYFRAMES = "keyframes"
    GUI_TASK = "gui_task"
    DYNAMIC_SEGMENT = "dynamic_segment"
    LECTURE_SEGMENT = "lecture_segment"


class FrameRange(BaseModel):
    """Frames ``start..end`` (both inclusive) of the stream's video, with their times in seconds."""

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    t_start: float = Field(ge=0.0)
    t_end: float = Field(ge=0.0)

    @model_validator(mode="after")
    def _ordered(self) -> FrameRange:
        if self.end < self.start or self.t_end < self.t_start:
            raise ValueError(f"range end before start: {self.start}..{self.end}")
        return self

    @property
    def length(self) -> int:
        return self.end - self.start + 1

    def contains(self, frame: int) -> bool:
        return self.start <= frame <= self.end


class Candidate(BaseModel):
    """One construction unit mined from a stream, with the evidence it was chosen on."""

    id: str
    stream_id: str
    kind: CandidateKind
    camera: str | None = Field(default=None, description="video the frame indices refer to")
    fps: float | None = None
    frame_count: int | None = Field(default=None, description="frames in the stream's video")
    span: FrameRange | None = Field(default=None, description="the whole stretch the candidate covers")
    observation: FrameRange | None = Field(default=None, description="fault windows: input range")
    future: FrameRange | None = Field(default=None, description="fault windows: continuation range")
    frames: list[int] = Field(default_factory=list, description="sampled frame indices (keyframes, segments)")
    observation_frames: list[int] = Field(default_factory=list)
    future_frames: list[int] = Field(default_factory=list)
    t_start: float | None = None
    t_end: float | None = None
    anchor_ids: list[str] = Field(default_factory=list, description="anchors this candidate was chosen on")
    why: str = Field(description="human-readable reason this candidate was chosen")
    payload: dict[str, Any] = Field(default_factory=dict, description="kind-specific data")


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
            id=child_id(
                stream.id,
                "cand",
                [self.name, key, stable_hash(self.settings(), 8)],
                label=label or self.kind.value,
            ),
            stream_id=stream.id,
            kind=self.kind,
            **fields,
        )


MINERS: Registry[type[Miner]] = Registry(
    "miner", builtins=["dataclaw.tailor.mine_gui", "dataclaw.tailor.mine_lecture"]
)
register_miner = MINERS.add
"""Class decorator: register a miner under ``cls.name``; a duplicate name is an error."""


def miner_names() -> list[str]:
    return MINERS.names()


def get_miner(name: str, **config: Any) -> Miner:
    """A new miner ``name`` built with ``config``; unknown names list the known ones."""
    return MINERS.get(name)(**config)


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


def _video_ok(stream: StreamView) -> bool:
    return bool(stream.fps and stream.frame_count and stream.frame_count > 0)


# ------------------------------------------------------------------------------------------------
# robot branches (A.3.1)

ROBOT = "robot"


GRASP_KINDS = frozenset({"hand_close", "gripper_close"})
"""Proprioception anchors that mark a grasp (the hand or gripper closes)."""
_BEFORE_GRASP = frozenset({"hand_open", "hand_close", "gripper_open", "gripper_close", "stall"})


def _frame_of(stream: StreamView, a: Anchor, end: bool = False) -> int:
    """The frame an anchor starts (``end``: ends) at: its payload's frame numbers, else its time."""
    key = "frame_end" if end else "frame"
    value = a.payload.get(key, a.payload.get("frame")) if end else a.payload.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    t = a.t_end if end and a.t_end is not None else a.t
    return stream.frame_of(t)


@register_miner
class FaultWindows(Miner):
    """Observation/future windows before each grasp, or at fixed fractions of a robot trajectory (A.3.1).

    With grasp anchors (``hand_close``/``gripper_close`` from proprioception) each grasp gets a window:
    the anchor is the last frame before the hand starts to close, the observation range covers the
    approach segment up to it (from the end of the previous hand event or stall, at most
    ``observation_s``; when that approach is shorter than ``observation_frames`` the range reaches back
    the full ``observation_s``), the future range the ``future_s`` after it, the grasp itself. Grasps
    closer than ``observation_s`` to the previous one (two hands closing together) share its window.
    Without grasp anchors the anchors sit at ``fractions`` of the episode (the paper's 35/50/65%), the
    observation range ending at the anchor. Ranges are clipped to the episode; an anchor whose ranges
    cannot hold the frames to sample is skipped, and the reason noted.
    """

    name: ClassVar[str] = "fault_window"
    kind: ClassVar[CandidateKind] = CandidateKind.FAULT_WINDOW

    def __init__(
        self,
        fractions: Sequence[float] = (0.35, 0.5, 0.65),
        observation_s: float = 3.0,
        future_s: float = 3.0,
        observation_frames: int = 8,
        future_frames: int = 4,
        evidence_kinds: Sequence[str] | None = None,
        use_grasps: bool = True,
    ) -> None:
        if not fractions or any(not 0.0 < f < 1.0 for f in fractions):
            raise ConfigError(
                f"fault-window fractions must lie strictly between 0 and 1, got {list(fractions)}"
            )
        if observation_s <= 0 or future_s <= 0 or observation_frames < 1 or future_frames < 1:
            raise ConfigError("fault-window ranges and frame counts must be positive")
        self.fractions = tuple(sorted(fractions))
        self.observation_s, self.future_s = observation_s, future_s
        self.observation_frames, self.future_frames = observation_frames, future_frames
        self.evidence_kinds = set(evidence_kinds) if evidence_kinds else None
        self.use_grasps = use_grasps

    def applies_to(self, stream: StreamView) -> bool:
        return stream.modality == ROBOT and _video_ok(stream)

    def grasps(self, stream: StreamView, anchors: Sequence[Anchor]) -> list[tuple[int, int, Anchor]]:
        """(grasp frame, approach start frame, grasp anchor) per grasp, in order."""
        assert stream.fps
        events = sorted((a for a in anchors if a.kind in _BEFORE_GRASP), key=lambda a: (a.t, a.id))
        gap = max(1, round(self.observation_s * stream.fps))
        out: list[tuple[int, int, Anchor]] = []
        for g in (a for a in events if a.kind in GRASP_KINDS):
            frame = _frame_of(stream, g)
            if out and frame - out[-1][0] < gap:
                continue  # the other hand closing with it, or a re-grip: same approach
            ends = [_frame_of(stream, e, end=True) for e in events if e is not g]
            start = max((f + 1 for f in ends if f < frame), default=0)
            out.append((frame, start, g))
        return out

    def mine(self, stream: StreamView, anchors: Sequence[Anchor]) -> list[Candidate]:
        assert stream.fps and stream.frame_count
        n, fps = stream.frame_count, stream.fps
        if n < self.observation_frames + self.future_frames:
            self.note(
                f"{n} frames < observation_frames + future_frames = "
                f"{self.observation_frames + self.future_frames}"
            )
            return []  # too short to hold the frames to sample: nothing to mine (A.3.1 filters these)
        obs_len = max(1, round(self.observation_s * fps))
        plans: list[tuple[int, int, float, dict[str, Any], str]] = []  # anchor, obs start, key, payload, why
        grasps = self.grasps(stream, anchors) if self.use_grasps else []
        for i, (frame, approach, g) in enumerate(grasps):
            a = min(n - 2, frame - 1)
            start = max(0, a - obs_len + 1)
            if a - max(start, approach) + 1 >= self.observation_frames:
                start = max(start, approach)
            payload = {
                "anchor": "grasp", "grasp_frame": frame, "grasp_anchor": g.id, "approach_start": approach,
                "anchor_frame": a, "anchor_fraction": round(a / (n - 1), 4),
            }  # fmt: skip
            why = (
                f"approach before grasp {i + 1} ({g.kind} of the {g.payload.get('hand', 'gripper')} hand at "
                f"frame {frame}, {stream.time_of(frame):.2f} s; approach from frame {approach})"
            )
            plans.append((a, start, float(frame), payload, why))
        if not grasps:
            for frac in self.fractions:
                a = min(n - 2, round(frac * (n - 1)))
                payload = {"anchor": "fraction", "anchor_fraction": frac, "anchor_frame": a}
                why = f"anchor at {frac:.0%} of {n} frames (frame {a}, {stream.time_of(a):.2f} s)"
                why += "; no grasp anchors" if self.use_grasps else ""
                plans.append((a, max(0, a - obs_len + 1), frac, payload, why))
        out: list[Candidate] = []
        for a, start, key, payload, why in plans:
            if a < 0:
                self.note(f"grasp at frame {a + 1} leaves no frame before it to observe")
                continue
            obs = stream.frange(start, a)
            fut = stream.frange(a + 1, min(n - 1, a + max(1, round(self.future_s * fps))))
            if obs.length < self.observation_frames or fut.length < self.future_frames:
                self.note(
                    f"anchor at frame {a}: observation {obs.length} frames (observation_frames "
                    f"{self.observation_frames}), future {fut.length} frames "
                    f"(future_frames {self.future_frames})"
                )
                continue
            used = anchors_between(anchors, obs.t_start, fut.t_end, self.evidence_kinds)
            evidence = _describe(used)
            why += f"; observation {obs.start}-{obs.end}, future {fut.start}-{fut.end}" + (
                f"; {evidence} in the window" if evidence else "; no event anchors in the window"
            )
            label = (
                f"grasp-{payload['grasp_frame']}"
                if payload["anchor"] == "grasp"
                else f"fault-{round(key * 100)}"
            )
            out.append(
                self.candidate(
                    stream,
                    [key, obs.start, obs.end, fut.start, fut.end],
                    label=label,
                    camera=stream.camera,
                    fps=fps,
                    frame_count=n,
                    span=stream.frange(obs.start, fut.end),
                    observation=obs,
                    future=fut,
                    observation_frames=spread(obs.start, obs.end, self.observation_frames),
                    future_frames=spread(fut.start, fut.end, self.future_frames),
                    t_start=obs.t_start,
                    t_end=fut.t_end,
                    anchor_ids=[x.id for x in used],
                    why=why,
                    payload=payload,
                )
            )
        return out


@register_miner
class Keyframes(Miner):
    """``k`` frames sampled uniformly over a whole robot episode (A.3.1 understanding branch)."""

    name: ClassVar[str] = "keyframes"
    kind: ClassVar[CandidateKind] = CandidateKind.KEYFRAMES

    def __init__(self, k: int = 20, evidence_kinds: Sequence[str] | None = None) -> None:
        if k < 1:
            raise ConfigError(f"keyframes k must be >= 1, got {k}")
        self.k = k
        self.evidence_kinds = set(evidence_kinds) if evidence_kinds else None

    def applies_to(self, stream: StreamView) -> bool:
        return stream.modality == ROBOT and _video_ok(stream)

    def mine(self, stream: StreamView, anchors: Sequence[Anchor]) -> list[Candidate]:
        assert stream.fps and stream.frame_count
        n = stream.frame_count
        span = stream.frange(0, n - 1)
        frames = spread(0, n - 1, self.k)
        used = anchors_between(anchors, span.t_start, span.t_end, self.evidence_kinds)
        evidence = _describe(used)
        why = f"{len(frames)} frames sampled uniformly over all {n} frames" + (
            f"; {evidence}" if evidence else ""
        )
        return [
            self.candidate(
                stream,
                [self.k, n],
                label=f"k{self.k}",
                camera=stream.camera,
                fps=stream.fps,
                frame_count=n,
                span=span,
                frames=frames,
                t_start=span.t_start,
                t_end=span.t_end,
                anchor_ids=[x.id for x in used],
                why=why,
                payload={"k": self.k},
            )
        ]


# ------------------------------------------------------------------------------------------------
# AIGC / world: dynamic segments


@register_miner
class DynamicSegments(Miner):
    """Shots (or pieces of long shots) whose mean motion energy reaches ``min_energy``.

    Shots come from ``shot`` anchors (the whole video is one shot when there are none); energy is the
    mean of the ``motion`` anchors overlapping the segment. Segments shorter than ``min_s`` are dropped,
    longer than ``max_s`` split into equal pieces. ``min_energy`` 0.015 is a 1.5% mean grey-level change
    between samples a quarter second apart: a still picture stays under 0.5% (compression noise), a
    moving subject or camera is well above 2%.
    """

    name: ClassVar[str] = "dynamic_segment"
    kind: ClassVar[CandidateKind] = CandidateKind.DYNAMIC_SEGMENT

    def __init__(
        self,
        min_energy: float = 0.015,
        min_s: float = 1.0,
        max_s: float = 10.0,
        frames: int = 8,
        modalities: Sequence[str] = ("video",),
    ) -> None:
        if min_s <= 0 or max_s < min_s or frames < 1:
            raise ConfigError("dynamic segments need 0 < min_s <= max_s and frames >= 1")
        self.min_energy, self.min_s, self.max_s, self.frames = min_energy, min_s, max_s, frames
        self.modalities = set(modalities)

    def applies_to(self, stream: StreamView) -> bool:
        return stream.modality in self.modalities and _video_ok(stream)

    def mine(self, stream: StreamView, anchors: Sequence[Anchor]) -> list[Candidate]:
        assert stream.fps and stream.frame_count
        n = stream.frame_count
        duration = n / stream.fps
        shots = sorted((a for a in anchors if a.kind == "shot"), key=lambda a: a.t)
        motion = [a for a in anchors if a.kind == "motion"]
        if not motion:
            self.note("no motion anchors (run the motion extractor)")
            return []
        pieces: list[tuple[float, float, Anchor | None]] = []
        for shot in shots or [None]:
            t0 = shot.t if shot else 0.0
            t1 = min(duration, shot.t_end if shot and shot.t_end is not None else duration)
            parts = max(1, int(-(-(t1 - t0) // self.max_s)))
            step = (t1 - t0) / parts
            pieces.extend((t0 + i * step, t0 + (i + 1) * step, shot) for i in range(parts))
        out: list[Candidate] = []
        longest, best = 0.0, None
        for t0, t1, shot in pieces:
            longest = max(longest, t1 - t0)
            if t1 - t0 < self.min_s:
                continue
            inside = [m for m in motion if (m.t_end or m.t) > t0 and m.t < t1]  # overlaps [t0, t1)
            if not inside:
                continue
            energy = sum(m.payload["energy"] for m in inside) / len(inside)
            best = energy if best is None else max(best, energy)
            if energy < self.min_energy:
                continue
            first = stream.frame_of(t0)
            rng = stream.frange(first, max(first, min(n - 1, round(t1 * stream.fps) - 1)))  # t1 exclusive
            used = ([shot] if shot else []) + inside
            conf = shot.confidence if shot else 1.0
            why = (
                f"{'shot ' + str(shot.payload.get('index')) if shot else 'whole video'} "
                f"{t0:.2f}-{t1:.2f} s has mean motion energy {energy:.4f} >= {self.min_energy}"
                f" over {len(inside)} motion windows"
            )
            out.append(
                self.candidate(
                    stream,
                    [round(t0, 4), round(t1, 4)],
                    camera=stream.camera,
                    fps=stream.fps,
                    frame_count=n,
                    span=rng,
                    frames=spread(rng.start, rng.end, self.frames),
                    t_start=rng.t_start,
                    t_end=round(t1, 6),
                    anchor_ids=[a.id for a in used],
                    why=why,
                    payload={
                        "motion_energy": round(energy, 6),
                        "shot_confidence": conf,
                        "peak_energy": max(m.payload.get("peak", 0.0) for m in inside),
                    },
                )
            )
        if not out and best is None:
            self.note(f"longest segment {longest:.2f} s < min_s {self.min_s} s")
        elif not out:
            self.note(f"highest mean motion energy {best:.4f} < min_energy {self.min_energy}")
        return out


def _describe(anchors: Sequence[Anchor], limit: int = 4) -> str:
    """``"3 gripper_close, 1 shot_boundary"``: a short summary of anchors by kind."""
    counts: dict[str, int] = {}
    for a in anchors:
        counts[a.kind] = counts.get(a.kind, 0) + 1
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{c} {k}" for k, c in items[:limit])
    return text + (", …" if len(items) > limit else "")


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
