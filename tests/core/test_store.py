import json

import pytest

from dataclaw.core.errors import ConfigError, Reject
from dataclaw.core.store import RunStore


def test_append_skips_present_ids_and_survives_reopen(tmp_path):
    with RunStore(tmp_path) as store:
        s = store.stage("samples")
        assert s.append({"id": "a", "v": 1})
        assert not s.append({"id": "a", "v": 2})
        assert s.append({"id": "b", "v": 3})
    with RunStore(tmp_path) as store:
        s = store.stage("samples")
        assert s.ids() == {"a", "b"}
        assert [r["v"] for r in s.read()] == [1, 3]


def test_torn_last_line_is_dropped_on_open(tmp_path):
    path = tmp_path / "samples.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b"}\n{"id": "c", "v": [1, 2')
    store = RunStore(tmp_path)
    s = store.stage("samples")
    assert s.torn_bytes > 0
    assert s.ids() == {"a", "b"}
    assert s.append({"id": "c", "v": [1, 2]})
    store.close()
    lines = path.read_text().splitlines()
    assert [json.loads(x)["id"] for x in lines] == ["a", "b", "c"]


def test_complete_but_unterminated_or_garbled_last_line(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b"}')  # complete JSON, but the newline never made it
    assert RunStore(tmp_path).stage("x").ids() == {"a"}
    path.write_text('{"id": "a"}\nnot json\n')
    assert RunStore(tmp_path).stage("x").ids() == {"a"}


def test_corruption_in_the_middle_is_an_error_naming_the_file(tmp_path):
    (tmp_path / "x.jsonl").write_text('{"id": "a"}\ngarbage\n{"id": "b"}\n')
    with pytest.raises(ConfigError, match=r"x\.jsonl: line 2"):
        RunStore(tmp_path).stage("x")


def test_rejects_carry_reasons_and_manifest_counts(tmp_path):
    store = RunStore(tmp_path)
    store.stage("streams").append({"id": "s1"})
    store.reject(Reject(id="s2", stage="streams", reason="missing_file", message="episode 2: video missing"))
    man = store.update_manifest(config={"intent": "fault"}, models={"m": {"calls": 1}})
    assert man["counts"] == {"rejects": 1, "streams": 1}
    assert man["config"] == {"intent": "fault"}
    store.update_manifest(models={"m2": {"calls": 2}})
    assert set(store.manifest()["models"]) == {"m", "m2"}
    [rej] = store.rejects("streams")
    assert rej["reason"] == "missing_file" and rej["record_id"] == "s2"


def test_run_dir_that_is_a_file_is_refused(tmp_path):
    f = tmp_path / "run"
    f.write_text("x")
    with pytest.raises(ConfigError, match="not a directory"):
        RunStore(f)
