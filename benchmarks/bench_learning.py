"""Does the data teach? The embedded policy (SmolLM2-135M-Instruct) before and after training on
dataclaw's own verified tool tasks, on tasks it has not seen (issue 30).

The recipe is ``dataclaw train loop`` (``dataclaw.cli._train_loop.run_loop``): chains sampled in six
built-in archetypes (train seed 0) and grounded with the soundness gate on, a template request each;
the train split's gold trajectories (the observations the environment really returned) as SFT data in
the policy's own chat template and tool-call format; TRL SFT on CPU in ``.venv-train`` (full fine-tune,
loss on the assistant's tokens), optionally GRPO steps; then both policies served the same way
(``recipes/serve_policy.py``) and rolled out with the rollout loop of ``tasks rollout`` (greedy, the
same budgets and seeds) on

- ``same_env``: the six archetypes' chains of another seed whose writes (the end state a task demands) no
  train task has (unseen tasks); ``same_env_novel_writes`` gives the figures of those that share not even
  one write call (tool and arguments) with any train task;
- ``unseen_env``: two archetypes never trained on (``state_machine``, ``event_triggering``).

Figures per split and policy: mean reward, pass^k (τ-bench, over ``-n`` trials), tool-call validity,
turns per task; the SFT learning curve (loss per logged step) and, with GRPO, its reward per step; the
wall time of each phase on this machine.

Figures per split and policy also hold ``pass_every_write``: the share of rollouts that score 1.0 and made
every write of the gold chain (tool and arguments). The verifier scores the end state, and a run can
reach it without doing all that was asked (steps that cancel out, a write that sets what a record already
holds, a field the verifier does not see); such a pass is counted apart, never as success.

Targets, each on the mean reward and on ``pass_every_write``: ≥ 200 train tasks; after ≥ 0.3 and ≥ 5×
before on ``same_env`` (a before of 0 needs after ≥ 0.3); after > before on ``unseen_env``. One JSON line;
exit 1 on a miss (the figures are printed either way).

    .venv/bin/python benchmarks/bench_learning.py [--chains 64] [--heldout 40] [--epochs 2] [-n 1]

The defaults (chains of 1–3 calls, two epochs at lr 1e-4, 40 held-out chains per environment, five turns
of 128 tokens) take about an hour and three quarters on 2 quiet cores: SFT on 216 trajectories (2 × ~290k
tokens) took 76 min, the four evaluations 22 min. One epoch is not enough: two runs of it landed at 0.38
and 0.27 on ``same_env``, astride the target (docs/training.md has every measured run). Greedy decoding
makes every trial of a task the same, so ``-n`` above 1 only repeats it. A rerun with the same ``--out``
reuses the trained policy and the rollouts recorded.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dataclaw.cli._train_loop import DEFAULT_HELDOUT_ENVS, DEFAULT_TRAIN_ENVS, LoopConfig, run_loop

MIN_TRAIN_TASKS = 200
TARGET_AFTER = 0.3
TARGET_GAIN = 5.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=None, help="run folder (default: a temp dir)")
    p.add_argument("--chains", type=int, default=64, help="train chains per environment (6 environments)")
    p.add_argument("--heldout", type=int, default=40, help="held-out chains per environment")
    p.add_argument("--min-len", type=int, default=1, help="fewest calls in a sampled chain")
    p.add_argument("--max-len", type=int, default=3, help="most calls in a sampled chain")
    p.add_argument("--epochs", type=float, default=2.0)
    p.add_argument("--learning-rate", type=float, default=1e-4)
    p.add_argument("--max-length", type=int, default=1536)
    p.add_argument("--grpo-steps", type=int, default=0)
    p.add_argument("-n", "--samples", type=int, default=1, help="trials per held-out task (pass^k)")
    p.add_argument("--max-turns", type=int, default=5)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--device", choices=("cpu", "auto"), default="cpu", help="auto: SFT and serving on a GPU")
    return p.parse_args(argv)


def verdict(summary: dict) -> dict:
    """The targets, checked on the summary's figures."""
    ev = summary["eval"]

    def holds(test: Callable[..., bool]) -> bool:
        # each target holds for the mean reward and for the passes that made every gold write: a pass
        # the verifier cannot tell from a run that skipped a step is not counted as success
        fields = ("mean_reward", "pass_every_write")
        return all(
            test(*(ev[s][p][f] or 0.0 for s in ("same_env", "unseen_env") for p in ("before", "after")))
            for f in fields
        )

    checks = {
        "train_tasks": summary["splits"]["train"]["tasks"] >= MIN_TRAIN_TASKS,
        "same_env_after": holds(lambda sb, sa, ub, ua: sa >= TARGET_AFTER),
        # 0 ≥ 5 × 0 is no gain
        "same_env_gain": holds(lambda sb, sa, ub, ua: sa > 0 and sa >= TARGET_GAIN * sb),
        "unseen_env_gain": holds(lambda sb, sa, ub, ua: ua > ub),
    }
    return {"checks": checks, "ok": all(checks.values())}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    t0 = time.monotonic()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-learning-"))
    cfg = LoopConfig(
        out=out,
        train_envs=list(DEFAULT_TRAIN_ENVS),
        heldout_envs=list(DEFAULT_HELDOUT_ENVS),
        chains_per_env=args.chains,
        heldout_per_env=args.heldout,
        min_len=args.min_len,
        max_len=args.max_len,
        epochs=args.epochs,
        learning_rate=args.learning_rate,
        max_length=args.max_length,
        grpo_steps=args.grpo_steps,
        samples=args.samples,
        max_turns=args.max_turns,
        max_tokens=args.max_tokens,
        device=args.device,
    )
    with contextlib.redirect_stdout(sys.stderr):  # the recipes' output: stdout keeps the one JSON line
        summary = run_loop(cfg, say=print)
    v = verdict(summary)
    ev = summary["eval"]
    result = {
        "bench": "learning",
        "train_tasks": summary["splits"]["train"]["tasks"],
        "sft_trajectories": summary["sft_trajectories"],
        "heldout_tasks": {k: summary["splits"][k]["tasks"] for k in ev},
        "mean_reward": {k: {p: f["mean_reward"] for p, f in row.items()} for k, row in ev.items()},
        "pass_every_write": {k: {p: f["pass_every_write"] for p, f in row.items()} for k, row in ev.items()},
        # same_env tasks none of whose writes a train task makes: the strictest reading of "unseen"
        "same_env_novel_writes": {
            "tasks": summary["splits"]["same_env"].get("novel_writes"),
            "mean_reward": {p: f["novel_writes"]["mean_reward"] for p, f in ev["same_env"].items()},
            "pass_every_write": {p: f["novel_writes"]["pass_every_write"] for p, f in ev["same_env"].items()},
        },
        "pass_hat_k": {k: {p: f["pass_hat_k"] for p, f in row.items()} for k, row in ev.items()},
        "tool_call_validity": {
            k: {p: f["tool_call_validity"] for p, f in row.items()} for k, row in ev.items()
        },
        "turns_per_task": {k: {p: f["turns_per_task"] for p, f in row.items()} for k, row in ev.items()},
        "sft_curve": summary["sft_curve"],
        "grpo_curve": summary["grpo_curve"],
        "wall_s": {**summary["wall_s"], "bench": round(time.monotonic() - t0, 1)},
        "targets": {"min_train_tasks": MIN_TRAIN_TASKS, "after": TARGET_AFTER, "gain": TARGET_GAIN},
        **v,
        "out": str(out),
    }
    print(json.dumps(result))
    return 0 if v["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
