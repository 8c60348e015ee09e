"""What ``dataclaw env import`` and ``dataclaw tasks import`` share: their options, the run with a
progress bar and its summary, and the list of importers."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rich.table import Table

from dataclaw.cli._produced import require_made
from dataclaw.cli._summary import console, stage_summary
from dataclaw.core.errors import ConfigError
from dataclaw.sandbox import SandboxPolicy


@dataclass(frozen=True)
class ImportOptions:
    """How an import runs."""

    workers: int = field(default=1, metadata={"help": "Items converted at once (processes)."})
    limit: int | None = field(default=None, metadata={"help": "Only the first N items."})
    list_formats: bool = field(
        default=False, metadata={"flags": ("--list",), "help": "List the importers and exit."}
    )


def run_import_cli(
    fmt: str, src: Path, out: Path, produce: str, options: ImportOptions, *, unsafe: bool
) -> None:
    """Run the importer with a progress bar, print the summary (items, imported, resumed, reject reasons
    with the first messages). Exit 1 when nothing was imported, naming why."""
    from dataclaw.core.progress import progress_bar
    from dataclaw.envcraft.importers import Produces, run_import

    if options.workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {options.workers}")
    with progress_bar(f"import {fmt}") as bar:
        s = run_import(
            fmt, src, out, Produces(produce), policy=SandboxPolicy(unsafe=unsafe), workers=options.workers,
            limit=options.limit, progress=bar,
        )  # fmt: skip
    stage_summary([(f"import {s.format} → {s.produce}", s.items, s.imported, s.rejects)])
    for line in s.reject_messages[:10]:
        console.print(f"reject: {line}", markup=False, highlight=False)
    if len(s.reject_messages) > 10:
        console.print(f"… {len(s.reject_messages) - 10} more in {out / 'rejects.jsonl'}")
    resumed = f" ({s.resumed} done by an earlier run)" if s.resumed else ""
    console.print(f"{s.produce}: {s.records} records in {out / s.file}{resumed}")
    if s.produce == "environments":
        _runnable_line(out / s.file, s.format)
    why = None if s.items else f"{src} holds no {s.format} item"
    require_made(s.produce, s.imported, raw=s.items, reasons=s.rejects, why=why, where=out)


def _runnable_line(index: Path, fmt: str) -> None:
    """Imported is not runnable: how many of the format's imported environments are (their package loads,
    passes the audit, its tools answer), and why the others are not."""
    import json

    try:
        lines = index.read_text(encoding="utf-8").splitlines()
    except OSError:
        return
    rows = [r for r in map(json.loads, filter(None, lines)) if str(r.get("source", "")).startswith(f"{fmt}:")]
    if not rows:
        return
    ok = [r for r in rows if r.get("passed")]
    console.print(f"runnable: {len(ok)} of {len(rows)} imported environments", markup=False, highlight=False)
    for r in [r for r in rows if not r.get("passed")][:10]:
        why = (r.get("reasons") or [{}])[0]
        console.print(
            f"not runnable: {r.get('env')}: {why.get('code', '?')}: {str(why.get('message', ''))[:200]}",
            markup=False, highlight=False,
        )  # fmt: skip


def list_importers(produce: str) -> None:
    """The importers that make ``produce`` (tasks or environments)."""
    from dataclaw.envcraft.importers import IMPORTERS

    table = Table(title="importers")
    for col in ("format", "makes", "description"):
        table.add_column(col)
    for name, cls in IMPORTERS.items():
        if produce in cls.produces:
            table.add_row(name, ", ".join(sorted(p.value for p in cls.produces)), cls.description)
    console.print(table)
