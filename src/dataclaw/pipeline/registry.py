"""The executor seam: executors by name (``local``, ``ray``), chosen once per command.

Every call site asks :func:`make_executor` for its executor (with the window it wants: ``workers``,
``concurrency``) instead of building one; which executor that is comes from the settings passed in, or
the ones a command set with :func:`using_executor` (the CLI's ``--executor`` / ``--ray-address``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar

from pydantic import BaseModel, ConfigDict

from dataclaw.core.errors import ConfigError
from dataclaw.pipeline.executors import Executor, LocalExecutor
from dataclaw.pipeline.stage import Stage


class ExecutorSettings(BaseModel):
    """Which executor runs a command's stages, and where (``ray_address``: a Ray cluster; None starts
    one on this machine, or joins ``RAY_ADDRESS``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "local"
    ray_address: str | None = None


Factory = Callable[[ExecutorSettings, "int | None", int], Executor]
EXECUTORS: dict[str, Factory] = {}


def register_executor(name: str) -> Callable[[Factory], Factory]:
    """Register ``factory(settings, workers, concurrency)`` under ``name``."""

    def deco(factory: Factory) -> Factory:
        EXECUTORS[name] = factory
        return factory

    return deco


@register_executor("local")
def _local(settings: ExecutorSettings, workers: int | None, concurrency: int) -> Executor:
    if settings.ray_address:
        raise ConfigError("--ray-address is for --executor ray (the local executor runs on this machine)")
    return LocalExecutor(workers=workers, concurrency=concurrency)


@register_executor("ray")
def _ray(settings: ExecutorSettings, workers: int | None, concurrency: int) -> Executor:
    from dataclaw.pipeline.ray_executor import RayExecutor  # imports ray only when it is asked for

    return RayExecutor(address=settings.ray_address, workers=workers, concurrency=concurrency)


_CURRENT: ContextVar[ExecutorSettings | None] = ContextVar("dataclaw_executor", default=None)


def current_settings() -> ExecutorSettings:
    """The executor settings in force (the command's, else local)."""
    return _CURRENT.get() or ExecutorSettings()


@contextlib.contextmanager
def using_executor(settings: ExecutorSettings) -> Iterator[ExecutorSettings]:
    """Make ``settings`` the executor of everything run inside (checked first: unknown names fail)."""
    if settings.name not in EXECUTORS:
        raise ConfigError(f"unknown executor {settings.name!r} (known: {', '.join(sorted(EXECUTORS))})")
    token = _CURRENT.set(settings)
    try:
        yield settings
    finally:
        _CURRENT.reset(token)


def make_executor(
    workers: int | None = None,
    concurrency: int = 16,
    *,
    settings: ExecutorSettings | None = None,
    stages: Iterable[Stage] = (),
) -> Executor:
    """The executor of ``settings`` (default: the current ones) with this window; ``stages`` are
    checked against it now, so a stage that cannot run fails before the command writes anything."""
    settings = settings or current_settings()
    factory = EXECUTORS.get(settings.name)
    if factory is None:
        raise ConfigError(f"unknown executor {settings.name!r} (known: {', '.join(sorted(EXECUTORS))})")
    executor = factory(settings, workers, concurrency)
    executor.check(list(stages))
    return executor
