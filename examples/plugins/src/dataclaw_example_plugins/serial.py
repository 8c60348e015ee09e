"""An executor: ``--executor serial`` runs every record in the command's own process, one after another.

Slow on purpose and useful for that: a ``breakpoint()`` in a stage stops where you can type, a profiler
sees every record, and the order of the output is the order of the input. It prints one line per stage to
stderr (records, rejects, seconds), which is also how you see that it ran. What it gives up: a record that
crashes the interpreter (a segfault in a decoder) takes the command with it, where the local executor's
pool would reject that record alone.

An executor implements the contract of :class:`dataclaw.pipeline.executors.Executor`: ``from_settings``
(the command's ``--executor``/``--ray-address``), ``map`` (a stage over records), ``calls`` (work that is
not a stage: audits, rollouts), ``hosting`` (objects that live where sandbox work runs) and ``check``.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from dataclaw.core.errors import ConfigError, Reject
from dataclaw.pipeline.executors import (
    ExecutorSettings,
    Host,
    Items,
    Stopping,
    aiter_items,
    crash_reject,
    is_fatal,
    process_one,
    scratch_tempdir,
)
from dataclaw.pipeline.stage import Record, Resources, Result, Stage

T = TypeVar("T")
R = TypeVar("R")


class SerialExecutor:
    """Registered by the entry point ``serial = dataclaw_example_plugins.serial:SerialExecutor`` in the
    ``dataclaw.executors`` group."""

    name = "serial"

    @classmethod
    def from_settings(
        cls, settings: ExecutorSettings, workers: int | None, concurrency: int
    ) -> SerialExecutor:
        if settings.ray_address:
            raise ConfigError("--ray-address is for --executor ray (serial runs in this process)")
        return cls()  # the window (workers, concurrency) is always one record

    def check(self, stages: Iterable[Stage]) -> None:
        """Every stage can run here."""

    async def map(
        self, stage: Stage, items: Items, scratch: Path | None = None
    ) -> AsyncIterator[tuple[Record, Result, bool]]:
        start, done, rejects = time.perf_counter(), 0, 0
        with scratch_tempdir(None if stage.resources is Resources.ASYNC else scratch):
            source = aiter_items(items)
            first = await anext(source, None)
            if first is not None:
                stage.setup()
            item = first
            while item is not None:
                if stage.resources is Resources.ASYNC:
                    result, ok = await self._aprocess(stage, item)
                else:
                    result, ok = process_one(stage, item)
                done, rejects = done + 1, rejects + isinstance(result, Reject)
                yield item, result, ok
                item = await anext(source, None)
        seconds = time.perf_counter() - start
        print(f"serial: {stage.name}: {done} records, {rejects} rejects, {seconds:.2f} s", file=sys.stderr)

    @staticmethod
    async def _aprocess(stage: Stage, item: Record) -> tuple[Result, bool]:
        try:
            return await stage.aprocess(item), True
        except Exception as exc:
            if is_fatal(exc):
                raise
            return crash_reject(stage, item, exc), False

    def calls(
        self, fn: Callable[[T], R], items: Iterable[T], workers: int, *, stopping: Stopping | None = None
    ) -> Iterator[tuple[T, R]]:
        for item in items:
            yield item, fn(item)

    @contextlib.contextmanager
    def hosting(self, concurrency: int) -> Iterator[Host]:
        def host(factory: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
            return factory(*args, **kwargs)

        yield host
