"""Executors run stages: ``local`` (asyncio + a process pool) and ``ray`` (Ray Data), each one module
here registered with ``@register_executor``; more come from entry points (``dataclaw.executors``).

    from dataclaw.pipeline.executors import LocalExecutor, register_executor
"""

from dataclaw.core.moved import keep_old_names
from dataclaw.pipeline.executors.base import (
    EXECUTORS,
    INTERNAL_ERROR,
    WORKER_CRASHED,
    Executor,
    ExecutorSettings,
    Host,
    HostLost,
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
from dataclaw.pipeline.executors.local import LocalExecutor, WorkersDying

__all__ = [
    "EXECUTORS",
    "INTERNAL_ERROR",
    "WORKER_CRASHED",
    "Executor",
    "ExecutorSettings",
    "Host",
    "HostLost",
    "Items",
    "LocalExecutor",
    "Stopping",
    "WorkersDying",
    "aiter_items",
    "crash_reject",
    "is_fatal",
    "process_one",
    "register_executor",
    "scratch_tempdir",
    "worker_crashed",
]

# names that moved out of this module in 0.x, readable here for one release
keep_old_names(
    __name__,
    {
        "BREAKS_BEFORE_ANY_RESULT": "dataclaw.pipeline.executors.local",
        "CRASHES_TO_REJECT": "dataclaw.pipeline.executors.local",
    },
)
