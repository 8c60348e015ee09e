import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from dataclaw.core.store import RunStore
from dataclaw.pipeline import Resources, Stage, run_stage
from dataclaw.pipeline.executors import LocalExecutor


class Split(Stage):
    """Fan-out CPU stage: a word list → one record per word; empty lists are rejected."""

    name = "words"

    def process(self, item):
        words = item["text"].split()
        if not words:
            return self.reject(item, "empty_text", f"{item['id']}: no words")
        if item["text"] == "boom":
            raise RuntimeError("bug in the stage")
        return [{"id": f"{item['id']}/w{i}", "word": w, "pid": os.getpid()} for i, w in enumerate(words)]


class SlowAsync(Stage):
    name = "answers"
    resources = Resources.ASYNC

    def __init__(self) -> None:
        self.in_flight = 0
        self.peak = 0

    async def aprocess(self, item):
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        await asyncio.sleep(0.02)
        self.in_flight -= 1
        return [{"id": item["id"] + "/a", "n": item["n"] * 2}]


def _items(texts):
    return [{"id": f"r{i}", "text": t} for i, t in enumerate(texts)]


def test_cpu_stage_in_process_pool_fans_out_and_rejects(tmp_path):
    store = RunStore(tmp_path)
    items = _items(["a b", "", "c d e", "f"] * 3)
    stats = run_stage(Split(), items, store, LocalExecutor(workers=2))
    assert stats.processed == 12 and stats.rejects == 3 and stats.outputs == 18
    assert stats.reasons == {"empty_text": 3}
    pids = {r["pid"] for r in store.records("words")}
    assert os.getpid() not in pids  # really ran in worker processes
    assert {r["reason"] for r in store.rejects("words")} == {"empty_text"}


def test_rerun_skips_done_inputs_and_retries_crashed_ones(tmp_path):
    store = RunStore(tmp_path)
    items = _items(["a b", "boom", ""])
    first = run_stage(Split(), items, store, LocalExecutor(workers=1))
    assert first.errors == 1 and first.rejects == 1 and first.outputs == 2
    [err] = [r for r in store.rejects() if r["reason"] == "internal_error"]
    assert "bug in the stage" in err["message"]
    again = run_stage(Split(), items, store, LocalExecutor(workers=1))
    assert again.skipped == 2 and again.processed == 1  # only the crashed record is retried


def test_async_stage_respects_concurrency_bound(tmp_path):
    stage = SlowAsync()
    items = [{"id": f"q{i}", "n": i} for i in range(40)]
    stats = run_stage(stage, items, RunStore(tmp_path), LocalExecutor(concurrency=5))
    assert stats.outputs == 40
    assert stage.peak == 5


SCRIPT = textwrap.dedent(
    """
    import sys, time
    from dataclaw.core.store import RunStore
    from dataclaw.pipeline import Stage, run_stage
    from dataclaw.pipeline.executors import LocalExecutor

    class Slow(Stage):
        name = "out"
        def process(self, item):
            with open(sys.argv[2], "a") as fh:
                fh.write(item["id"] + "\\n")
            time.sleep(0.03)
            return [{"id": item["id"] + "/o", "v": item["n"]}]

    items = [{"id": f"r{i:03d}", "n": i} for i in range(60)]
    run_stage(Slow(), items, RunStore(sys.argv[1]), LocalExecutor(workers=1))
    """
)


def test_resume_after_sigkill_loses_nothing_duplicates_nothing(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    run, calls = tmp_path / "run", tmp_path / "calls.log"
    proc = subprocess.Popen([sys.executable, str(script), str(run), str(calls)])
    out = run / "out.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline and (not out.exists() or len(out.read_text().splitlines()) < 15):
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = len(out.read_text().splitlines())
    assert 15 <= done_before < 60
    subprocess.run([sys.executable, str(script), str(run), str(calls)], check=True)
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert len(ids) == 60 and len(set(ids)) == 60
    called = Path(calls).read_text().split()
    repeated = {c for c in called if called.count(c) > 1}
    assert len(called) <= 61 and len(repeated) <= 1  # at most the one in flight at the kill


# worker isolation, producers, supersession, fail-fast, kill -------------------------------------------------
class Crashy(Stage):
    """Kills its worker process on the record whose text is "die"; logs every attempt."""

    name = "crashy"

    def process(self, item):
        with open(item["log"], "a") as fh:
            fh.write(item["id"] + "\n")
        if item["text"] == "die":
            os._exit(3)  # what a segfault in native code looks like to the pool
        time.sleep(0.05)
        return [{"id": item["id"] + "/o", "pid": os.getpid()}]


def test_a_crashing_record_does_not_reject_its_neighbours(tmp_path):
    log = tmp_path / "attempts.log"
    items = [{"id": f"r{i}", "text": "die" if i == 3 else "ok", "log": str(log)} for i in range(10)]
    store = RunStore(tmp_path / "run")
    stats = run_stage(Crashy(), items, store, LocalExecutor(workers=2))
    assert stats.outputs == 9 and stats.errors == 1 and stats.rejects == 0
    [rej] = store.rejects("crashy")
    assert rej["record_id"] == "r3" and rej["reason"] == "worker_crashed" and rej["detail"]["crashes"] == 2
    attempts = log.read_text().split()
    assert attempts.count("r3") == 2, "rejected after killing its worker twice, the second time alone"
    assert {r["id"] for r in store.records("crashy")} == {f"r{i}/o" for i in range(10) if i != 3}
    # the crash is retried on the next run (not marked done); the others are not redone
    again = run_stage(Crashy(), items, store, LocalExecutor(workers=2))
    assert again.skipped == 9 and again.processed == 1 and again.errors == 1


class Flaky(Stage):
    """Raises on records listed in ``fail`` (a bug, or a model that is down), succeeds otherwise."""

    name = "flaky"

    def __init__(self, fail=(), fatal=False):
        self.fail, self.fatal = set(fail), fatal

    def process(self, item):
        if item["id"] in self.fail:
            exc = RuntimeError(f"{item['id']} failed")
            exc.fatal = self.fatal
            raise exc
        return [{"id": item["id"] + "/o"}]


def test_a_rerun_that_succeeds_supersedes_the_earlier_reject(tmp_path):
    items = [{"id": f"r{i}"} for i in range(4)]
    store = RunStore(tmp_path)
    first = run_stage(Flaky(fail={"r1", "r2"}), items, store, LocalExecutor(workers=1))
    assert first.errors == 2 and {r["record_id"] for r in store.rejects("flaky")} == {"r1", "r2"}
    again = run_stage(Flaky(fail={"r2"}), items, store, LocalExecutor(workers=1))
    assert again.skipped == 2 and again.processed == 2 and again.outputs == 1
    assert [r["record_id"] for r in store.rejects("flaky")] == ["r2"], "r1 succeeded: its reject is gone"
    assert store.update_manifest()["counts"]["rejects"] == 1
    assert len(list(store.stage("rejects").read())) == 2, "the superseded reject stays in the file"


def test_fail_fast_and_fatal_errors_stop_the_stage(tmp_path):
    import pytest

    from dataclaw.pipeline.runner import StageAborted

    items = [{"id": f"r{i}"} for i in range(20)]
    with pytest.raises(StageAborted, match="first 3 records all failed"):
        run_stage(Flaky(fail={i["id"] for i in items}), items, RunStore(tmp_path / "a"),
                  LocalExecutor(workers=1), fail_fast=3)  # fmt: skip
    stats = run_stage(Flaky(fail={"r0", "r1", "r2"}), [*items[:3], {"id": "ok"}], RunStore(tmp_path / "b"),
                      LocalExecutor(workers=1), fail_fast=5)  # fmt: skip
    assert stats.errors == 3 and stats.outputs == 1, "fewer failures than the limit: no stop"
    store = RunStore(tmp_path / "c")
    with pytest.raises(StageAborted, match="r0 failed"):
        run_stage(Flaky(fail={"r0"}, fatal=True), items, store, LocalExecutor(workers=1))
    assert len(store.stage("flaky")) == 0, "a fatal error stops before any other record"


class Tagged(Stage):
    name = "tagged"

    def __init__(self, tag):
        self.tag = tag

    def process(self, item):
        return [{"id": item["id"] + "/o", "tag": self.tag}]


def test_a_changed_producer_makes_new_records_and_supersedes_old_ones(tmp_path):
    items = [{"id": f"r{i}"} for i in range(3)]
    ex = LocalExecutor(workers=1)
    with RunStore(tmp_path) as store:
        assert run_stage(Tagged("a"), items, store, ex, producer={"model": "a"}).outputs == 3
        assert run_stage(Tagged("a"), items, store, ex, producer={"model": "a"}).skipped == 3
        b = run_stage(Tagged("b"), items, store, ex, producer={"model": "b"})
        assert b.processed == 3 and b.outputs == 3, "same ids, new producer: new records"
        assert {r["tag"] for r in store.records("tagged")} == {"b"}
        assert len(store.stage("tagged")) == 3 and len(list(store.stage("tagged").read())) == 6
    with RunStore(tmp_path) as store:  # a reader (another store) sees the current producer too
        assert {r["tag"] for r in store.records("tagged")} == {"b"}
        assert store.manifest()["producers"]["tagged"]["of"] == {"model": "b"}
        back = run_stage(Tagged("a"), items, store, ex, producer={"model": "a"})
        assert back.skipped == 3, "going back to an earlier producer reuses its records"
        assert {r["tag"] for r in store.records("tagged")} == {"a"}


KILL_SCRIPT = textwrap.dedent(
    """
    import os, signal, subprocess, sys, tempfile, time
    from pathlib import Path
    from dataclaw.core.procs import child_dies_with_parent
    from dataclaw.core.store import RunStore
    from dataclaw.pipeline import Stage, run_stage
    from dataclaw.pipeline.executors import LocalExecutor

    class Hang(Stage):
        name = "hang"
        def process(self, item):
            tmp = tempfile.mkdtemp(prefix="hang-")
            (Path(tmp) / "big.bin").write_bytes(b"x" * 100_000)
            child = subprocess.Popen(["sleep", "300"], preexec_fn=child_dies_with_parent)
            with open(sys.argv[2], "a") as fh:
                fh.write(f"{os.getpid()} {child.pid} {tmp}\\n")
            child.wait()
            return []

    def on_term(*_):
        raise KeyboardInterrupt

    if __name__ == "__main__":  # workers import this file too
        signal.signal(signal.SIGTERM, on_term)
        items = [{"id": f"r{i}"} for i in range(4)]
        run_stage(Hang(), items, RunStore(sys.argv[1]), LocalExecutor(workers=2))
    """
)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _kill_and_check(tmp_path, sig):
    import pytest

    script = tmp_path / "job.py"
    script.write_text(KILL_SCRIPT)
    run, pids = tmp_path / "run", tmp_path / "pids.log"
    proc = subprocess.Popen([sys.executable, str(script), str(run), str(pids)])
    deadline = time.time() + 60
    while time.time() < deadline and (not pids.exists() or len(pids.read_text().splitlines()) < 2):
        time.sleep(0.05)
    rows = [line.split() for line in pids.read_text().splitlines()]
    assert len(rows) == 2, "two workers, each running a subprocess"
    assert all(Path(tmp).is_relative_to(run / "_tmp") for _, _, tmp in rows), "temp files live in the run"
    proc.send_signal(sig)
    proc.wait(30)
    procs = {int(p) for w, c, _ in rows for p in (w, c)}
    deadline = time.time() + 10
    while time.time() < deadline and any(_alive(p) for p in procs):
        time.sleep(0.1)
    survivors = [p for p in procs if _alive(p)]
    for p in survivors:
        os.kill(p, signal.SIGKILL)
    if survivors:
        pytest.fail(f"processes survived the killed run: {survivors}")
    leftovers = [tmp for _, _, tmp in rows if Path(tmp).exists()]
    assert not leftovers, f"temp folders survived: {leftovers}"
    return run


def test_sigterm_ends_workers_and_subprocesses_and_removes_temp_folders(tmp_path):
    run = _kill_and_check(tmp_path, signal.SIGTERM)
    assert not (run / "_tmp").exists()


def test_sigkill_of_the_run_takes_its_workers_and_subprocesses_along(tmp_path):
    _kill_and_check(tmp_path, signal.SIGKILL)


class Metered(Stage):
    """An in-process stage that 'calls a model' per record and keeps the usage in ``self.ledger``."""

    name = "metered"
    resources = Resources.ASYNC

    def __init__(self, ledger, manifests):
        self.ledger, self.manifests = ledger, manifests

    async def aprocess(self, item):
        from dataclaw.models.types import Usage

        self.ledger.record("m", Usage(prompt_tokens=3, completion_tokens=2), cost_usd=0.0, priced=False,
                           cached=False, latency_s=0.01)  # fmt: skip
        await asyncio.sleep(0.3)
        self.manifests.append(json.loads((Path(item["run"]) / "manifest.json").read_text()))
        return [{"id": item["id"] + "/o"}]


def test_a_stage_ledger_is_saved_into_the_manifest_as_the_stage_goes(tmp_path):
    from dataclaw.models import UsageLedger

    seen: list[dict] = []
    items = [{"id": f"r{i}", "run": str(tmp_path)} for i in range(8)]
    RunStore(tmp_path).update_manifest(command="test")
    run_stage(Metered(UsageLedger(), seen), items, RunStore(tmp_path), LocalExecutor(concurrency=1))
    during = [m.get("models", {}).get("usage", {}).get("total", {}).get("calls", 0) for m in seen]
    assert 0 < max(during[:-1]), "saved while the stage was still running"
    final = json.loads((tmp_path / "manifest.json").read_text())
    assert (
        final["models"]["usage"]["total"]["calls"] == 8
        and final["models"]["usage"]["total"]["prompt_tokens"] == 24
    )


class DiesInSetup(Stage):
    name = "dies"

    def setup(self):
        os._exit(5)

    def process(self, item):
        return [{"id": item["id"] + "/o"}]


def test_workers_that_die_before_any_record_stop_the_stage_quickly(tmp_path):
    import pytest

    from dataclaw.pipeline.executors import WorkersDying

    t0 = time.monotonic()
    with pytest.raises(WorkersDying, match="died 3 times before finishing any record"):
        run_stage(
            DiesInSetup(), [{"id": f"r{i}"} for i in range(30)], RunStore(tmp_path), LocalExecutor(workers=2)
        )
    assert time.monotonic() - t0 < 30, "not one fresh pool per record"


def test_an_aborted_stage_leaves_its_true_partial_counts_in_the_manifest(tmp_path):
    import pytest

    from dataclaw.pipeline.runner import StageAborted

    items = [{"id": f"r{i}"} for i in range(6)]
    store = RunStore(tmp_path)
    with pytest.raises(StageAborted, match="r3 failed"):
        run_stage(Flaky(fail={"r3"}, fatal=True), items, store, LocalExecutor(workers=1))
    entry = store.manifest()["last_run"]["flaky"]  # was missing (read as null) after an abort
    assert entry["processed"] == 3 and entry["outputs"] == 3 and entry["inputs"] == 4
    assert "r3 failed" in entry["aborted"] and entry["seconds"] > 0
    assert store.manifest()["counts"]["flaky"] == len(list(store.records("flaky"))) == 3
    done = run_stage(Flaky(), items, store, LocalExecutor(workers=1))  # the rerun finishes: no abort left
    entry = store.manifest()["last_run"]["flaky"]
    assert "aborted" not in entry and entry["skipped"] == done.skipped == 3 and entry["outputs"] == 3
