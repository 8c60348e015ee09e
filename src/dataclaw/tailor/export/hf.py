"""``hf``: Hugging Face ``datasets`` parquet shards with ``Image`` columns and video columns of clip bytes
(readable without ``torchcodec``), media embedded, and a dataset card that states the clips' codec."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from dataclaw.core.errors import ConfigError, require
from dataclaw.media.writers import codec_for, describe_codec
from dataclaw.tailor.export.base import Checked, Exporter, ExportSummary, register_exporter
from dataclaw.tailor.records import Artifact

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
placeholder to its index); `output` is the structured answer as JSON; `evidence` is `perceived`, or
`text_only` when the model that wrote the answer did not see the media ({text_only} of these samples;
null: a sample of an older run, unmarked).

Video columns are not decoded: each item of `videos` / `target_videos` is `{{"bytes", "path"}}`, the whole
clip file, so the dataset loads and reads with `datasets` alone (no `torchcodec`). Decode the bytes with
PyAV (`av.open(io.BytesIO(item["bytes"]))`), or turn decoding on where `torchcodec` is installed:
`ds.cast_column("videos", datasets.List(datasets.Video()))`. Images decode as PIL images.

## How the clips are encoded

{codecs}
"""


@register_exporter
class HuggingFaceExporter(Exporter):
    """Parquet shards under ``data/`` loadable with ``datasets.load_dataset("parquet" | out_dir)``.

    Columns: ``id``, ``intent``, ``domain``, ``stream_id``, ``candidate_id``, ``messages``, ``images``
    (``List(Image())``), ``videos`` (``List({"bytes", "path"})``), ``target_images``, ``target_videos``,
    ``targets`` (placeholder → index into the target lists), ``output`` (the structured answer as
    JSON text) and ``evidence`` (``perceived``, or ``text_only``: the answering model did not see the
    media; null for samples of older runs). Media bytes are embedded, so the parquet files stand alone.
    Video columns are lists of
    ``{"bytes", "path"}`` (the clip file), not ``Video`` features: a ``Video`` column decodes on read,
    which needs ``torchcodec``, and ``Video(decode=False)`` does not survive the round trip through
    parquet. ``cast_column("videos", List(Video()))`` turns decoding on. The dataset card says how the
    clips were really encoded (:func:`codec_lines`).
    """

    name: ClassVar[str] = "hf"
    description: ClassVar[str] = "Hugging Face datasets parquet: Image columns, video bytes, dataset card"

    def __init__(self, shard_size: int = 256, verify_hashes: bool = True) -> None:
        super().__init__(verify_hashes)
        if shard_size < 1:
            raise ConfigError(f"shard_size must be >= 1, got {shard_size}")
        self.shard_size = shard_size

    def features(self) -> Any:
        ds = require("datasets", "the Hugging Face export", "hf")
        text = ds.Value("string")
        # a plain struct, not Video(decode=False): `decode` is not kept in the parquet's features, so a
        # Video column loads decoding again and its first row read needs torchcodec
        clip = {"bytes": ds.Value("binary"), "path": text}
        return ds.Features(
            {
                "id": text,
                "intent": text,
                "domain": text,
                "stream_id": text,
                "candidate_id": text,
                "messages": ds.List({"role": text, "content": text}),
                "images": ds.List(ds.Image()),
                "videos": ds.List(clip),
                "target_images": ds.List(ds.Image()),
                "target_videos": ds.List(clip),
                "targets": ds.List(
                    {"placeholder": text, "role": text, "kind": text, "index": ds.Value("int32")}
                ),
                "output": text,
                "evidence": text,
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
            "evidence": s.evidence,
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
        blind = sum(1 for c in samples if c.sample.evidence == "text_only")
        card = DATASET_CARD.format(
            samples=len(samples), codecs="\n".join(codec_lines(samples)), text_only=blind
        )
        (out / "README.md").write_text(card, encoding="utf-8")
        summary.media_files = len({a.id for c in samples for a in c.artifacts})
        return [*files, "README.md"]


def codec_lines(samples: list[Checked]) -> list[str]:
    """One Markdown bullet per codec the exported videos were encoded with, as the run recorded it in each
    artifact (``source.encoding``): the profile's real settings and whether frames are exact."""
    counts: dict[str, int] = {}
    for art in {a.id: a for c in samples for a in c.artifacts if a.media_type == "video"}.values():
        name = str((art.source.get("encoding") or {}).get("codec") or "unrecorded")
        counts[name] = counts.get(name, 0) + 1
    if not counts:
        return ["No videos in this export."]
    lines = []
    for name, n in sorted(counts.items()):
        spec = codec_for(name)
        how = describe_codec(spec) if spec else "a codec this dataclaw does not know; probe the files"
        lines.append(f"- `{name}` ({n} video{'s' if n != 1 else ''}): {how}.")
    return lines
