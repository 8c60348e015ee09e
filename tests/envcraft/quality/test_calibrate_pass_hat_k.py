"""A calibration's manifest carries the summary of its k trials per task, pass^k included (checked by hand):
one task, k = 3, a scripted agent (the OpenAI-compatible test server) that solves it on seeds 0 and 2."""

from __future__ import annotations

import json
from pathlib import Path

from dataclaw.envcraft.quality.task_runs import calibrate_run, calibration_config, rollout_config
from envcraft.rollout.rollout_helpers import tool_task
from support.openai_server import OpenAIServer, ReceivedRequest, Reply


def test_calibration_manifest_has_pass_hat_k(tmp_path: Path) -> None:
    task = tool_task()
    src = tmp_path / "tasks.jsonl"
    src.write_text(json.dumps(task) + "\n")
    gold = [(c["tool"], c["params"]) for c in task["gold_chain"]]

    def agent(req: ReceivedRequest) -> Reply:
        body = req.body or {}
        n = sum(1 for m in body["messages"] if m["role"] == "assistant")
        plan = gold if body.get("seed") in (0, 2) else []  # seed 1: answers without acting
        return Reply.tool_call(*plan[n], call_id=f"c{n}") if n < len(plan) else Reply.text("Done.")

    with OpenAIServer(responder=agent) as server:
        done = calibrate_run(
            src, tmp_path / "cal", f"{server.base_url}::agent", calibration_config(k=3), rollout_config()
        )
    assert done.rows[0]["verdict"] == "keep"  # 0 < p = 2/3 < 1
    # by hand: 2 of 3 trials succeed; pass^1 = 2/3, pass^2 = C(2,2)/C(3,2) = 1/3, pass^3 = 0
    want = {"1": 0.6667, "2": 0.3333, "3": 0.0}
    summary = json.loads((tmp_path / "cal" / "manifest.json").read_text())["calibrate"]["summary"]
    assert summary["pass_hat_k"] == want
    assert summary["components"]["db"] == {"rollouts": 3, "mean": 0.6667, "errors": 0}
