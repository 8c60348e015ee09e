"""The policy as a plain transformers checkpoint, for the recipe scripts (run by the trainer's Python).

Imported by ``envcraft/export/recipes/trl_grpo.py`` and ``train/recipes/trl_sft.py``; transformers and
TRL are imported inside the functions, so dataclaw's own venv can import this module without them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

MARKER = "dataclaw-checkpoint.json"


def checkpoint_path(model: str | Path, cache: Path | None) -> Path:
    """Where :func:`plain_checkpoint` keeps ``model``: a checkpoint folder is itself; a GGUF file becomes
    ``<cache>/<stem>-hf`` (next to the GGUF without a cache)."""
    src = Path(model)
    return src if src.is_dir() else (cache or src.parent) / (src.stem + "-hf")


def plain_checkpoint(model: str, cache: Path | None) -> Path:
    """A transformers checkpoint folder for ``model`` (a GGUF is converted once and cached).

    A GGUF such as the SmolLM2-135M we ship is loaded through transformers' GGUF support, de-quantised
    to fp32 and saved with TRL's ChatML/Qwen2.5 tool template (SmolLM2 speaks ChatML, so its
    ``<|im_start|>``/``<|im_end|>`` tokens are unchanged; its own template drops tool calls).
    """
    src = Path(model)
    if src.is_dir():
        return src
    if not src.is_file():
        raise SystemExit(f"error: model {model}: no such GGUF file or checkpoint folder")
    dest = checkpoint_path(src, cache)
    if (dest / MARKER).is_file():
        return dest
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl.chat_template_utils import qwen2_5_chat_template

    t0 = time.monotonic()
    tokenizer = AutoTokenizer.from_pretrained(src.parent, gguf_file=src.name)
    loaded = AutoModelForCausalLM.from_pretrained(src.parent, gguf_file=src.name)  # de-quantised to fp32
    # transformers marks a GGUF-loaded model as quantised and refuses to save it: the same weights in a
    # plain model of the same config save as an ordinary checkpoint
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    net = type(loaded)(config)
    net.load_state_dict(loaded.state_dict())
    del loaded
    tokenizer.chat_template = qwen2_5_chat_template  # renders tools, tool calls and tool results
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
    net.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    info = {"source": str(src), "chat_template": "trl qwen2_5 (ChatML + <tool_call>)"}
    (tmp / MARKER).write_text(json.dumps(info) + "\n")
    if dest.exists():  # another run finished first
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        tmp.rename(dest)
    print(f"checkpoint: {src.name} -> {dest} in {time.monotonic() - t0:.1f} s", flush=True)
    return dest


def checkpointing_off(config_cls: Any) -> dict[str, bool]:
    """The keyword that turns activation (gradient) checkpointing off in a TRL config class: transformers
    5 renamed ``gradient_checkpointing`` (kept as a deprecated alias); TRL's configs default it to on.
    A 135M model fits without it on a CPU, and recomputing activations only costs time."""
    fields = {f.name for f in dataclasses.fields(config_cls)}
    name = "activation_checkpointing" if "activation_checkpointing" in fields else "gradient_checkpointing"
    return {name: False}


def plot_curve(
    steps: list[int], values: list[float], path: Path, *, title: str, ylabel: str, label: str
) -> None:
    """A line plot of one metric per step, saved as PNG (matplotlib, headless)."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=120)
    ax.plot(steps, values, marker="o", label=label)
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def jsonl_metrics(path: Path, t0: float) -> tuple[Any, list[dict[str, Any]]]:
    """A transformers ``TrainerCallback`` that appends one JSON line per logged step to ``path`` (emptied
    first), and the list it also collects the rows in (for the curve and the summary)."""
    from transformers import TrainerCallback

    path.write_text("")
    rows: list[dict[str, Any]] = []

    class JsonlMetrics(TrainerCallback):
        def on_log(self, _args: Any, state: Any, control: Any, logs: dict | None = None, **kw: Any) -> None:
            if not logs or "train_runtime" in logs:
                return
            row = {"step": state.global_step, "wall_s": round(time.monotonic() - t0, 2), **logs}
            rows.append(row)
            with open(path, "a") as fh:
                fh.write(json.dumps(row) + "\n")

    return JsonlMetrics(), rows
