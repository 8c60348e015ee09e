"""The executor contract and what every executor shares: the registry, a record's crash as its reject,
the run's scratch folder as the temporary directory.

An executor maps a stage over records and yields ``(item, result, ok)`` as records finish. A stage that
raises is a bug in that record's processing, not in the run: it becomes a reject with reason
``internal_error`` and is retried on the next run (it is not marked done). An exception whose class says
``fatal = True`` (a model that cannot be reached, a wrong key) is not a record's fault: it stops the stage.

Executors register by name (``--executor NAME``): a built-in is a module of this package whose class
carries ``@register_executor``; one from outside the package is an entry point in the
``dataclaw.executors`` group (or a ``--plugin`` module) naming such a class.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

from dataclaw.core.errors import DataclawError, Reject
from dataclaw.core.registry import Registry
from dataclaw.pipeline.stage import Record, Result, Stage

log = logging.getLogger(__name__)

INTERNAL_ERROR = "internal_error"
WORKER_CRASHED = "worker_crashed"


class HostLost(DataclawError):
    """The worker holding a hosted object (a rollout's harness: its env session, its workspace) died, and
    the object's state with it: the work that used it starts again on another worker."""


T = TypeVar("T")
R = TypeVar("R")
Items = Iterable[Record] | AsyncIterable[Record]
Stopping = Callable[[], contextlib.AbstractContextManager[Any]]
Host = Callable[..., Any]
"""``host(factory, *args, **kwargs)``: ``factory(*args, **kwargs)`` built where the executor runs sandbox
work, returned as the object itself (local) or a proxy whose method calls run where it lives (Ray)."""


class ExecutorSettings(BaseModel):
    """Which executor runs a command's stages, and where (``ray_address``: a Ray cluster; None starts
    one on this machine, or joins ``RAY_ADDRESS``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "local"
    ray_address: str | None = None


class Executor(Protocol):
    name: str

    @classmethod
    def from_settings(cls, settings: ExecutorSettings, workers: int | None, concurrency: int) -> Executor:
        """The executor a command asked for (``settings``) with this window: ``workers`` processes or
        actors (None: the machine's or cluster's CPUs), ``concurrency`` ASYNC calls in flight."""
        ...

    def map(
        self, stage: Stage, items: Items, scratch: Path | None = None
    ) -> AsyncIterator[tuple[Record, Result, bool]]:
        """Yield ``(item, result, ok)``; ``ok`` is False when the stage raised (retry next run).
        ``items`` are consumed lazily; ``scratch``: a folder for the stage's temporary files, created
        when needed (removed by the caller)."""
        ...

    def calls(
        self, fn: Callable[[T], R], items: Iterable[T], workers: int, *, stopping: Stopping | None = None
    ) -> Iterator[tuple[T, R]]:
        """``(item, fn(item))`` as each call finishes, ``workers`` at a time: work that is not a stage
        (an audit, a rollout) and waits on sandboxes. An exception of ``fn`` (or Ctrl-C) ends the
        iteration: the calls in flight are ended inside ``stopping()`` (e.g. one that interrupts their
        sandboxes) and their results dropped."""
        ...

    def hosting(self, concurrency: int) -> contextlib.AbstractContextManager[Host]:
        """A place for stateful objects that do sandbox work while the driver talks to them (a rollout's
        harness: the env session or workspace and its tools, with the model calls on the driver).
        ``concurrency``: objects in use at once. A call on an object whose worker died raises
        :class:`HostLost` (then every later call on it too); the objects go when the context ends."""
        ...

    def check(self, stages: Iterable[Stage]) -> None:
        """Raise a ConfigError now (before anything is written) if a stage cannot run here."""
        ...


EXECUTORS: Registry[type[Executor]] = Registry(
    "executor", builtins="dataclaw.pipeline.executors", unknown="unknown executor '{name}' (known: {known})"
)
register_executor = EXECUTORS.add
"""Class decorator: register an executor class under its ``name``."""


async def aiter_items(items: Items) -> AsyncIterator[Record]:
    """``items`` (sync or async) as an async iterator, pulled one at a time."""
    if isinstance(items, AsyncIterable):
        async for item in items:
            yield item
    else:
        for item in items:
            yield item


def is_fatal(exc: BaseException) -> bool:
    """Whether ``exc`` makes the whole stage impossible (its class sets ``fatal = True``)."""
    return bool(getattr(exc, "fatal", False))


def crash_reject(stage: Stage, item: Record, exc: BaseException) -> Reject:
    """The reject of a record whose processing raised ``exc`` (logged: it is a bug in the stage)."""
    log.debug("stage %s failed on %s", stage.name, item.get("id"), exc_info=exc)
    log.warning("stage %s failed on %s: %s: %s", stage.name, item.get("id"), type(exc).__name__, exc)
    return Reject(
        id=item["id"],
        stage=stage.name,
        reason=INTERNAL_ERROR,
        message=f"{type(exc).__name__}: {exc}",
    )


def process_one(stage: Stage, item: Record) -> tuple[Result, bool]:
    """``stage.process(item)`` in this process: a crash is that record's reject (``ok`` False), unless the
    exception makes the whole stage impossible."""
    try:
        return stage.process(item), True
    except Exception as exc:
        if is_fatal(exc):
            raise
        return crash_reject(stage, item, exc), False


@contextlib.contextmanager
def scratch_tempdir(scratch: Path | None) -> Iterator[None]:
    """Point :mod:`tempfile` at ``scratch`` while a stage runs in this process, so the temporary files
    of extractors and tools live in the run directory (and go with it)."""
    if scratch is None:
        yield
        return
    scratch.mkdir(parents=True, exist_ok=True)
    old = tempfile.tempdir
    own = Path(tempfile.mkdtemp(prefix=f"main-{os.getpid()}-", dir=scratch))
    tempfile.tempdir = str(own)
    try:
        yield
    finally:
        tempfile.tempdir = old
        shutil.rmtree(own, ignore_errors=True)


def worker_crashed(stage: Stage, item: Record, crashes: int) -> Reject:
    """The reject of a record whose worker died ``crashes`` times with it (retried on the next run)."""
    return Reject(
        id=item["id"], stage=stage.name, reason=WORKER_CRASHED,
        message=f"the worker processing it died {crashes} times (a crash in native code, or out of memory)",
        detail={"crashes": crashes},
    )  # fmt: skip
