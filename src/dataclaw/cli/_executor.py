"""The ``--executor`` / ``--ray-address`` options every long command shares, and the scope they set.

A command takes both options and runs its work inside :func:`executor_scope`; every stage, audit and
rollout inside asks :func:`dataclaw.pipeline.registry.make_executor` and gets the chosen executor.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from dataclaw.pipeline.registry import ExecutorSettings

ExecutorName = Annotated[
    str,
    typer.Option(
        "--executor",
        help="Where stages run: local (this machine: processes and asyncio) or ray (a Ray cluster; "
        "needs pip install 'dataclaw[ray]').",
    ),
]
RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        help="Ray cluster to join (HOST:PORT, ray://HOST:PORT or auto); default: RAY_ADDRESS, else a Ray "
        "started on this machine. Only with --executor ray.",
    ),
]


@contextlib.contextmanager
def executor_scope(executor: str = "local", ray_address: str | None = None) -> Iterator[ExecutorSettings]:
    """Run the command's work on ``executor``. Unknown names, a stray ``--ray-address``, Ray missing or
    an address that does not answer fail here, before the command writes anything."""
    from dataclaw.pipeline.registry import ExecutorSettings, make_executor, using_executor

    settings = ExecutorSettings(name=executor.strip().lower(), ray_address=ray_address or None)
    with using_executor(settings):
        make_executor(settings=settings)  # connects now (Ray: joins or starts the cluster)
        yield settings
