"""Anchor extraction (paper §3.2): parser anchors (GUI events, proprioception, transcripts) are exact;
perception anchors (shots, OCR, motion) carry a confidence. See :mod:`.base` for the registry."""

from dataclaw.tailor.anchors.base import (
    Anchor,
    AnchorExtractor,
    extract_anchors,
    extractor_names,
    get_extractor,
    make_anchor,
    register_extractor,
)

__all__ = [
    "Anchor",
    "AnchorExtractor",
    "extract_anchors",
    "extractor_names",
    "get_extractor",
    "make_anchor",
    "register_extractor",
]
