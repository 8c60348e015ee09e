"""Exports of EnvCraft task sets to RL trainers (files, never imports of a trainer).

``export_tasks(tasks, to, out)`` checks the task set (one environment group, environments that load and pass
their audit, gold chains that still pass their verifiers) and writes what the trainer loads. Formats are a
registry (:data:`EXPORTERS`): ``trl`` (:mod:`.trl`), ``verl`` (:mod:`.verl`). What the generated files run
is :mod:`.episode`, in dataclaw's light core.
"""

from __future__ import annotations

from pathlib import Path

from dataclaw.core.registry import Registry
from dataclaw.envcraft.export.base import Exporter, ExportError, ExportResult, Prepared, prepare

EXPORTERS: Registry[type[Exporter]] = Registry(
    "trainer export", builtins=["dataclaw.envcraft.export.trl", "dataclaw.envcraft.export.verl"]
)


def export_tasks(
    tasks: str | Path,
    to: str,
    out: str | Path,
    *,
    group: str | None = None,
    reward: str = "binary",
    check: bool = True,
    reviewed_only: bool = False,
) -> ExportResult:
    """Export the task set ``tasks`` (a tasks.jsonl or a run folder) to trainer format ``to`` in ``out``;
    tasks a reviewer rejected are left out, and with ``reviewed_only`` those nobody decided on."""
    exporter = EXPORTERS.get(to)()
    prep = prepare(tasks, group=group, reward=reward, check=check, reviewed_only=reviewed_only)
    result = exporter.write(prep, Path(out))
    result.soundness = prep.soundness
    result.left_out = prep.left_out
    return result


__all__ = ["EXPORTERS", "ExportError", "ExportResult", "Exporter", "Prepared", "export_tasks", "prepare"]
