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
