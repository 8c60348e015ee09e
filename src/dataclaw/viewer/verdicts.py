"""Human review in the viewer: the review panel on sample and task pages, saving a verdict (the server's
POST), the next unreviewed record, importing a static export's downloaded verdicts, and the agreement
between reviewers and the run's own gates.

The verdict file itself (``RUN/_viewer/verdicts.jsonl``, append-only, last decision wins) is
:mod:`dataclaw.core.review`'s, so that exports read it without the viewer.
"""

from __future__ import annotations

import getpass
import json
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from dataclaw.core.errors import ConfigError
from dataclaw.core.review import (
    DECISIONS,
    VERDICTS_FILE,
    Review,
    ReviewReader,
    Reviews,
    Verdict,
    VerdictError,
    append_verdicts,
    read_verdict_file,
)
from dataclaw.viewer.markup import esc, short, table

if TYPE_CHECKING:
    from dataclaw.viewer.run import Run
    from dataclaw.viewer.site import Ctx

REVIEWED_STAGES: dict[str, str] = {
    "samples": "sample",
    "validated": "sample",
    "materialize": "sample",
    "tasks": "task",
    "calibrated_tasks": "task",
    "repaired_tasks": "task",
    "responses": "response",
}
"""Stage file → the kind of record a reviewer judges on its pages (responses: so that a reviewer can
also overrule a validator that rejected an answer; only samples and tasks are exported)."""


def default_reviewer() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "reviewer"


_READERS: dict[Path, ReviewReader] = {}
_READERS_LOCK = threading.Lock()


def reviews_of(run: Run) -> Reviews:
    """The run's reviews, read incrementally (a page per record during a review reads only what the
    last verdicts appended, however long the file)."""
    with _READERS_LOCK:
        reader = _READERS.get(run.root)
        if reader is None:
            reader = _READERS[run.root] = ReviewReader(run.root)
    return reader.read()


def kind_in(run: Run, rid: str, kind: str) -> str | None:
    """The stage holding record ``rid`` as a ``kind`` (a sample's final stage first), or None."""
    stages = [s for s, k in REVIEWED_STAGES.items() if k == kind and s in run.indexes]
    return next((s for s in stages if run.indexes[s].find(rid) is not None), None)


# --- saving ----------------------------------------------------------------------------------------
def save_verdict(run: Run, raw: Any) -> tuple[Verdict, Review]:
    """Check a verdict a browser sent (the record must be a sample or task of this run), stamp it now,
    append it; returns it and the record's review after it."""
    if isinstance(raw, dict) and not raw.get("reviewer"):
        raw = {**raw, "reviewer": default_reviewer()}
    verdict = Verdict.from_dict(raw, now=True)
    stage = kind_in(run, verdict.id, verdict.kind)
    if stage is None:  # perhaps appended since the last look (a live run): look again once
        run.refresh()
        stage = kind_in(run, verdict.id, verdict.kind)
    if stage is None:
        raise VerdictError(f"run {run.name} has no {verdict.kind} {short(verdict.id, 120)}")
    if verdict.stage != stage:
        verdict = Verdict(**{**verdict.to_dict(), "stage": stage})
    append_verdicts(run.root, [verdict])
    review = reviews_of(run).get(verdict.id, verdict.kind)
    assert review is not None
    return verdict, review


def import_verdicts(path: Path, run: Run) -> tuple[int, int]:
    """Append a downloaded verdict file's lines to ``run`` (every id must be a sample or task of the run;
    one that is not refuses the whole file); returns (imported, already present)."""
    verdicts = read_verdict_file(path)
    if not verdicts:
        raise ConfigError(f"{path}: no verdicts in the file")
    missing = [v for v in verdicts if kind_in(run, v.id, v.kind) is None]
    if missing:
        m = missing[0]
        raise ConfigError(
            f"{path}: {len(missing)} verdict(s) name records that are not in {run.root} (the first: "
            f"{m.kind} {short(m.id, 120)}); import into the run the pages were exported from"
        )
    have = {
        json.dumps(v.to_dict(), sort_keys=True) for r in reviews_of(run).by_id.values() for v in r.history
    }
    new = [v for v in verdicts if json.dumps(v.to_dict(), sort_keys=True) not in have]
    append_verdicts(run.root, new)
    return len(new), len(verdicts) - len(new)


def next_unreviewed(run: Run, stage: str, after: int) -> int | None:
    """The position of the first record of ``stage`` after ``after`` (wrapping round) with no decision."""
    idx = run.indexes.get(stage)
    kind = REVIEWED_STAGES.get(stage)
    if idx is None or kind is None or not len(idx):
        return None
    reviews = reviews_of(run)
    decided = {idx.find(rid) for rid, r in reviews.by_id.items() if r.kind == kind and r.decision is not None}
    n = len(idx)
    for step in range(1, n + 1):
        pos = (after + step) % n
        if pos not in decided:
            return pos
    return None


# --- the review panel -------------------------------------------------------------------------------
def panel(rec: dict[str, Any], ctx: Ctx) -> str:
    """The review block of a sample or task page: the record's review so far, accept / reject / note
    buttons (keys a, r, n; j / k next and previous; u next unreviewed) and, in a static export, the
    download of the verdicts kept in this browser."""
    stage = ctx.stage or ""
    kind = REVIEWED_STAGES.get(stage)
    rid = rec.get("id")
    if kind is None or not isinstance(rid, str):
        return ""
    pos = ctx.run.index(stage).find(rid) if stage in ctx.run.indexes else None
    static = ctx.site.export is not None
    review = reviews_of(ctx.run).get(rid, kind)
    save = "" if static else f"{ctx.base}verdicts"
    unreviewed = "" if static else f"{ctx.base}{quote(stage)}/unreviewed?after={pos}"
    baked = json.dumps(
        {"decision": review.decision, "reviewer": review.reviewer, "time": review.time} if review else {}
    )
    attrs = {
        "data-id": rid,
        "data-kind": kind,
        "data-stage": stage,
        "data-pos": str(pos),
        "data-run": str(ctx.run.root),
        "data-save": save,
        "data-unreviewed": unreviewed,
        "data-review": baked,
    }
    attr = " ".join(f'{k}="{esc(v)}"' for k, v in attrs.items())
    notes = ""
    if review and review.history:
        rows = [
            [esc(v.verdict), esc(v.reviewer), esc(v.time), esc(short(v.note, 300))]
            for v in review.history[-10:]
        ]
        notes = (
            "<details class=review-history><summary>history</summary>"
            + table(["verdict", "reviewer", "time", "note"], rows, "review-history")
            + "</details>"
        )
    download = (
        "<button type=button class=review-download>download verdicts</button>"
        " <small class=note>kept in this browser; load them into the run with"
        " <code>dataclaw view --import-verdicts FILE RUN</code></small>"
        if static
        else ""
    )
    return (
        f'<link rel=stylesheet href="{ctx.root}static/review.css">'
        f"<section class=review {attr}><h2>Review</h2>"
        f"<p>verdict: {_state(review)} <span class=review-status role=status aria-live=polite></span></p>"
        "<p class=review-buttons>"
        "<button type=button data-verdict=accept>accept <kbd>a</kbd></button> "
        "<button type=button data-verdict=reject>reject <kbd>r</kbd></button> "
        "<label>reviewer <input name=reviewer size=12 autocomplete=off></label> "
        "<small class=note>keys: <kbd>n</kbd> note · <kbd>j</kbd>/<kbd>k</kbd> next/previous ·"
        " <kbd>u</kbd> next unreviewed</small></p>"
        '<p><textarea name=note rows=2 cols=70 placeholder="a note (n; Enter saves)"></textarea>'
        " <button type=button data-verdict=note>save note</button></p>"
        f"{download}{notes}</section>"
        f'<script defer src="{ctx.root}static/review.js"></script>'
    )


def _state(review: Review | None) -> str:
    if review is None or review.decision is None:
        extra = f" ({len(review.notes)} note(s))" if review and review.notes else ""
        return f'<span class="badge review-state">unreviewed</span>{esc(extra)}'
    cls = "ok" if review.decision == "accept" else "bad"
    label = "accepted" if review.decision == "accept" else "rejected"
    return (
        f'<span class="badge review-state {cls}">{label}</span> <small>by {esc(review.reviewer)}'
        f" at {esc(review.time)}</small>"
    )


# --- agreement with the gates ------------------------------------------------------------------------
def gates_of(run: Run, rid: str, kind: str, failures: dict[str, list[str]] | None = None) -> dict[str, bool]:
    """The run's own gates on a record, by name → passed: a sample's validator checks; a task's verifier
    proof, soundness policies, rubric and calibration verdicts and claw-audit checks where it has them; a
    response's validation (passed, or each validator that failed it: ``failures``, from the rejects)."""
    stage = kind_in(run, rid, kind)
    rec = run.record(stage, rid) if stage else None
    if rec is None:
        return {}
    if kind == "response":
        verdict = run.verdicts.get("validated", {}).get(rid)
        if verdict is None:
            return {}  # never validated: nothing to agree with
        if verdict == "":
            return {"validation": True}
        names = (failures if failures is not None else validation_failures(run)).get(rid) or []
        return {f"validation:{n}": False for n in names} or {f"validation:{verdict}": False}
    if kind == "sample":
        checks = rec.get("checks")
        return {str(k): bool(v) for k, v in checks.items()} if isinstance(checks, dict) else {}
    meta = rec.get("metadata") if isinstance(rec.get("metadata"), dict) else {}
    gates: dict[str, bool] = {}
    proof = meta.get("verifier_check")
    if isinstance(proof, dict) and "gold" in proof:
        initial = proof.get("initial")
        gates["verifier_proof"] = (
            proof.get("gold") == 1.0 and isinstance(initial, int | float) and initial < 1
        )
    sound = meta.get("soundness")
    if isinstance(sound, dict):
        for policy, fig in (sound.get("figures") or {}).items():
            if isinstance(fig, dict) and "ok" in fig:
                gates[f"soundness:{policy}"] = bool(fig["ok"])
    for stage_name in ("rubric", "calibration", "code_audit"):
        other = run.record(stage_name, rid)
        if other is None:
            continue
        if "passed" in other:
            gates[stage_name] = bool(other["passed"])
        for check in other.get("checks") or []:
            if isinstance(check, dict) and isinstance(check.get("name"), str) and "passed" in check:
                gates[f"{stage_name}:{check['name']}"] = bool(check["passed"])
    return gates


def validation_failures(run: Run) -> dict[str, list[str]]:
    """Response id → the validators that failed it (its current validation reject's failures)."""
    idx = run.indexes.get("rejects")
    out: dict[str, list[str]] = {}
    for n in range(len(idx) if idx is not None else 0):
        if idx.facets[n].get("stage") != "validated":  # type: ignore[union-attr]
            continue
        rec = idx.get(n)  # type: ignore[union-attr]
        detail = rec.get("detail") if isinstance(rec.get("detail"), dict) else {}
        names = [str(f.get("validator")) for f in detail.get("failures") or [] if isinstance(f, dict)]
        if isinstance(rec.get("record_id"), str):
            out[rec["record_id"]] = names or [str(rec.get("reason"))]
    return out


def agreement(run: Run) -> dict[str, Any]:
    """Reviewers against the gates, over the records with a decision: how many were accepted / rejected,
    how often the reviewer and the gates agree (gates pass ⇔ accept; over the records that carry gate
    verdicts, the others counted as ``no_gates``), and the disagreements — records a
    reviewer rejected although every gate passed them (with the gates that let them through, the ones
    that missed) and records a reviewer accepted that a gate failed."""
    reviews = reviews_of(run)
    out: dict[str, Any] = {
        "reviewed": 0,
        "accepted": 0,
        "rejected": 0,
        "notes": sum(len(r.notes) for r in reviews.by_id.values()),
        "compared": 0,
        "agree": 0,
        "agreement": None,
        "no_gates": 0,
        "rejected_but_gates_passed": [],
        "accepted_but_gates_failed": [],
        "not_in_run": 0,
        "problems": list(reviews.problems),
    }
    failures = (
        validation_failures(run)
        if any(r.kind == "response" and r.decision for r in reviews.by_id.values())
        else {}
    )
    for review in reviews.by_id.values():
        if review.decision not in DECISIONS:
            continue
        if kind_in(run, review.id, review.kind) is None:
            out["not_in_run"] += 1
            continue
        out["reviewed"] += 1
        out["accepted" if review.decision == "accept" else "rejected"] += 1
        gates = gates_of(run, review.id, review.kind, failures)
        if not gates:  # nothing recorded to agree with: counted apart, never as a pass
            out["no_gates"] += 1
            continue
        out["compared"] += 1
        gates_pass = all(gates.values())
        human_pass = review.decision == "accept"
        row = {"id": review.id, "kind": review.kind, "reviewer": review.reviewer, "note": review.note}
        if gates_pass == human_pass:
            out["agree"] += 1
        elif gates_pass:
            out["rejected_but_gates_passed"].append({**row, "gates_passed": sorted(gates)})
        else:
            failed = sorted(g for g, ok in gates.items() if not ok)
            out["accepted_but_gates_failed"].append({**row, "gates_failed": failed})
    if out["compared"]:
        out["agreement"] = round(out["agree"] / out["compared"], 4)
    return out


def agreement_block(run: Run, ctx: Ctx) -> str:
    """The overview's review section: counts, agreement with the gates, the gates that missed what a
    reviewer rejected. Empty when the run has no verdicts."""
    if not (run.root / VERDICTS_FILE).is_file():
        return ""
    a = agreement(run)
    body = "<section class=agreement><h2>Human review</h2>"
    body += "".join(f"<p class=bad>{esc(p)}</p>" for p in a["problems"])
    rate = "—" if a["agreement"] is None else f"{100 * a['agreement']:.0f}%"
    body += (
        f"<p><b>{a['reviewed']:,}</b> records with a verdict: <b>{a['accepted']:,}</b> accepted,"
        f" <b>{a['rejected']:,}</b> rejected, {a['notes']:,} note(s); agreement with the gates:"
        f" <b class=agreement-rate>{rate}</b></p>"
    )
    if a["no_gates"]:
        body += f"<p class=note>{a['no_gates']} reviewed record(s) carry no gate verdicts to compare with</p>"
    if a["not_in_run"]:
        body += f"<p class=note>{a['not_in_run']} verdict(s) name records no longer in the run</p>"
    body += _disagreements(ctx, a["rejected_but_gates_passed"], "Rejected by a reviewer, passed by the gates",
                           "gates that passed it", "gates_passed")  # fmt: skip
    body += _disagreements(ctx, a["accepted_but_gates_failed"], "Accepted by a reviewer, failed by a gate",
                           "gates that failed it", "gates_failed")  # fmt: skip
    return body + "</section>"


def _disagreements(ctx: Ctx, rows: Iterable[dict[str, Any]], title: str, col: str, key: str) -> str:
    cells = [
        [
            ctx.id_link(r["id"]),
            esc(r["kind"]),
            esc(r["reviewer"]),
            esc(short(r["note"], 200)),
            " ".join(f"<code>{esc(g)}</code>" for g in r[key]) or "<span class=note>none recorded</span>",
        ]
        for r in rows
    ]
    if not cells:
        return ""
    return f"<h3>{esc(title)}</h3>" + table(["record", "kind", "reviewer", "note", col], cells, "disagree")
