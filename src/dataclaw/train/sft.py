"""SFT on a Tailor ShareGPT export, prepared for the trainer's own Python: the chat data file the recipe
reads (``sft.jsonl``), the LLaMA-Factory config that trains the same export, and the recipe's command
line. ``dataclaw train sft`` runs :func:`prepare_sft`, then :func:`~dataclaw.train.trainer.run_recipe`.

A policy trains only on what it can see. An export whose samples list images or videos is refused, in one
line naming the model, the export's media and what to do, unless the policy reads that modality
(:mod:`dataclaw.train.policy`): ``<image>`` / ``<video>`` are never trained on as literal text. A
vision-language model trains with the images themselves: each user turn's ``<image>`` tokens become image
blocks in place and the files are handed to TRL's ``SFTTrainer`` with the model's processor. TRL trains
no videos: an export with videos is refused for TRL with the LLaMA-Factory config (whose template reads
them) named instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError
from dataclaw.train.checkpoint import checkpoint_path
from dataclaw.train.llamafactory import llamafactory_config
from dataclaw.train.policy import MODALITIES, PolicyProfile, profile_policy
from dataclaw.train.sharegpt import ShareGPTData, read_sharegpt
from dataclaw.train.trainer import SFT_RECIPE, default_cache_dir, policy_path, recipe_argv, train_python

TOKENS = {"image": "<image>", "video": "<video>"}


@dataclass(frozen=True)
class SftPlan:
    """What an SFT run trains on and how: the export read, the files written, the recipe's command line."""

    data: ShareGPTData
    data_file: Path
    llamafactory_config: Path | None
    """None when no LLaMA-Factory template is known for the model (:attr:`note` says so)."""
    python: Path
    argv: list[str]
    profile: PolicyProfile
    note: str = ""

    @property
    def media(self) -> int:
        """Images and videos the export lists (0 for a text-only run: media are refused, not dropped)."""
        return sum(self.data.media.values())


def export_modalities(data: ShareGPTData) -> list[str]:
    """The media kinds the export's samples list (``image``, ``video``)."""
    return [kind for kind in MODALITIES if data.media.get(f"{kind}s")]


def _counted(data: ShareGPTData, kinds: list[str]) -> str:
    return " and ".join(f"{data.media[f'{k}s']} {k}s" for k in kinds)


def check_can_see(profile: PolicyProfile, data: ShareGPTData) -> None:
    """Refuse (one line) an export whose media the policy cannot read."""
    kinds = export_modalities(data)
    missing = [k for k in kinds if k not in profile.inputs]
    if not missing:
        return
    what = f"{data.file.name} ({data.name}) lists {_counted(data, kinds)}"
    if profile.text_only:
        raise ConfigError(
            f"--model {profile.describe()} cannot see media and {what}: train sft never trains on "
            "<image>/<video> as text; pass --model a vision-language checkpoint folder that reads "
            f"{' and '.join(f'{k}s' for k in kinds)} (e.g. Qwen2-VL), or export text-only samples"
        )
    raise ConfigError(
        f"--model {profile.describe()} reads no {' or '.join(f'{k}s' for k in missing)} and {what}: pass "
        "--model a checkpoint that reads them (e.g. Qwen2-VL reads images and videos)"
    )


def vision_messages(messages: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Chat messages with each user turn's ``<image>`` tokens turned into image blocks where they stand
    (TRL fills unfilled image blocks with the row's images in order; plain strings would get every image
    put before the first user turn)."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        text = msg["content"]
        if msg["role"] != "user" or TOKENS["image"] not in text:
            out.append({"role": msg["role"], "content": [{"type": "text", "text": text}]})
            continue
        blocks: list[dict[str, str]] = []
        for i, part in enumerate(text.split(TOKENS["image"])):
            if i:
                blocks.append({"type": "image"})
            if part:
                blocks.append({"type": "text", "text": part})
        out.append({"role": msg["role"], "content": blocks})
    return out


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
    """Read the export (a :class:`~dataclaw.core.errors.ConfigError` naming what is wrong with it), check
    the policy can see its media, find the trainer's Python, and write ``OUT/sft.jsonl`` and the
    LLaMA-Factory config (``OUT/llamafactory_sft.yaml``, with ``OUT/llamafactory_data/``)."""
    data = read_sharegpt(export_dir, dataset)
    policy = policy_path(model)
    profile = profile_policy(model, policy)
    check_can_see(profile, data)
    py = train_python(python)
    out.mkdir(parents=True, exist_ok=True)
    cache_dir = (cache or default_cache_dir()).resolve()
    lf_config: Path | None = out / "llamafactory_sft.yaml"
    note = ""
    if profile.template is None:
        lf_config, note = None, f"no LLaMA-Factory config: no known template for {profile.describe()}"
    else:
        lf_config.write_text(  # type: ignore[union-attr]
            llamafactory_config(
                checkpoint=checkpoint_path(policy, cache_dir),
                export_dir=export_dir.resolve(),
                dataset=data.name,
                entry=data.entry,
                data_file=data.file,
                profile=profile,
                media=data.media,
                out=out.resolve(),
                steps=steps,
                max_length=max_length,
                lr=learning_rate,
            ),
            encoding="utf-8",
        )
    for media in data.media_lists:
        for rel in media["images"]:
            if not (export_dir / rel).is_file():
                raise ConfigError(f"{data.file.name} lists image {rel}, which is not in {export_dir}")
    if "video" in export_modalities(data):
        where = f"llamafactory-cli train {lf_config}" if lf_config else "a trainer that reads videos"
        raise ConfigError(
            f"TRL's SFTTrainer trains no videos and {data.file.name} lists {data.media['videos']} videos: "
            f"train {profile.describe()} on it with {where}"
        )
    data_file = out / "sft.jsonl"
    with data_file.open("w", encoding="utf-8") as fh:
        for messages, media in zip(data.conversations, data.media_lists, strict=True):
            row: dict[str, Any] = {"messages": messages}
            if "image" in export_modalities(data):
                row = {
                    "messages": vision_messages(messages),
                    "images": [str((export_dir / p).resolve()) for p in media["images"]],
                }
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
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
    return SftPlan(data, data_file, lf_config, py, argv, profile, note)
