"""Run in the trainer venv (.venv-train) by test_rewards.py: TRL's own ``GRPOTrainer._calculate_rewards``
calls the Tailor reward functions on a small batch; print one JSON line with the per-function rewards.

    python rewards_trl_probe.py BATCH.json

The trainer object is a stand-in carrying only the attributes ``_calculate_rewards`` reads (building a
real GRPOTrainer needs a model); the call itself, the column repetition and the reward-kwargs are TRL's.
"""

from __future__ import annotations

import json
import os
import sys
from types import SimpleNamespace

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def main() -> None:
    batch = json.loads(open(sys.argv[1], encoding="utf-8").read())
    import torch
    from trl import GRPOTrainer
    from trl.trainer.utils import get_callable_name

    from dataclaw.tailor.scoring.rewards import REWARD_FUNCS, REWARD_WEIGHTS, tailor_reward

    funcs = [*REWARD_FUNCS, tailor_reward]
    trainer = SimpleNamespace(
        accelerator=SimpleNamespace(device=torch.device("cpu"), is_main_process=True),
        reward_funcs=funcs,
        reward_processing_classes=[None] * len(funcs),
        reward_func_names=[get_callable_name(f) for f in funcs],
        state=SimpleNamespace(global_step=0),
        args=SimpleNamespace(report_to=[]),
        environments=None,
        _log_completion_extra=lambda *a, **k: None,
        _log_metric=lambda *a, **k: None,
    )
    inputs = batch["inputs"]
    prompts = [x["prompt"] for x in inputs]
    completions = batch["completions"]
    ids = [[1, 2, 3] for _ in completions]
    out = GRPOTrainer._calculate_rewards(trainer, inputs, prompts, completions, ids)
    print(
        json.dumps(
            {
                "names": trainer.reward_func_names,
                "rewards": [[None if v != v else v for v in row] for row in out.tolist()],
                "weights": REWARD_WEIGHTS,
            }
        )
    )


if __name__ == "__main__":
    main()
