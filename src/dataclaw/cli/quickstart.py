"""``dataclaw quickstart``: run what dataclaw can do on the bundled examples with the embedded model.

Each part is one engine's real job on small inputs; parts are added as the engines grow. Nothing here
fakes work: a part that cannot run says why and the command fails.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

DEFAULT_MODEL = "local:smollm2-135m"

# (name, function(out_dir, model) -> summary lines). Appended to by each engine's part below.
Part = Callable[[Path, str], dict[str, Any]]
PARTS: list[tuple[str, Part]] = []


def quickstart(
    out: Path = typer.Option(Path("runs/quickstart"), "--out", help="Run directory for everything produced."),
    model: str = typer.Option(DEFAULT_MODEL, "--model", help="Model string (local:…, openai:…, http://host/v1::name)."),
) -> None:
    """Run every engine end to end on the bundled examples (offline, embedded model by default)."""
    console = Console()
    out.mkdir(parents=True, exist_ok=True)
    table = Table(title="dataclaw quickstart", show_lines=True)
    table.add_column("part")
    table.add_column("result")
    for name, part in PARTS:
        console.rule(f"[bold]{name}")
        summary = part(out / name, model)
        table.add_row(name, "\n".join(f"{k}: {v}" for k, v in summary.items()))
    console.print(table)
    console.print(f"output written under [bold]{out.resolve()}[/bold]")
