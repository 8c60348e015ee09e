"""Audit several packages and show the result: targets → reports → a rich table and a JSON document."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from dataclaw.core.errors import ConfigError
from dataclaw.envcraft.audit import AuditReport, DynamicOptions, audit_package
from dataclaw.sandbox import SandboxUnavailable, sandbox_available
from dataclaw.sandbox.runner import warn_unsafe


def resolve_targets(targets: list[str], all_archetypes: bool = False) -> list[Path]:
    """Package folders from archetype names or paths (``all_archetypes`` adds every registered one)."""
    from dataclaw.envcraft import archetypes

    out = [archetypes.archetype(n).folder for n in archetypes.names()] if all_archetypes else []
    for t in targets:
        if Path(t).is_dir():
            out.append(Path(t).resolve())
        elif t in archetypes.names():
            out.append(archetypes.archetype(t).folder)
        else:
            raise ConfigError(
                f"{t!r} is neither a package folder nor an archetype ({', '.join(archetypes.names())})"
            )
    if not out:
        raise ConfigError("nothing to audit: give package folders / archetype names, or --all-archetypes")
    return out


def check_sandbox(unsafe: bool) -> None:
    """Refuse (with the sandbox's own refusal) when bubblewrap cannot run, unless ``unsafe`` opts out."""
    if unsafe:
        warn_unsafe()
        return
    avail = sandbox_available()
    if not avail:
        raise SandboxUnavailable(avail.refusal)


def audit_all(
    paths: list[Path], options: DynamicOptions, *, dynamic: bool = True, workers: int = 1
) -> list[AuditReport]:
    """Audit each package, ``workers`` at once on the current executor, each in its own fresh sandbox
    workspace; the reports come back in the order of ``paths``."""
    from dataclaw.pipeline.registry import make_executor

    audit = partial(audit_package, options=options, dynamic=dynamic)
    done = dict(make_executor(workers=workers).calls(audit, paths, max(1, min(workers, len(paths)))))
    return [done[p] for p in paths]


def to_json(reports: list[AuditReport]) -> dict[str, Any]:
    return {
        "passed": all(r.passed for r in reports),
        "environments": len(reports),
        "failed": [r.env for r in reports if not r.passed],
        "reports": [r.model_dump(mode="json") for r in reports],
    }


def write_json(reports: list[AuditReport], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_json(reports), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def render_table(reports: list[AuditReport], console: Console | None = None) -> None:
    """One row per environment (verdict, findings, checks, time), then every failure reason, one a line."""
    table = Table()
    table.add_column("environment", no_wrap=True)
    for name in ("result", "static", "dynamic", "seconds"):
        table.add_column(name, no_wrap=True)
    for r in reports:
        ok_checks = sum(1 for c in r.checks if c.ok)
        table.add_row(
            r.env,
            "[green]PASS[/green]" if r.passed else "[red]FAIL[/red]",
            f"{len(r.findings)} finding(s)",
            f"{ok_checks}/{len(r.checks)} ok" if r.checks else "not run",
            f"{r.timings.get('total_s', 0.0):.1f}",
        )
    console = console or Console()
    console.print(table)
    for r in reports:
        if not r.passed:
            console.print(f"[red]FAIL[/red] {r.env} ({r.path})", highlight=False)
            for reason in r.reasons():
                console.print(f"  {reason}", highlight=False, markup=False, soft_wrap=True)
    failed = [r.env for r in reports if not r.passed]
    console.print(
        f"{len(reports) - len(failed)}/{len(reports)} environments passed"
        + (f"; failed: {', '.join(failed)}" if failed else ""),
        highlight=False,
    )
