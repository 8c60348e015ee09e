"""Lecture segments (Education): which stretch of the talk explains which slide.

A slide deck has no clock, so slides are aligned to the transcript: the transcript is cut into chunks
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
from typing import ClassVar

import numpy as np

from dataclaw.tailor.anchors.base import Anchor
from dataclaw.tailor.mine import Candidate, CandidateKind, Miner, StreamView, register_miner

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


@register_miner
class LectureSegments(Miner):
    """Transcript spans aligned to slides (monotone TF-IDF alignment); one candidate per slide visit."""

    name: ClassVar[str] = "lecture_segment"
    kind: ClassVar[CandidateKind] = CandidateKind.LECTURE_SEGMENT

    def __init__(self, chunk_s: float = 20.0, skip_penalty: float = 0.05, min_s: float = 5.0) -> None:
        self.chunk_s, self.skip_penalty, self.min_s = chunk_s, skip_penalty, min_s

    def applies_to(self, stream: StreamView) -> bool:
        return stream.modality == LECTURE

    def mine(self, stream: StreamView, anchors: Sequence[Anchor]) -> list[Candidate]:
        slides = sorted(
            (a for a in anchors if a.kind == "slide"), key=lambda a: (a.payload.get("page", 0), a.t)
        )
        transcript = [a for a in anchors if a.kind.startswith("transcript") and _text(a)]
        chunks = chunk_transcript(transcript, self.chunk_s)
        if not slides or not chunks:
            return []
        sim = tfidf_similarity([" ".join(_text(a) for a in c) for c in chunks], [_text(s) for s in slides])
        path = monotone_align(sim, self.skip_penalty)
        out: list[Candidate] = []
        j = 0
        while j < len(chunks):
            k = j
            while k + 1 < len(chunks) and path[k + 1] == path[j]:
                k += 1
            slide = slides[path[j]]
            span = [a for c in chunks[j : k + 1] for a in c]
            t0 = span[0].t
            t1 = max(a.t_end if a.t_end is not None else a.t for a in span)
            score = float(np.mean([sim[x, path[j]] for x in range(j, k + 1)]))
            if t1 - t0 >= self.min_s:
                text = " ".join(_text(a) for a in span)
                page = slide.payload.get("page", path[j])
                out.append(
                    self.candidate(
                        stream,
                        [page, round(t0, 3), round(t1, 3)],
                        label=f"slide-{page}",
                        t_start=t0,
                        t_end=t1,
                        anchor_ids=[slide.id, *(a.id for a in span)],
                        why=(
                            f"transcript {t0:.1f}-{t1:.1f} s aligned to slide {page} "
                            f"(mean TF-IDF similarity {score:.3f} over {k - j + 1} chunks"
                            f" of {self.chunk_s:.0f} s)"
                        ),
                        payload={
                            "slide": page,
                            "slide_text": _text(slide)[:500],
                            "transcript": text[:2000],
                            "similarity": round(score, 4),
                        },
                    )
                )
            j = k + 1
        return out
