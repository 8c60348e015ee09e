"""``llamafactory``: ShareGPT multimodal JSON + a ``dataset_info.json`` entry, as LLaMA-Factory's
``mllm_video_demo``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

from dataclaw.core.errors import ConfigError
from dataclaw.core.ids import slug
from dataclaw.tailor.export.base import (
    Checked,
    Exporter,
    ExportSummary,
    place_media,
    register_exporter,
    write_json,
)

SHAREGPT_TAGS = {
    "role_tag": "role",
    "content_tag": "content",
    "user_tag": "user",
    "assistant_tag": "assistant",
    "system_tag": "system",
}


def sharegpt_record(checked: Checked) -> dict[str, Any]:
    """One LLaMA-Factory ShareGPT multimodal record (``messages`` + ``images`` + ``videos``; media paths
    relative to the dataset folder), with ``id``, ``targets`` and ``evidence`` (``text_only``: made by a
    model that did not see the media) kept for traceability; LLaMA-Factory reads only the mapped columns."""
    return {
        "messages": checked.placed().turns,
        "images": [a.path for a in checked.inputs("image")],
        "videos": [a.path for a in checked.inputs("video")],
        "id": checked.sample.id,
        "targets": [
            {"placeholder": r.placeholder, "role": r.role, "kind": r.kind, "path": a.path}
            for r, a in checked.targets()
        ],
        "evidence": checked.sample.evidence,
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
        write_json(out / file_name, [sharegpt_record(c) for c in samples])
        info_path = out / "dataset_info.json"
        info = json.loads(info_path.read_text(encoding="utf-8")) if info_path.is_file() else {}
        info[self.dataset_name] = {
            "file_name": file_name,
            "formatting": "sharegpt",
            "columns": {"messages": "messages", "images": "images", "videos": "videos"},
            "tags": dict(SHAREGPT_TAGS),
        }
        write_json(info_path, info)
        summary.media_files = place_media(run_dir, [a for c in samples for a in c.artifacts], out)
        return [file_name, "dataset_info.json"]
