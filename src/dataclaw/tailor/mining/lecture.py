"""Lecture segments (Education): which stretch of the talk explains which slide.

When the lecture comes with a slide/time alignment, its ``slide_change`` anchors give the visits
exactly. Otherwise a slide deck has no clock, so slides are aligned to the transcript: it is cut into chunks
of ``chunk_s`` seconds, every chunk is compared with every slide's text (TF-IDF cosine over content
words), and a monotone alignment (slides only move forward, skipping a slide costs ``skip_penalty``)
is found by dynamic programming in O(chunks × slides). Consecutive chunks on the same slide form one
``lecture_segment`` candidate, grounded on the slide anchor and the transcript anchors inside it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from dataclaw.core.errors import require
from dataclaw.media.errors import MediaError, MediaIssue
from dataclaw.tailor.anchors.base import Anchor
from dataclaw.tailor.mining.base import Miner, StreamView, register_miner
from dataclaw.tailor.records import Candidate, CandidateKind

LECTURE = "lecture"
STOPWORDS = frozenset(
    """the a an and or of to in on for is are was were be been it this that these those with as at by
    from we you i they he she so if then than but not no do does did can could will would should have has
    had there here what which who how why when where all any some about into over just also very more
    most such our your their its okay um uh like going get got one two""".split()
)


def words(text: str) -> list[str]:
    """Lower-case content words of ``text`` (3+ letters, no stop words)."""
    return [w for w in re.findall(r"[a-z][a-z0-9]{2,}", text.lower()) if w not in STOPWORDS]


def tfidf_similarity(rows: Sequence[str], cols: Sequence[str]) -> np.ndarray:
    """Cosine similarity of TF-IDF vectors, ``(len(rows), len(cols))``; IDF over both sides."""
    docs = [Counter(words(t)) for t in (*rows, *cols)]
    vocab = sorted({w for d in docs for w in d})
    if not vocab:
        return np.zeros((len(rows), len(cols)))
    index = {w: i for i, w in enumerate(vocab)}
    df = Counter(w for d in docs for w in d)
    idf = np.array([math.log((1 + len(docs)) / (1 + df[w])) + 1.0 for w in vocab])
    mat = np.zeros((len(docs), len(vocab)))
    for r, d in enumerate(docs):
        for w, c in d.items():
            mat[r, index[w]] = (1 + math.log(c)) * idf[index[w]]
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    mat = mat / np.where(norms == 0, 1, norms)
    return mat[: len(rows)] @ mat[len(rows) :].T


def monotone_align(sim: np.ndarray, skip_penalty: float = 0.05) -> list[int]:
    """Slide index per chunk, non-decreasing, maximising total similarity minus skipped-slide penalties.

    ``best[j, i] = sim[j, i] + max(best[j-1, i], max_{k<i} best[j-1, k] - skip_penalty * (i - k - 1))``,
    with the inner max kept as a running prefix maximum of ``best[j-1, k] + skip_penalty * k``.
    """
    m, n = sim.shape
    if m == 0 or n == 0:
        return []
    best = np.full((m, n), -np.inf)
    back = np.zeros((m, n), dtype=int)
    best[0] = sim[0] - skip_penalty * np.arange(n)
    for j in range(1, m):
        run_val, run_arg = -np.inf, 0
        for i in range(n):
            stay = best[j - 1, i]
            move = run_val - skip_penalty * (i - 1)
            if stay >= move:
                best[j, i], back[j, i] = sim[j, i] + stay, i
            else:
                best[j, i], back[j, i] = sim[j, i] + move, run_arg
            cand = best[j - 1, i] + skip_penalty * i
            if cand > run_val:
                run_val, run_arg = cand, i
    path = [int(np.argmax(best[m - 1]))]
    for j in range(m - 1, 0, -1):
        path.append(int(back[j, path[-1]]))
    return path[::-1]


def chunk_transcript(anchors: Sequence[Anchor], chunk_s: float) -> list[list[Anchor]]:
    """Transcript anchors grouped into consecutive chunks of about ``chunk_s`` seconds."""
    chunks: list[list[Anchor]] = []
    start: float | None = None
    for a in sorted(anchors, key=lambda a: a.t):
        if start is None or a.t - start >= chunk_s:
            chunks.append([])
            start = a.t
        chunks[-1].append(a)
    return chunks


def _text(a: Anchor) -> str:
    return str(a.payload.get("text") or a.payload.get("title") or "")


def slide_texts(pdf: str | Path) -> list[str]:
    """The text layer of every page of a slide PDF (pypdfium2); unreadable files are a MediaError."""
    pdfium = require("pypdfium2", "lecture segment mining", "media")
    try:
        doc = pdfium.PdfDocument(str(pdf))
    except (pdfium.PdfiumError, OSError) as exc:
        raise MediaError(MediaIssue.CORRUPT, f"{Path(pdf).name}: not a readable PDF ({exc})") from None
    try:
        return [" ".join(doc[i].get_textpage().get_text_range().split()) for i in range(len(doc))]
    finally:
        doc.close()


@dataclass(frozen=True)
class _Span:
    slide: int
    t0: float
    t1: float
    score: float | None
    anchor: Anchor | None


@register_miner
class LectureSegments(Miner):
    """One candidate per slide visit: the transcript spoken while that slide was up.

    With a slide/time alignment (``slide_change`` anchors) the visits are read from it (exact); without
    one, transcript chunks of ``chunk_s`` seconds are aligned to the slides' text layer monotonically
    (TF-IDF cosine, ``skip_penalty`` per skipped slide). Visits shorter than ``min_s`` are dropped.
    """

    name: ClassVar[str] = "lecture_segment"
    kind: ClassVar[CandidateKind] = CandidateKind.LECTURE_SEGMENT

    def __init__(self, chunk_s: float = 20.0, skip_penalty: float = 0.05, min_s: float = 5.0) -> None:
        self.chunk_s, self.skip_penalty, self.min_s = chunk_s, skip_penalty, min_s

    def applies_to(self, stream: StreamView) -> bool:
        return stream.modality == LECTURE

    def mine(self, stream: StreamView, anchors: Sequence[Anchor]) -> list[Candidate]:
        transcript = sorted((a for a in anchors if a.kind == "transcript" and _text(a)), key=lambda a: a.t)
        texts = slide_texts(stream.document) if stream.document else []
        changes = sorted((a for a in anchors if a.kind == "slide_change"), key=lambda a: a.t)
        if changes:
            end = stream.duration or max((a.t_end or a.t for a in transcript), default=changes[-1].t)
            spans = [
                _Span(int(c.payload["slide"]), c.t, nxt.t if nxt else end, None, c)
                for c, nxt in zip(changes, [*changes[1:], None], strict=True)
            ]
            how = "slide/time alignment"
        elif texts and transcript:
            spans = self._aligned(transcript, texts)
            how = f"TF-IDF alignment of {self.chunk_s:.0f} s transcript chunks to slide text"
        else:
            self.note(
                "no slide/time alignment and "
                + ("no slide text" if not texts else "no transcript")
                + " to align"
            )
            return []
        out: list[Candidate] = []
        longest = 0.0
        for span in spans:
            said = [a for a in transcript if span.t0 <= a.t < span.t1]
            longest = max(longest, span.t1 - span.t0)
            if span.t1 - span.t0 < self.min_s or not said:
                continue
            page = span.slide + 1
            why = (
                f"slide {page} on screen {span.t0:.1f}-{span.t1:.1f} s ({how}); "
                f"{len(said)} transcript segments"
            )
            if span.score is not None:
                why += f", mean similarity {span.score:.3f}"
            payload = {
                "slide": span.slide,
                "page": page,
                "slide_text": texts[span.slide][:1000] if span.slide < len(texts) else None,
                "transcript": " ".join(_text(a) for a in said)[:4000],
                "aligned_by": "alignment" if changes else "tfidf",
                "similarity": None if span.score is None else round(span.score, 4),
            }
            used = ([span.anchor] if span.anchor else []) + said
            out.append(
                self.candidate(
                    stream,
                    [span.slide, round(span.t0, 3), round(span.t1, 3)],
                    label=f"slide-{page}",
                    t_start=round(span.t0, 6),
                    t_end=round(span.t1, 6),
                    anchor_ids=[a.id for a in used],
                    why=why,
                    payload=payload,
                )
            )
        if not out:
            self.note(f"longest slide visit {longest:.1f} s < min_s {self.min_s} s, or no speech in any")
        return out

    def _aligned(self, transcript: list[Anchor], texts: list[str]) -> list[_Span]:
        chunks = chunk_transcript(transcript, self.chunk_s)
        sim = tfidf_similarity([" ".join(_text(a) for a in c) for c in chunks], texts)
        path = monotone_align(sim, self.skip_penalty)
        spans: list[_Span] = []
        j = 0
        while j < len(chunks):
            k = j
            while k + 1 < len(chunks) and path[k + 1] == path[j]:
                k += 1
            t0 = chunks[j][0].t
            t1 = chunks[k + 1][0].t if k + 1 < len(chunks) else max(a.t_end or a.t for a in chunks[k]) + 1e-6
            spans.append(_Span(path[j], t0, t1, float(np.mean(sim[j : k + 1, path[j]])), None))
            j = k + 1
        return spans
