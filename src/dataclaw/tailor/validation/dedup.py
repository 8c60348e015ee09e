"""Duplicates across a run (issue 27 "selection, not luck"): exact, near and semantic, each a reject reason.

A weak model answers many requests with the same sentence ("The video is a simulation of a game of
chess" for every clip); a training set of those teaches one sentence. After validation, every sample of
the run is compared with the samples kept before it, **within its intent**, on its text (every string of
its output, in key order):

- ``duplicate_exact``: the same text once case, punctuation and spacing are ignored;
- ``duplicate_near``: word 3-gram Jaccard similarity >= ``near`` (0.7, data-juicer's MinHash
  deduplicator default), found with MinHash LSH (128 permutations, 32 bands of 4 rows: a pair at 0.7 is
  a candidate with probability 0.9998) and confirmed on the exact shingle sets;
- ``duplicate_semantic``: cosine similarity of all-MiniLM-L6-v2 embeddings (the bundled model,
  :class:`~dataclaw.models.embed.Embedder`, offline) >= ``semantic``: 0.9, where paraphrases of one
  answer measured 0.89–0.94 and the same sentence about another object 0.81. Where the embedder cannot
  be loaded, this check is off and the run's summary says why; exact and near dedup still run.

Texts under ``min_words`` words (8) are never duplicates: a short answer ("pick up the yellow bottle")
may rightly repeat across windows of one episode. Samples are taken in id order and earlier decisions are
final: a resumed run compares its new samples with those kept before, never drops a kept one.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from dataclaw.core.errors import ConfigError, Reject
from dataclaw.core.store import RunStore

DEDUP = "dedup"
"""The stage name of dedup rejects (``dedup:duplicate_near``)."""


class DedupIssue(StrEnum):
    """Why a valid sample was left out: it repeats one kept before it."""

    DUPLICATE_EXACT = "duplicate_exact"
    DUPLICATE_NEAR = "duplicate_near"
    DUPLICATE_SEMANTIC = "duplicate_semantic"


@dataclass(frozen=True)
class DedupConfig:
    """Thresholds of the three checks (see the module doc); ``semantic=None`` turns the embedder off."""

    near: float = 0.7
    semantic: float | None = 0.9
    min_words: int = 8
    shingle: int = 3
    permutations: int = 128
    bands: int = 32

    def __post_init__(self) -> None:
        if not 0 < self.near <= 1 or (self.semantic is not None and not 0 < self.semantic <= 1):
            raise ConfigError("dedup thresholds must lie in (0, 1]")
        if self.permutations % self.bands:
            raise ConfigError("dedup: permutations must be a multiple of bands")


def sample_text(output: Any) -> str:
    """Every string of an output, in key order, one per line."""
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        return "\n".join(t for v in output.values() if (t := sample_text(v)))
    if isinstance(output, list):
        return "\n".join(t for v in output if (t := sample_text(v)))
    return ""


_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


_PRIME = np.uint64((1 << 61) - 1)
_MASK = np.uint64(0xFFFFFFFF)


class MinHasher:
    """MinHash signatures of shingle sets (32-bit shingle hashes, ``(a*h + b) mod (2^61 - 1)``), with
    fixed permutations so every run and process agrees."""

    def __init__(self, permutations: int) -> None:
        rng = np.random.default_rng(20240527)
        self.a = rng.integers(1, 1 << 32, permutations, dtype=np.uint64)
        self.b = rng.integers(0, 1 << 32, permutations, dtype=np.uint64)

    def signature(self, shingles: set[str]) -> np.ndarray:
        hashes = np.array(
            [int.from_bytes(hashlib.blake2b(s.encode(), digest_size=4).digest(), "little") for s in shingles],
            dtype=np.uint64,
        )
        if not hashes.size:
            return np.full(self.a.shape, np.iinfo(np.uint64).max, dtype=np.uint64)
        perm = (np.outer(hashes, self.a) + self.b) % _PRIME & _MASK
        return perm.min(axis=0)


@dataclass(frozen=True)
class Duplicate:
    """A sample's verdict: which kept sample it repeats, how, and how similar they are."""

    reason: DedupIssue
    of: str
    similarity: float


@dataclass
class _Kept:
    id: str
    shingles: set[str]
    vector: np.ndarray | None


class DedupIndex:
    """The samples kept so far, per intent: exact keys, LSH buckets and embeddings."""

    def __init__(self, config: DedupConfig | None = None, embedder: Any = None) -> None:
        self.config = config or DedupConfig()
        self.hasher = MinHasher(self.config.permutations)
        self.exact: dict[tuple[str, str], str] = {}
        self.buckets: dict[tuple[str, int, bytes], list[int]] = defaultdict(list)
        self.kept: list[_Kept] = []
        self.by_group: dict[str, list[int]] = defaultdict(list)
        self.embedder = embedder
        self.semantic_off: str | None = None if self.config.semantic is not None else "turned off"
        self._vectors: dict[str, np.ndarray] = {}

    def _shingles(self, text: str) -> set[str]:
        w, n = words(text), self.config.shingle
        return {" ".join(w[i : i + n]) for i in range(max(len(w) - n + 1, 1))} if w else set()

    def _bands(self, shingles: set[str]) -> list[bytes]:
        sig = self.hasher.signature(shingles)
        rows = self.config.permutations // self.config.bands
        return [sig[i * rows : (i + 1) * rows].tobytes() for i in range(self.config.bands)]

    def embed(self, texts: Sequence[str]) -> None:
        """Embed ``texts`` in one batch ahead of :meth:`check` (semantic dedup off if the embedder fails)."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._vectors and self._long(t)]
        if not todo or self.semantic_off:
            return
        try:
            if self.embedder is None:
                from dataclaw.models.embed import Embedder

                self.embedder = Embedder()
            vecs = self.embedder.embed(todo)
        except (ConfigError, ImportError, OSError) as exc:  # no MiniLM here: exact and near still run
            self.semantic_off = str(exc).splitlines()[0][:200]
            return
        self._vectors.update(zip(todo, vecs, strict=True))

    def _long(self, text: str) -> bool:
        return len(words(text)) >= self.config.min_words

    def check(self, group: str, text: str) -> Duplicate | None:
        """The kept sample of ``group`` that ``text`` repeats, or None (short texts: None)."""
        if not self._long(text):
            return None
        norm = " ".join(words(text))
        if (group, norm) in self.exact:
            return Duplicate(DedupIssue.DUPLICATE_EXACT, self.exact[(group, norm)], 1.0)
        shingles = self._shingles(text)
        seen: set[int] = set()
        best: tuple[float, int] | None = None
        for band, key in enumerate(self._bands(shingles)):
            for k in self.buckets.get((group, band, key), []):
                if k in seen:
                    continue
                seen.add(k)
                other = self.kept[k].shingles
                jac = len(shingles & other) / len(shingles | other) if shingles | other else 0.0
                if jac >= self.config.near and (best is None or jac > best[0]):
                    best = (jac, k)
        if best is not None:
            return Duplicate(DedupIssue.DUPLICATE_NEAR, self.kept[best[1]].id, round(best[0], 4))
        vec = self._vectors.get(text)
        members = [self.kept[k] for k in self.by_group.get(group, []) if self.kept[k].vector is not None]
        if vec is not None and members and self.config.semantic is not None:
            sims = np.stack([m.vector for m in members]) @ vec  # type: ignore[misc]
            k = int(np.argmax(sims))
            if float(sims[k]) >= self.config.semantic:
                return Duplicate(DedupIssue.DUPLICATE_SEMANTIC, members[k].id, round(float(sims[k]), 4))
        return None

    def add(self, sample_id: str, group: str, text: str) -> None:
        """Keep a sample: later ones are compared with it."""
        if not self._long(text):
            return
        shingles = self._shingles(text)
        k = len(self.kept)
        self.kept.append(_Kept(sample_id, shingles, self._vectors.get(text)))
        self.by_group[group].append(k)
        self.exact.setdefault((group, " ".join(words(text))), sample_id)
        for band, key in enumerate(self._bands(shingles)):
            self.buckets[(group, band, key)].append(k)


def find_duplicates(
    samples: Sequence[dict[str, Any]], config: DedupConfig | None = None, embedder: Any = None
) -> dict[str, Duplicate]:
    """Sample id → its duplicate verdict, for ``samples`` taken in id order (no store involved)."""
    index = DedupIndex(config, embedder)
    ordered = sorted(samples, key=lambda s: s["id"])
    index.embed([sample_text(s.get("output")) for s in ordered])
    out: dict[str, Duplicate] = {}
    for s in ordered:
        text = sample_text(s.get("output"))
        dup = index.check(s["intent"], text)
        if dup is None:
            index.add(s["id"], s["intent"], text)
        else:
            out[s["id"]] = dup
    return out


@dataclass
class DedupStats:
    """What one dedup pass did: samples seen, kept, rejected by reason, and whether semantic dedup ran."""

    samples: int = 0
    kept: int = 0
    reasons: dict[str, int] | None = None
    semantic: str = "on"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def record_key(sample: dict[str, Any]) -> str:
    """The id a dedup verdict is recorded under: the sample's response (as validation rejects are), so
    every response of a run is accounted for by a sample or a reject; the sample id when it has none."""
    return (sample.get("provenance") or {}).get("response_id") or sample["id"]


def dedup_samples(
    store: RunStore,
    samples: Sequence[dict[str, Any]],
    config: DedupConfig | None = None,
    producer: Any = None,
    embedder: Any = None,
) -> tuple[list[dict[str, Any]], DedupStats]:
    """The samples of ``samples`` that repeat no sample kept before them (in id order), and the stats.
    Each duplicate is a reject of stage ``dedup`` (under its response's id, :func:`record_key`) naming the
    sample it repeats; verdicts are recorded in
    the run's progress markers, so a resumed run keeps its earlier decisions (``producer``: what made the
    samples; a new one starts over)."""
    config = config or DedupConfig()
    store.set_producer(DEDUP, {"samples": producer, "config": asdict(config)})
    done = store.done(DEDUP)
    verdicts = {m["id"]: m for m in done.current()}
    ordered = sorted(samples, key=lambda s: s["id"])
    index = DedupIndex(config, embedder)
    texts = {s["id"]: sample_text(s.get("output")) for s in ordered}
    index.embed([texts[s["id"]] for s in ordered])
    for s in ordered:  # earlier decisions are final: what was kept is the index new samples meet
        if "outputs" in verdicts.get(record_key(s), {}):
            index.add(s["id"], s["intent"], texts[s["id"]])
    stats = DedupStats(samples=len(ordered), reasons={})
    kept = []
    for s in ordered:
        key = record_key(s)
        verdict = verdicts.get(key)
        if verdict is None:
            dup = index.check(s["intent"], texts[s["id"]])
            if dup is None:
                index.add(s["id"], s["intent"], texts[s["id"]])
                verdict = {"id": key, "outputs": 1}
            else:
                how = {"duplicate_exact": "the same text as", "duplicate_near": "nearly the same text as",
                       "duplicate_semantic": "the same meaning as"}[dup.reason]  # fmt: skip
                store.reject(
                    Reject(
                        id=key, stage=DEDUP, reason=str(dup.reason),
                        message=f"{how} {dup.of} (similarity {dup.similarity:.2f}, intent {s['intent']})",
                        detail={"sample_id": s["id"], "duplicate_of": dup.of, "similarity": dup.similarity},
                    )
                )  # fmt: skip
                verdict = {"id": key, "reject": str(dup.reason)}
            done.append(verdict)
        if "outputs" in verdict:
            kept.append(s)
        else:
            reasons = stats.reasons if stats.reasons is not None else {}
            reasons[verdict["reject"]] = reasons.get(verdict["reject"], 0) + 1
    stats.kept = len(kept)
    stats.semantic = "on" if index.semantic_off is None else f"off: {index.semantic_off}"
    return kept, stats
