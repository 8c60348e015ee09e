"""The stage contract: a pure-ish function from one input record to output records or a reject.

A stage never knows which executor runs it and never writes to the store itself; the runner does
that, which is what lets the same stage run in-process, in a process pool or on Ray.
"""

from __future__ import annotations

import asyncio
from abc import ABC
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar

from dataclaw.core.errors import Reject

Record = dict[str, Any]
Result = list[Record] | Reject


class Resources(StrEnum):
    """What a stage spends: CPU work goes to a process pool, ASYNC work (model calls) to the event loop."""

    CPU = "cpu"
    ASYNC = "async"


@dataclass(frozen=True)
class Demand:
    """What one worker of a stage needs: CPUs, memory (MB) and GPUs (a local VLM). The Ray executor
    asks the cluster for exactly this per actor; the local executor runs one worker per CPU."""

    cpus: float = 1.0
    memory_mb: int = 0
    gpus: float = 0.0

    def describe(self) -> str:
        parts = [f"{self.cpus:g} CPU"]
        if self.memory_mb:
            parts.append(f"{self.memory_mb} MB memory")
        if self.gpus:
            parts.append(f"{self.gpus:g} GPU")
        return ", ".join(parts)


class Stage(ABC):
    """Subclass and implement :meth:`process` (CPU) or :meth:`aprocess` (ASYNC).

    ``name`` is the stage's output file (``<run>/<name>.jsonl``). Heavy state (models, decoders) is
    built in :meth:`setup`, once per worker, never in ``__init__``: stages are pickled to workers
    (process-pool workers or Ray actors).
    """

    name: ClassVar[str]
    resources: ClassVar[Resources] = Resources.CPU
    demand: ClassVar[Demand] = Demand()
    """Per worker (actor) resources; declared by the stage, mapped by the executor."""

    def setup(self) -> None:  # noqa: B027 - an optional hook, not abstract
        """Load what the stage needs once per worker."""

    def process(self, item: Record) -> Result:
        raise NotImplementedError(f"stage {self.name} implements neither process nor aprocess")

    async def aprocess(self, item: Record) -> Result:
        return await asyncio.to_thread(self.process, item)

    def reject(self, item: Record, reason: str, message: str, **detail: Any) -> Reject:
        """A reject of ``item`` by this stage."""
        return Reject(id=item["id"], stage=self.name, reason=str(reason), message=message, detail=detail)
