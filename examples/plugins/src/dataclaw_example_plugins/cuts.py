"""A candidate miner: the frames on both sides of each hard cut of a video.

The shot anchor extractor marks every cut it finds with a ``shot_boundary`` anchor, but no built-in miner
mines a plain video's cuts: ``dynamic_segment`` keeps the moving shots between them. This miner makes one
candidate per cut, a few frames from just before it and as many from just after, the construction unit of
a "what changed at the cut" question (an intent that lists ``keyframes`` in ``candidate_kinds`` takes it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from dataclaw.core.errors import ConfigError
from dataclaw.tailor.anchors.base import Anchor
from dataclaw.tailor.mining.base import Miner, StreamView, has_video, spread
from dataclaw.tailor.records import Candidate, CandidateKind


class ShotCuts(Miner):
    """Registered by the entry point ``shot_cut = dataclaw_example_plugins.cuts:ShotCuts`` in the
    ``dataclaw.miners`` group: the entry point's name is the miner's name (``--miners shot_cut``,
    ``--set shot_cut.frames=3``).

    Per ``shot_boundary`` anchor: ``frames`` frames spread over the ``window_s`` before the cut and as many
    over the ``window_s`` from it on, each side kept inside its own shot (never across the previous or next
    cut). A cut whose detector score is under ``min_score``, or whose shots are too short to hold the
    frames, is skipped with a note; the mine stage shows the notes when a stream yields nothing.
    """

    name: ClassVar[str] = "shot_cut"
    kind: ClassVar[CandidateKind] = CandidateKind.KEYFRAMES

    def __init__(self, frames: int = 2, window_s: float = 0.5, min_score: float = 0.0) -> None:
        if frames < 1 or window_s <= 0:
            raise ConfigError(f"shot_cut needs frames >= 1 and window_s > 0, got {frames} and {window_s}")
        self.frames, self.window_s, self.min_score = frames, window_s, min_score

    def applies_to(self, stream: StreamView) -> bool:
        return stream.modality == "video" and has_video(stream)

    def mine(self, stream: StreamView, anchors: Sequence[Anchor]) -> list[Candidate]:
        assert stream.fps and stream.frame_count
        cuts = sorted((a for a in anchors if a.kind == "shot_boundary"), key=lambda a: a.t)
        if not cuts:
            self.note("no shot_boundary anchors: the video is one shot")
            return []
        at = [int(a.payload.get("frame", stream.frame_of(a.t))) for a in cuts]
        width = max(self.frames, round(self.window_s * stream.fps))
        out: list[Candidate] = []
        for i, cut in enumerate(cuts):
            score = cut.payload.get("score")
            if score is not None and score < self.min_score:
                self.note(f"cut at {cut.t:.2f} s: score {score} < min_score {self.min_score}")
                continue
            first = max(at[i - 1] if i else 0, at[i] - width)
            last = min(at[i + 1] if i + 1 < len(at) else stream.frame_count, at[i] + width) - 1
            if at[i] - first < self.frames or last - at[i] + 1 < self.frames:
                self.note(f"cut at {cut.t:.2f} s: its shots hold fewer than {self.frames} frames on a side")
                continue
            before, after = spread(first, at[i] - 1, self.frames), spread(at[i], last, self.frames)
            span = stream.frange(first, last)
            out.append(
                self.candidate(
                    stream,
                    at[i],
                    label="cut",
                    camera=stream.camera,
                    fps=stream.fps,
                    frame_count=stream.frame_count,
                    span=span,
                    frames=before + after,
                    t_start=span.t_start,
                    t_end=span.t_end,
                    anchor_ids=[cut.id],
                    why=f"cut at {cut.t:.2f} s (frame {at[i]}, score {score}): frames {before} | {after}",
                    payload={"cut_frame": at[i], "score": score, "before": before, "after": after},
                )
            )
        return out
