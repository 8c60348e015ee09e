"""The LLaMA-Factory SFT config that trains the same ShareGPT export as ``dataclaw train sft``."""

from __future__ import annotations

import json
from pathlib import Path


def _yaml_scalar(value: object) -> str:
    # JSON strings, numbers and booleans are YAML scalars too, except that YAML 1.1 (PyYAML) reads a float
    # without a dot, such as 2e-05, as a string: LLaMA-Factory's own configs write 2.0e-5
    text = json.dumps(value)
    if isinstance(value, float) and "e" in text and "." not in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def llamafactory_config(
    *, checkpoint: Path, export_dir: Path, dataset: str, out: Path, steps: int, max_length: int, lr: float
) -> str:
    """A LLaMA-Factory SFT config (``llamafactory-cli train FILE``) for the same export and policy."""
    sections = {
        "model": {"model_name_or_path": str(checkpoint)},
        "method": {"stage": "sft", "do_train": True, "finetuning_type": "full"},
        "dataset": {
            "dataset": dataset,
            "dataset_dir": str(export_dir),
            "template": "qwen",  # ChatML, as the checkpoint's chat template
            "cutoff_len": max_length,
            "overwrite_cache": True,
        },
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
    lines = ["# dataclaw train sft: the same run with LLaMA-Factory (`llamafactory-cli train <this file>`)"]
    for name, items in sections.items():
        lines.append(f"### {name}")
        lines += [f"{k}: {_yaml_scalar(v)}" for k, v in items.items()]
    return "\n".join(lines) + "\n"
