"""GRPO with TRL on a dataclaw TRL export (the ``envcraft`` recipe of ``dataclaw train grpo``).

A standalone script run by the *trainer's* Python (``.venv-train``: torch, trl, transformers, gguf,
matplotlib and dataclaw's base install); dataclaw itself never imports it. It

1. turns the policy into a plain checkpoint once (``dataclaw.train.checkpoint``, shared with the SFT
   recipe: a GGUF such as the SmolLM2-135M we ship is loaded through transformers' GGUF support,
   de-quantised and saved to ``--cache``) with a chat template that renders tool calls (TRL's
   ChatML/Qwen2.5 tool template: SmolLM2 speaks ChatML, so its ``<|im_start|>``/``<|im_end|>`` tokens
   are unchanged) and TRL's matching response parser;
2. trains with ``GRPOTrainer(environment_factory=<the exported class>)`` — the reward is the class's
   ``get_reward()`` (the task's verifier on the final environment state);
3. writes ``metrics.jsonl`` (one line per logged step: reward, its std, tool-call frequency and failures,
   loss, KL, lengths, timing) and ``reward_curve.png``, and prints a JSON summary as its last line.

    python trl_grpo.py --export EXPORT_DIR --out RUN_DIR --model smollm2.gguf --steps 2
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from dataclaw.train.checkpoint import checkpointing_off, jsonl_metrics, plain_checkpoint


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--export", type=Path, required=True, help="a `dataclaw tasks export --to trl` folder")
    p.add_argument("--out", type=Path, required=True, help="run folder: metrics, curve, trainer output")
    p.add_argument(
        "--model", required=True, help="a GGUF file, or a folder holding a transformers checkpoint"
    )
    p.add_argument("--cache", type=Path, default=None, help="where the checkpoint made from a GGUF is kept")
    p.add_argument("--steps", type=int, default=2, help="optimizer steps")
    p.add_argument("--num-generations", type=int, default=2, help="GRPO group size G (rollouts per prompt)")
    p.add_argument("--prompts-per-step", type=int, default=1, help="prompts in one step's generation batch")
    p.add_argument("--max-completion-length", type=int, default=192, help="tokens per rollout (tools incl.)")
    p.add_argument("--max-tool-calls", type=int, default=3, help="tool-calling rounds per rollout")
    p.add_argument("--learning-rate", type=float, default=1e-6, help="AdamW learning rate (D.1: 1e-6)")
    p.add_argument(
        "--beta", type=float, default=0.0, help="KL coefficient (D.1: 0.02; 0 skips the ref model)"
    )
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (D.1: 1.0)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save", type=Path, default=None, help="save the trained checkpoint to this folder")
    return p.parse_args(argv)


def env_class(export: Path) -> Any:
    manifest = json.loads((export / "manifest.json").read_text())
    if manifest.get("format") != "trl":
        raise SystemExit(f"error: {export} is a {manifest.get('format')!r} export, not a TRL one")
    sys.path.insert(0, str(export))
    module = importlib.import_module(manifest["module"])
    return getattr(module, manifest["class"]), module


def plot(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [r["step"] for r in rows if "reward" in r]
    mean = [r["reward"] for r in rows if "reward" in r]
    std = [r.get("reward_std", 0.0) for r in rows if "reward" in r]
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=120)
    ax.plot(steps, mean, marker="o", label="mean reward (group)")
    low = [m - s for m, s in zip(mean, std, strict=True)]
    high = [m + s for m, s in zip(mean, std, strict=True)]
    ax.fill_between(steps, low, high, alpha=0.2)
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_xlabel("step")
    ax.set_ylabel("reward")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    t0 = time.monotonic()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    args.out.mkdir(parents=True, exist_ok=True)
    checkpoint = plain_checkpoint(args.model, args.cache)
    cls, module = env_class(args.export.resolve())

    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    off = checkpointing_off(GRPOConfig)
    (checkpointing,) = off
    metrics_path = args.out / "metrics.jsonl"
    metrics, rows = jsonl_metrics(metrics_path, t0)

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    tokenizer.padding_side = "left"
    batch = args.num_generations * args.prompts_per_step
    config = GRPOConfig(
        output_dir=str(args.out / "trainer"),
        max_steps=args.steps,
        per_device_train_batch_size=batch,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=args.max_tool_calls,
        learning_rate=args.learning_rate,
        lr_scheduler_type="constant",
        warmup_steps=0,
        weight_decay=0.01,
        max_grad_norm=1.0,
        beta=args.beta,
        epsilon=0.2,
        temperature=args.temperature,
        top_p=1.0,
        use_cpu=True,
        bf16=False,
        fp16=False,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=args.seed,
        dataloader_num_workers=0,
        log_completions=False,
        **off,  # GRPOConfig's default is on
    )
    dataset = module.train_dataset()
    trainer = GRPOTrainer(
        model=str(checkpoint),
        processing_class=tokenizer,
        args=config,
        train_dataset=dataset,
        environment_factory=cls,
        callbacks=[metrics],
    )
    trainer.train()
    if args.save is not None:  # the policy `dataclaw train loop` evaluates after training
        trainer.save_model(str(args.save))
        tokenizer.save_pretrained(str(args.save))
    curve = args.out / "reward_curve.png"
    plot(rows, curve, f"GRPO on {cls.__name__} ({Path(args.model).name}, G={args.num_generations})")
    summary = {
        "steps": args.steps,
        "rewards": [r.get("reward") for r in rows if "reward" in r],
        "tool_calls": [r.get("tools/call_frequency") for r in rows if "reward" in r],
        "metrics": str(metrics_path),
        "curve": str(curve),
        "activation_checkpointing": bool(getattr(trainer.args, checkpointing)),
        "wall_s": round(time.monotonic() - t0, 1),
    }
    print(json.dumps({"summary": summary}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
