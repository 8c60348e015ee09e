"""``run_bench``: a score report written where ``tailor bench`` puts it, and its rejects with an example."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # bench_support
from bench_support import WKQ, sample, write_jsonl

from dataclaw.tailor.scoring.bench import BenchRun, bench_path, run_bench


def test_bench_path_is_out_else_beside_the_predictions(tmp_path: Path) -> None:
    run, preds = tmp_path / "run", tmp_path / "preds.jsonl"
    run.mkdir()
    assert bench_path(run) == run / "bench.json"
    assert bench_path(preds) == tmp_path / "preds.jsonl.bench.json"
    assert bench_path(run, tmp_path / "x.json") == tmp_path / "x.json"


def test_reject_examples_give_each_reason_its_first_message(tmp_path: Path) -> None:
    report = {
        "counts": {"rejects": {"bench_ref:bad_line": 2, "bench_pred:no_reference": 1}},
        "rejects": [
            {"stage": "bench_ref", "reason": "bad_line", "message": "line 3"},
            {"stage": "bench_pred", "reason": "no_reference", "message": "p1"},
            {"stage": "bench_ref", "reason": "bad_line", "message": "line 9"},
        ],
    }
    assert BenchRun(report, tmp_path / "b.json").reject_examples() == [
        ("bench_pred:no_reference", 1, "p1"),
        ("bench_ref:bad_line", 2, "line 3"),
    ]


@pytest.mark.slow
def test_run_bench_scores_and_writes_the_report_beside_the_predictions(tmp_path: Path) -> None:
    refs = write_jsonl(tmp_path / "refs.jsonl", [sample("world_knowledge_qa", "daily_life", WKQ)], ["{bad"])
    ref_id = json.loads(refs.read_text().splitlines()[0])["id"]
    preds = write_jsonl(
        tmp_path / "preds.jsonl", [{"id": ref_id, "intent": "world_knowledge_qa", "output": WKQ}]
    )
    scored = run_bench(preds, refs, cache_embeddings=False)
    assert scored.path == tmp_path / "preds.jsonl.bench.json"
    assert json.loads(scored.path.read_text()) == json.loads(json.dumps(scored.report))
    assert scored.report["counts"]["scored"] == 1
    assert [(k, n) for k, n, _ in scored.reject_examples()] == [("bench_ref:bad_line", 1)]
