"""``dataclaw train``: run a trainer on dataclaw's data, in the trainer's own Python.

``grpo --recipe envcraft TASKS`` exports the tasks for TRL, then runs TRL's GRPOTrainer with the exported
environment class for a few steps on CPU (the bundled SmolLM2-135M by default) as a subprocess of the
trainer environment — dataclaw never imports a trainer; the trainer stack (``dataclaw[train]``: torch,
trl, transformers, gguf, matplotlib) lives in its own venv, ``make train-setup`` → ``.venv-train``.
It writes ``metrics.jsonl`` (per step) and ``reward_curve.png`` into the run folder.

``sft EXPORT_DIR`` reads a LLaMA-Factory ShareGPT export (``dataclaw tailor export RUN -f llamafactory``)
as chat messages, runs TRL's SFTTrainer on them the same way (``train/recipes/trl_sft.py``: per-step
loss in ``metrics.jsonl``, ``loss_curve.png``) and writes the LLaMA-Factory config that trains the same
export with ``llamafactory-cli train``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from dataclaw.core.errors import ConfigError

app = typer.Typer(no_args_is_help=True, help="Train on dataclaw data (the trainer runs in its own venv).")
console = Console()

TRAIN_PYTHON_ENV = "DATACLAW_TRAIN_PYTHON"
DEFAULT_VENV = Path(".venv-train")
NEEDED = ("torch", "trl", "transformers", "datasets", "gguf", "matplotlib", "dataclaw")
RECIPE = Path(__file__).resolve().parents[1] / "envcraft" / "export" / "recipes" / "trl_grpo.py"
SFT_RECIPE = Path(__file__).resolve().parents[1] / "train" / "recipes" / "trl_sft.py"
INSTALL_HINT = (
    "install the trainer stack in its own venv with `make train-setup` (creates .venv-train: torch CPU, "
    "then `pip install -e '.[train]'`), or point --train-python / $DATACLAW_TRAIN_PYTHON at a Python "
    "that has dataclaw[train]"
)


def train_python(flag: Path | None) -> Path:
    """The trainer's interpreter: ``--train-python``, ``$DATACLAW_TRAIN_PYTHON``, else ``.venv-train``
    here; checked for the packages the recipe imports (without importing them)."""
    if flag is not None:
        py, how = flag, "--train-python"
    elif os.environ.get(TRAIN_PYTHON_ENV):
        py, how = Path(os.environ[TRAIN_PYTHON_ENV]), f"${TRAIN_PYTHON_ENV}"
    else:
        py, how = DEFAULT_VENV / "bin" / "python", "the default ./.venv-train"
    if not py.is_file():
        raise ConfigError(f"no trainer Python at {py} ({how}): {INSTALL_HINT}")
    probe = (
        "import importlib.util, json; "
        f"print(json.dumps([m for m in {list(NEEDED)!r} if importlib.util.find_spec(m) is None]))"
    )
    proc = subprocess.run([str(py), "-c", probe], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise ConfigError(f"the trainer Python {py} ({how}) does not run: {proc.stderr.strip()[-300:]}")
    missing = json.loads(proc.stdout.strip().splitlines()[-1])
    if missing:
        raise ConfigError(f"the trainer Python {py} ({how}) lacks {', '.join(missing)}: {INSTALL_HINT}")
    return py


def _policy(model: str) -> Path:
    if model == "smollm2-135m":
        from dataclaw.models.backends.local import find_gguf

        return find_gguf(model)
    path = Path(model)
    if not path.exists():
        raise ConfigError(f"--model {model}: not smollm2-135m, a GGUF file or a checkpoint folder")
    return path.resolve()


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dataclaw" / "models"


def _run_recipe(argv: list[str], py: Path, what: str) -> dict:
    """Run a recipe script in the trainer's Python, its output streamed; its JSON summary line."""
    # the hubs are out of reach and not needed: everything is local
    child_env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TRL_EXPERIMENTAL_SILENCE": "1",
    }
    console.print(f"training in {py} …")
    summary = None
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=child_env, bufsize=1
    ) as proc:
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if line.startswith('{"summary"'):
                    summary = json.loads(line)["summary"]
                sys.stdout.write(line)
            code = proc.wait()
        except BaseException:
            proc.terminate()
            proc.wait(timeout=30)
            raise
    if code != 0 or summary is None:
        raise ConfigError(f"the {what} run failed (exit {code}); its output is above")
    return summary


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
    policy = _policy(model)
    from dataclaw.envcraft.export import export_tasks

    export_dir = out / "export"
    result = export_tasks(tasks, "trl", export_dir, group=env)
    console.print(f"exported {result.tasks} tasks of [bold]{result.group}[/] to {export_dir}")
    argv = [
        str(py),
        str(RECIPE),
        "--export",
        str(export_dir.resolve()),
        "--out",
        str(out.resolve()),
        "--model",
        str(policy),
        "--cache",
        str((cache or _cache_dir()).resolve()),
        "--steps",
        str(steps),
        "--num-generations",
        str(num_generations),
        "--max-completion-length",
        str(max_completion_length),
        "--max-tool-calls",
        str(max_tool_calls),
        "--learning-rate",
        str(learning_rate),
        "--beta",
        str(beta),
        "--seed",
        str(seed),
    ]
    summary = _run_recipe(argv, py, "GRPO")
    rewards = ", ".join("-" if r is None else f"{r:.3f}" for r in summary["rewards"])
    console.print(
        f"GRPO: {summary['steps']} steps in {summary['wall_s']} s; reward per step: {rewards}\n"
        f"  metrics: {summary['metrics']}\n  curve:   {summary['curve']}"
    )


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
    """SFT for a handful of steps on CPU with TRL's SFTTrainer on a ShareGPT export (text only); writes
    metrics.jsonl, loss_curve.png and the matching LLaMA-Factory config. It proves the wiring."""
    if steps < 1 or max_length < 16:
        raise ConfigError("--steps must be >= 1 and --max-length >= 16")
    from dataclaw.train.checkpoint import checkpoint_path
    from dataclaw.train.sharegpt import read_sharegpt

    data = read_sharegpt(export_dir, dataset)
    py = train_python(train_python_flag)
    policy = _policy(model)
    out.mkdir(parents=True, exist_ok=True)
    data_file = out / "sft.jsonl"
    with data_file.open("w", encoding="utf-8") as fh:
        for messages in data.conversations:
            fh.write(json.dumps({"messages": messages}, ensure_ascii=False) + "\n")
    media = sum(data.media.values())
    note = (
        f" ({media} listed images/videos stay as <image>/<video> text: the recipe is text-only)"
        if media
        else ""
    )
    console.print(
        f"read {len(data.conversations)} conversations of [bold]{data.name}[/] from {data.file}{note}",
        soft_wrap=True,
    )
    cache_dir = (cache or _cache_dir()).resolve()
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
    argv = [
        str(py),
        str(SFT_RECIPE),
        "--data",
        str(data_file.resolve()),
        "--out",
        str(out.resolve()),
        "--model",
        str(policy),
        "--cache",
        str(cache_dir),
        "--steps",
        str(steps),
        "--max-length",
        str(max_length),
        "--learning-rate",
        str(learning_rate),
        "--seed",
        str(seed),
    ]
    summary = _run_recipe(argv, py, "SFT")
    losses = ", ".join(f"{x:.4f}" for x in summary["losses"])
    console.print(
        f"SFT: {summary['steps']} steps on {summary['samples']} conversations in {summary['wall_s']} s; "
        f"loss per step: {losses}\n  metrics: {summary['metrics']}\n  curve:   {summary['curve']}\n"
        f"  LLaMA-Factory, same export: llamafactory-cli train {lf_config}",
        soft_wrap=True,  # paths stay whole, to copy
    )
