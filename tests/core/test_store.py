import json
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from dataclaw.core import lock
from dataclaw.core.errors import ConfigError, Reject
from dataclaw.core.lock import RunLockedError
from dataclaw.core.store import RunStore, is_current


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


# concurrency, the run lock, producers, supersession ---------------------------------------------------


def test_concurrent_manifest_updates_neither_crash_nor_lose_each_other(tmp_path):
    store = RunStore(tmp_path)
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(25):
                store.update_manifest(**{f"k{n}": {f"i{i}": i}})
        except BaseException as exc:  # noqa: BLE001 - collected for the assert
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    man = store.manifest()
    assert all(len(man[f"k{n}"]) == 25 for n in range(8)), "no update lost"
    assert not list(tmp_path.glob(".manifest.json.*")), "no temp file left behind"


HOLDER = textwrap.dedent(
    """
    import sys, time
    from dataclaw.core.store import RunStore
    store = RunStore(sys.argv[1], command="holder test")
    store.stage("x").append({"id": "a"})
    print("locked", flush=True)
    time.sleep(60)
    """
)


def test_a_second_process_is_refused_with_the_holder_named(tmp_path):
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(run)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        reader = RunStore(run)
        assert reader.stage("x").ids() == {"a"}, "reading needs no lock"
        with pytest.raises(RunLockedError, match=rf"in use by pid {proc.pid} on .*\(holder test, since "):
            reader.stage("x").append({"id": "b"})
        with pytest.raises(RunLockedError):
            reader.update_manifest(x=1)
    finally:
        proc.kill()
        proc.wait()
    deadline = time.time() + 5  # the kernel drops the lock with its holder: never stale
    while True:
        try:
            assert RunStore(run).stage("x").append({"id": "b"})
            break
        except RunLockedError:
            assert time.time() < deadline
            time.sleep(0.05)


def test_the_lock_is_reentrant_within_a_process(tmp_path):
    with lock.run_lock(tmp_path, "outer"):
        with RunStore(tmp_path) as a, RunStore(tmp_path) as b:
            a.stage("x").append({"id": "1"})
            b.stage("y").append({"id": "2"})
        assert lock.held(tmp_path)
    assert not lock.held(tmp_path)


def test_records_of_an_earlier_producer_are_superseded(tmp_path):
    with RunStore(tmp_path) as store:
        store.set_producer("answers", {"model": "a"})
        store.stage("answers").append({"id": "q1", "v": "a"})
        store.stage("answers").append({"id": "q2", "v": "a"})
        store.set_producer("answers", {"model": "b"})
        assert len(store.stage("answers")) == 0 and "q1" not in store.stage("answers")
        assert store.stage("answers").append({"id": "q1", "v": "b"}), "same id, new producer: written"
        assert [r["v"] for r in store.records("answers")] == ["b"]
        assert store.update_manifest()["counts"]["answers"] == 1
    lines = [json.loads(x) for x in (tmp_path / "answers.jsonl").read_text().splitlines()]
    assert [(r["id"], r["v"]) for r in lines] == [("q1", "a"), ("q2", "a"), ("q1", "b")], "old ones stay"
    assert RunStore(tmp_path).records("answers").__next__()["v"] == "b", "a new store reads the manifest"
    assert [r["v"] for r in lines if is_current(tmp_path / "answers.jsonl")(r)] == ["b"]


def test_rejects_of_an_earlier_producer_or_a_later_success_are_superseded(tmp_path):
    store = RunStore(tmp_path)
    store.set_producer("s", "p1")
    store.reject(Reject(id="r1", stage="s", reason="bad", message="old producer"))
    store.set_producer("s", "p2")
    assert store.rejects("s") == []
    store.reject(Reject(id="r1", stage="s", reason="internal_error", message="a bug"))
    assert [r["reason"] for r in store.rejects("s")] == ["internal_error"]
    store.done("s").append({"id": "r1", "outputs": 1})  # the rerun succeeded
    assert store.rejects("s") == [] and store.update_manifest()["counts"]["rejects"] == 0


def test_a_reader_never_cuts_a_torn_tail_a_writer_does(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b", "v"')
    size = path.stat().st_size
    assert RunStore(tmp_path).stage("x").ids() == {"a"}
    assert path.stat().st_size == size, "opening to read leaves a live writer's last line alone"
    s = RunStore(tmp_path).stage("x")
    assert s.append({"id": "c"})
    assert [json.loads(x)["id"] for x in path.read_text().splitlines()] == ["a", "c"]
