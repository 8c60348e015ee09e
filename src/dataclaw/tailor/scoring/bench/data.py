"""Predictions and references for ``tailor bench``: reading them, and pairing each prediction with its
reference.

Predictions come from a Tailor run directory (``responses.jsonl``: every answer the model gave, valid or
not, so the JSON gate sees the failures validation later dropped; ``samples.jsonl`` when a run has no
responses) or from a JSONL file of records with ``intent`` and ``output`` (an object, or the raw text) or
``raw_text``. References are a JSONL file (or run directory) of sample-shaped records: ``id``,
``intent``, ``output`` valid against the intent's schema, optionally ``stream_id`` / ``candidate_id``,
``fuzzy: true`` (or a ``route.intent_choice`` made from a fuzzy request) and ``frame_range: [lo, hi]``.

Pairing: by id; else by (candidate, intent); else by (stream, intent) when that names one reference;
else by candidate alone when it has one reference (a fuzzy request the model answered with another intent).
Anything unusable is a :class:`~dataclaw.core.errors.Reject` with a :class:`BenchIssue` reason; the rest
is scored.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from dataclaw.core.errors import ConfigError, Reject
from dataclaw.core.store import is_current
from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.scoring.bench.fields import schema_error

FUZZY = "fuzzy"
EXPLICIT = {None, "", "explicit"}


class BenchIssue(StrEnum):
    """Why a prediction or reference line was not scored."""

    BAD_LINE = "bad_line"  # not JSON
    BAD_RECORD = "bad_record"  # JSON, but not a record with an intent
    UNKNOWN_INTENT = "unknown_intent"  # the intent is not in the catalogue
    INVALID_REFERENCE = "invalid_reference"  # a reference output the intent's schema rejects
    DUPLICATE = "duplicate"  # a second reference with the same id, or a second answer to one reference
    NO_REFERENCE = "no_reference"  # a prediction no reference pairs with


class Reference(BaseModel):
    id: str
    intent: str
    output: dict[str, Any]
    stream_id: str | None = None
    candidate_id: str | None = None
    subset: str = Field(description="the intent's domain, or 'fuzzy'")
    frame_range: list[float] | None = None


class Prediction(BaseModel):
    id: str
    intent: str
    output: Any = Field(default=None, description="the parsed JSON answer (None: not JSON)")
    error: str | None = Field(default=None, description="why the answer is not a JSON object")
    stream_id: str | None = None
    candidate_id: str | None = None


def _stage_file(path: Path, names: tuple[str, ...]) -> Path:
    if path.is_dir():
        for name in names:
            if (path / f"{name}.jsonl").is_file():
                return path / f"{name}.jsonl"
        raise ConfigError(f"{path} is a directory without {' or '.join(n + '.jsonl' for n in names)}")
    if not path.is_file():
        raise ConfigError(f"{path} does not exist")
    return path


def _lines(path: Path, stage: str, rejects: list[Reject]) -> Iterator[tuple[int, dict[str, Any]]]:
    """JSON objects of a JSONL file with their line numbers; superseded run records skipped."""
    current = is_current(path)
    with path.open(encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError as exc:
                rejects.append(
                    Reject(
                        id=f"{stage}::{path.name}:{n}",
                        stage=stage,
                        reason=BenchIssue.BAD_LINE,
                        message=f"{path.name} line {n} is not JSON ({exc.msg} at char {exc.pos})",
                    )
                )
                continue
            if not isinstance(rec, dict) or not isinstance(rec.get("intent"), str):
                rejects.append(
                    Reject(
                        id=f"{stage}::{path.name}:{n}",
                        stage=stage,
                        reason=BenchIssue.BAD_RECORD,
                        message=f"{path.name} line {n} is not a record with an 'intent'",
                    )
                )
                continue
            if current(rec):
                yield n, rec


def _subset(rec: dict[str, Any], domain: str) -> str:
    if rec.get("fuzzy") is True:
        return FUZZY
    choice = rec.get("intent_choice") or (rec.get("route") or {}).get("intent_choice") or {}
    return FUZZY if isinstance(choice, dict) and choice.get("method") not in EXPLICIT else domain


def load_references(path: str | Path, catalog: IntentCatalog, rejects: list[Reject]) -> list[Reference]:
    """Reference records of a JSONL file (or a run's ``samples.jsonl``); bad ones become rejects."""
    path = _stage_file(Path(path), ("samples",))
    refs: list[Reference] = []
    seen: set[str] = set()
    known = set(catalog.ids())
    for n, rec in _lines(path, "bench_ref", rejects):
        rid = str(rec.get("id") or f"{path.name}:{n}")

        def reject(reason: BenchIssue, message: str, rid: str = rid) -> None:
            rejects.append(Reject(id=f"bench_ref::{rid}", stage="bench_ref", reason=reason, message=message))

        if rec["intent"] not in known:
            reject(BenchIssue.UNKNOWN_INTENT, f"reference {rid}: unknown intent '{rec['intent']}'")
            continue
        intent = catalog.get(rec["intent"])
        output = rec.get("output")
        if not isinstance(output, dict):
            reject(BenchIssue.INVALID_REFERENCE, f"reference {rid}: 'output' is not a JSON object")
            continue
        err = schema_error(output, intent.output_schema)
        if err is not None:
            reject(BenchIssue.INVALID_REFERENCE, f"reference {rid}: not valid for intent {intent.id}: {err}")
            continue
        if rid in seen:
            reject(BenchIssue.DUPLICATE, f"reference {rid}: the id appears twice (first kept)")
            continue
        seen.add(rid)
        fr = rec.get("frame_range")
        refs.append(
            Reference(
                id=rid,
                intent=intent.id,
                output=output,
                stream_id=rec.get("stream_id"),
                candidate_id=rec.get("candidate_id"),
                subset=_subset(rec, str(intent.domain)),
                frame_range=fr if isinstance(fr, list) and len(fr) == 2 else None,
            )
        )
    return refs


def parse_answer(text: str) -> tuple[Any, str | None]:
    """A model's raw text as a JSON object (a Markdown fence around it tolerated), or the reason not."""
    s = text.strip()
    if s.startswith("```"):
        s = s.split("\n", 1)[-1].rsplit("```", 1)[0]
    try:
        value = json.loads(s)
    except ValueError as exc:
        return None, f"not JSON ({exc.msg} at char {exc.pos})"
    if not isinstance(value, dict):
        return None, f"JSON {type(value).__name__}, not an object"
    return value, None


def load_predictions(path: str | Path, rejects: list[Reject]) -> list[Prediction]:
    """Predictions from a run directory (responses, else samples) or a JSONL file."""
    path = _stage_file(Path(path), ("responses", "samples"))
    preds: list[Prediction] = []
    for n, rec in _lines(path, "bench_pred", rejects):
        raw, out = rec.get("raw_text"), rec.get("output")
        if isinstance(raw, str):
            output, error = parse_answer(raw)
        elif isinstance(out, dict):
            output, error = out, None
        elif isinstance(out, str):
            output, error = parse_answer(out)
        else:
            output, error = None, "no output"
        preds.append(
            Prediction(
                id=str(rec.get("id") or f"{path.name}:{n}"),
                intent=rec["intent"],
                output=output,
                error=error,
                stream_id=rec.get("stream_id"),
                candidate_id=rec.get("candidate_id"),
            )
        )
    return preds


def pair(
    preds: list[Prediction], refs: list[Reference], rejects: list[Reject]
) -> list[tuple[Reference, Prediction | None]]:
    """Each reference with the prediction that answers it (None: unanswered), in reference order."""
    by_id = {r.id: r for r in refs}
    by_cand: dict[tuple[str, str], list[Reference]] = defaultdict(list)
    by_stream: dict[tuple[str, str], list[Reference]] = defaultdict(list)
    by_cand_only: dict[str, list[Reference]] = defaultdict(list)
    for r in refs:
        if r.candidate_id:
            by_cand[(r.candidate_id, r.intent)].append(r)
            by_cand_only[r.candidate_id].append(r)
        if r.stream_id:
            by_stream[(r.stream_id, r.intent)].append(r)
    answer: dict[str, Prediction] = {}
    for p in preds:
        ref = by_id.get(p.id)
        if ref is None and p.candidate_id and len(by_cand.get((p.candidate_id, p.intent), [])) == 1:
            ref = by_cand[(p.candidate_id, p.intent)][0]
        if ref is None and p.stream_id and len(by_stream.get((p.stream_id, p.intent), [])) == 1:
            ref = by_stream[(p.stream_id, p.intent)][0]
        if ref is None and p.candidate_id and len(by_cand_only.get(p.candidate_id, [])) == 1:
            ref = by_cand_only[p.candidate_id][0]  # a fuzzy request answered with another intent
        if ref is None:
            rejects.append(
                Reject(
                    id=f"bench_pred::{p.id}",
                    stage="bench_pred",
                    reason=BenchIssue.NO_REFERENCE,
                    message=f"prediction {p.id} ({p.intent}): no reference with its id, candidate or stream",
                )
            )
            continue
        if ref.id in answer:
            rejects.append(
                Reject(
                    id=f"bench_pred::{p.id}",
                    stage="bench_pred",
                    reason=BenchIssue.DUPLICATE,
                    message=f"prediction {p.id}: reference {ref.id} already answered by {answer[ref.id].id}",
                )
            )
            continue
        answer[ref.id] = p
    return [(r, answer.get(r.id)) for r in refs]
