"""Build a tiny, randomly initialised LLaVA checkpoint (a CLIP vision tower on a 2-layer Llama) with
SmolLM2's tokenizer and a ChatML template that renders image blocks as ``<image>``: a real
vision-language model for ``train sft`` tests, with no download. Run by the trainer venv's Python:

    python tiny_vlm.py SMOLLM2.gguf OUT_DIR

Prints one JSON line: the folder, and the image tokens one 32x32 image expands to."""

from __future__ import annotations

import json
import sys
from pathlib import Path

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for block in message['content'] %}{% if block['type'] == 'image' %}<image>"
    "{% elif block['type'] == 'text' %}{{ block['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
IMAGE, PATCH = 32, 8


def main(gguf: Path, out: Path) -> None:
    from transformers import (
        AutoTokenizer,
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tok.add_special_tokens({"additional_special_tokens": ["<image>"]})
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    text = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    vision = CLIPVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=IMAGE,
        patch_size=PATCH,
        projection_dim=32,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    LlavaForConditionalGeneration(config).save_pretrained(out)
    images = CLIPImageProcessor(size={"shortest_edge": IMAGE}, crop_size={"height": IMAGE, "width": IMAGE})
    LlavaProcessor(
        image_processor=images,
        tokenizer=tok,
        patch_size=PATCH,
        vision_feature_select_strategy="default",
        chat_template=CHAT_TEMPLATE,
        num_additional_image_tokens=1,
    ).save_pretrained(out)
    print(json.dumps({"checkpoint": str(out), "tokens_per_image": (IMAGE // PATCH) ** 2}))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
