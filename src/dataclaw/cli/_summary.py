"""The per-stage summary table (raw → kept, pass rate, reject reasons) the EnvCraft commands print."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

console = Console()

# EnvCraft Table 2: data entries kept after quality auditing, out of the raw candidates
PAPER_RAW, PAPER_KEPT = 35_464, 19_777


def stage_summary(rows: list[tuple[str, int, int, dict[str, int]]], *, paper: bool = False) -> None:
    """Per stage raw → kept, pass rate and reject reasons. ``paper``: a task synthesis summary, so the
    end-to-end rate is shown next to the paper's (Table 2 counts synthesised candidates kept after
    auditing; it says nothing about audits, calibrations or samples of other task sets)."""
    raw, kept = (rows[0][1], rows[-1][2]) if rows else (0, 0)
    overall = f"{kept}/{raw} = {kept / raw:.1%}" if raw else "-"
    caption = f"end to end {overall}"
    if paper:
        caption += f" · paper (Table 2, after auditing) {PAPER_RAW:,} → {PAPER_KEPT:,} = "
        caption += f"{PAPER_KEPT / PAPER_RAW:.1%}"
    table = Table(title="tasks pipeline", caption=caption)
    for col in ("stage", "raw", "kept", "pass rate", "reject reasons"):
        table.add_column(col)
    for stage, raw, kept, reasons in rows:
        rate = f"{kept / raw:.1%}" if raw else "-"
        why = ", ".join(f"{k}={v}" for k, v in sorted(reasons.items(), key=lambda x: -x[1]))
        table.add_row(stage, str(raw), str(kept), rate, why)
    console.print(table)
