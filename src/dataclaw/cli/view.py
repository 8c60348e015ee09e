"""``dataclaw view RUN [RUN…]``: look at runs in the browser (served locally), or ``--export DIR``."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console


def view(
    runs: list[Path] = typer.Argument(
        ..., help="Run directories (the --out of any command), or a folder of runs; several: side by side."
    ),
    port: int = typer.Option(8765, "--port", help="Port to serve on (0: any free port)."),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to bind (the default is this machine only)."
    ),
    export: Path | None = typer.Option(
        None, "--export", help="Write the pages as static HTML into this folder."
    ),
    cache_dir: Path | None = typer.Option(
        None,
        "--cache-dir",
        help="Where browser previews and thumbnails are cached (default ~/.cache/dataclaw/viewer).",
    ),
    import_verdicts: Path | None = typer.Option(
        None,
        "--import-verdicts",
        help="Append a verdicts file downloaded from a static export's review panel to RUN (one run).",
    ),
) -> None:
    """Serve a local web viewer of runs (samples with their media, environments, tasks, trajectories)."""
    from dataclaw.core.progress import progress_bar
    from dataclaw.viewer import open_site
    from dataclaw.viewer.export import export_site, pages
    from dataclaw.viewer.server import make_server

    console = Console(stderr=True)
    if import_verdicts is not None:
        _import_verdicts(import_verdicts, runs)
        return
    with console.status("indexing the runs"):
        site = open_site(runs, cache_dir)
    for run in site.runs.values():
        for problem in run.problems:
            console.print(f"[yellow]{run.name}: {problem.file}: {problem.message}[/yellow]")
    if export is not None:
        total = sum(1 for _ in pages(site))
        with progress_bar("exporting pages") as update:
            n = export_site(site, export, progress=lambda done: update(done, total))
        typer.echo(f"wrote {n} pages to {export.resolve()} (open {export.resolve() / 'index.html'})")
        return
    server = make_server(site, host, port)
    bound_host, bound_port = server.server_address[:2]
    typer.echo(f"dataclaw view: http://{bound_host}:{bound_port}/ ({len(site.runs)} run(s)); Ctrl-C stops")
    try:
        server.serve_forever()
    finally:
        server.server_close()


def _import_verdicts(path: Path, runs: list[Path]) -> None:
    """``--import-verdicts FILE RUN``: the static viewer's downloaded verdicts into RUN's verdict file."""
    from dataclaw.core.errors import ConfigError
    from dataclaw.core.review import VERDICTS_FILE
    from dataclaw.viewer.run import discover
    from dataclaw.viewer.verdicts import import_verdicts

    if len(runs) != 1:
        raise ConfigError(
            "--import-verdicts FILE takes exactly one RUN: the run the pages were exported from"
        )
    found = [r for r in discover(runs) if r.ok and r.root == runs[0].resolve()]
    if not found:
        raise ConfigError(f"{runs[0]}: not a run directory (no manifest.json and no .jsonl stage file)")
    added, known = import_verdicts(path, found[0])
    typer.echo(
        f"imported {added} verdict(s) into {found[0].root / VERDICTS_FILE}"
        + (f" ({known} already there)" if known else "")
    )
