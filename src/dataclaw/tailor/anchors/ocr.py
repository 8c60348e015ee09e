"""OCR anchors: on-screen text with boxes (paper §3.2: "an OCR module for on-screen text").

Backends register by name. ``tesseract`` (default) runs the Debian ``tesseract`` binary once per batch
of screens (one stream's) with ``OMP_THREAD_LIMIT=1`` (its OpenMP threads only fight the process pool)
and reads its TSV output; it reads English screen text exactly. ``rapidocr``
(``pip install 'dataclaw[ocr]'``) runs the ONNX models that ship inside the ``rapidocr-onnxruntime``
wheel; it finds text well but drops the spaces between words. Each text line becomes one anchor whose
confidence is the backend's own (0–1).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from dataclaw.core.errors import DataclawError, require
from dataclaw.core.procs import child_dies_with_parent
from dataclaw.core.registry import Registry
from dataclaw.tailor.anchors._video import ocr_targets, ocr_targets_apply
from dataclaw.tailor.anchors.base import Anchor, AnchorExtractor, make_anchor, register_extractor

if TYPE_CHECKING:
    from dataclaw.tailor.streams import Stream, StreamSource


class OcrError(DataclawError):
    """An image could not be read by the OCR backend; the message names the image and the problem."""


@dataclass(frozen=True)
class OcrLine:
    """One line of text; ``box`` is ``(x0, y0, x1, y1)`` in pixels of the image read."""

    text: str
    box: tuple[int, int, int, int]
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "box": list(self.box), "confidence": self.confidence}


class OcrBackend(ABC):
    """Reads text lines from an RGB ``(H, W, 3)`` uint8 image."""

    name: ClassVar[str]

    @classmethod
    def check(cls) -> None:
        """Raise a :class:`DataclawError` with an install hint when this backend cannot run here."""
        return None  # pure-Python backends have nothing to check

    @abstractmethod
    def read(self, image: np.ndarray) -> list[OcrLine]:
        """Text lines of ``image`` in reading order."""

    def read_many(self, images: Sequence[np.ndarray]) -> list[list[OcrLine]]:
        """Text lines of each image; backends override this when a batch is cheaper than one by one."""
        return [self.read(image) for image in images]


BACKENDS: Registry[type[OcrBackend]] = Registry("OCR backend")
register_backend = BACKENDS.add
"""Class decorator: register an OCR backend under ``cls.name``; duplicates are refused."""


def backend_class(name: str) -> type[OcrBackend]:
    """The backend class registered as ``name``; unknown names list the known ones."""
    return BACKENDS.get(name)


def get_backend(name: str, **config: Any) -> OcrBackend:
    """A new OCR backend ``name`` built with ``config``."""
    return backend_class(name)(**config)


def _as_rgb(image: np.ndarray) -> np.ndarray:
    arr = np.asarray(image)
    if arr.ndim == 2:
        arr = np.repeat(arr[..., None], 3, axis=2)
    if arr.ndim != 3 or arr.shape[2] < 3 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise OcrError(f"image has shape {arr.shape}; expected (H, W, 3)")
    if arr.dtype != np.uint8:
        arr = np.clip(arr, 0, 255).astype(np.uint8)
    return np.ascontiguousarray(arr[..., :3])


@register_backend
class TesseractBackend(OcrBackend):
    """The ``tesseract`` CLI (Tesseract 5, LSTM) on PPM pages; ``psm`` 11 (sparse text) because screens
    are scattered labels, not the columns of a page that the default layout analysis expects."""

    name: ClassVar[str] = "tesseract"

    @classmethod
    def check(cls) -> None:
        if shutil.which("tesseract") is None:
            raise DataclawError(
                "OCR backend 'tesseract' needs the tesseract binary: run scripts/install-system-deps.sh "
                "(apt-get install tesseract-ocr tesseract-ocr-eng) or choose --ocr-backend rapidocr"
            )

    def __init__(
        self, lang: str = "eng", psm: int = 11, min_confidence: float = 0.3, timeout_s: float = 60.0
    ):
        self.check()
        self.binary = shutil.which("tesseract") or "tesseract"
        self.lang, self.psm, self.min_confidence, self.timeout_s = lang, psm, min_confidence, timeout_s

    def read(self, image: np.ndarray) -> list[OcrLine]:
        return self.read_many([image])[0]

    def read_many(self, images: Sequence[np.ndarray]) -> list[list[OcrLine]]:
        """One tesseract process for the whole batch (a list file of PPM pages): the model loads once,
        which saves about a quarter of the CPU time on a trajectory of screenshots. The pages go to a
        temporary folder, which inside a run is under the run's scratch folder (``RUN/_tmp``, removed
        when the run ends or is killed); tesseract dies with the process that started it."""
        if not images:
            return []
        rgbs = [_as_rgb(image) for image in images]
        with tempfile.TemporaryDirectory(prefix="dataclaw-ocr-") as tmp:
            pages = []
            for i, rgb in enumerate(rgbs):
                h, w, _ = rgb.shape
                page = Path(tmp) / f"{i:05d}.ppm"
                page.write_bytes(f"P6\n{w} {h}\n255\n".encode() + rgb.tobytes())
                pages.append(str(page))
            listing = Path(tmp) / "pages.txt"
            listing.write_text("\n".join(pages) + "\n")
            cmd = [self.binary, str(listing), "stdout", "--psm", str(self.psm), "-l", self.lang, "tsv"]
            env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
            timeout = self.timeout_s * len(rgbs)
            try:
                proc = subprocess.run(
                    cmd, capture_output=True, env=env, timeout=timeout, check=False,
                    preexec_fn=child_dies_with_parent,  # a killed run leaves no tesseract behind
                )  # fmt: skip
            except subprocess.TimeoutExpired:
                raise OcrError(f"tesseract took longer than {timeout:.0f} s on {len(rgbs)} images") from None
        if proc.returncode != 0:
            err = proc.stderr.decode(errors="replace").strip().splitlines()
            raise OcrError(f"tesseract failed: {err[-1] if err else f'exit {proc.returncode}'}")
        pages_out = parse_tesseract_pages(proc.stdout.decode("utf-8", errors="replace"), self.min_confidence)
        return [pages_out.get(i + 1, []) for i in range(len(rgbs))]


def parse_tesseract_pages(tsv: str, min_confidence: float = 0.0) -> dict[int, list[OcrLine]]:
    """Lines per page number (1-based) of a multi-page Tesseract TSV."""
    by_page: dict[int, list[str]] = {}
    for row in tsv.splitlines()[1:]:
        cols = row.split("\t", 2)
        if len(cols) >= 2 and cols[1].isdigit():
            by_page.setdefault(int(cols[1]), []).append(row)
    return {page: _lines(rows, min_confidence) for page, rows in by_page.items()}


def parse_tesseract_tsv(tsv: str, min_confidence: float = 0.0) -> list[OcrLine]:
    """Group Tesseract's word rows (level 5) into lines by (block, paragraph, line).

    A line's box is the union of its words' boxes and its confidence the mean word confidence;
    words with no text, and lines below ``min_confidence``, are dropped.
    """
    return _lines(tsv.splitlines()[1:], min_confidence)


def _lines(rows: Sequence[str], min_confidence: float) -> list[OcrLine]:
    """The text lines of one page's TSV rows (header removed)."""
    lines: dict[tuple[int, int, int], list[tuple[str, int, int, int, int, float]]] = {}
    for row in rows:
        cols = row.split("\t")
        if len(cols) < 12 or cols[0] != "5":
            continue
        text = cols[11].strip()
        conf = float(cols[10])
        if not text or conf < 0:
            continue
        left, top, width, height = (int(c) for c in cols[6:10])
        key = (int(cols[2]), int(cols[3]), int(cols[4]))
        lines.setdefault(key, []).append((text, left, top, left + width, top + height, conf / 100.0))
    out: list[OcrLine] = []
    for words in lines.values():
        conf = sum(w[5] for w in words) / len(words)
        if conf < min_confidence:
            continue
        box = (
            min(w[1] for w in words),
            min(w[2] for w in words),
            max(w[3] for w in words),
            max(w[4] for w in words),
        )
        out.append(OcrLine(" ".join(w[0] for w in words), box, round(conf, 4)))
    return out


@register_backend
class RapidOcrBackend(OcrBackend):
    """RapidOCR (PP-OCR models in ONNX, shipped in the ``rapidocr-onnxruntime`` wheel). Needs ``[ocr]``."""

    name: ClassVar[str] = "rapidocr"

    @classmethod
    def check(cls) -> None:
        require("rapidocr_onnxruntime", "OCR backend 'rapidocr'", "ocr")

    def __init__(self, min_confidence: float = 0.3) -> None:
        module = require("rapidocr_onnxruntime", "OCR backend 'rapidocr'", "ocr")
        self.engine = module.RapidOCR()
        self.min_confidence = min_confidence

    def read(self, image: np.ndarray) -> list[OcrLine]:
        rgb = _as_rgb(image)
        # RapidOCR follows OpenCV and expects BGR channel order.
        result, _elapsed = self.engine(np.ascontiguousarray(rgb[..., ::-1]))
        out: list[OcrLine] = []
        for points, text, score in result or []:
            conf = float(score)
            if not str(text).strip() or conf < self.min_confidence:
                continue
            xs = [p[0] for p in points]
            ys = [p[1] for p in points]
            box = (int(min(xs)), int(min(ys)), round(max(xs)), round(max(ys)))
            out.append(OcrLine(str(text).strip(), box, round(conf, 4)))
        return out


def ocr_image(image: np.ndarray | str | Path, backend: str | OcrBackend = "tesseract") -> list[OcrLine]:
    """Text lines of ``image`` (an array or an image file) read by ``backend``."""
    engine = get_backend(backend) if isinstance(backend, str) else backend
    if isinstance(image, str | Path):
        from dataclaw.media.image import load_image

        image = load_image(image)
    return engine.read(image)


def ocr_anchors(
    stream_id: str, t: float, lines: Sequence[OcrLine], backend: str, where: dict[str, Any]
) -> list[Anchor]:
    """One ``ocr_text`` anchor per line read at time ``t``; ``where`` says which image or frame."""
    return [
        make_anchor(
            stream_id,
            t,
            "ocr_text",
            OcrText.name,
            {"text": line.text, "box": list(line.box), "backend": backend, **where},
            confidence=line.confidence,
        )
        for line in lines
    ]


@register_extractor
class OcrText(AnchorExtractor):
    """On-screen text of a stream's screenshots, or of frames sampled from its screen recording.

    Screenshots (GUI step images, image folders) are read as they are. A recording is read at its
    event times when it has events (the screen the user acted on), else every ``every_s`` seconds;
    at most ``max_images`` images per stream, spread evenly, bound the cost.
    """

    name: ClassVar[str] = "ocr"

    def __init__(
        self, backend: str = "tesseract", max_images: int = 16, every_s: float = 10.0, **config: Any
    ):
        backend_class(backend).check()  # fail when the run is configured, not on the first stream
        self.backend_name = backend
        self.backend_config = config
        self.max_images = max_images
        self.every_s = every_s
        self._engine: OcrBackend | None = None

    @property
    def engine(self) -> OcrBackend:
        if self._engine is None:
            self._engine = get_backend(self.backend_name, **self.backend_config)
        return self._engine

    def applies_to(self, stream: Stream) -> bool:
        return ocr_targets_apply(stream)

    def extract(self, stream: Stream, source: StreamSource) -> list[Anchor]:
        targets = list(ocr_targets(stream, source, self.max_images, self.every_s))
        lines = self.engine.read_many([image for _, image, _ in targets])
        anchors: list[Anchor] = []
        for (t, _image, where), found in zip(targets, lines, strict=True):
            anchors.extend(ocr_anchors(stream.id, t, found, self.backend_name, where))
        return anchors
