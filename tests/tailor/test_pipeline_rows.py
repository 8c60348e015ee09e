"""What ``tailor inspect`` and ``tailor run`` show of a run directory, as data: one row per stream, the
rejects grouped by stage and reason."""

from __future__ import annotations

from pathlib import Path

from dataclaw.core.errors import Reject
from dataclaw.core.store import RunStore
from dataclaw.tailor.pipeline import RejectGroup, group_rejects, rejects_by_stage, stream_rows


def test_stream_rows_count_anchors_and_candidates_by_kind_and_name_a_stream_s_reject(tmp_path: Path) -> None:
    with RunStore(tmp_path / "run") as store:
        store.stage("streams").append({"id": "s1", "modality": "video", "duration": 3.14159})
        store.stage("streams").append({"id": "s2", "modality": "robot"})
        for i, kind in enumerate(("shot", "shot", "motion")):
            store.stage("anchors").append({"id": f"a{i}", "stream_id": "s1", "kind": kind})
        store.stage("candidates").append({"id": "c0", "stream_id": "s1", "kind": "dynamic_segment"})
        store.reject(Reject(id="s2", stage="candidates", reason="no_candidates", message="none"))
        rows = stream_rows(store)
        assert stream_rows(store, store.rejects()) == rows
    first, second = (r.to_dict() for r in rows)
    assert first == {
        "stream": "s1", "modality": "video", "duration_s": 3.14, "anchors": {"shot": 2, "motion": 1},
        "candidates": {"dynamic_segment": 1}, "reject": None,
    }  # fmt: skip
    assert second["duration_s"] == 0.0 and second["anchors"] == {}
    assert second["reject"] == "candidates:no_candidates"


def test_group_rejects_counts_each_stage_and_reason_with_its_first_message() -> None:
    rejects = [
        {"stage": "validate", "reason": "bad_json", "message": "first"},
        {"stage": "ingest", "reason": "unreadable", "message": "only"},
        {"stage": "validate", "reason": "bad_json", "message": "second"},
    ]
    assert group_rejects(rejects) == [
        RejectGroup("ingest", "unreadable", 1, "only"),
        RejectGroup("validate", "bad_json", 2, "first"),
    ]
    assert group_rejects([]) == []


def test_rejects_by_stage_splits_stage_reason_keys() -> None:
    counts = {"synthesize:model_error": 2, "validate:bad_json": 3, "validate:missing_field": 1}
    assert rejects_by_stage(counts) == {
        "synthesize": {"model_error": 2},
        "validate": {"bad_json": 3, "missing_field": 1},
    }
