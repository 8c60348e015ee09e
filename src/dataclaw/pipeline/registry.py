"""The executor seam: executors by name (``local``, ``ray``, any registered one), chosen once per command.

Every call site asks :func:`make_executor` for its executor (with the window it wants: ``workers``,
``concurrency``) instead of building one; which executor that is comes from the settings passed in, or
the ones a command set with :func:`using_executor` (the CLI's ``--executor`` / ``--ray-address``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from contextvars import ContextVar

from dataclaw.core.moved import keep_old_names
from dataclaw.pipeline.executors.base import EXECUTORS, Executor, ExecutorSettings
from dataclaw.pipeline.stage import Stage

_CURRENT: ContextVar[ExecutorSettings | None] = ContextVar("dataclaw_executor", default=None)


def current_settings() -> ExecutorSettings:
    """The executor settings in force (the command's, else local)."""
    return _CURRENT.get() or ExecutorSettings()


@contextlib.contextmanager
def using_executor(settings: ExecutorSettings) -> Iterator[ExecutorSettings]:
    """Make ``settings`` the executor of everything run inside (checked first: unknown names fail)."""
    EXECUTORS.get(settings.name)
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
    executor = EXECUTORS.get(settings.name).from_settings(settings, workers, concurrency)
    executor.check(list(stages))
    return executor


# names that moved out of this module in 0.x, readable here for one release
keep_old_names(
    __name__,
    {
        "register_executor": "dataclaw.pipeline.executors.base",
    },
)
