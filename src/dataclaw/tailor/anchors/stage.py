"""The anchor stage (paper §3.2): stream records → ``anchors.jsonl``.

:class:`AnchorStage` runs the anchor extractors that apply to each stream (parser anchors are exact,
perception anchors carry a confidence); a stream that cannot be read is a reject with an
:class:`AnchorIssue`, never a stopped run.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import ValidationError

from dataclaw.core.errors import DataclawError
from dataclaw.media.errors import MediaError, MediaIssue
from dataclaw.pipeline import Resources, Stage
from dataclaw.pipeline.stage import Record, Result
from dataclaw.tailor.anchors.base import Anchor, AnchorExtractor, extractor_names, get_extractor
from dataclaw.tailor.anchors.ocr import OcrError
from dataclaw.tailor.records import first_error
from dataclaw.tailor.streams.base import Stream
from dataclaw.tailor.streams.source import StreamSource

ANCHORS = "anchors"


class AnchorIssue(StrEnum):
    """Why anchors could not be extracted from a stream."""

    BAD_RECORD = "bad_record"
    """The stream record does not validate (hand-edited or from another version)."""
    MISSING_MEDIA = "missing_media"
    CORRUPT_MEDIA = "corrupt_media"
    EMPTY_MEDIA = "empty_media"
    UNSUPPORTED_CODEC = "unsupported_codec"
    OUT_OF_RANGE = "out_of_range"
    """An event or frame points outside the stream."""
    OCR_FAILED = "ocr_failed"
    EXTRACTOR_FAILED = "extractor_failed"
    """An extractor refused the stream with a clear error of its own."""


_MEDIA_ISSUE = {
    MediaIssue.NOT_FOUND: AnchorIssue.MISSING_MEDIA,
    MediaIssue.CORRUPT: AnchorIssue.CORRUPT_MEDIA,
    MediaIssue.TRUNCATED: AnchorIssue.CORRUPT_MEDIA,
    MediaIssue.EMPTY: AnchorIssue.EMPTY_MEDIA,
    MediaIssue.NO_VIDEO: AnchorIssue.EMPTY_MEDIA,
    MediaIssue.UNSUPPORTED_CODEC: AnchorIssue.UNSUPPORTED_CODEC,
    MediaIssue.OUT_OF_RANGE: AnchorIssue.OUT_OF_RANGE,
}


class AnchorStage(Stage):
    """Stream record → anchor records (``anchors.jsonl``), or a reject with an :class:`AnchorIssue`."""

    name: ClassVar[str] = ANCHORS
    resources: ClassVar[Resources] = Resources.CPU

    def __init__(self, names: Sequence[str] | None = None, config: dict[str, dict[str, Any]] | None = None):
        self.names = list(names) if names is not None else None
        self.config = dict(config or {})
        self._extractors: list[AnchorExtractor] | None = None

    def setup(self) -> None:
        names = self.names if self.names is not None else extractor_names()
        self._extractors = [get_extractor(n, **self.config.get(n, {})) for n in names]

    def process(self, item: Record) -> Result:
        if self._extractors is None:
            self.setup()
        assert self._extractors is not None
        try:
            stream = Stream.model_validate(item)
        except ValidationError as exc:
            return self.reject(
                item, AnchorIssue.BAD_RECORD, f"stream record does not validate: {first_error(exc)}"
            )
        anchors: list[Anchor] = []
        with StreamSource(stream) as source:
            for ext in self._extractors:
                if not ext.applies_to(stream):
                    continue
                try:
                    anchors.extend(ext.extract(stream, source))
                except MediaError as exc:
                    return self.reject(
                        item, _MEDIA_ISSUE[exc.reason], f"{ext.name}: {exc}", extractor=ext.name
                    )
                except OcrError as exc:
                    return self.reject(item, AnchorIssue.OCR_FAILED, f"{ext.name}: {exc}", extractor=ext.name)
                except DataclawError as exc:
                    return self.reject(
                        item, AnchorIssue.EXTRACTOR_FAILED, f"{ext.name}: {exc}", extractor=ext.name
                    )
        anchors.sort(key=lambda a: (a.t, a.kind, a.id))
        return [a.model_dump() for a in anchors]
