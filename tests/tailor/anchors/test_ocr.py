"""OCR anchors: Tesseract (default) and RapidOCR read rendered text and a real GUI screenshot."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.media.image import load_image
from dataclaw.tailor.anchors import get_extractor
from dataclaw.tailor.anchors.ocr import (
    OcrBackend,
    OcrError,
    get_backend,
    ocr_image,
    parse_tesseract_tsv,
    register_backend,
)

PIL = pytest.importorskip("PIL")
from PIL import Image, ImageDraw, ImageFont  # noqa: E402

needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None, reason="tesseract binary not installed"
)

LINES = [("Quarterly revenue report", (40, 30)), ("Save changes before closing", (40, 110))]


def rendered() -> np.ndarray:
    """Black text on white at known places (PIL's bundled font, so no system fonts are needed)."""
    img = Image.new("RGB", (640, 180), "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=32)
    for text, xy in LINES:
        draw.text(xy, text, fill="black", font=font)
    return np.asarray(img)


def _norm(text: str) -> str:
    return "".join(text.lower().split())


@needs_tesseract
def test_tesseract_reads_rendered_text_exactly_with_boxes() -> None:
    lines = ocr_image(rendered())
    texts = [line.text for line in lines]
    for expected, (x, y) in LINES:
        assert expected in texts
        line = lines[texts.index(expected)]
        x0, y0, x1, y1 = line.box
        assert abs(x0 - x) <= 6 and y <= y1 and y0 <= y + 40 and x1 > x + 300
        assert 0.8 <= line.confidence <= 1.0


@needs_tesseract
def test_tesseract_reads_a_real_screenshot(shared_data: Path) -> None:
    lines = ocr_image(shared_data / "opencua" / "cot_example" / "images" / "5.png")
    texts = {line.text for line in lines}
    for expected in (
        "Brightness and colour",
        "Night light settings",
        "Windows HD Colour",
        "Display resolution",
    ):
        assert expected in texts
    h, w = 718, 1276
    assert all(0 <= line.box[0] < line.box[2] <= w and 0 <= line.box[1] < line.box[3] <= h for line in lines)


def test_parse_tesseract_tsv_groups_words_into_lines() -> None:
    header = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext"
    rows = [
        "4\t1\t1\t1\t1\t0\t10\t10\t100\t20\t-1\t",
        "5\t1\t1\t1\t1\t1\t10\t10\t40\t20\t96.0\tHello",
        "5\t1\t1\t1\t1\t2\t60\t12\t50\t18\t90.0\tworld",
        "5\t1\t2\t1\t1\t1\t10\t50\t30\t20\t20.0\t~~",
        "5\t1\t3\t1\t1\t1\t10\t90\t30\t20\t95.0\t ",
    ]
    lines = parse_tesseract_tsv("\n".join([header, *rows]), min_confidence=0.3)
    assert [(ln.text, ln.box, ln.confidence) for ln in lines] == [("Hello world", (10, 10, 110, 30), 0.93)]


def test_rapidocr_reads_rendered_text() -> None:
    pytest.importorskip("rapidocr_onnxruntime", reason="RapidOCR is optional: pip install 'dataclaw[ocr]'")
    lines = ocr_image(rendered(), backend="rapidocr")
    found = {_norm(line.text) for line in lines}
    for expected, _xy in LINES:
        assert _norm(expected) in found  # RapidOCR drops the spaces between words
    assert all(0 < line.confidence <= 1 for line in lines)


def test_backend_registry_refuses_unknown_and_duplicates() -> None:
    with pytest.raises(ConfigError, match=r"unknown OCR backend 'nope'.*tesseract"):
        get_backend("nope")

    class Other(OcrBackend):
        name = "tesseract"

        def read(self, image: np.ndarray) -> list:
            return []

    with pytest.raises(ConfigError, match="already registered"):
        register_backend(Other)


@needs_tesseract
def test_bad_images_are_clear_errors() -> None:
    with pytest.raises(OcrError, match="shape"):
        ocr_image(np.zeros((0, 5, 3), dtype=np.uint8))
    assert ocr_image(np.full((60, 60, 3), 255, dtype=np.uint8)) == []  # blank: nothing to read


@needs_tesseract
def test_extractor_on_a_screenshot_trajectory(shared_data: Path) -> None:
    """The OpenCUA CoT trajectory read by its stream reader: OCR anchors at step times."""
    from dataclaw.tailor.streams import StreamSource, open_source

    streams = [s for s in open_source(shared_data / "opencua" / "cot_example") if not hasattr(s, "reason")]
    assert len(streams) == 1
    stream = streams[0]
    ext = get_extractor("ocr", max_images=2)
    assert ext.applies_to(stream)
    with StreamSource(stream) as source:
        anchors = ext.extract(stream, source)
    steps = sorted({a.payload["frame"] for a in anchors})
    assert len(steps) == 2 and all(0 <= s < stream.frame_count for s in steps)
    assert {a.kind for a in anchors} == {"ocr_text"} and {a.source for a in anchors} == {"ocr"}
    assert all(0.3 <= a.confidence <= 1 and a.payload["backend"] == "tesseract" for a in anchors)
    assert all(a.t == float(a.payload["frame"]) for a in anchors)  # step clock: step i at i s


@needs_tesseract
def test_extractor_on_a_screen_recording_reads_frames_at_event_times(shared_data: Path) -> None:
    """A GUI recording is read at the times of its input events (the screens the user acted on)."""
    from dataclaw.tailor.streams import StreamSource, open_source

    (stream,) = [
        s for s in open_source(shared_data / "opencua" / "raw_recording") if not hasattr(s, "reason")
    ]
    ext = get_extractor("ocr", max_images=2)
    assert ext.applies_to(stream)
    with StreamSource(stream) as source:
        anchors = ext.extract(stream, source)
    event_times = {round(float(e["t"]), 3) for e in stream.events}
    times = sorted({a.t for a in anchors})
    assert len(times) == 2 and all(t in event_times for t in times)
    assert all(0 <= a.payload["frame"] < stream.frame_count for a in anchors)
    assert any("Settings" in a.payload["text"] or "Display" in a.payload["text"] for a in anchors)


@needs_tesseract
def test_batched_tesseract_keeps_pages_apart(shared_data: Path) -> None:
    """One tesseract process reads a batch; each image gets its own lines, in order, blanks empty."""
    backend = get_backend("tesseract")
    screenshot = load_image(shared_data / "opencua" / "cot_example" / "images" / "5.png")
    blank = np.full((80, 80, 3), 255, dtype=np.uint8)
    batch = backend.read_many([rendered(), blank, screenshot])
    assert len(batch) == 3 and batch[1] == []
    assert [ln.text for ln in batch[0]] == [ln.text for ln in backend.read(rendered())]
    assert {"Brightness and colour", "Night light settings"} <= {ln.text for ln in batch[2]}
    assert "Quarterly revenue report" not in {ln.text for ln in batch[2]}
    assert backend.read_many([]) == []
