"""The streaming local executor: lazy inputs, a bounded window, overlapping stages, flat memory."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.core.store import RunStore
from dataclaw.pipeline import Resources, Stage, run_stage
from dataclaw.pipeline.executors import LocalExecutor
from dataclaw.pipeline.registry import ExecutorSettings, make_executor, using_executor
from dataclaw.pipeline.runner import Step, arun_chain


class Pulled:
    """A generator of records that counts how many were taken."""

    def __init__(self, n: int) -> None:
        self.n, self.taken = n, 0

    def __iter__(self):
        for i in range(self.n):
            self.taken += 1
            yield {"id": f"r{i:04d}", "n": i}


class Double(Stage):
    name = "double"

    def process(self, item):
        if item["n"] % 7 == 3:
            return self.reject(item, "odd_one", f"{item['id']} is the odd one")
        return [{"id": item["id"] + "/d", "n": item["n"] * 2}]


class SlowAsync(Stage):
    name = "slow"
    resources = Resources.ASYNC

    async def aprocess(self, item):
        await asyncio.sleep(0.005)
        return [{"id": item["id"] + "/s", "n": item["n"]}]


@pytest.mark.parametrize(("stage", "executor", "window"), [
    (Double(), LocalExecutor(workers=1), 1),
    (SlowAsync(), LocalExecutor(concurrency=4), 4),
    (Double(), LocalExecutor(workers=2), 2),
])  # fmt: skip
def test_inputs_are_taken_lazily_within_the_window(tmp_path, stage, executor, window):
    source = Pulled(60)
    ahead: list[int] = []
    stats = run_stage(
        stage, iter(source), RunStore(tmp_path), executor,
        on_record=lambda item, result, st: ahead.append(source.taken - st.processed),
    )  # fmt: skip
    assert stats.inputs == 60 and stats.processed == 60
    assert max(ahead) <= window, f"took up to {max(ahead)} records ahead of the store, window {window}"
    assert min(ahead) >= 0


def test_a_generator_input_resumes_and_rejects_as_a_list_does(tmp_path):
    store = RunStore(tmp_path)
    first = run_stage(Double(), iter(Pulled(30)), store, LocalExecutor(workers=1))
    assert first.rejects == 4 and first.outputs == 26 and first.reasons == {"odd_one": 4}
    again = run_stage(Double(), iter(Pulled(40)), store, LocalExecutor(workers=1))
    assert again.inputs == 40 and again.skipped == 30 and again.processed == 10


class Tail(Stage):
    name = "tail"

    def __init__(self, log):
        self.log = log

    def process(self, item):
        self.log.append(("tail", item["id"]))
        return [{"id": item["id"] + "/t"}]


class Head(Stage):
    name = "head"
    resources = Resources.ASYNC

    def __init__(self, log):
        self.log = log

    async def aprocess(self, item):
        await asyncio.sleep(0.002)
        self.log.append(("head", item["id"]))
        return [{"id": item["id"] + "/h", "n": item["n"]}]


def test_chained_stages_overlap_and_resume(tmp_path):
    log: list[tuple[str, str]] = []
    items = [{"id": f"r{i:03d}", "n": i} for i in range(40)]
    store = RunStore(tmp_path)
    chain = lambda: arun_chain([Step(Head(log)), Step(Tail(log))], items, store, LocalExecutor(workers=1))  # noqa: E731
    stats = asyncio.run(chain())
    assert [s.outputs for s in stats] == [40, 40]
    first_tail = next(i for i, (who, _) in enumerate(log) if who == "tail")
    last_head = max(i for i, (who, _) in enumerate(log) if who == "head")
    assert first_tail < last_head, "the second stage started before the first one finished"
    log.clear()
    again = asyncio.run(chain())
    assert [s.skipped for s in again] == [40, 40] and log == []


def test_executor_names_and_options_are_checked():
    with pytest.raises(ConfigError, match="unknown executor 'spark' \\(known: local, ray\\)"):
        make_executor(settings=ExecutorSettings(name="spark"))
    with pytest.raises(ConfigError, match="--ray-address is for --executor ray"):
        make_executor(settings=ExecutorSettings(name="local", ray_address="10.0.0.1:6379"))
    with using_executor(ExecutorSettings(name="local")):
        assert isinstance(make_executor(workers=3), LocalExecutor) and make_executor(workers=3).workers == 3


def test_no_ray_installed_is_one_line_with_the_install_hint(monkeypatch):
    from dataclaw.pipeline.executors.ray import import_ray

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ConfigError, match=r"pip install 'dataclaw\[ray\]'"):
        import_ray()
    with pytest.raises(ConfigError, match="needs Ray"):
        make_executor(settings=ExecutorSettings(name="ray"))


def test_an_unreachable_ray_address_fails_at_once_before_anything_is_written(tmp_path, shared_data):
    run = tmp_path / "run"
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "dataclaw"), "tailor", "ingest", str(shared_data / "lerobot_g1"),
         "--out", str(run), "--executor", "ray", "--ray-address", "127.0.0.1:1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    err = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "--ray-address 127.0.0.1:1: no Ray cluster answers there" in err
    assert "Traceback" not in err
    assert not run.exists()


RSS_SCRIPT = textwrap.dedent(
    """
    import sys
    from dataclaw.core.store import RunStore
    from dataclaw.pipeline import Stage, run_stage
    from dataclaw.pipeline.executors import LocalExecutor

    class Echo(Stage):
        name = "echo"
        def process(self, item):
            return [{"id": item["id"] + "/o", "n": item["n"] * 2, "pad": item["pad"]}]

    def gen(n):
        for i in range(n):
            yield {"id": f"r{i:07d}", "n": i, "pad": "x" * 200}

    n = int(sys.argv[2])
    stats = run_stage(Echo(), gen(n), RunStore(sys.argv[1]), LocalExecutor(workers=1))
    assert stats.outputs == n, stats
    # VmHWM: this process's own peak (ru_maxrss also counts the parent's image it was forked from)
    hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    print(int(hwm.split()[1]) // 1024)
    """
)

ID_INDEX_MB_PER_100K = 25
"""What the store keeps per record: the ids of outputs and completion markers (about 190 bytes a record);
the records themselves are never held. Holding the inputs (the executor before streaming) took 364 MB at
200k."""


@pytest.mark.slow
def test_200k_records_stream_in_flat_memory(tmp_path):
    """Peak RSS at 200,000 records stays within the 10,000-record peak plus the store's id index."""
    script = tmp_path / "rss.py"
    script.write_text(RSS_SCRIPT)

    def peak(n: int) -> int:
        out = subprocess.run([sys.executable, str(script), str(tmp_path / f"run{n}"), str(n)],
                             capture_output=True, text=True, check=True, timeout=300)  # fmt: skip
        return int(out.stdout.split()[-1])

    small, big = peak(10_000), peak(200_000)
    bound = small + 2 * ID_INDEX_MB_PER_100K + 10
    assert big <= bound, f"peak RSS {big} MB at 200k records, {small} MB at 10k: over the {bound} MB bound"
    assert len((tmp_path / "run200000" / "echo.jsonl").read_text().splitlines()) == 200_000


def test_calls_dropped_early_end_without_interrupting_other_sandboxes():
    """A ``calls`` iteration the consumer abandons (break, or a generator collected later) winds its own
    pool down; ``stopping`` (which kills every sandbox of the process) is only for failures and Ctrl-C."""
    import contextlib
    import threading

    stopped = []

    @contextlib.contextmanager
    def stopping():
        stopped.append(True)
        yield

    ran = threading.Event()

    def fn(i: int) -> int:
        ran.set()
        return i * 2

    calls = LocalExecutor(workers=2).calls(fn, range(10), 2, stopping=stopping)
    assert next(calls)[1] in (0, 2)
    calls.close()  # what the garbage collector does to an abandoned generator
    assert ran.is_set() and stopped == []

    def boom(i: int) -> int:
        raise ValueError("a failing call")

    with pytest.raises(ValueError):
        list(LocalExecutor(workers=2).calls(boom, range(4), 2, stopping=stopping))
    assert stopped == [True]
