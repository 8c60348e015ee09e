"""``dataclaw tasks export``: a task set → the files a trainer loads (registered by ``cli/tasks.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

console = Console()


def export_command(
    tasks: Annotated[Path, typer.Argument(help="tasks.jsonl of `dataclaw tasks synth` (or its run folder).")],
    to: Annotated[str, typer.Option("--to", help="Trainer format: trl or verl.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the export into.")],
    env: Annotated[
        str | None,
        typer.Option("--env", help="The environment group to export when TASKS mixes several (a, a+b)."),
    ] = None,
    reward: Annotated[
        str,
        typer.Option(help="binary: 1.0 only when every verifier assertion holds (D.3); fraction: partial."),
    ] = "binary",
    check: Annotated[
        bool, typer.Option(help="Replay every gold chain first; refuse when one no longer scores 1.0.")
    ] = True,
    reviewed_only: Annotated[
        bool,
        typer.Option(
            "--reviewed-only",
            help="Only tasks a reviewer accepted in `dataclaw view` (rejected ones are always left out).",
        ),
    ] = False,
) -> None:
    """Write what a trainer loads: TRL (an environment_factory class, dataset, reward function) or VERL
    (parquet, tool-config YAML, BaseTool adapters, compute_score). One environment group per export."""
    from dataclaw.envcraft.export import export_tasks
    from dataclaw.envcraft.export.base import soundness_lines
    from dataclaw.envcraft.export.rollouts import rollout_lines

    result = export_tasks(tasks, to, out, group=env, reward=reward, check=check, reviewed_only=reviewed_only)
    console.print(
        f"exported {result.tasks} tasks of [bold]{result.group}[/] for {result.format} to {result.out}"
    )
    for reason, n in sorted(result.left_out.items()):
        console.print(f"  left out: {n} {reason} (the run's human verdicts)", markup=False)
    for name in result.files:
        console.print(f"  {name}")
    for line in soundness_lines(result.soundness):
        console.print(line, markup=False, highlight=False)
    for line in rollout_lines(result.out):
        console.print(line, markup=False, highlight=False)
    console.print(f"use: {result.usage}  (see {result.out / 'README.md'})")
