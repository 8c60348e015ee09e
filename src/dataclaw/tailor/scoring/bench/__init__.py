"""DataClaw0-val scoring (paper §3.5, A.4.4): score Tailor predictions against reference samples.

    report = evaluate("runs/mine", "val/references.jsonl")
    report["table"]["Semantic"]["GUI"], report["samples"][0]["total"]

See docs/scoring.md for every definition and default.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dataclaw.core.errors import Reject
from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.scoring.bench.config import MetricConfig, RoleBook, load_metric_config
from dataclaw.tailor.scoring.bench.data import BenchIssue, load_predictions, load_references, pair
from dataclaw.tailor.scoring.bench.embeddings import CachedEmbedder, default_cache_path
from dataclaw.tailor.scoring.bench.metric import SampleScore, Scorer, table

__all__ = [
    "BenchIssue",
    "CachedEmbedder",
    "MetricConfig",
    "RoleBook",
    "SampleScore",
    "Scorer",
    "default_cache_path",
    "evaluate",
    "load_metric_config",
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
