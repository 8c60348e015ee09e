"""A simulated-user rollout end to end: τ²-bench's mock domain (the published ``src/tau2`` at a2c0247 and
the mock domain data from ../shared/data, laid out as a checkout) imported with ``tasks import tau2``, then
``tasks rollout --user-model`` with the embedded SmolLM2 served by the real ``llama_cpp.server`` playing
both the agent and the user. SmolLM2-135M is too weak to solve anything; what is checked is the loop: the
user model is really asked (usage, latency), its messages are the agent's user turns in order, it plays
τ²'s user scenario, the episode ends by a recorded rule, and a rerun is answered from the run's cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dataclaw.cli.app import _run
from dataclaw.envcraft.rollout.user_sim import STOP_TOKENS
from dataclaw.sandbox import sandbox_available
from support.llama_server import llama_cpp_server  # noqa: F401  (the fixture)

SHARED = Path(__file__).resolve().parents[4] / "shared" / "data"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (SHARED / "tau2" / "mock").is_dir(), reason="needs ../shared/data/tau2"),
    pytest.mark.skipif(not (SHARED / "tau2-bench" / "src").is_dir(), reason="needs the tau2-bench source"),
    pytest.mark.skipif(not sandbox_available(), reason="needs the sandbox"),
]
ENDINGS = {*STOP_TOKENS.values(), "user_max_turns", "user_leak", "user_silent", "user_context_overflow"}
ENDINGS |= {"max_turns", "finished", "context_overflow"}


def test_smollm2_plays_the_user_of_a_tau2_mock_task_against_itself(llama_cpp_server, tmp_path) -> None:  # noqa: F811
    checkout = tmp_path / "tau2-bench"
    shutil.copytree(SHARED / "tau2" / "mock", checkout / "data" / "tau2" / "domains" / "mock")
    shutil.copytree(SHARED / "tau2-bench" / "src", checkout / "src")
    tasks = tmp_path / "tasks"
    assert _run(["tasks", "import", "tau2", str(checkout), "-o", str(tasks)]) == 0
    url = llama_cpp_server.base_url
    out = tmp_path / "ro"
    args = [
        "tasks", "rollout", str(tasks), "-o", str(out), "--limit", "1", "--seed", "0",
        "--model", f"{url}::smollm2", "--user-model", f"{url}::smollm2-user", "--user-max-turns", "1",
        "--max-turns", "1", "--max-tokens", "48", "--timeout", "120", "--concurrency", "1",
    ]  # fmt: skip
    assert _run(args) == 0
    asked = len(llama_cpp_server.statuses())
    assert _run(args) == 0 and len(llama_cpp_server.statuses()) == asked  # resumed: nothing asked again
    (rec,) = [json.loads(x) for x in (out / "rollouts.jsonl").read_text().splitlines()]
    user = rec["user"]
    assert user["model"] == f"{url}::smollm2-user" and user["source"] == "tau2"
    task = json.loads((tasks / "tasks.jsonl").read_text().splitlines()[0])
    assert user["instructions"] == task["metadata"]["user_scenario"]["instructions"]
    assert user["usage"]["completion_tokens"] > 0 and all(t["latency_s"] > 0 for t in user["turns"])
    said = [m["content"] for m in rec["messages"] if m["role"] == "user"]
    assert said == [t["content"] for t in user["turns"]] and len(said) == 1
    assert rec["messages"][1] == {"role": "user", "content": user["turns"][0]["content"]}
    assert rec["stop_reason"] in ENDINGS and rec["error"] is None
    assert rec["stop_reason"] != "user_max_turns" or user["cut"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["rollout"]["user"]["model"] == f"{url}::smollm2-user"
