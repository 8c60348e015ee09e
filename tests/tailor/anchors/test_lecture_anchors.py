"""Lecture anchors: transcript segments and slide changes of the real MIT lecture."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataclaw.tailor.anchors import extract_anchors, get_extractor
from dataclaw.tailor.streams import Stream, StreamSource, open_source


def test_transcript_and_slide_anchors(shared_data: Path) -> None:
    [stream] = list(open_source(shared_data / "lectures/cryptocurrency.pdf"))
    assert isinstance(stream, Stream) and get_extractor("lecture").applies_to(stream)
    with StreamSource(stream) as source:
        anchors = extract_anchors(stream, source, ["lecture"])
    transcript = [a for a in anchors if a.kind == "transcript"]
    slides = [a for a in anchors if a.kind == "slide_change"]
    assert len(transcript) == sum(1 for e in stream.events if e["type"] == "transcript")
    assert transcript[0].payload["text"].startswith("The following content")
    assert transcript[0].t_end == pytest.approx(4.24)
    assert (slides[0].t, slides[0].payload) == (pytest.approx(25.23), {"slide": 0, "page": 1})
    assert len(slides) == len(stream.metadata["slide_times"])
    assert all(a.exact for a in anchors) and [a.t for a in anchors] == sorted(a.t for a in anchors)
    assert any("Lightning" in a.payload["text"] for a in transcript)
