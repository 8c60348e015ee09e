"""SFT with TRL on chat messages read from a dataclaw ShareGPT export (``dataclaw train sft``).

A standalone script run by the *trainer's* Python (``.venv-train``: torch, trl, transformers, gguf,
matplotlib and dataclaw's base install); dataclaw itself never imports it. ``dataclaw train sft`` reads
the export (``dataclaw.train.sharegpt``) and hands this script ``--data``, one ``{"messages": [...]}``
line per conversation (plus ``"images"``, absolute paths, for a vision-language model: the model's
processor and the decoded images then go to the trainer). It

1. turns the policy into a plain checkpoint once (``dataclaw.train.checkpoint``, shared with the GRPO
   recipe: the SmolLM2-135M GGUF we ship, de-quantised, saved with a ChatML template);
2. trains ``SFTTrainer`` for ``--steps`` optimizer steps on CPU, batch 1, sequences cut to
   ``--max-length`` tokens, loss on the whole rendered conversation, activation checkpointing off;
3. writes ``metrics.jsonl`` (one line per step: loss, grad norm, learning rate, token accuracy, timing)
   and ``loss_curve.png``, and prints a JSON summary as its last line.

    python trl_sft.py --data sft.jsonl --out RUN_DIR --model smollm2.gguf --steps 2
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from dataclaw.train.checkpoint import checkpointing_off, jsonl_metrics, plain_checkpoint, plot_curve


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, required=True, help='JSONL, one {"messages": [...]} per line')
    p.add_argument("--out", type=Path, required=True, help="run folder: metrics, curve, trainer output")
    p.add_argument(
        "--model", required=True, help="a GGUF file, or a folder holding a transformers checkpoint"
    )
    p.add_argument("--cache", type=Path, default=None, help="where the checkpoint made from a GGUF is kept")
    p.add_argument("--steps", type=int, default=2, help="optimizer steps")
    p.add_argument("--max-length", type=int, default=256, help="tokens per sequence (longer ones are cut)")
    p.add_argument("--learning-rate", type=float, default=2e-5, help="AdamW learning rate")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--epochs", type=float, default=0.0, help="epochs over the data (> 0: in place of --steps)"
    )
    p.add_argument("--grad-accum", type=int, default=1, help="conversations per optimizer step")
    p.add_argument(
        "--assistant-only-loss", action="store_true", help="loss on the assistant's tokens only (tool SFT)"
    )
    p.add_argument(
        "--chat-template", type=Path, default=None, help="tool mode: the Jinja chat template to use"
    )
    p.add_argument(
        "--device", choices=("cpu", "auto"), default="cpu", help="auto: an accelerator when present"
    )
    p.add_argument("--save", type=Path, default=None, help="save the trained checkpoint to this folder")
    return p.parse_args(argv)


def tool_dataset(
    rows: list[dict], tokenizer: Any, max_length: int, template: str | None = None
) -> tuple[Any, int]:
    """Tool-calling conversations (``{"messages", "tools"}``, tools as a JSON string) rendered with
    ``template`` (default: the policy's own chat template), pre-tokenized, labels only on the
    assistant's tokens (its tool calls and its closing reply; the tool results the environment returned
    are context, not targets). Returns the dataset and how many rows lost every assistant token to
    ``max_length``."""
    from datasets import Dataset
    from trl.chat_template_utils import get_training_chat_template, has_generation_markers

    template = template or tokenizer.chat_template
    if not has_generation_markers(template):
        template = get_training_chat_template(tokenizer) or template
    ids, labels, cut = [], [], 0
    for row in rows:
        tools = json.loads(row["tools"]) if isinstance(row["tools"], str) else row["tools"]
        out = tokenizer.apply_chat_template(
            row["messages"], tools=tools, chat_template=template, tokenize=True, return_dict=True,
            return_assistant_tokens_mask=True,
        )  # fmt: skip
        tokens, mask = list(out["input_ids"])[:max_length], list(out["assistant_masks"])[:max_length]
        if not any(mask):
            cut += 1
            continue
        ids.append(tokens)
        labels.append([t if m else -100 for t, m in zip(tokens, mask, strict=True)])
    return Dataset.from_dict({"input_ids": ids, "labels": labels}), cut


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    t0 = time.monotonic()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    args.out.mkdir(parents=True, exist_ok=True)
    checkpoint = plain_checkpoint(args.model, args.cache)

    from datasets import load_dataset
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    metrics_path = args.out / "metrics.jsonl"
    metrics, rows = jsonl_metrics(metrics_path, t0)

    tool_rows = [json.loads(line) for line in args.data.read_text().splitlines() if line.strip()]
    tools_mode = bool(tool_rows) and "tools" in tool_rows[0]
    if tools_mode:  # tool-calling trajectories: rendered here, loss on the assistant's tokens only
        processing_class = AutoTokenizer.from_pretrained(checkpoint)
        # the template renders the data only: the checkpoint keeps its own, which TRL's GRPO recognises
        # (it parses tool calls by the template); a server is given the same file
        template = args.chat_template.read_text() if args.chat_template is not None else None
        dataset, cut = tool_dataset(tool_rows, processing_class, args.max_length, template)
        if len(dataset) == 0:
            raise SystemExit(
                f"error: all {cut} trajectories reach --max-length {args.max_length} tokens before the "
                "assistant's first token (the system turn with the tools comes first): raise --max-length"
            )
        print(
            f"tool SFT: {len(dataset)} trajectories, {cut} without an assistant token left after "
            f"--max-length {args.max_length} dropped",
            flush=True,
        )
    else:
        dataset = load_dataset("json", data_files=str(args.data), split="train")
    vision = not tools_mode and "images" in dataset.column_names
    if vision:  # a vision-language model: the row's image files, decoded by datasets, and its processor
        from datasets import Image, List
        from transformers import AutoProcessor

        dataset = dataset.cast_column("images", List(Image()))
        processing_class = AutoProcessor.from_pretrained(checkpoint)
    elif not tools_mode:
        processing_class = AutoTokenizer.from_pretrained(checkpoint)
    off = checkpointing_off(SFTConfig)
    config = SFTConfig(
        output_dir=str(args.out / "trainer"),
        max_steps=-1 if args.epochs > 0 else args.steps,
        num_train_epochs=args.epochs if args.epochs > 0 else 1.0,
        per_device_train_batch_size=1,
        gradient_accumulation_steps=args.grad_accum,
        assistant_only_loss=args.assistant_only_loss and not tools_mode,  # tool mode: labels made above
        max_length=args.max_length,
        packing=False,
        learning_rate=args.learning_rate,
        lr_scheduler_type="constant",
        warmup_steps=0,
        weight_decay=0.0,
        max_grad_norm=1.0,
        use_cpu=args.device == "cpu",
        bf16=False,
        fp16=False,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=args.seed,
        dataloader_num_workers=0,
        **off,  # SFTConfig's default is on
    )
    trainer = SFTTrainer(
        model=str(checkpoint),
        processing_class=processing_class,
        args=config,
        train_dataset=dataset,
        callbacks=[metrics],
    )
    trainer.train()
    if args.save is not None:  # the policy the learning loop serves and evaluates
        trainer.save_model(str(args.save))
        processing_class.save_pretrained(str(args.save))
    steps = [r for r in rows if "loss" in r]
    curve = args.out / "loss_curve.png"
    plot_curve(
        [r["step"] for r in steps],
        [r["loss"] for r in steps],
        curve,
        title=f"SFT on {len(dataset)} conversations ({Path(args.model).name}, max length {args.max_length})",
        ylabel="loss",
        label="training loss (per step)",
    )
    (checkpointing,) = off
    summary = {
        "steps": len(steps) if args.epochs > 0 else args.steps,
        "saved": str(args.save) if args.save is not None else None,
        "losses": [r["loss"] for r in steps],
        "finite": all(math.isfinite(r["loss"]) for r in steps),
        "samples": len(dataset),
        "images": sum(len(x) for x in dataset["images"]) if vision else 0,
        "checkpoint": str(checkpoint),
        "metrics": str(metrics_path),
        "curve": str(curve),
        "activation_checkpointing": bool(getattr(trainer.args, checkpointing)),
        "wall_s": round(time.monotonic() - t0, 1),
    }
    print(json.dumps({"summary": summary}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
