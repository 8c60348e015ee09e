"""The export contract: reading a run's records and checking every sample (:class:`RunReader`), placing
media tokens where trainers expect them, the :class:`Exporter` base and the registry of formats (one
module per format in this package, found without being listed; plugins through the entry-point group
``dataclaw.exporters``)."""

from __future__ import annotations

import json
import os
import shutil
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from dataclaw.core.errors import ConfigError, Reject
from dataclaw.core.registry import Registry
from dataclaw.core.review import review_filter
from dataclaw.core.store import TornLine, is_current, iter_jsonl, report_torn
from dataclaw.media.writers import sha256_file
from dataclaw.tailor.records import ARTIFACTS, SAMPLES, TOKENS, Artifact, MediaRef, Sample, count_tokens

REJECTS_FILE = "rejects.jsonl"


class ExportIssue(StrEnum):
    """Why a sample was left out of an export."""

    TORN_LINE = "torn_line"
    """The last line of samples.jsonl / artifacts.jsonl is an unfinished write (a crash): skipped."""
    BAD_RECORD = "bad_record"
    """A line of samples.jsonl / artifacts.jsonl is not a valid record."""
    MISSING_ARTIFACT = "missing_artifact"
    """A media ref names no artifact record."""
    MISSING_FILE = "missing_file"
    """The artifact's file is gone."""
    HASH_MISMATCH = "hash_mismatch"
    """The artifact's file no longer has the recorded sha256."""
    TOKEN_MISMATCH = "token_mismatch"
    """``<image>`` / ``<video>`` tokens do not match the number of input images / videos, or sit in the
    system turn (which LLaMA-Factory takes out of the messages)."""
    BAD_CONVERSATION = "bad_conversation"
    """Turns do not alternate user/assistant (after an optional system turn) ending with the assistant."""
    HUMAN_REJECTED = "human_rejected"
    """A reviewer rejected the sample in ``dataclaw view`` (the run's ``_viewer/verdicts.jsonl``)."""
    UNREVIEWED = "unreviewed"
    """``--reviewed-only``: no reviewer accepted or rejected the sample."""


@dataclass
class ExportSummary:
    """What an export wrote and what it left out."""

    format: str
    out_dir: str
    samples: int = 0
    media_files: int = 0
    rejected: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    """Files written, relative to ``out_dir`` (media not listed)."""
    note: str = ""
    """Said to the user: e.g. that the export is empty because the run produced no samples."""
    evidence: dict[str, int] = field(default_factory=dict)
    """Exported samples by evidence mark (``perceived``, ``text_only``; samples of older runs unmarked)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Checked:
    """A sample that passed the checks, with its artifacts in media order."""

    sample: Sample
    artifacts: list[Artifact]

    def pairs(self) -> Iterator[tuple[MediaRef, Artifact]]:
        return zip(self.sample.media, self.artifacts, strict=True)

    def placed(self) -> Placed:
        """The sample as a trainer sees it: media tokens only in user turns (see the module doc)."""
        if self._placed is None:
            self._placed = place_tokens(self)
        return self._placed

    def inputs(self, kind: str) -> list[Artifact]:
        return self.placed().inputs[kind]

    def targets(self) -> list[tuple[MediaRef, Artifact]]:
        return self.placed().targets

    _placed: Placed | None = None


TARGET_PLACEHOLDERS = {"image": "<image_gen>", "video": "<video_gen>"}
"""What an input token in an assistant turn becomes: the paper's placeholder for produced media."""


@dataclass
class Placed:
    """Turns with tokens only where the trainer reads inputs, the input media per kind in token order,
    and the targets (placeholder media, then media whose token stood in an answer)."""

    turns: list[dict[str, str]]
    inputs: dict[str, list[Artifact]]
    targets: list[tuple[MediaRef, Artifact]]


def place_tokens(checked: Checked) -> Placed:
    """Walk the turns in order, binding each ``<image>`` / ``<video>`` token to the next input of its kind
    (the LLaMA-Factory order); a token in an assistant turn makes its medium a target."""
    queues = {
        kind: [(r, a) for r, a in checked.pairs() if r.placeholder is None and r.kind == kind]
        for kind in TOKENS
    }
    seen = {kind: 0 for kind in TOKENS}
    inputs: dict[str, list[Artifact]] = {kind: [] for kind in TOKENS}
    produced: list[tuple[MediaRef, Artifact]] = []
    turns = []
    for turn in checked.sample.conversation:
        content = turn.content
        for _, kind in _token_positions(content):
            ref, art = queues[kind][seen[kind]]
            seen[kind] += 1
            if turn.role == "assistant":
                produced.append((ref.model_copy(update={"placeholder": TARGET_PLACEHOLDERS[kind]}), art))
            else:
                inputs[kind].append(art)
        if turn.role == "assistant":
            for kind, token in TOKENS.items():
                content = content.replace(token, TARGET_PLACEHOLDERS[kind])
        turns.append({"role": turn.role, "content": content})
    targets = [(r, a) for r, a in checked.pairs() if r.placeholder is not None] + produced
    return Placed(turns, inputs, targets)


def _token_positions(text: str) -> list[tuple[int, str]]:
    found = [(i, kind) for kind, token in TOKENS.items() for i in _find_all(text, token)]
    return sorted(found)


def _find_all(text: str, token: str) -> list[int]:
    out, i = [], text.find(token)
    while i >= 0:
        out.append(i)
        i = text.find(token, i + len(token))
    return out


RUN_MARKERS = ("manifest.json", "streams.jsonl", "responses.jsonl", "validated.jsonl")
"""Files of a Tailor run that got as far as it could: without samples.jsonl it exports empty."""


class RunReader:
    """The samples and artifacts of a run directory, checked one sample at a time."""

    def __init__(self, run_dir: str | Path, verify_hashes: bool = True) -> None:
        self.root = Path(run_dir)
        self.empty = not (self.root / f"{SAMPLES}.jsonl").is_file()
        if self.empty and not any((self.root / f).is_file() for f in RUN_MARKERS):
            raise ConfigError(
                f"{self.root} has no {SAMPLES}.jsonl: run `dataclaw tailor run` (materialisation) first"
            )
        self.verify_hashes = verify_hashes
        self._hashes: dict[str, str] = {}
        self.rejects: list[Reject] = []
        self.artifacts: dict[str, Artifact] = {}
        for n, rec in enumerate(_read_jsonl(self.root / f"{ARTIFACTS}.jsonl", self._torn), 1):
            try:
                art = Artifact.model_validate(rec)
            except ValidationError as exc:
                self._reject(f"{ARTIFACTS}:{n}", ExportIssue.BAD_RECORD, f"artifacts line {n}: {_first(exc)}")
                continue
            self.artifacts[art.id] = art

    def _reject(self, uid: str, reason: ExportIssue, message: str) -> None:
        self.rejects.append(Reject(id=uid, stage="export", reason=str(reason), message=message))

    def _torn(self, torn: TornLine) -> None:
        """A torn last line: warned about and counted among the export's reasons, never silent."""
        report_torn(torn)
        where = f"{Path(torn.path).name} line {torn.line}"
        self._reject(
            where, ExportIssue.TORN_LINE, f"{where}: an unfinished write ({torn.bytes} bytes), skipped"
        )

    def samples(self) -> Iterator[Checked]:
        """Samples that pass every check; the others become rejects."""
        for n, rec in enumerate(_read_jsonl(self.root / f"{SAMPLES}.jsonl", self._torn), 1):
            try:
                sample = Sample.model_validate(rec)
            except ValidationError as exc:
                uid = rec.get("id") if isinstance(rec.get("id"), str) else f"{SAMPLES}:{n}"
                self._reject(uid, ExportIssue.BAD_RECORD, f"samples line {n}: {_first(exc)}")
                continue
            problem = self.check(sample)
            if problem is not None:
                self._reject(sample.id, *problem)
                continue
            yield Checked(sample, [self.artifacts[m.artifact_id] for m in sample.media])

    def check(self, sample: Sample) -> tuple[ExportIssue, str] | None:
        """The first problem that keeps ``sample`` out of an export, or None."""
        for ref in sample.media:
            art = self.artifacts.get(ref.artifact_id)
            if art is None:
                return ExportIssue.MISSING_ARTIFACT, f"media ref {ref.artifact_id} has no artifact record"
            path = self.root / art.path
            if not path.is_file():
                return ExportIssue.MISSING_FILE, f"artifact {art.id}: file {art.path} is missing"
            if self.verify_hashes and self._sha(path) != art.sha256:
                return (
                    ExportIssue.HASH_MISMATCH,
                    f"artifact {art.id}: {art.path} changed since it was written",
                )
        for kind, token in TOKENS.items():
            want = sum(1 for r in sample.media if r.placeholder is None and r.kind == kind)
            have = count_tokens(sample.conversation, token)
            if have != want:
                return ExportIssue.TOKEN_MISMATCH, f"{have} {token} tokens but {want} input {kind}s"
            if any(token in t.content for t in sample.conversation if t.role == "system"):
                return ExportIssue.TOKEN_MISMATCH, f"a {token} token in the system turn, which is no input"
        roles = [t.role for t in sample.conversation]
        body = roles[1:] if roles[:1] == ["system"] else roles
        if not body or len(body) % 2 or any(r != ("user", "assistant")[i % 2] for i, r in enumerate(body)):
            return ExportIssue.BAD_CONVERSATION, f"turns {roles} do not alternate user/assistant"
        return None

    def _sha(self, path: Path) -> str:
        key = str(path)
        if key not in self._hashes:
            self._hashes[key] = sha256_file(path)
        return self._hashes[key]


def _read_jsonl(path: Path, on_torn: Callable[[TornLine], None] = report_torn) -> Iterator[dict[str, Any]]:
    """The current records of a run's JSONL file (superseded ones, of an earlier producer, are skipped); a
    torn last line goes to ``on_torn``, an unparsable line elsewhere is a ConfigError naming it."""
    if not path.exists():
        return
    current = is_current(path)
    for rec in iter_jsonl(path, on_torn):
        if isinstance(rec, dict) and current(rec):
            yield rec


def _first(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(x) for x in err.get("loc", ())) or "record"
    return f"{loc}: {err.get('msg', 'invalid')}"


# ------------------------------------------------------------------------------------------------
# exporters


class Exporter(ABC):
    """Writes a run's checked samples in one format. Subclasses set ``name`` and implement ``write``."""

    name: ClassVar[str]
    description: ClassVar[str] = ""

    def __init__(self, verify_hashes: bool = True) -> None:
        self.verify_hashes = verify_hashes

    def export(
        self, run_dir: str | Path, out_dir: str | Path, *, reviewed_only: bool = False
    ) -> ExportSummary:
        """Check the run's samples, write the good ones to ``out_dir``, record the rest as rejects. Samples
        a reviewer rejected are left out (``human_rejected``); with ``reviewed_only`` also those nobody
        accepted or rejected (``unreviewed``)."""
        reader = RunReader(run_dir, self.verify_hashes)
        out = Path(out_dir)
        if out.resolve() == reader.root.resolve():
            raise ConfigError(f"export into the run directory {out} itself would overwrite it: pick another")
        out.mkdir(parents=True, exist_ok=True)
        summary = ExportSummary(format=self.name, out_dir=str(out))
        checked = _reviewed(reader, list(reader.samples()), reviewed_only)
        summary.files = self.write(reader.root, checked, out, summary)
        summary.samples = len(checked)
        for c in checked:
            if c.sample.evidence is not None:
                summary.evidence[c.sample.evidence] = summary.evidence.get(c.sample.evidence, 0) + 1
        for rej in reader.rejects:
            rej.stage = f"export:{self.name}"
            summary.reasons[rej.reason] = summary.reasons.get(rej.reason, 0) + 1
        summary.rejected = len(reader.rejects)
        if not checked:
            why = (
                "the run produced no samples"
                if reader.empty
                else f"all {summary.rejected} samples were left out (see {out / REJECTS_FILE})"
                if summary.rejected
                else "the run's samples.jsonl is empty"
            )
            summary.note = (
                f"0 samples: {why}; wrote an empty, valid {self.name} export (see the run's rejects.jsonl "
                "for why responses were rejected)"
            )
        write_jsonl(out / REJECTS_FILE, [r.model_dump(mode="json") for r in reader.rejects])
        summary.files.append(REJECTS_FILE)
        return summary

    @abstractmethod
    def write(self, run_dir: Path, samples: list[Checked], out: Path, summary: ExportSummary) -> list[str]:
        """Write ``samples``; return the files written relative to ``out``."""


EXPORTERS: Registry[type[Exporter]] = Registry("export format", builtins="dataclaw.tailor.export")
register_exporter = EXPORTERS.add
"""Class decorator: register under ``cls.name``; a duplicate name is an error."""


def _reviewed(reader: RunReader, checked: list[Checked], reviewed_only: bool) -> list[Checked]:
    """``checked`` less what the run's human verdicts keep out (each left out as a reject with its reason)."""
    why = review_filter(reader.root, "sample", reviewed_only)
    kept = []
    for c in checked:
        reason = why(c.sample.id)
        if reason is None:
            kept.append(c)
        elif reason == ExportIssue.HUMAN_REJECTED:
            reader._reject(c.sample.id, ExportIssue.HUMAN_REJECTED, "a reviewer rejected it in dataclaw view")
        else:
            reader._reject(c.sample.id, ExportIssue.UNREVIEWED, "--reviewed-only: no reviewer decided on it")
    return kept


def exporter_names() -> list[str]:
    """Names of the registered export formats."""
    return EXPORTERS.names()


def get_exporter(name: str, **config: Any) -> Exporter:
    """The exporter ``name`` built with ``config``; unknown names list the known ones."""
    cls = EXPORTERS.get(name)
    try:
        return cls(**config)
    except TypeError as exc:
        raise ConfigError(f"export format '{name}' does not take {sorted(config)} ({exc})") from None


def export(
    run_dir: str | Path,
    fmt: str,
    out_dir: str | Path | None = None,
    *,
    reviewed_only: bool = False,
    **config: Any,
) -> ExportSummary:
    """Export ``run_dir`` as ``fmt`` into ``out_dir`` (default ``RUN/export/<fmt>``); human verdicts as
    :meth:`Exporter.export` says."""
    out = Path(out_dir) if out_dir is not None else Path(run_dir) / "export" / fmt
    return get_exporter(fmt, **config).export(run_dir, out, reviewed_only=reviewed_only)


def write_jsonl(path: Path, records: Sequence[dict[str, Any]]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def write_json(path: Path, obj: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(obj, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def place_media(run_dir: Path, artifacts: Sequence[Artifact], out: Path) -> int:
    """Hard-link (or copy) artifact files to the same relative paths under ``out``; return the count."""
    placed = 0
    for art in {a.id: a for a in artifacts}.values():
        src, dst = run_dir / art.path, out / art.path
        if src.resolve() == dst.resolve():
            placed += 1
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.unlink(missing_ok=True)
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)
        placed += 1
    return placed
