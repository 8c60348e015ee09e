"""One rule for every command that makes records (issue 27): a command that made none exits with status 1
and one line saying why, after its summary: "0 tasks: all 12 rejected at grounded (verifier_unsound 8,
…), see RUN/rejects.jsonl". A script that chains commands then stops at the step that came out empty
instead of feeding nothing to the next one.

Reports are not producers: ``dataclaw quickstart`` prints what each part made, 0 included, and exits 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from dataclaw.core.errors import DataclawError

Stage = tuple[str, int, int, Mapping[str, int]]
"""``(stage, raw, kept, reasons)``: one row of a pipeline table (``StageCount`` is one)."""


class NothingProduced(DataclawError):
    """A command that makes records made none: exit status 1, why in one line (the app prints it)."""


def reasons_text(reasons: Mapping[str, int], limit: int = 6) -> str:
    """``verifier_unsound 8, missing_value 4, … 3 more``: the most frequent reasons first."""
    ranked = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{k} {v}" for k, v in ranked[:limit])
    return shown + (f", … {len(ranked) - limit} more" if len(ranked) > limit else "")


def _see(where: Path | None, file: str) -> str:
    return f", see {where / file}" if where is not None else ""


def require_made(
    what: str,
    made: int,
    *,
    raw: int | None = None,
    reasons: Mapping[str, int] | None = None,
    why: str | None = None,
    where: Path | None = None,
    file: str = "rejects.jsonl",
) -> None:
    """Raise :class:`NothingProduced` when ``made`` is 0: "0 {what}: " then ``why`` when given, else
    "all {raw} rejected ({reasons})" or "nothing to work on"; ``where`` / ``file`` is where to look."""
    if made:
        return
    if why is None:
        if raw:
            listed = reasons_text(reasons or {})
            why = f"all {raw} rejected ({listed or 'no reason recorded'})"
        else:
            why = "nothing to work on (0 inputs)"
    raise NothingProduced(f"0 {what}: {why}{_see(where, file)}")


def require_stages(what: str, stages: Sequence[Stage], *, where: Path | None = None) -> None:
    """Raise :class:`NothingProduced` when the last stage kept none, naming the first stage that came out
    empty and its reject reasons, or that it got no input at all."""
    if not stages or stages[-1][2]:
        return
    for stage, raw, kept, reasons in stages:
        if kept:
            continue
        if not raw:
            require_made(what, 0, why=f"nothing to work on ({stage} got 0 inputs)")
        listed = reasons_text(reasons) or "no reason recorded"
        require_made(what, 0, why=f"all {raw} rejected at {stage} ({listed})", where=where)
