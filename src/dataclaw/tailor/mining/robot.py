"""Robot branches of candidate mining (paper A.3.1): fault windows before grasps, and keyframes.

- ``fault_window`` (A.3.1 fault branch): one window per grasp when proprioception anchors show grasps
  (the observation range is the approach segment just before the hand closes, the future range holds
  the grasp), else anchors at fixed fractions of the trajectory (35/50/65%, the paper's scripts); each
  with an observation range before the anchor (where a stall is synthesised) and a future range after
  it (evidence of the correct continuation), 8 observation and 4 future frames sampled.
- ``keyframes`` (A.3.1 understanding branch): K frames (20) sampled uniformly over the episode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from dataclaw.core.errors import ConfigError
from dataclaw.tailor.anchors.base import Anchor
from dataclaw.tailor.mining.base import Miner, StreamView, anchors_between, has_video, register_miner, spread
from dataclaw.tailor.records import Candidate, CandidateKind

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
        return stream.modality == ROBOT and has_video(stream)

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
        return stream.modality == ROBOT and has_video(stream)

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


def _describe(anchors: Sequence[Anchor], limit: int = 4) -> str:
    """``"3 gripper_close, 1 shot_boundary"``: a short summary of anchors by kind."""
    counts: dict[str, int] = {}
    for a in anchors:
        counts[a.kind] = counts.get(a.kind, 0) + 1
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{c} {k}" for k, c in items[:limit])
    return text + (", …" if len(items) > limit else "")
