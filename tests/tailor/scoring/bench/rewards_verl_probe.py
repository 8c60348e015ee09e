"""Run in the VERL venv (.venv-verl) by test_rewards.py: load ``compute_score`` the way VERL loads a
custom reward (``reward.custom_reward_function.path/name``) and call it the way its NaiveRewardManager
does; print one JSON line.

    python rewards_verl_probe.py BATCH.json
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    batch = json.loads(open(sys.argv[1], encoding="utf-8").read())
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn

    import dataclaw.tailor.scoring.rewards as rewards

    out = {}
    # both ways VERL names a custom reward: a file path, and pkg://module
    for path in (rewards.__file__, "pkg://dataclaw.tailor.scoring.rewards"):
        cfg = OmegaConf.create(
            {"reward": {"custom_reward_function": {"path": path, "name": "compute_score"}}}
        )
        fn = get_custom_reward_fn(cfg)
        out["pkg" if path.startswith("pkg://") else "file"] = [
            fn(
                data_source=item["data_source"],
                solution_str=item["solution_str"],
                ground_truth=item["ground_truth"],
                extra_info=item["extra_info"],
            )
            for item in batch
        ]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
