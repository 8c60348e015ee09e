"""The ``--executor`` / ``--ray-address`` options every long command shares, and the scope they set.

A command takes :class:`ExecutorOptions` (``@with_options(executor=ExecutorOptions)``) and runs its work
inside :func:`executor_scope`; every stage, audit and rollout inside asks
:func:`dataclaw.pipeline.registry.make_executor` and gets the chosen executor.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dataclaw.pipeline.registry import ExecutorSettings


@dataclass(frozen=True)
class ExecutorOptions:
    """Where a command's stages run."""

    executor: str = field(
        default="local",
        metadata={
            "flags": ("--executor",),
            "help": "Where stages run: local (this machine: processes and asyncio) or ray (a Ray cluster; "
            "needs pip install 'dataclaw\\[ray]').",  # escaped: rich would read [ray] as markup
        },
    )
    ray_address: str | None = field(
        default=None,
        metadata={
            "flags": ("--ray-address",),
            "help": "Ray cluster to join (HOST:PORT, ray://HOST:PORT or auto); default: RAY_ADDRESS, else a "
            "Ray started on this machine. Only with --executor ray.",
        },
    )


@contextlib.contextmanager
def executor_scope(options: ExecutorOptions) -> Iterator[ExecutorSettings]:
    """Run the command's work on ``options.executor``. Unknown names, a stray ``--ray-address``, Ray missing
    or an address that does not answer fail here, before the command writes anything."""
    from dataclaw.pipeline.registry import ExecutorSettings, make_executor, using_executor

    settings = ExecutorSettings(
        name=options.executor.strip().lower(), ray_address=options.ray_address or None
    )
    with using_executor(settings):
        make_executor(settings=settings)  # connects now (Ray: joins or starts the cluster)
        yield settings
