"""SFT on a Tailor ShareGPT export, prepared for the trainer's own Python: the chat data file the recipe
reads (``sft.jsonl``), the LLaMA-Factory config that trains the same export, and the recipe's command
line. ``dataclaw train sft`` runs :func:`prepare_sft`, then :func:`~dataclaw.train.trainer.run_recipe`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from dataclaw.train.checkpoint import checkpoint_path
from dataclaw.train.llamafactory import llamafactory_config
from dataclaw.train.sharegpt import ShareGPTData, read_sharegpt
from dataclaw.train.trainer import SFT_RECIPE, default_cache_dir, policy_path, recipe_argv, train_python


@dataclass(frozen=True)
class SftPlan:
    """What an SFT run trains on and how: the export read, the files written, the recipe's command line."""

    data: ShareGPTData
    data_file: Path
    llamafactory_config: Path
    python: Path
    argv: list[str]

    @property
    def media(self) -> int:
        """Images and videos the export lists (kept as ``<image>``/``<video>`` text: a text-only recipe)."""
        return sum(self.data.media.values())


def prepare_sft(
    export_dir: Path,
    out: Path,
    *,
    dataset: str | None = None,
    model: str = "smollm2-135m",
    steps: int = 2,
    max_length: int = 256,
    learning_rate: float = 2e-5,
    seed: int = 0,
    python: Path | None = None,
    cache: Path | None = None,
) -> SftPlan:
    """Read the export (a :class:`~dataclaw.core.errors.ConfigError` naming what is wrong with it), find the
    trainer's Python and the policy, and write ``OUT/sft.jsonl`` and ``OUT/llamafactory_sft.yaml``."""
    data = read_sharegpt(export_dir, dataset)
    py = train_python(python)
    policy = policy_path(model)
    out.mkdir(parents=True, exist_ok=True)
    data_file = out / "sft.jsonl"
    with data_file.open("w", encoding="utf-8") as fh:
        for messages in data.conversations:
            fh.write(json.dumps({"messages": messages}, ensure_ascii=False) + "\n")
    cache_dir = (cache or default_cache_dir()).resolve()
    lf_config = out / "llamafactory_sft.yaml"
    lf_config.write_text(
        llamafactory_config(
            checkpoint=checkpoint_path(policy, cache_dir),
            export_dir=export_dir.resolve(),
            dataset=data.name,
            out=out.resolve(),
            steps=steps,
            max_length=max_length,
            lr=learning_rate,
        ),
        encoding="utf-8",
    )
    argv = recipe_argv(
        py,
        SFT_RECIPE,
        data=data_file,
        out=out,
        model=policy,
        cache=cache_dir,
        steps=steps,
        max_length=max_length,
        learning_rate=learning_rate,
        seed=seed,
    )
    return SftPlan(data=data, data_file=data_file, llamafactory_config=lf_config, python=py, argv=argv)
