"""``jsonl``: normalised samples + artifacts + media, as the run holds them."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from dataclaw.tailor.export.base import (
    Checked,
    Exporter,
    ExportSummary,
    place_media,
    register_exporter,
    write_jsonl,
)
from dataclaw.tailor.records import ARTIFACTS, SAMPLES


@register_exporter
class JsonlExporter(Exporter):
    """Normalised ``samples.jsonl`` + ``artifacts.jsonl`` (only the artifacts the samples use) + media."""

    name: ClassVar[str] = "jsonl"
    description: ClassVar[str] = "normalised samples.jsonl + artifacts.jsonl with their media"

    def write(self, run_dir: Path, samples: list[Checked], out: Path, summary: ExportSummary) -> list[str]:
        arts = {a.id: a for c in samples for a in c.artifacts}
        write_jsonl(out / f"{SAMPLES}.jsonl", [c.sample.model_dump(mode="json") for c in samples])
        write_jsonl(out / f"{ARTIFACTS}.jsonl", [a.model_dump(mode="json") for a in arts.values()])
        summary.media_files = place_media(run_dir, list(arts.values()), out)
        return [f"{SAMPLES}.jsonl", f"{ARTIFACTS}.jsonl"]
