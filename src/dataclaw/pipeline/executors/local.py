"""The local executor: one machine, asyncio for ASYNC stages, a process pool for CPU stages.

Pool workers are isolated from each other's crashes: when a worker dies (segfault, ``os._exit``, the
OOM killer) the records in flight with it are retried, each alone, and only a record that kills its
worker a second time is rejected (``worker_crashed``, retried on the next run). Workers die with the
run: they ask the kernel for a signal when their parent goes (``PR_SET_PDEATHSIG``), watch the run's
process, and keep their temporary files in the run's scratch folder, removed when they stop.

**Streaming.** Inputs are consumed lazily (a list, a generator or an async iterator) and only a window of
records is in flight (``workers`` for a pool, ``concurrency`` for ASYNC stages): a new record is taken
only when a slot frees, and a slot frees when the runner has stored a result (the generator is suspended
while it writes), so the store's pace is the back-pressure and memory stays flat whatever the input size.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import multiprocessing as mp
import os
import shutil
import signal
import tempfile
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, TypeVar

from dataclaw.core.errors import ConfigError, DataclawError
from dataclaw.core.procs import die_with_parent
from dataclaw.pipeline.executors.base import (
    ExecutorSettings,
    Host,
    Items,
    Stopping,
    aiter_items,
    crash_reject,
    is_fatal,
    process_one,
    register_executor,
    scratch_tempdir,
    worker_crashed,
)
from dataclaw.pipeline.stage import Record, Resources, Result, Stage

log = logging.getLogger(__name__)

CRASHES_TO_REJECT = 2
"""A record is rejected once it was in flight in this many worker crashes (the last one alone)."""
BREAKS_BEFORE_ANY_RESULT = 3
"""A pool that breaks this many times before any record finished is not a bad record: the stage stops."""

T = TypeVar("T")
R = TypeVar("R")


class WorkersDying(DataclawError):
    """A stage's worker processes die before finishing anything (a setup that kills them, no memory)."""


# worker side ---------------------------------------------------------------------------------------
_WORKER_STAGE: Stage | None = None
_WORKER_TMP: Path | None = None


def _worker_cleanup() -> None:
    """Remove this worker's temp folder, and the stage's and run's scratch folders once they are empty
    (the last worker of a SIGKILLed run leaves nothing behind)."""
    if _WORKER_TMP is not None:
        shutil.rmtree(_WORKER_TMP, ignore_errors=True)
        for parent in (_WORKER_TMP.parent, _WORKER_TMP.parent.parent):
            try:
                parent.rmdir()
            except OSError:
                break


def _worker_exit(code: int = 1) -> None:
    """Leave now: temporary files go, children die (they were started to die with this process)."""
    _worker_cleanup()
    os._exit(code)


def _watch_parent(pid: int) -> None:
    """Exit as soon as the run's process ``pid`` is gone (a SIGKILLed run cannot stop its workers)."""
    while True:
        time.sleep(0.25)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            _worker_exit(1)
        except PermissionError:
            pass


def _worker_init(stage: Stage, scratch: str | None, parent_pid: int) -> None:
    global _WORKER_STAGE, _WORKER_TMP
    die_with_parent(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: _worker_exit(143))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle: it stops us itself
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True, name="watch-run").start()
    if scratch is not None:
        _WORKER_TMP = Path(tempfile.mkdtemp(prefix=f"w{os.getpid()}-", dir=scratch))
        tempfile.tempdir = str(_WORKER_TMP)
        atexit.register(_worker_cleanup)
    _WORKER_STAGE = stage
    stage.setup()


def _worker_process(item: Record) -> Result:
    assert _WORKER_STAGE is not None
    return _WORKER_STAGE.process(item)


# run side ------------------------------------------------------------------------------------------
def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Stop ``pool`` now: running records are abandoned, workers get SIGTERM (then SIGKILL)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for p in procs:
        with contextlib.suppress(Exception):
            p.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + 2.0
    for p in procs:
        with contextlib.suppress(Exception):
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                p.kill()
                p.join(1.0)


@register_executor
class LocalExecutor:
    """One machine. ``workers``: processes for CPU stages (1 = in this process); ``concurrency``: the
    number of ASYNC stage calls in flight. Both are the stage's in-flight window."""

    name = "local"

    def __init__(self, workers: int | None = None, concurrency: int = 16) -> None:
        self.workers = max(1, workers if workers is not None else (os.cpu_count() or 1))
        self.concurrency = max(1, concurrency)

    @classmethod
    def from_settings(
        cls, settings: ExecutorSettings, workers: int | None, concurrency: int
    ) -> LocalExecutor:
        if settings.ray_address:
            raise ConfigError("--ray-address is for --executor ray (the local executor runs on this machine)")
        return cls(workers=workers, concurrency=concurrency)

    def check(self, stages: Iterable[Stage]) -> None:
        """Every stage runs on this machine (its declared resources are a cluster's concern)."""

    @contextlib.contextmanager
    def hosting(self, concurrency: int) -> Iterator[Host]:
        """Objects live in this process (their callers run their methods in threads)."""

        def host(factory: Callable[..., T], *args: Any, **kwargs: Any) -> T:
            return factory(*args, **kwargs)

        yield host

    def calls(
        self, fn: Callable[[T], R], items: Iterable[T], workers: int, *, stopping: Stopping | None = None
    ) -> Iterator[tuple[T, R]]:
        """Threads (each call waits on its sandboxed subprocesses, so the GIL is not the limit), at most
        ``workers`` calls in flight and items taken lazily."""
        it = iter(items)
        if workers <= 1:
            for item in it:
                yield item, fn(item)
            return
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="calls")
        running: dict[Future[R], T] = {}
        try:
            while True:
                for item in it:
                    running[pool.submit(fn, item)] = item
                    if len(running) >= workers:
                        break
                if not running:
                    return
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    yield running.pop(fut), fut.result()
        except GeneratorExit:  # the consumer stopped early (or dropped us): no interrupt, the pool winds down
            raise
        except BaseException:  # a failed call or Ctrl-C: end the calls in flight now, not at their timeouts
            with (stopping or contextlib.nullcontext)():
                pool.shutdown(wait=True, cancel_futures=True)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    async def map(
        self, stage: Stage, items: Items, scratch: Path | None = None
    ) -> AsyncIterator[tuple[Record, Result, bool]]:
        source = aiter_items(items)
        if stage.resources is Resources.ASYNC:  # model calls: no temp files, and tempfile stays as it is
            async for out in self._map_async(stage, source):
                yield out
        elif self.workers == 1:  # (one record still goes to a worker: a crash must not take the run along)
            first = await anext(source, None)
            if first is None:
                return
            with scratch_tempdir(scratch):
                stage.setup()
                item: Record | None = first
                while item is not None:
                    result, ok = process_one(stage, item)
                    yield item, result, ok
                    item = await anext(source, None)
        else:
            async for out in self._map_pool(stage, source, scratch):
                yield out

    async def _map_async(
        self, stage: Stage, source: AsyncIterator[Record]
    ) -> AsyncIterator[tuple[Record, Result, bool]]:
        """At most ``concurrency`` calls in flight; the next item is taken when one finishes."""
        first = await anext(source, None)
        if first is None:
            return
        stage.setup()

        async def one(item: Record) -> tuple[Record, Result, bool]:
            try:
                return item, await stage.aprocess(item), True
            except Exception as exc:
                if is_fatal(exc):
                    raise
                return item, crash_reject(stage, item, exc), False

        running: set[asyncio.Task[tuple[Record, Result, bool]]] = {asyncio.ensure_future(one(first))}
        exhausted = False
        try:
            while True:
                while not exhausted and len(running) < self.concurrency:
                    item = await anext(source, None)
                    if item is None:
                        exhausted = True
                    else:
                        running.add(asyncio.ensure_future(one(item)))
                if not running:
                    break
                finished, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for fut in finished:
                    yield fut.result()
        finally:
            for t in running:
                t.cancel()
            await asyncio.gather(*running, return_exceptions=True)

    def _pool(self, stage: Stage, scratch: Path | None) -> ProcessPoolExecutor:
        if scratch is not None:
            scratch.mkdir(parents=True, exist_ok=True)
        return ProcessPoolExecutor(
            self.workers,
            mp_context=mp.get_context("forkserver"),
            initializer=_worker_init,
            initargs=(stage, str(scratch) if scratch else None, os.getpid()),
        )

    async def _map_pool(
        self, stage: Stage, source: AsyncIterator[Record], scratch: Path | None
    ) -> AsyncIterator[tuple[Record, Result, bool]]:
        """At most ``workers`` records in flight (so each one in flight is running). A worker crash
        breaks the pool: its records in flight count one crash each and are retried alone in a new
        pool, where a second crash names the record that causes it."""
        loop = asyncio.get_running_loop()
        first = await anext(source, None)
        if first is None:
            return
        pending: deque[Record] = deque([first])
        exhausted = False
        suspects: deque[Record] = deque()
        crashes: dict[str, int] = {}
        running: dict[asyncio.Future[Result], Record] = {}
        finished_any, breaks = False, 0
        pool = self._pool(stage, scratch)
        try:
            while True:
                if suspects:
                    if not running:
                        item = suspects.popleft()
                        running[loop.run_in_executor(pool, _worker_process, item)] = item
                else:
                    while len(running) < self.workers:
                        if not pending and not exhausted:
                            nxt = await anext(source, None)
                            if nxt is None:
                                exhausted = True
                            else:
                                pending.append(nxt)
                        if not pending:
                            break
                        item = pending.popleft()
                        running[loop.run_in_executor(pool, _worker_process, item)] = item
                if not running:
                    break
                finished, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                broken = False
                for fut in finished:
                    item = running.pop(fut)
                    exc = fut.exception()
                    if exc is None:
                        finished_any = True
                        yield item, fut.result(), True
                    elif isinstance(exc, BrokenProcessPool):
                        broken = True
                        running[fut] = item  # counted with the others below
                    elif is_fatal(exc):
                        raise exc
                    else:
                        finished_any = True
                        yield item, crash_reject(stage, item, exc), False
                if not broken:
                    continue
                breaks += 1
                if not finished_any and breaks >= BREAKS_BEFORE_ANY_RESULT:
                    raise WorkersDying(
                        f"stage {stage.name}: its worker processes died {breaks} times before finishing "
                        "any record (a failing setup, or out of memory?); rerun with --workers 1 --debug"
                    )
                victims = list(running.values())
                for fut in running:
                    fut.cancel()
                running.clear()
                _stop_pool(pool)
                pool = self._pool(stage, scratch)
                for item in victims:
                    crashes[item["id"]] = crashes.get(item["id"], 0) + 1
                    if crashes[item["id"]] >= CRASHES_TO_REJECT and len(victims) == 1:
                        log.warning("stage %s: %s killed its worker twice", stage.name, item["id"])
                        yield item, worker_crashed(stage, item, crashes[item["id"]]), False
                    else:
                        suspects.append(item)
        finally:
            for fut in running:
                fut.cancel()
            _stop_pool(pool)
