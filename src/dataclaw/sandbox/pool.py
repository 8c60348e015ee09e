"""``reuse_workers()``: inside the block, sandboxed Python runs go to one warm worker per workspace.

A one-shot run pays for bubblewrap's namespaces, a fresh interpreter and the program's first imports every
time. Code that runs several short programs on the same workspace — a claw task audit builds a workspace,
then runs the verifier on it — can wrap that work in ``with reuse_workers():`` without changing its calls:
each :func:`dataclaw.sandbox.run` of Python source in the block (same thread or task: the pool is a
context variable) is served by a :class:`~dataclaw.sandbox.worker.WarmWorker` for that workspace, started
on first use (with common standard-library modules imported) and stopped when the block ends. Every
program still runs in a fresh forked child with its own limits, timeout, disk quota and classification;
what the programs of one workspace share is the worker (its uid, and its PID namespace, swept after each
program) — the guarantees the warm worker documents. Argv programs, stdin, unsafe mode and ``rw_paths``
grants keep the one-shot path.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dataclaw.sandbox.runner import WORKERS
from dataclaw.sandbox.types import Limits, Outcome, SandboxPolicy
from dataclaw.sandbox.worker import WarmWorker

# The worker's own ceilings: each program lowers them to its Limits (rlimits can be lowered, not raised).
_CEILING = Limits()
# Imported once per worker, so the programs it serves start with them (the worker itself has json, re …).
PRELOAD = ("csv",)


class WorkerPool:
    """Warm workers keyed by workspace and the limits a worker fixes at start; at most ``size`` live."""

    def __init__(self, size: int = 4) -> None:
        self.size = max(1, size)
        self._workers: OrderedDict[tuple[Any, ...], WarmWorker] = OrderedDict()
        self.started = 0

    @staticmethod
    def accepts(program: object, policy: SandboxPolicy, stdin: bytes | None) -> bool:
        """Whether a run can go to a worker: Python source, sandboxed, no stdin, no writable grants."""
        return isinstance(program, str) and not policy.unsafe and stdin is None and not policy.rw_paths

    def run(
        self,
        program: str,
        workspace: Path,
        limits: Limits,
        policy: SandboxPolicy,
        env: dict[str, str] | None,
        args: Sequence[str],
        cwd: str | None,
    ) -> Outcome:
        key = (workspace, policy, limits.stdlib_only, limits.processes, limits.tmp_mb)
        worker = self._workers.get(key)
        if worker is None:
            while len(self._workers) >= self.size:
                self._workers.popitem(last=False)[1].cleanup()
            start = dataclasses.replace(
                limits,
                memory_mb=max(limits.memory_mb, _CEILING.memory_mb),
                file_size_mb=max(limits.file_size_mb, _CEILING.file_size_mb),
                open_files=max(limits.open_files, _CEILING.open_files),
            )
            worker = WarmWorker(workspace, start, policy=policy, preload=PRELOAD)
            worker.start()
            self._workers[key] = worker
            self.started += 1
        self._workers.move_to_end(key)
        return worker.run(program, args=args, env=env, cwd=cwd, limits=limits)

    def close(self) -> None:
        while self._workers:
            self._workers.popitem()[1].cleanup()


def active() -> WorkerPool | None:
    """The pool of the enclosing :func:`reuse_workers` block, if any."""
    return WORKERS.get()


@contextmanager
def reuse_workers(size: int = 4) -> Iterator[WorkerPool]:
    """Serve the block's sandboxed Python runs from warm workers (one per workspace); stop them at the end."""
    pool = WorkerPool(size)
    token = WORKERS.set(pool)
    try:
        yield pool
    finally:
        WORKERS.reset(token)
        pool.close()
