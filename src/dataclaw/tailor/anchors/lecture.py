"""Lecture parser anchors: transcript segments and slide changes (exact: read from the .srt and the
slide/time alignment, not perceived)."""

from __future__ import annotations

from dataclaw.tailor.anchors.base import Anchor, AnchorExtractor, make_anchor, register_extractor
from dataclaw.tailor.streams.base import Modality, Stream
from dataclaw.tailor.streams.source import StreamSource


@register_extractor
class LectureAnchors(AnchorExtractor):
    """``transcript`` anchors (t..t_end, text) and ``slide_change`` anchors (t, slide index)."""

    name = "lecture"

    def applies_to(self, stream: Stream) -> bool:
        return stream.modality == Modality.LECTURE

    def extract(self, stream: Stream, source: StreamSource) -> list[Anchor]:
        anchors: list[Anchor] = []
        for event in stream.events:
            if event["type"] == "transcript":
                anchors.append(
                    make_anchor(
                        stream.id,
                        event["t"],
                        "transcript",
                        self.name,
                        {"text": event["text"]},
                        t_end=event["t_end"],
                    )
                )
            elif event["type"] == "slide":
                payload = {"slide": event["slide"], "page": event["slide"] + 1}
                anchors.append(make_anchor(stream.id, event["t"], "slide_change", self.name, payload))
        return anchors
