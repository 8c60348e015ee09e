"""DataClaw0-val scoring (paper §3.5, A.4.4): score Tailor predictions against reference samples.

    report = evaluate("runs/mine", "val/references.jsonl")
    report["table"]["Semantic"]["GUI"], report["samples"][0]["total"]
    run_bench(Path("runs/mine"), Path("val/references.jsonl")).path  # written: runs/mine/bench.json

See docs/scoring.md for every definition and default.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataclaw.core.errors import Reject
from dataclaw.core.progress import ProgressFactory, progress_for
from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.scoring.bench.config import MetricConfig, RoleBook, load_metric_config
from dataclaw.tailor.scoring.bench.data import BenchIssue, load_predictions, load_references, pair
from dataclaw.tailor.scoring.bench.embeddings import CachedEmbedder, default_cache_path
from dataclaw.tailor.scoring.bench.metric import SampleScore, Scorer, table

__all__ = [
    "BenchIssue",
    "BenchRun",
    "CachedEmbedder",
    "MetricConfig",
    "RoleBook",
    "SampleScore",
    "Scorer",
    "bench_path",
    "default_cache_path",
    "evaluate",
    "load_metric_config",
    "run_bench",
    "table",
]


def evaluate(
    pred: str | Path,
    ref: str | Path,
    *,
    config: MetricConfig | None = None,
    catalog: IntentCatalog | None = None,
    embedder: CachedEmbedder | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Score ``pred`` (run directory or JSONL) against ``ref`` (JSONL or run directory): Table 1, the
    per-sample breakdown, the rejects and the counts."""
    config = config or MetricConfig()
    catalog = catalog or IntentCatalog.builtin()
    rejects: list[Reject] = []
    refs = load_references(ref, catalog, rejects)
    preds = load_predictions(pred, rejects)
    pairs = pair(preds, refs, rejects)
    embedder = embedder or CachedEmbedder()
    scores = Scorer(catalog, config, embedder).score(pairs, progress)
    unanswered = sum(1 for _, p in pairs if p is None)
    return {
        "pred": str(pred),
        "ref": str(ref),
        "config": config.model_dump(),
        "table": table(scores),
        "counts": {
            "references": len(refs),
            "predictions": len(preds),
            "scored": len(scores),
            "unanswered": unanswered,
            "gate_passed": sum(1 for s in scores if s.gate == 1.0),
            "rejects": dict(Counter(f"{r.stage}:{r.reason}" for r in rejects)),
        },
        "samples": [s.model_dump() for s in scores],
        "rejects": [r.model_dump() for r in rejects],
        "embeddings": embedder.stats,
    }


def bench_path(pred: Path, out: Path | None = None) -> Path:
    """Where a score report goes: ``out``, else ``RUN/bench.json`` for a run directory, else
    ``PRED.bench.json`` beside a predictions file."""
    return out or (pred / "bench.json" if pred.is_dir() else pred.with_name(pred.name + ".bench.json"))


@dataclass
class BenchRun:
    """A score report (:func:`evaluate`) and the file it was written to."""

    report: dict[str, Any]
    path: Path

    def reject_examples(self) -> list[tuple[str, int, str]]:
        """``(stage:reason, count, an example message)`` per reject reason, sorted by reason."""
        return [
            (
                key,
                count,
                next(r["message"] for r in self.report["rejects"] if f"{r['stage']}:{r['reason']}" == key),
            )
            for key, count in sorted(self.report["counts"]["rejects"].items())
        ]


def run_bench(
    pred: Path,
    ref: Path,
    *,
    out: Path | None = None,
    config: Path | None = None,
    intent_files: Sequence[Path] = (),
    embed_cache: Path | None = None,
    cache_embeddings: bool = True,
    progress: ProgressFactory | None = None,
) -> BenchRun:
    """Score ``pred`` against ``ref`` (metric weights from the ``config`` file, the built-in intents plus
    ``intent_files``) and write the report as JSON to :func:`bench_path`. Embeddings are cached in
    ``embed_cache`` (default: :func:`default_cache_path`), or kept in memory only without
    ``cache_embeddings``; ``progress`` shows the embedding bar."""
    cfg = load_metric_config(config)
    catalog = IntentCatalog.builtin()
    for path in intent_files:
        catalog.add_file(path)
    embedder = CachedEmbedder(cache=(embed_cache or default_cache_path()) if cache_embeddings else None)
    try:
        with progress_for(progress, "embedding texts") as update:
            report = evaluate(pred, ref, config=cfg, catalog=catalog, embedder=embedder, progress=update)
    finally:
        embedder.close()
    target = bench_path(pred, out)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return BenchRun(report, target)
