"""The LLaMA-Factory SFT config that trains the same ShareGPT export as ``dataclaw train sft``, made for the
policy it names: its ``template``, and a ``dataset_info.json`` entry whose columns are only the media the
model reads (LLaMA-Factory refuses an image or a video for a template without that modality)."""

from __future__ import annotations

import json
from pathlib import Path

from dataclaw.train.policy import PolicyProfile

INFO_DIR = "llamafactory_data"
"""Folder under the run where the config's own ``dataset_info.json`` goes (``dataset_dir``)."""


def _yaml_scalar(value: object) -> str:
    # JSON strings, numbers and booleans are YAML scalars too, except that YAML 1.1 (PyYAML) reads a float
    # without a dot, such as 2e-05, as a string: LLaMA-Factory's own configs write 2.0e-5
    text = json.dumps(value)
    if isinstance(value, float) and "e" in text and "." not in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def dataset_entry(entry: dict, data_file: Path, profile: PolicyProfile, media: dict[str, int]) -> dict:
    """The export's ``dataset_info.json`` entry for this policy: ``file_name`` absolute (LLaMA-Factory
    joins it to ``dataset_dir``, and an absolute path stays itself), and the ``images`` / ``videos``
    columns kept only where the model reads that modality and the export lists some."""
    columns = dict(entry.get("columns") or {})
    for kind in ("image", "video"):
        if kind in profile.inputs and media.get(f"{kind}s"):
            columns.setdefault(f"{kind}s", f"{kind}s")  # LLaMA-Factory reads no media column unnamed
        else:
            columns.pop(f"{kind}s", None)
    out = {**entry, "file_name": str(data_file.resolve()), "columns": columns}
    return {k: v for k, v in out.items() if v not in ({}, None)}


def llamafactory_config(
    *,
    checkpoint: Path,
    export_dir: Path,
    dataset: str,
    entry: dict,
    data_file: Path,
    profile: PolicyProfile,
    media: dict[str, int],
    out: Path,
    steps: int,
    max_length: int,
    lr: float,
) -> str:
    """Write ``OUT/llamafactory_data/dataset_info.json`` and return the LLaMA-Factory SFT config
    (``llamafactory-cli train FILE``) for the same export and policy; media paths resolve against the
    export folder (``media_dir``)."""
    assert profile.template is not None, "no LLaMA-Factory template for this model"
    info_dir = out / INFO_DIR
    info_dir.mkdir(parents=True, exist_ok=True)
    info = {dataset: dataset_entry(entry, data_file, profile, media)}
    (info_dir / "dataset_info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    data = {
        "dataset": dataset,
        "dataset_dir": str(info_dir.resolve()),
        "template": profile.template,
        "cutoff_len": max_length,
        "overwrite_cache": True,
    }
    if any(media.get(f"{kind}s") for kind in profile.inputs):
        data["media_dir"] = str(export_dir)  # the export's media paths are relative to its folder
    sections = {
        "model": {"model_name_or_path": str(checkpoint)},
        "method": {"stage": "sft", "do_train": True, "finetuning_type": "full"},
        "dataset": data,
        "output": {"output_dir": str(out / "llamafactory"), "logging_steps": 1, "plot_loss": True},
        "train": {
            "per_device_train_batch_size": 1,
            "gradient_accumulation_steps": 1,
            "learning_rate": lr,
            "max_steps": steps,
            "lr_scheduler_type": "constant",
            "report_to": "none",
        },
    }
    lines = [
        "# dataclaw train sft: the same run with LLaMA-Factory (`llamafactory-cli train <this file>`)",
        f"# model: {profile.describe()}; template {profile.template}",
    ]
    for name, items in sections.items():
        lines.append(f"### {name}")
        lines += [f"{k}: {_yaml_scalar(v)}" for k, v in items.items()]
    return "\n".join(lines) + "\n"
