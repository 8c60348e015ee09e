"""Lectures: a slide PDF with an optional transcript (.srt) and an optional slide/time alignment.

Files are found by stem next to the PDF: ``<stem>.srt`` (standard numbered SRT, or whisper-style
``[hh:mm:ss.mmm --> hh:mm:ss.mmm] word`` lines), ``<stem>_alignment.{xlsx,csv}`` (columns ``Time`` in
seconds and ``Slidenumber`` 1-based, -1 for "no slide"). Word-level transcripts are merged into
sentence segments. Events: ``transcript`` segments (``t``, ``t_end``, ``text``) and ``slide`` changes
(``t``, ``slide`` 0-based page). Slides are rendered on demand by :class:`StreamSource` (pypdfium2).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dataclaw.core.errors import Reject, require
from dataclaw.tailor.streams.base import (
    Camera,
    IngestIssue,
    Modality,
    Stream,
    StreamReader,
    register_reader,
    reject,
    stream_id,
)

_TIME = r"(\d+):(\d{2}):(\d{2})[.,](\d{1,3})"
_CUE = re.compile(rf"^\[?\s*{_TIME}\s*-->\s*{_TIME}\s*\]?\s*(.*)$")
_SENTENCE_END = (".", "?", "!")


class TranscriptError(ValueError):
    """A transcript file that is not SRT."""


def _seconds(h: str, m: str, s: str, ms: str) -> float:
    return int(h) * 3600 + int(m) * 60 + int(s) + int(ms.ljust(3, "0")) / 1000


def parse_srt(text: str) -> list[dict[str, Any]]:
    """Cues of an SRT (numbered blocks or one ``[a --> b] text`` per line) as ``{t, t_end, text}``."""
    cues: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip().lstrip("\ufeff")
        match = _CUE.match(line)
        if match:
            g = match.groups()
            start, end = _seconds(*g[0:4]), _seconds(*g[4:8])
            if end < start:
                raise TranscriptError(f"line {lineno}: cue ends before it starts")
            current = {"t": start, "t_end": end, "text": g[8].strip()}
            cues.append(current)
        elif line and not line.isdigit():
            if current is None:
                raise TranscriptError(f"line {lineno}: text before the first timestamp: {line[:40]!r}")
            current["text"] = f"{current['text']} {line}".strip()
        elif not line:
            current = None if current is None or current["text"] else current
    if not cues:
        raise TranscriptError("no 'hh:mm:ss,mmm --> hh:mm:ss,mmm' cues found")
    return cues


def merge_cues(
    cues: list[dict[str, Any]], max_gap: float = 1.0, max_len: float = 15.0
) -> list[dict[str, Any]]:
    """Join word-level cues into sentence segments (split at . ? !, pauses > max_gap, or max_len s)."""
    segments: list[dict[str, Any]] = []
    for cue in cues:
        last = segments[-1] if segments else None
        if (
            last is None
            or last["text"].endswith(_SENTENCE_END)
            or cue["t"] - last["t_end"] > max_gap
            or cue["t_end"] - last["t"] > max_len
        ):
            segments.append(dict(cue))
        else:
            last["text"] = f"{last['text']} {cue['text']}".strip()
            last["t_end"] = cue["t_end"]
    return [s for s in segments if s["text"]]


def read_alignment(path: Path) -> list[tuple[float, int]]:
    """``(seconds, 0-based slide)`` change points from an alignment table; rows with slide < 1 are skipped."""
    if path.suffix.lower() == ".xlsx":
        openpyxl = require("openpyxl", "lecture alignment (.xlsx)", "media")
        sheet = openpyxl.load_workbook(path, read_only=True, data_only=True).worksheets[0]
        table = list(sheet.iter_rows(values_only=True))
    else:
        with path.open(newline="") as fh:
            table = [tuple(r) for r in csv.reader(fh)]
    header = [str(h).strip().lower() for h in table[0]]
    if "time" not in header or "slidenumber" not in header:
        raise ValueError(f"{path.name}: needs 'Time' and 'Slidenumber' columns, has {table[0]}")
    ti, si = header.index("time"), header.index("slidenumber")
    rows = [(r[ti], r[si]) for r in table[1:] if r and r[ti] is not None]
    changes: list[tuple[float, int]] = []
    for t, slide in rows:
        number = int(float(slide))
        if number >= 1 and (not changes or changes[-1][1] != number - 1):
            changes.append((float(t), number - 1))
    return changes


@register_reader
class LectureReader(StreamReader):
    """A slide deck PDF (file, or a folder holding one) with its transcript and alignment if present."""

    name = "lecture"
    modality = Modality.LECTURE
    description = "a slide PDF (+ same-stem .srt transcript and _alignment.xlsx/.csv)"

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return path.suffix.lower() == ".pdf"
        return path.is_dir() and any(p.suffix.lower() == ".pdf" for p in path.iterdir())

    def read(self, path: Path) -> Iterator[Stream | Reject]:
        pdfs = [path] if path.is_file() else sorted(p for p in path.iterdir() if p.suffix.lower() == ".pdf")
        for pdf in pdfs:
            yield self._lecture(pdf)

    def _lecture(self, pdf: Path) -> Stream | Reject:
        pdfium = require("pypdfium2", "lecture reader", "media")
        uid = stream_id(pdf.stem, [self.name, pdf.name])
        try:
            doc = pdfium.PdfDocument(str(pdf))
            pages = len(doc)
            width, height = (int(v) for v in doc[0].get_size()) if pages else (0, 0)
            doc.close()
        except pdfium.PdfiumError as exc:
            return reject(uid, IngestIssue.CORRUPT_DOCUMENT, f"{pdf}: not a readable PDF ({exc})")
        if pages == 0:
            return reject(uid, IngestIssue.EMPTY_SOURCE, f"{pdf}: the PDF has no pages")
        events: list[dict[str, Any]] = []
        meta: dict[str, Any] = {"page_count": pages, "title": pdf.stem}
        srt = pdf.with_suffix(".srt")
        if srt.is_file():
            try:
                cues = parse_srt(srt.read_text(encoding="utf-8", errors="replace"))
            except TranscriptError as exc:
                return reject(uid, IngestIssue.MALFORMED_EVENTS, f"{srt}: not an SRT transcript: {exc}")
            segments = merge_cues(cues)
            events += [{"type": "transcript", **s} for s in segments]
            meta.update(transcript=str(srt), transcript_cues=len(cues))
        for suffix in (".xlsx", ".csv"):
            table = pdf.with_name(f"{pdf.stem}_alignment{suffix}")
            if table.is_file():
                try:
                    changes = [(t, s) for t, s in read_alignment(table) if s < pages]
                except (ValueError, IndexError, TypeError, OSError) as exc:
                    return reject(uid, IngestIssue.MALFORMED_EVENTS, f"{table}: bad slide alignment ({exc})")
                events += [{"type": "slide", "t": t, "slide": s} for t, s in changes]
                meta.update(alignment=str(table), slide_times=[[t, s] for t, s in changes])
                break
        duration = max([e.get("t_end", e["t"]) for e in events], default=0.0)
        camera = Camera(
            name="slides",
            kind="pdf",
            path=str(pdf),
            frame_end=pages,
            time_end=duration,
            width=width,
            height=height,
        )
        return Stream(
            id=uid,
            reader=self.name,
            modality=Modality.LECTURE,
            source=str(pdf),
            frame_count=pages,
            duration=round(duration, 6),
            cameras={"slides": camera},
            events=events,
            metadata=meta,
        )
