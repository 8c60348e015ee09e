"""Corpus export (paper A.3 step 5, A.3.3): a run's ``samples.jsonl`` + ``artifacts.jsonl`` as files that
trainers load.

Exporters register by name: ``jsonl`` (normalised samples + artifacts + media), ``llamafactory``
(ShareGPT multimodal JSON + a ``dataset_info.json`` entry, as LLaMA-Factory's ``mllm_video_demo``),
``hf`` (Hugging Face ``datasets`` parquet shards with ``Image`` / ``Video`` columns, media embedded).
Each is ``export(run_dir, out_dir) -> ExportSummary``.

Every sample is checked before it is written; one that fails is left out with a reject (reason code +
message) in ``out_dir/rejects.jsonl``, and the export goes on: every media ref must name an artifact
record whose file exists with the recorded sha256, the number of ``<image>`` / ``<video>`` tokens must
equal the number of input images / videos (LLaMA-Factory refuses the sample otherwise), and the turns
must alternate user/assistant after an optional system turn. Target media (those with a paper
placeholder such as ``<video_gen>``) are not model inputs: the placeholder stays in the text and the
file is listed under ``targets`` (JSON) or ``target_images`` / ``target_videos`` (parquet).

Media tokens go where the trainer expects them. LLaMA-Factory's ShareGPT converter
(``llamafactory/data/converter.py``) takes a leading system message out of ``messages`` and
its multimodal plugin (``mm_plugin.py`` ``_validate_messages`` / ``process_messages``) counts and expands
every ``<image>`` / ``<video>`` in *all* remaining messages, the assistant's included — so an input
token in an answer would be expanded into image tokens inside the labels. Hence: an ``<image>`` /
``<video>`` in a user turn is a model input; one in an assistant turn is an image the model should
produce (a tutorial's step image), exported as a target (``<image_gen>`` / ``<video_gen>`` in the text,
the file under ``targets``); one in the system turn is a ``token_mismatch`` reject.

A run that produced no samples still gets the asked-for export, empty and valid, and the summary's
``note`` says so.
"""

from __future__ import annotations

import json
import os
import shutil
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from dataclaw.core.errors import ConfigError, Reject, require
from dataclaw.core.ids import slug
from dataclaw.core.registry import Registry
from dataclaw.core.store import is_current
from dataclaw.media.writers import sha256_file
from dataclaw.tailor.materialize import ARTIFACTS, SAMPLES, TOKENS, count_tokens
from dataclaw.tailor.records import Artifact, MediaRef, Sample

REJECTS_FILE = "rejects.jsonl"


class ExportIssue(StrEnum):
    """Why a sample was left out of an export."""

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
        for n, rec in enumerate(_read_jsonl(self.root / f"{ARTIFACTS}.jsonl"), 1):
            try:
                art = Artifact.model_validate(rec)
            except ValidationError as exc:
                self._reject(f"{ARTIFACTS}:{n}", ExportIssue.BAD_RECORD, f"artifacts line {n}: {_first(exc)}")
                continue
            self.artifacts[art.id] = art

    def _reject(self, uid: str, reason: ExportIssue, message: str) -> None:
        self.rejects.append(Reject(id=uid, stage="export", reason=str(reason), message=message))

    def samples(self) -> Iterator[Checked]:
        """Samples that pass every check; the others become rejects."""
        for n, rec in enumerate(_read_jsonl(self.root / f"{SAMPLES}.jsonl"), 1):
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


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """The current records of a run's JSONL file (superseded ones, of an earlier producer, are skipped)."""
    if not path.exists():
        return
    current = is_current(path)
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                if fh.read().strip():  # only a torn last line (crash mid-write) may be skipped
                    raise ConfigError(f"{path}: line {n} is not valid JSON") from None
                return
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

    def export(self, run_dir: str | Path, out_dir: str | Path) -> ExportSummary:
        """Check the run's samples, write the good ones to ``out_dir``, record the rest as rejects."""
        reader = RunReader(run_dir, self.verify_hashes)
        out = Path(out_dir)
        if out.resolve() == reader.root.resolve():
            raise ConfigError(f"export into the run directory {out} itself would overwrite it: pick another")
        out.mkdir(parents=True, exist_ok=True)
        summary = ExportSummary(format=self.name, out_dir=str(out))
        checked = list(reader.samples())
        summary.files = self.write(reader.root, checked, out, summary)
        summary.samples = len(checked)
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
        _write_jsonl(out / REJECTS_FILE, [r.model_dump(mode="json") for r in reader.rejects])
        summary.files.append(REJECTS_FILE)
        return summary

    @abstractmethod
    def write(self, run_dir: Path, samples: list[Checked], out: Path, summary: ExportSummary) -> list[str]:
        """Write ``samples``; return the files written relative to ``out``."""


EXPORTERS: Registry[type[Exporter]] = Registry("export format")
register_exporter = EXPORTERS.add
"""Class decorator: register under ``cls.name``; a duplicate name is an error."""


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


def export(run_dir: str | Path, fmt: str, out_dir: str | Path | None = None, **config: Any) -> ExportSummary:
    """Export ``run_dir`` as ``fmt`` into ``out_dir`` (default ``RUN/export/<fmt>``)."""
    out = Path(out_dir) if out_dir is not None else Path(run_dir) / "export" / fmt
    return get_exporter(fmt, **config).export(run_dir, out)


def _write_jsonl(path: Path, records: Sequence[dict[str, Any]]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def _write_json(path: Path, obj: Any) -> None:
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


@register_exporter
class JsonlExporter(Exporter):
    """Normalised ``samples.jsonl`` + ``artifacts.jsonl`` (only the artifacts the samples use) + media."""

    name: ClassVar[str] = "jsonl"
    description: ClassVar[str] = "normalised samples.jsonl + artifacts.jsonl with their media"

    def write(self, run_dir: Path, samples: list[Checked], out: Path, summary: ExportSummary) -> list[str]:
        arts = {a.id: a for c in samples for a in c.artifacts}
        _write_jsonl(out / f"{SAMPLES}.jsonl", [c.sample.model_dump(mode="json") for c in samples])
        _write_jsonl(out / f"{ARTIFACTS}.jsonl", [a.model_dump(mode="json") for a in arts.values()])
        summary.media_files = place_media(run_dir, list(arts.values()), out)
        return [f"{SAMPLES}.jsonl", f"{ARTIFACTS}.jsonl"]


SHAREGPT_TAGS = {
    "role_tag": "role",
    "content_tag": "content",
    "user_tag": "user",
    "assistant_tag": "assistant",
    "system_tag": "system",
}


def sharegpt_record(checked: Checked) -> dict[str, Any]:
    """One LLaMA-Factory ShareGPT multimodal record (``messages`` + ``images`` + ``videos``; media paths
    relative to the dataset folder), with ``id`` and ``targets`` kept for traceability."""
    return {
        "messages": checked.placed().turns,
        "images": [a.path for a in checked.inputs("image")],
        "videos": [a.path for a in checked.inputs("video")],
        "id": checked.sample.id,
        "targets": [
            {"placeholder": r.placeholder, "role": r.role, "kind": r.kind, "path": a.path}
            for r, a in checked.targets()
        ],
    }


@register_exporter
class LlamaFactoryExporter(Exporter):
    """``<name>.json`` in LLaMA-Factory's ShareGPT multimodal form + its ``dataset_info.json`` entry."""

    name: ClassVar[str] = "llamafactory"
    description: ClassVar[str] = "LLaMA-Factory ShareGPT multimodal JSON + dataset_info.json"

    def __init__(self, dataset_name: str = "dataclaw", verify_hashes: bool = True) -> None:
        super().__init__(verify_hashes)
        if slug(dataset_name, 80) != dataset_name.lower():
            raise ConfigError(f"dataset name '{dataset_name}' must be letters, digits, '.', '_' or '-'")
        self.dataset_name = dataset_name

    def write(self, run_dir: Path, samples: list[Checked], out: Path, summary: ExportSummary) -> list[str]:
        file_name = f"{self.dataset_name}.json"
        _write_json(out / file_name, [sharegpt_record(c) for c in samples])
        info_path = out / "dataset_info.json"
        info = json.loads(info_path.read_text(encoding="utf-8")) if info_path.is_file() else {}
        info[self.dataset_name] = {
            "file_name": file_name,
            "formatting": "sharegpt",
            "columns": {"messages": "messages", "images": "images", "videos": "videos"},
            "tags": dict(SHAREGPT_TAGS),
        }
        _write_json(info_path, info)
        summary.media_files = place_media(run_dir, [a for c in samples for a in c.artifacts], out)
        return [file_name, "dataset_info.json"]


DATASET_CARD = """---
configs:
- config_name: default
  data_files:
  - split: train
    path: data/train-*
---
# dataclaw Tailor export

{samples} samples written by `dataclaw tailor export --format hf`. `images` / `videos` are the model's
input media (one per `<image>` / `<video>` token in `messages`); `target_images` / `target_videos` hold the
media that paper placeholders such as `<video_gen>` and `<image_recall>` stand for (`targets` maps each
placeholder to its index); `output` is the structured answer as JSON. Videos are lossless and
frame-exact; decoding the `Video` columns needs `torchcodec`.
"""


@register_exporter
class HuggingFaceExporter(Exporter):
    """Parquet shards under ``data/`` loadable with ``datasets.load_dataset("parquet" | out_dir)``.

    Columns: ``id``, ``intent``, ``domain``, ``stream_id``, ``candidate_id``, ``messages``, ``images``
    (``List(Image())``), ``videos`` (``List(Video())``), ``target_images``, ``target_videos``,
    ``targets`` (placeholder → index into the target lists) and ``output`` (the structured answer as
    JSON text). Media bytes are embedded, so the parquet files stand alone. Decoding the ``Video``
    column needs ``torchcodec`` (``datasets``' video backend); without it, cast the column to
    ``Video(decode=False)`` and read the bytes.
    """

    name: ClassVar[str] = "hf"
    description: ClassVar[str] = "Hugging Face datasets parquet with Image/Video columns"

    def __init__(self, shard_size: int = 256, verify_hashes: bool = True) -> None:
        super().__init__(verify_hashes)
        if shard_size < 1:
            raise ConfigError(f"shard_size must be >= 1, got {shard_size}")
        self.shard_size = shard_size

    def features(self) -> Any:
        ds = require("datasets", "the Hugging Face export", "hf")
        text = ds.Value("string")
        return ds.Features(
            {
                "id": text,
                "intent": text,
                "domain": text,
                "stream_id": text,
                "candidate_id": text,
                "messages": ds.List({"role": text, "content": text}),
                "images": ds.List(ds.Image()),
                "videos": ds.List(ds.Video()),
                "target_images": ds.List(ds.Image()),
                "target_videos": ds.List(ds.Video()),
                "targets": ds.List(
                    {"placeholder": text, "role": text, "kind": text, "index": ds.Value("int32")}
                ),
                "output": text,
            }
        )

    def row(self, run_dir: Path, checked: Checked) -> dict[str, Any]:
        def media(art: Artifact) -> dict[str, Any]:
            return {"bytes": (run_dir / art.path).read_bytes(), "path": art.path}

        s = checked.sample
        targets, tgt = [], {"image": [], "video": []}
        for ref, art in checked.targets():
            targets.append({"placeholder": ref.placeholder, "role": ref.role, "kind": ref.kind})
            targets[-1]["index"] = len(tgt[ref.kind])
            tgt[ref.kind].append(media(art))
        return {
            "id": s.id,
            "intent": s.intent,
            "domain": s.domain,
            "stream_id": s.stream_id,
            "candidate_id": s.candidate_id,
            "messages": checked.placed().turns,
            "images": [media(a) for a in checked.inputs("image")],
            "videos": [media(a) for a in checked.inputs("video")],
            "target_images": tgt["image"],
            "target_videos": tgt["video"],
            "targets": targets,
            "output": json.dumps(s.output, ensure_ascii=False, sort_keys=True),
        }

    def write(self, run_dir: Path, samples: list[Checked], out: Path, summary: ExportSummary) -> list[str]:
        ds = require("datasets", "the Hugging Face export", "hf")
        data = out / "data"
        if data.is_dir():
            for old in data.glob("train-*.parquet"):
                old.unlink()
        data.mkdir(parents=True, exist_ok=True)
        features = self.features()
        chunks = [samples[i : i + self.shard_size] for i in range(0, len(samples), self.shard_size)] or [[]]
        files = []
        bars = ds.is_progress_bar_enabled()
        ds.disable_progress_bars()  # an export is one line of summary, not a progress bar per shard
        try:
            for i, chunk in enumerate(chunks):
                rel = f"data/train-{i:05d}-of-{len(chunks):05d}.parquet"
                rows = [self.row(run_dir, c) for c in chunk]
                if rows:
                    ds.Dataset.from_list(rows, features=features).to_parquet(str(out / rel))
                else:  # keep the columns (from_list([]) has none; to_parquet divides by the row count)
                    import pyarrow.parquet as pq

                    empty = ds.Dataset.from_dict({k: [] for k in features}, features=features)
                    pq.write_table(empty.data.table, str(out / rel))
                files.append(rel)
        finally:
            if bars:
                ds.enable_progress_bars()
        (out / "README.md").write_text(DATASET_CARD.format(samples=len(samples)), encoding="utf-8")
        summary.media_files = len({a.id for c in samples for a in c.artifacts})
        return [*files, "README.md"]
