"""Lecture segments: monotone slide↔transcript alignment, checked against a real hand-made alignment."""

from __future__ import annotations

import bisect
from pathlib import Path

import numpy as np
import pytest

from dataclaw.tailor.anchors.base import Anchor, make_anchor
from dataclaw.tailor.mining.base import StreamView
from dataclaw.tailor.mining.lecture import (
    LectureSegments,
    chunk_transcript,
    monotone_align,
    slide_texts,
    tfidf_similarity,
)
from dataclaw.tailor.records import CandidateKind

SID = "stream:lecture-00000000"


def test_monotone_alignment_follows_the_best_forward_path() -> None:
    sim = np.array([[0.9, 0.1, 0.0], [0.8, 0.3, 0.0], [0.0, 0.9, 0.2], [0.9, 0.1, 0.5], [0.0, 0.1, 0.9]])
    path = monotone_align(sim, skip_penalty=0.05)
    assert path == [0, 0, 1, 2, 2]  # chunk 3 prefers slide 0, but slides never go back
    assert path == sorted(path)
    assert monotone_align(np.zeros((0, 3))) == []


def test_skip_penalty_discourages_jumping() -> None:
    sim = np.array([[0.5, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.52], [0.0, 0.5, 0.0, 0.0]])
    assert monotone_align(sim, skip_penalty=0.0) == [0, 3, 3]
    assert monotone_align(sim, skip_penalty=0.2) == [0, 1, 1]


def test_tfidf_similarity_matches_shared_content_words() -> None:
    sim = tfidf_similarity(
        ["the bitcoin blockchain mining", "lightning channels payment"],
        ["Bitcoin mining and the blockchain", "Payment channels on lightning", "Unrelated cooking recipe"],
    )
    assert sim.shape == (2, 3)
    assert sim[0].argmax() == 0 and sim[1].argmax() == 1
    assert sim[0, 2] == 0.0


def _lecture(shared_data: Path) -> tuple[StreamView, list[Anchor], list[list[float]]]:
    from dataclaw.tailor.anchors import get_extractor
    from dataclaw.tailor.streams import StreamSource, open_source

    (stream,) = [
        s for s in open_source(shared_data / "lectures" / "cryptocurrency.pdf") if not hasattr(s, "reason")
    ]
    with StreamSource(stream) as source:
        anchors = get_extractor("lecture").extract(stream, source)
    view = StreamView(
        id=stream.id, modality="lecture", duration=stream.duration, document=stream.cameras["slides"].path
    )
    return view, anchors, stream.metadata["slide_times"]


@pytest.mark.slow
def test_text_alignment_agrees_with_the_hand_made_alignment(shared_data: Path) -> None:
    """Without the alignment file, TF-IDF + monotone DP puts transcript chunks on the right slide far
    more often than per-chunk best match (chance is 1/52)."""
    view, anchors, truth = _lecture(shared_data)
    transcript = [a for a in anchors if a.kind == "transcript"]
    texts = slide_texts(view.document)  # type: ignore[arg-type]
    assert len(texts) == 52 and "Bitcoin" in " ".join(texts)
    chunks = chunk_transcript(transcript, 20.0)
    sim = tfidf_similarity([" ".join(a.payload["text"] for a in c) for c in chunks], texts)
    starts = [t for t, _ in truth]

    def on_screen(t: float) -> int | None:
        i = bisect.bisect_right(starts, t) - 1
        return int(truth[i][1]) if i >= 0 else None

    mids = [(c[0].t + (c[-1].t_end or c[-1].t)) / 2 for c in chunks]
    scored = [(m, j) for j, m in enumerate(mids) if on_screen(m) is not None]
    path = monotone_align(sim, 0.05)
    aligned = np.mean([on_screen(m) == path[j] for m, j in scored])
    argmax = np.mean([on_screen(m) == int(sim[j].argmax()) for m, j in scored])
    assert aligned >= 0.4 and aligned > argmax + 0.1


@pytest.mark.slow
def test_segments_from_the_slide_time_alignment(shared_data: Path) -> None:
    view, anchors, truth = _lecture(shared_data)
    cands = LectureSegments().mine(view, anchors)
    assert cands and all(c.kind is CandidateKind.LECTURE_SEGMENT for c in cands)
    for c in cands:
        assert c.payload["aligned_by"] == "alignment"
        assert 0 <= c.t_start < c.t_end <= view.duration  # type: ignore[operator]
        assert c.t_end - c.t_start >= 5.0  # type: ignore[operator]
        assert c.payload["transcript"] and c.payload["slide_text"] is not None
        assert [t for t, s in truth if abs(t - c.t_start) < 1e-3 and s == c.payload["slide"]]  # a real visit
    changes = [a for a in anchors if a.kind == "slide_change"]
    without = LectureSegments().mine(view, [a for a in anchors if a not in changes])
    assert without and all(c.payload["aligned_by"] == "tfidf" for c in without)
    times = [c.t_start for c in without]
    assert times == sorted(times)


def test_no_slides_no_segments() -> None:
    view = StreamView(id=SID, modality="lecture", duration=60.0)
    transcript = [make_anchor(SID, 1.0, "transcript", "lecture", {"text": "hello"}, t_end=2.0)]
    assert LectureSegments().mine(view, transcript) == []
