"""``dataclaw train``: run a trainer on dataclaw's data, in the trainer's own Python.

``grpo --recipe envcraft TASKS`` exports the tasks for TRL, then runs TRL's GRPOTrainer with the exported
environment class for a few steps on CPU (the bundled SmolLM2-135M by default) as a subprocess of the
trainer environment — dataclaw never imports a trainer; the trainer stack (``dataclaw[train]``: torch,
trl, transformers, gguf, matplotlib) lives in its own venv, ``make train-setup`` → ``.venv-train``.
It writes ``metrics.jsonl`` (per step) and ``reward_curve.png`` into the run folder.

``sft EXPORT_DIR`` reads a LLaMA-Factory ShareGPT export (``dataclaw tailor export RUN -f llamafactory``)
as chat messages, runs TRL's SFTTrainer on them the same way (``train/recipes/trl_sft.py``: per-step
loss in ``metrics.jsonl``, ``loss_curve.png``) and writes the LLaMA-Factory config that trains the same
export with ``llamafactory-cli train``, with the model's template. A text-only model on an export with
images or videos is refused in one line (it would train on ``<image>`` as text).

``loop`` asks whether the data teaches: verified tool tasks split by environment and seed, SFT on the train
split's gold trajectories (then optional GRPO), the policy before and after on the held-out splits
(composed in ``cli/_train_loop.py``; docs/training.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from dataclaw.core.errors import ConfigError
from dataclaw.train.sft import prepare_sft
from dataclaw.train.trainer import (
    GRPO_RECIPE,
    TRAIN_PYTHON_ENV,
    default_cache_dir,
    policy_path,
    recipe_argv,
    run_recipe,
    train_python,
)

app = typer.Typer(no_args_is_help=True, help="Train on dataclaw data (the trainer runs in its own venv).")
console = Console()


@app.command("grpo")
def grpo(
    tasks: Annotated[Path, typer.Argument(help="tasks.jsonl of `dataclaw tasks synth` (or its run folder).")],
    recipe: Annotated[str, typer.Option(help="envcraft: GRPO on EnvCraft tool tasks (TRL).")] = "envcraft",
    out: Annotated[Path, typer.Option("--out", "-o", help="Run folder (export, metrics, curve).")] = Path(
        "runs/grpo"
    ),
    model: Annotated[
        str, typer.Option(help="Policy: smollm2-135m (bundled GGUF), a GGUF file or a checkpoint folder.")
    ] = "smollm2-135m",
    env: Annotated[str | None, typer.Option("--env", help="Environment group (TASKS mixes several).")] = None,
    steps: Annotated[int, typer.Option(help="Optimizer steps.")] = 2,
    num_generations: Annotated[int, typer.Option(help="GRPO group size G (rollouts per prompt).")] = 2,
    max_completion_length: Annotated[int, typer.Option(help="Tokens per rollout, tool results incl.")] = 192,
    max_tool_calls: Annotated[int, typer.Option(help="Tool-calling rounds per rollout.")] = 3,
    learning_rate: Annotated[float, typer.Option(help="AdamW learning rate (paper D.1: 1e-6).")] = 1e-6,
    beta: Annotated[float, typer.Option(help="KL coefficient (D.1: 0.02; 0: no reference model).")] = 0.0,
    seed: Annotated[int, typer.Option(help="Trainer seed.")] = 0,
    train_python_flag: Annotated[
        Path | None, typer.Option("--train-python", help=f"Trainer Python (default ${TRAIN_PYTHON_ENV}).")
    ] = None,
    cache: Annotated[
        Path | None, typer.Option(help="Where the checkpoint converted from a GGUF is kept.")
    ] = None,
) -> None:
    """GRPO for a handful of steps on CPU with TRL, through the exported environment class; writes
    metrics.jsonl and reward_curve.png. It proves the wiring, not quality (see docs/training.md)."""
    if recipe != "envcraft":
        raise ConfigError(f"--recipe {recipe!r}: only 'envcraft' (GRPO on EnvCraft tool tasks) is available")
    if steps < 1 or num_generations < 2:
        raise ConfigError("--steps must be >= 1 and --num-generations >= 2 (GRPO compares a group)")
    py = train_python(train_python_flag)
    policy = policy_path(model)
    from dataclaw.envcraft.export import export_tasks

    export_dir = out / "export"
    result = export_tasks(tasks, "trl", export_dir, group=env)
    console.print(f"exported {result.tasks} tasks of [bold]{result.group}[/] to {export_dir}")
    argv = recipe_argv(
        py,
        GRPO_RECIPE,
        export=export_dir,
        out=out,
        model=policy,
        cache=cache or default_cache_dir(),
        steps=steps,
        num_generations=num_generations,
        max_completion_length=max_completion_length,
        max_tool_calls=max_tool_calls,
        learning_rate=learning_rate,
        beta=beta,
        seed=seed,
    )
    console.print(f"training in {py} …")
    summary = run_recipe(argv, "GRPO")
    rewards = ", ".join("-" if r is None else f"{r:.3f}" for r in summary["rewards"])
    console.print(
        f"GRPO: {summary['steps']} steps in {summary['wall_s']} s; reward per step: {rewards}\n"
        f"  metrics: {summary['metrics']}\n  curve:   {summary['curve']}"
    )


@app.command("sft")
def sft(
    export_dir: Annotated[
        Path, typer.Argument(help="A ShareGPT export: `dataclaw tailor export RUN -f llamafactory -o DIR`.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run folder (data, metrics, curve).")] = Path(
        "runs/sft"
    ),
    dataset: Annotated[
        str | None, typer.Option(help="Entry of dataset_info.json (default: its only ShareGPT one).")
    ] = None,
    model: Annotated[
        str, typer.Option(help="Policy: smollm2-135m (bundled GGUF), a GGUF file or a checkpoint folder.")
    ] = "smollm2-135m",
    steps: Annotated[int, typer.Option(help="Optimizer steps (batch 1).")] = 2,
    max_length: Annotated[int, typer.Option(help="Tokens per conversation; longer ones are cut.")] = 256,
    learning_rate: Annotated[float, typer.Option(help="AdamW learning rate (constant).")] = 2e-5,
    seed: Annotated[int, typer.Option(help="Trainer seed.")] = 0,
    train_python_flag: Annotated[
        Path | None, typer.Option("--train-python", help=f"Trainer Python (default ${TRAIN_PYTHON_ENV}).")
    ] = None,
    cache: Annotated[
        Path | None, typer.Option(help="Where the checkpoint converted from a GGUF is kept.")
    ] = None,
) -> None:
    """SFT for a handful of steps on CPU with TRL's SFTTrainer on a ShareGPT export; writes metrics.jsonl,
    loss_curve.png and the LLaMA-Factory config for the model. An export with images or videos needs a
    model that reads them (refused otherwise). It proves the wiring."""
    if steps < 1 or max_length < 16:
        raise ConfigError("--steps must be >= 1 and --max-length >= 16")
    plan = prepare_sft(
        export_dir,
        out,
        dataset=dataset,
        model=model,
        steps=steps,
        max_length=max_length,
        learning_rate=learning_rate,
        seed=seed,
        python=train_python_flag,
        cache=cache,
    )
    data = plan.data
    seen = f" with {plan.media} images" if plan.media else ""
    console.print(
        f"read {len(data.conversations)} conversations{seen} of [bold]{data.name}[/] from {data.file}; "
        f"model {plan.profile.describe()}",
        soft_wrap=True,
    )
    if plan.note:
        console.print(plan.note, soft_wrap=True)
    console.print(f"training in {plan.python} …")
    summary = run_recipe(plan.argv, "SFT")
    losses = ", ".join(f"{x:.4f}" for x in summary["losses"])
    console.print(
        f"SFT: {summary['steps']} steps on {summary['samples']} conversations in {summary['wall_s']} s; "
        f"loss per step: {losses}\n  metrics: {summary['metrics']}\n  curve:   {summary['curve']}"
        + (
            f"\n  LLaMA-Factory, same export: llamafactory-cli train {plan.llamafactory_config}"
            if plan.llamafactory_config
            else ""
        ),
        soft_wrap=True,  # paths stay whole, to copy
    )


@app.command("loop")
def loop(
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Run folder (splits, SFT, policies, evals).")
    ] = Path("runs/loop"),
    env: Annotated[
        list[str] | None, typer.Option("--env", help="Train environment (repeatable; default 6 archetypes).")
    ] = None,
    heldout_env: Annotated[
        list[str] | None, typer.Option("--heldout-env", help="Environment never trained on (repeatable).")
    ] = None,
    chains: Annotated[int, typer.Option(help="Train chains sampled per environment.")] = 30,
    heldout: Annotated[int, typer.Option(help="Held-out chains sampled per environment.")] = 10,
    min_len: Annotated[int, typer.Option(help="Fewest calls in a sampled chain.")] = 2,
    max_len: Annotated[int, typer.Option(help="Most calls in a sampled chain.")] = 4,
    model: Annotated[
        str, typer.Option(help="Policy: smollm2-135m (bundled GGUF), a GGUF file or a checkpoint folder.")
    ] = "smollm2-135m",
    epochs: Annotated[
        float, typer.Option(help="SFT epochs over the gold trajectories (0: --sft-steps).")
    ] = 2.0,
    sft_steps: Annotated[int, typer.Option(help="SFT optimizer steps when --epochs is 0.")] = 1,
    grad_accum: Annotated[int, typer.Option(help="Trajectories per SFT optimizer step.")] = 4,
    learning_rate: Annotated[float, typer.Option(help="SFT AdamW learning rate (constant).")] = 5e-5,
    max_length: Annotated[
        int, typer.Option(help="Tokens per trajectory in SFT; longer ones are cut.")
    ] = 2048,
    grpo_steps: Annotated[int, typer.Option(help="GRPO steps after SFT (0: none).")] = 0,
    samples: Annotated[int, typer.Option("-n", help="Rollouts per held-out task (pass^k up to n).")] = 2,
    max_turns: Annotated[int, typer.Option(help="Model turns per rollout.")] = 8,
    max_tokens: Annotated[int, typer.Option(help="Tokens per model answer.")] = 160,
    temperature: Annotated[float, typer.Option(help="Sampling temperature (0: greedy).")] = 0.0,
    train_python_flag: Annotated[
        Path | None, typer.Option("--train-python", help=f"Trainer Python (default ${TRAIN_PYTHON_ENV}).")
    ] = None,
) -> None:
    """Does the data teach? Tasks → train / held-out split (by environment and seed) → SFT on the train
    split's gold trajectories → optional GRPO → the policy before and after on the held-out splits (mean
    reward, pass^k, tool-call validity, turns). Writes OUT/summary.json (see docs/training.md)."""
    from dataclaw.cli._train_loop import DEFAULT_HELDOUT_ENVS, DEFAULT_TRAIN_ENVS, LoopConfig, run_loop

    if min(chains, heldout, samples, max_turns, grad_accum) < 1:
        raise ConfigError("--chains, --heldout, -n, --max-turns and --grad-accum must be >= 1")
    if not 1 <= min_len <= max_len:
        raise ConfigError(f"--min-len {min_len} --max-len {max_len}: need 1 <= min-len <= max-len")
    train_envs = list(env or DEFAULT_TRAIN_ENVS)
    heldout_envs = list(DEFAULT_HELDOUT_ENVS if heldout_env is None else heldout_env)
    if both := sorted(set(train_envs) & set(heldout_envs)):
        raise ConfigError(f"--heldout-env {', '.join(both)} is also a train environment (--env): not unseen")
    cfg = LoopConfig(
        out=out,
        train_envs=train_envs,
        heldout_envs=heldout_envs,
        chains_per_env=chains,
        heldout_per_env=heldout,
        min_len=min_len,
        max_len=max_len,
        model=model,
        epochs=epochs,
        sft_steps=sft_steps,
        grad_accum=grad_accum,
        learning_rate=learning_rate,
        max_length=max_length,
        grpo_steps=grpo_steps,
        samples=samples,
        max_turns=max_turns,
        max_tokens=max_tokens,
        temperature=temperature,
        python=train_python_flag,
    )
    summary = run_loop(cfg, say=lambda line: console.print(line, soft_wrap=True))
    for split, row in summary["eval"].items():
        for label, fig in row.items():
            console.print(
                f"{split:>10} {label:>6}: mean reward {fig['mean_reward']}, "
                f"passes making every gold write {fig['pass_every_write']}, pass^k {fig['pass_hat_k']}, "
                f"tool-call validity {fig['tool_call_validity']}, turns/task {fig['turns_per_task']}"
            )
    console.print(f"summary: {out / 'summary.json'} ({summary['wall_s']['total']} s)")
