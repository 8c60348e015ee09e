"""Executors map a stage over records. Local: asyncio for ASYNC stages, a process pool for CPU stages.

An executor yields ``(item, result)`` pairs as they finish. A stage that raises is a bug in that
record's processing, not in the run: it becomes a reject with reason ``internal_error`` and is retried
on the next run (it is not marked done).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing as mp
import os
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Protocol

from dataclaw.core.errors import Reject
from dataclaw.pipeline.stage import Record, Resources, Result, Stage

log = logging.getLogger(__name__)

INTERNAL_ERROR = "internal_error"


class Executor(Protocol):
    def map(self, stage: Stage, items: Sequence[Record]) -> AsyncIterator[tuple[Record, Result, bool]]:
        """Yield ``(item, result, ok)``; ``ok`` is False when the stage raised (retry next run)."""
        ...


def _crash_reject(stage: Stage, item: Record, exc: BaseException) -> Reject:
    log.exception("stage %s failed on %s", stage.name, item.get("id"), exc_info=exc)
    return Reject(
        id=item["id"],
        stage=stage.name,
        reason=INTERNAL_ERROR,
        message=f"{type(exc).__name__}: {exc}",
    )


_WORKER_STAGE: Stage | None = None


def _worker_init(stage: Stage) -> None:
    global _WORKER_STAGE
    _WORKER_STAGE = stage
    stage.setup()


def _worker_process(item: Record) -> Result:
    assert _WORKER_STAGE is not None
    return _WORKER_STAGE.process(item)


class LocalExecutor:
    """One machine. ``workers``: processes for CPU stages (1 = in this process); ``concurrency``: the
    number of ASYNC stage calls in flight."""

    def __init__(self, workers: int | None = None, concurrency: int = 16) -> None:
        self.workers = max(1, workers if workers is not None else (os.cpu_count() or 1))
        self.concurrency = max(1, concurrency)

    async def map(self, stage: Stage, items: Sequence[Record]) -> AsyncIterator[tuple[Record, Result, bool]]:
        if not items:
            return
        if stage.resources is Resources.ASYNC:
            async for out in self._map_async(stage, items):
                yield out
        elif self.workers == 1 or len(items) == 1:
            stage.setup()
            for item in items:
                try:
                    yield item, stage.process(item), True
                except Exception as exc:  # noqa: BLE001 - one bad record never stops a run
                    yield item, _crash_reject(stage, item, exc), False
        else:
            async for out in self._map_pool(stage, items):
                yield out

    async def _map_async(
        self, stage: Stage, items: Sequence[Record]
    ) -> AsyncIterator[tuple[Record, Result, bool]]:
        stage.setup()
        sem = asyncio.Semaphore(self.concurrency)

        async def one(item: Record) -> tuple[Record, Result, bool]:
            async with sem:
                try:
                    return item, await stage.aprocess(item), True
                except Exception as exc:  # noqa: BLE001 - one bad record never stops a run
                    return item, _crash_reject(stage, item, exc), False

        tasks = [asyncio.ensure_future(one(it)) for it in items]
        try:
            for fut in asyncio.as_completed(tasks):
                yield await fut
        finally:
            for t in tasks:
                t.cancel()

    async def _map_pool(
        self, stage: Stage, items: Sequence[Record]
    ) -> AsyncIterator[tuple[Record, Result, bool]]:
        loop = asyncio.get_running_loop()
        ctx = mp.get_context("forkserver")
        with ProcessPoolExecutor(
            self.workers, mp_context=ctx, initializer=_worker_init, initargs=(stage,)
        ) as pool:

            async def one(item: Record) -> tuple[Record, Result, bool]:
                try:
                    return item, await loop.run_in_executor(pool, _worker_process, item), True
                except Exception as exc:  # noqa: BLE001 - one bad record never stops a run
                    return item, _crash_reject(stage, item, exc), False

            for fut in asyncio.as_completed([one(it) for it in items]):
                yield await fut
