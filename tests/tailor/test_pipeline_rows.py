"""What ``tailor inspect`` shows of a run directory, as data: one row per stream."""

from __future__ import annotations

from pathlib import Path

from dataclaw.core.errors import Reject
from dataclaw.core.store import RunStore
from dataclaw.tailor.pipeline import stream_rows


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
