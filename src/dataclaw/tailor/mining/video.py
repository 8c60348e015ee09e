"""AIGC / world branch of candidate mining: dynamic segments, the shots whose motion is high enough."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from dataclaw.core.errors import ConfigError
from dataclaw.tailor.anchors.base import Anchor
from dataclaw.tailor.mining.base import Miner, StreamView, has_video, register_miner, spread
from dataclaw.tailor.records import Candidate, CandidateKind


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
        return stream.modality in self.modalities and has_video(stream)

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
