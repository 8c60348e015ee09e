"""Run a stage over records, resumably: outputs are flushed, then the input is marked done."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from dataclaw.core.errors import Reject
from dataclaw.core.store import RunStore
from dataclaw.pipeline.executors import Executor, LocalExecutor
from dataclaw.pipeline.stage import Record, Stage

ProgressFn = Callable[[int, int], None]


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
    items: Iterable[Record],
    store: RunStore,
    executor: Executor | None = None,
    progress: ProgressFn | None = None,
) -> StageStats:
    """Process every item not yet done by ``stage`` in ``store``; return what happened."""
    executor = executor or LocalExecutor()
    items = list(items)
    done = store.done(stage.name)
    out = store.stage(stage.name)
    todo = [it for it in items if it["id"] not in done]
    stats = StageStats(stage=stage.name, inputs=len(items), skipped=len(items) - len(todo))
    t0 = time.perf_counter()
    if progress:
        progress(0, len(todo))
    async for item, result, ok in executor.map(stage, todo):
        stats.processed += 1
        if isinstance(result, Reject):
            store.reject(result)
            stats.rejects += ok
            stats.errors += not ok
            stats.reasons[result.reason] = stats.reasons.get(result.reason, 0) + 1
        else:
            for rec in result:
                stats.outputs += out.append(rec)
        if ok:
            done.append({"id": item["id"]})
        if progress:
            progress(stats.processed, len(todo))
    stats.seconds = time.perf_counter() - t0
    return stats


def run_stage(
    stage: Stage,
    items: Iterable[Record],
    store: RunStore,
    executor: Executor | None = None,
    progress: ProgressFn | None = None,
) -> StageStats:
    """Synchronous wrapper of :func:`arun_stage`."""
    return asyncio.run(arun_stage(stage, items, store, executor, progress))
