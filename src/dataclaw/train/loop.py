"""The learning loop's trainer-side pieces (``dataclaw train loop``, ``benchmarks/bench_learning.py``).

Does the data teach? The loop makes verified tool tasks, splits them into train and held-out, fine-tunes
the policy on the train split's gold trajectories (SFT, then optionally a few GRPO steps) and evaluates
the policy before and after on the held-out splits. The EnvCraft side (tasks, gold replays, rollouts)
is composed in ``dataclaw.cli._train_loop`` (this package is a shared service and imports no engine);
here live what it needs from the trainer side:

- :func:`serve_policy`: a checkpoint served as an OpenAI-compatible tool-calling model by
  ``recipes/serve_policy.py`` in the trainer's Python, so ``tasks rollout`` evaluates the policy before
  and after training the same way (same template, decoding and tool-call parser);
- :func:`write_sft_rows`: the SFT file the SFT recipe reads in tool mode (``{"messages", "tools"}``: the
  recipe renders them with the policy's own chat template and trains on the assistant's tokens only);
- :func:`learning_curve`: reward per step of a GRPO run, loss per step of an SFT run, from their
  ``metrics.jsonl``.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError

SERVE_RECIPE = Path(__file__).resolve().parent / "recipes" / "serve_policy.py"
"""The OpenAI-compatible server of a transformers checkpoint (run in the trainer's Python)."""
COMPACT_TOOL_TEMPLATE = Path(__file__).resolve().parent / "recipes" / "compact_tools.jinja"
"""The loop's chat template: ChatML with SmolLM2's own tokens and the Qwen2.5 tool-call format
(``<tool_call>{"name", "arguments"}</tool_call>``, results in ``<tool_response>``), as in the template
the converted checkpoint carries, but each tool as one line (``name(arg: type, opt?: a|b): first
sentence``) instead of its full JSON schema: the system turn of a nine-tool archetype is ~700 tokens
instead of ~2,000, which is what makes SFT on hundreds of trajectories affordable on a CPU. The
assistant's turns carry ``{% generation %}`` marks (loss on its tokens only). Served before and after
training alike, so both policies read the same prompt."""
READY_TIMEOUT_S = 300.0
"""How long a policy server may take to load its checkpoint (2 shared cores, cold disk)."""


@contextmanager
def serve_policy(
    python: Path,
    checkpoint: Path,
    name: str,
    log: Path,
    template: Path | None = None,
    threads: int = 0,
    device: str = "cpu",
) -> Iterator[str]:
    """Serve ``checkpoint`` on a free local port while the block runs; yields its model string
    (``http://127.0.0.1:PORT/v1::NAME``), rendering with ``template`` when given. The server's output
    goes to ``log``; a server that exits or does not come up within :data:`READY_TIMEOUT_S` is a
    :class:`ConfigError` naming the log."""
    log.parent.mkdir(parents=True, exist_ok=True)
    port_file = log.with_suffix(".port")
    port_file.unlink(missing_ok=True)
    argv = [str(python), str(SERVE_RECIPE), "--model", str(checkpoint), "--name", name]
    argv += ["--port-file", str(port_file), "--threads", str(threads), "--device", device]
    argv += ["--chat-template", str(template)] if template is not None else []
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with log.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not (port_file.is_file() and port_file.read_text().strip()):
            if proc.poll() is not None:
                raise ConfigError(f"the policy server for {checkpoint} exited ({proc.returncode}); see {log}")
            if time.monotonic() > deadline:
                raise ConfigError(f"the policy server for {checkpoint} did not start; see {log}")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port_file.read_text().strip()}/v1::{name}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def write_template(out: Path) -> Path:
    """:data:`COMPACT_TOOL_TEMPLATE` written into the run folder (the recipes read it from there)."""
    path = out / "chat_template.jinja"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(COMPACT_TOOL_TEMPLATE.read_text())
    return path


def write_sft_rows(path: Path, conversations: list[dict[str, Any]]) -> int:
    """One ``{"messages", "tools"}`` line per conversation (tools as a JSON string: tool schemas differ
    between environments, and one Arrow column cannot hold them all); the number written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for conv in conversations:
            f.write(json.dumps({"messages": conv["messages"], "tools": json.dumps(conv["tools"])}) + "\n")
    return len(conversations)


def learning_curve(metrics: Path, key: str) -> list[dict[str, float]]:
    """``[{"step", key}]`` of a recipe's ``metrics.jsonl`` (``loss`` of SFT, ``reward`` of GRPO)."""
    if not metrics.is_file():
        return []
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    return [{"step": r["step"], key: round(float(r[key]), 4)} for r in rows if r.get(key) is not None]
