"""Run a stage over records, resumably: outputs are flushed, then the input is marked done.

The completion marker says how the input ended (``outputs``: how many records, or ``reject``: the
reason), so the store knows which rejects a later success supersedes. ``producer`` names what made the
stage's records (model, intent versions, extractor config …): records of an earlier producer are
superseded and their inputs are processed again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence, Sized
from dataclasses import asdict, dataclass, field
from typing import Any

from dataclaw.core.errors import DataclawError, Reject
from dataclaw.core.store import SCRATCH, RunStore
from dataclaw.pipeline.executors import Executor, Items, LocalExecutor, aiter_items
from dataclaw.pipeline.stage import Record, Result, Stage

ProgressFn = Callable[[int, int], None]


USAGE_EVERY_S = 1.0


class _LedgerSaver:
    """Saves a stage's usage ledger (``stage.ledger``, as :class:`~dataclaw.models.UsageLedger` does it)
    at most every second while the stage runs and once when it ends, so usage is in the manifest before
    the command finishes (a killed run's manifest stays close to true)."""

    def __init__(self, stage: Stage, store: RunStore) -> None:
        ledger = getattr(stage, "ledger", None)
        self.ledger = ledger if callable(getattr(ledger, "save", None)) else None
        self.store = store
        self.last = time.monotonic()

    def tick(self, final: bool = False) -> None:
        if self.ledger is None or not (final or time.monotonic() - self.last >= USAGE_EVERY_S):
            return
        self.last = time.monotonic()
        if final or self.ledger.models():
            self.ledger.save(self.store)


class StageAborted(DataclawError):
    """A stage stopped early: a fatal error, or its first records all failed."""


@dataclass
class StageStats:
    stage: str
    inputs: int = 0
    skipped: int = 0
    processed: int = 0
    outputs: int = 0
    rejects: int = 0
    errors: int = 0
    seconds: float = 0.0
    reasons: dict[str, int] = field(default_factory=dict)


async def arun_stage(
    stage: Stage,
    items: Items,
    store: RunStore,
    executor: Executor | None = None,
    progress: ProgressFn | None = None,
    *,
    producer: Any = None,
    fail_fast: int | None = None,
    on_record: Callable[[Record, Result, StageStats], None] | None = None,
    emit: Callable[[Record], Awaitable[None]] | None = None,
) -> StageStats:
    """Process every item not yet done by ``stage`` in ``store``; return what happened.

    ``items`` (a list, a generator or an async iterator) are consumed lazily: only the executor's window
    is in flight. ``producer``: what produces the stage's records now (a JSON-able config or a hash);
    ``fail_fast``: stop with :class:`StageAborted` when this many records failed (raised) before any
    succeeded; ``on_record(item, result, stats)``: called after each finished record (e.g. to save usage
    as the run goes; raising stops the stage); ``emit(record)``: awaited for each record written (the
    next stage of a chain takes it). A stage with a usage ledger (``stage.ledger``) has it saved into
    the manifest as it goes.
    """
    executor = executor or LocalExecutor()
    executor.check([stage])  # a stage that cannot run here fails before anything is written
    if producer is not None:
        store.set_producer(stage.name, producer)
    done = store.done(stage.name)
    out = store.stage(stage.name)
    stats = StageStats(stage=stage.name)
    total = None
    if isinstance(items, Sized) and isinstance(items, Iterable):  # in memory already: count what is to do
        total = sum(1 for it in items if it["id"] not in done)
    todo = 0
    scratch = store.root / SCRATCH / f"{stage.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"

    async def pending() -> AsyncIterator[Record]:
        nonlocal todo
        async for item in aiter_items(items):
            stats.inputs += 1
            if item["id"] in done:
                stats.skipped += 1
                continue
            if not todo:
                store.lock()
            todo += 1
            yield item

    t0 = time.perf_counter()
    if progress:
        progress(0, total or 0)
    last_error = ""
    usage = _LedgerSaver(stage, store)
    results = executor.map(stage, pending(), scratch=scratch)
    try:
        async for item, result, ok in results:
            stats.processed += 1
            if isinstance(result, Reject):
                store.reject(result)
                stats.rejects += ok
                stats.errors += not ok
                stats.reasons[result.reason] = stats.reasons.get(result.reason, 0) + 1
                if ok:
                    done.append({"id": item["id"], "reject": result.reason})
                else:
                    last_error = result.message
            else:
                for rec in result:
                    written = out.append(rec)
                    stats.outputs += written
                    if emit is not None and written:
                        await emit(rec)
                done.append({"id": item["id"], "outputs": len(result)})
            usage.tick()
            if on_record:
                on_record(item, result, stats)
            if progress:
                progress(stats.processed, total if total is not None else todo)
            if fail_fast and stats.errors >= fail_fast and stats.errors == stats.processed:
                raise StageAborted(
                    f"stage {stage.name}: the first {stats.errors} records all failed, stopping "
                    f"(last: {last_error})"
                )
    except Exception as exc:
        if isinstance(exc, DataclawError) or not getattr(exc, "fatal", False):
            raise
        raise StageAborted(f"stage {stage.name} stopped: {exc}") from exc
    finally:
        stats.seconds = time.perf_counter() - t0
        aclose = getattr(results, "aclose", None)
        if aclose is not None:  # stop what is still in flight (workers, model calls) now
            await aclose()
        if todo:
            usage.tick(final=True)
        # the stage's temporary files go with it, however it ended
        shutil.rmtree(scratch, ignore_errors=True)
        with contextlib.suppress(OSError):
            scratch.parent.rmdir()
        save_last_run(store, stats, sys.exc_info()[1])
    return stats


def save_last_run(store: RunStore, stats: StageStats, failure: BaseException | None = None) -> None:
    """Write what the stage did into the manifest's ``last_run.<stage>``, however it ended: a stage that
    stopped early (a fatal error, fail-fast, Ctrl-C) says so under ``aborted`` next to its true partial
    counts, and the manifest's counts are taken again from the files; it is never left null or stale."""
    entry: dict[str, Any] = {k: v for k, v in asdict(stats).items() if k != "stage"}
    if failure is None:
        store.merge_manifest(last_run={stats.stage: entry})
        return
    entry["aborted"] = str(failure) or type(failure).__name__
    with contextlib.suppress(Exception):  # the failure itself is what the caller must see
        store.update_manifest(last_run={stats.stage: entry})


@dataclass
class Step:
    """One stage of a chain: its producer and fail-fast limit, as for :func:`arun_stage`."""

    stage: Stage
    producer: Any = None
    fail_fast: int | None = None


_END = object()


async def arun_chain(
    steps: Sequence[Step],
    items: Items,
    store: RunStore,
    executor: Executor | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    *,
    window: int = 256,
) -> list[StageStats]:
    """Run ``steps`` as overlapping stages: each record a stage writes flows to the next stage at once
    (through a queue of ``window`` records, so a slow stage holds back the one before it), and the
    records a stage wrote in earlier runs are fed to the next one first. Resumable like each stage."""
    executor = executor or LocalExecutor()
    executor.check([s.stage for s in steps])
    queues: list[asyncio.Queue[Any]] = [asyncio.Queue(maxsize=window) for _ in steps[1:]]

    def feeder(k: int) -> AsyncIterator[Record]:
        async def gen() -> AsyncIterator[Record]:
            seen: set[str] = set()
            for rec in store.records(steps[k - 1].stage.name):  # written before this run
                seen.add(rec["id"])
                yield rec
            while (rec := await queues[k - 1].get()) is not _END:
                if rec["id"] not in seen:
                    seen.add(rec["id"])
                    yield rec

        return gen()

    async def one(k: int) -> StageStats:
        step = steps[k]
        emit = queues[k].put if k < len(queues) else None
        report = (lambda d, t, n=step.stage.name: progress(n, d, t)) if progress else None
        try:
            return await arun_stage(
                step.stage, items if k == 0 else feeder(k), store, executor, report,
                producer=step.producer, fail_fast=step.fail_fast, emit=emit,
            )  # fmt: skip
        finally:
            if k < len(queues):
                await queues[k].put(_END)

    tasks = [asyncio.ensure_future(one(k)) for k in range(len(steps))]
    try:
        return list(await asyncio.gather(*tasks))
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def run_stage(
    stage: Stage,
    items: Items,
    store: RunStore,
    executor: Executor | None = None,
    progress: ProgressFn | None = None,
    **options: Any,
) -> StageStats:
    """Synchronous wrapper of :func:`arun_stage` (``options``: its keyword options)."""
    return asyncio.run(arun_stage(stage, items, store, executor, progress, **options))
