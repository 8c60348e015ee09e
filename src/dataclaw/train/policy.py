"""What the policy ``dataclaw train sft`` would train can read, and which LLaMA-Factory template matches it.

Read from the checkpoint's own files, never by loading it: a GGUF (llama.cpp's format, loaded through
transformers as a causal LM) and a checkpoint dataclaw converted from one are text-only ChatML models; a
transformers checkpoint folder is named by its ``config.json`` ``model_type``. Vision-language model types
are a registry (:data:`VISION_MODELS`): each names the inputs its LLaMA-Factory template's multimodal
plugin accepts (LLaMA-Factory's ``BasePlugin._validate_input`` refuses an image or a video for a template
whose plugin has no image / video token) and that template. A folder whose config has a ``vision_config``
but whose type is not in the registry is a vision model with no known template.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from dataclaw.core.errors import ConfigError
from dataclaw.train.checkpoint import MARKER

MODALITIES = ("image", "video")


@dataclass(frozen=True)
class VisionModel:
    """A vision-language model family: the inputs its LLaMA-Factory template accepts, and the template."""

    inputs: frozenset[str]
    template: str


def _vlm(template: str, *inputs: str) -> VisionModel:
    return VisionModel(frozenset(inputs), template)


VISION_MODELS: dict[str, VisionModel] = {
    # model_type (config.json) -> LLaMA-Factory template (data/template.py) and its plugin's media tokens
    "qwen2_vl": _vlm("qwen2_vl", "image", "video"),
    "qwen2_5_vl": _vlm("qwen2_vl", "image", "video"),
    "qwen3_vl": _vlm("qwen3_vl", "image", "video"),
    "qwen3_vl_moe": _vlm("qwen3_vl", "image", "video"),
    "qwen2_5_omni": _vlm("qwen2_omni", "image", "video"),
    "llava": _vlm("llava", "image"),
    "llava_next": _vlm("llava_next", "image"),
    "llava_next_video": _vlm("llava_next_video", "image", "video"),
    "paligemma": _vlm("paligemma", "image"),
    "gemma3": _vlm("gemma3", "image"),
    "mllama": _vlm("mllama", "image"),
    "internvl": _vlm("intern_vl", "image", "video"),
    "glm4v": _vlm("glm4v", "image", "video"),
    "minicpmv": _vlm("minicpm_v", "image", "video"),
}
"""Vision-language model types whose LLaMA-Factory template is known."""

TEXT_TEMPLATES: dict[str, str] = {
    # model_type -> LLaMA-Factory template of a text-only chat model
    "qwen2": "qwen",
    "qwen3": "qwen3",
    "gemma": "gemma",
    "gemma2": "gemma",
    "mistral": "mistral",
    "phi3": "phi",
}
"""Text model types whose LLaMA-Factory template is known (``llama`` depends on the chat template)."""


@dataclass(frozen=True)
class PolicyProfile:
    """What a policy reads and the LLaMA-Factory template that formats its data."""

    name: str
    """What the user passed as ``--model``."""
    model_type: str
    inputs: frozenset[str]
    """Media it reads besides text: a subset of ``{"image", "video"}`` (empty: text-only)."""
    template: str | None
    """LLaMA-Factory ``template`` for it, None when no known template fits."""

    @property
    def text_only(self) -> bool:
        return not self.inputs

    def describe(self) -> str:
        """``smollm2-135m (gguf, text-only)`` / ``… (qwen2_vl, images, videos)``."""
        reads = ", ".join(f"{m}s" for m in MODALITIES if m in self.inputs) or "text-only"
        return f"{self.name} ({self.model_type}, {reads})"


def profile_policy(name: str, path: Path) -> PolicyProfile:
    """The profile of the policy at ``path`` (a GGUF file or a checkpoint folder) that the user named
    ``name``; a folder without ``config.json`` is refused."""
    if path.is_file():  # a GGUF: transformers loads it as a causal LM, converted with a ChatML template
        return PolicyProfile(name, "gguf", frozenset(), "qwen")
    config_path = path / "config.json"
    if not config_path.is_file():
        raise ConfigError(f"--model {name}: the folder has no config.json (not a transformers checkpoint)")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except ValueError:
        raise ConfigError(f"--model {name}: its config.json is not valid JSON") from None
    model_type = str(config.get("model_type") or "unknown")
    if model_type in VISION_MODELS:
        vlm = VISION_MODELS[model_type]
        return PolicyProfile(name, model_type, vlm.inputs, vlm.template)
    if "vision_config" in config:  # a vision model whose LLaMA-Factory template we do not know
        return PolicyProfile(name, model_type, frozenset({"image"}), None)
    return PolicyProfile(name, model_type, frozenset(), _text_template(path, model_type))


def _text_template(path: Path, model_type: str) -> str | None:
    if (path / MARKER).is_file():  # converted by dataclaw: TRL's Qwen2.5 ChatML template
        return "qwen"
    if model_type in TEXT_TEMPLATES:
        return TEXT_TEMPLATES[model_type]
    chat = ""
    for name in ("chat_template.jinja", "tokenizer_config.json"):
        if (path / name).is_file():
            chat += (path / name).read_text(encoding="utf-8", errors="replace")
    if "<|start_header_id|>" in chat:
        return "llama3"
    return None
