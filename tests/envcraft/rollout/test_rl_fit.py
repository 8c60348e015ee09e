"""Rollouts fit for RL (issue 14 item 1), each against the suite's OpenAI-compatible test server: unusable
tool-call arguments are recoverable observations, K samples are K independent requests (seed in the
request and the cache key), sampling flags reach the server, a context-length error ends the episode as
``context_overflow`` with the state still scored, and per-turn usage, reasoning text, logprobs and token
ids are kept."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from dataclaw.envcraft.rollout import (
    DEFAULT_MAX_TOKENS,
    STOP_CONTEXT_OVERFLOW,
    RolloutConfig,
    ToolTaskHarness,
    run_rollout,
)
from dataclaw.models import get_model
from envcraft.rollout.rollout_helpers import scripted_agent
from support.openai_server import OpenAIServer, ReceivedRequest, Reply


def _gold(task: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(c["tool"], c["params"]) for c in task["gold_chain"]]


def _assistants(req: ReceivedRequest) -> int:
    return sum(1 for m in (req.body or {})["messages"] if m["role"] == "assistant")


def _raw_call(name: str, raw: str, call_id: str) -> Reply:
    return Reply.tool_call(name, raw, call_id=call_id)  # a str is sent as the arguments verbatim


def test_malformed_and_empty_arguments_are_recoverable_observations(gold_tool_task) -> None:
    gold = _gold(gold_tool_task)
    replies = [Reply.tool_call(n, a, call_id=f"g{i}") for i, (n, a) in enumerate(gold)]
    plan: list[Reply] = [
        _raw_call("login", '{"account_id": "agent_lee"', "bad"),  # malformed JSON: cut off
        replies[0],  # login
        _raw_call("whoami", "", "empty"),  # a no-argument tool called with ""
        _raw_call("get_ticket", "[1, 2]", "list"),  # JSON, but not an object
        *replies[1:],
        Reply.text("Done."),
    ]

    def respond(req: ReceivedRequest) -> Reply:
        return plan[min(_assistants(req), len(plan) - 1)]

    with OpenAIServer(responder=respond) as server:
        model = get_model(f"{server.base_url}::agent", cache=False)
        traj = asyncio.run(run_rollout(model, ToolTaskHarness(gold_tool_task)))
        bodies = server.chat_bodies()
    assert traj.error is None and traj.reward == 1.0 and traj.stop_reason == "agent_stopped"
    bad, _, empty, listed = traj.steps[:4]
    assert not bad.ok and bad.error_kind == "invalid_call" and "not valid JSON" in bad.observation
    assert bad.arguments == '{"account_id": "agent_lee"'  # the raw string stays in the trajectory
    assert empty.ok and empty.tool == "whoami" and empty.arguments == {}
    assert not listed.ok and "JSON object" in listed.observation
    for step in (bad, listed):
        assert "Traceback" not in step.observation and "/" not in step.observation.split(":", 1)[0]
    m = traj.metrics
    assert m["malformed_arguments"] == 2 and m["invalid_calls"] == 2 and m["empty_arguments"] == 1
    assert m["unknown_tools"] == 0 and m["tool_calls"] == 3 + len(gold) and m["tool_errors"] >= 2
    # the unusable arguments go back to the server as "{}" (chat templates decode them) ...
    sent = [c for m in bodies[-1]["messages"] if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    assert [c["function"]["arguments"] for c in sent[:4]] == [
        "{}",
        replies[0].tool_calls[0]["function"]["arguments"],
        "{}",
        "{}",
    ]
    # ... and every request offered the tools with tool_choice auto
    assert all(b["tool_choice"] == "auto" and b["tools"] for b in bodies)
    json.dumps(traj.to_record())


def test_k_samples_are_k_requests_with_their_own_seed_and_cache_entry(gold_tool_task, tmp_path) -> None:
    def run_all(server: OpenAIServer, config: RolloutConfig) -> list[Any]:
        model = get_model(f"{server.base_url}::agent", cache=tmp_path / "cache.sqlite")
        harness = lambda: ToolTaskHarness(gold_tool_task)  # noqa: E731
        return [asyncio.run(run_rollout(model, harness(), config, sample=j)) for j in range(3)]

    config = RolloutConfig(temperature=1.0, top_p=0.9, max_tokens=2048, seed=100)
    with OpenAIServer(responder=lambda req: Reply.text("I cannot help.")) as server:
        trajs = run_all(server, config)
        assert server.request_count == 3  # not one answer served three times from the cache
        seeds = [b["seed"] for b in server.chat_bodies()]
        assert seeds == [100, 101, 102] and [t.seed for t in trajs] == seeds
        body = server.chat_bodies()[0]
        assert (body["temperature"], body["top_p"], body["max_tokens"]) == (1.0, 0.9, 2048)
        assert len({t.id for t in trajs}) == 3
        run_all(server, config)  # the same samples again: all three come from the cache
        assert server.request_count == 3
        assert all(t.model_turns[0]["cached"] for t in run_all(server, config))
    assert RolloutConfig().max_tokens == DEFAULT_MAX_TOKENS >= 4096
    assert RolloutConfig().sample_seed(2) == 2  # without a base seed, sample j still sends its own seed


def test_a_context_length_error_ends_the_episode_and_the_state_is_still_scored(gold_tool_task) -> None:
    gold = _gold(gold_tool_task)
    too_long = (
        "This model's maximum context length is 4096 tokens. However, you requested 5120 tokens "
        "(1024 in the messages, 4096 in the completion). Please reduce the length of the messages."
    )

    def respond(req: ReceivedRequest) -> Reply:
        n = _assistants(req)
        return Reply.tool_call(*gold[n], call_id=f"c{n}") if n < len(gold) else Reply.error(400, too_long)

    with OpenAIServer(responder=respond) as server:
        model = get_model(f"{server.base_url}::agent", cache=False)
        traj = asyncio.run(run_rollout(model, ToolTaskHarness(gold_tool_task)))
    assert traj.stop_reason == STOP_CONTEXT_OVERFLOW
    assert traj.error is None and not traj.defect
    assert traj.reward == 1.0  # the gold chain was done before the context ran out: the verifier says so
    assert traj.model_turns[-1] == {
        "turn": len(gold) + 1, "error": STOP_CONTEXT_OVERFLOW, "limit": 4096, "requested": 5120,
    }  # fmt: skip


def test_an_overflow_before_any_work_scores_the_untouched_state(gold_tool_task) -> None:
    with OpenAIServer(responder=lambda req: Reply.error(400, "prompt is too long: 9000 tokens")) as server:
        model = get_model(f"{server.base_url}::agent", cache=False)
        traj = asyncio.run(run_rollout(model, ToolTaskHarness(gold_tool_task)))
    assert traj.stop_reason == STOP_CONTEXT_OVERFLOW and traj.error is None
    assert traj.reward == 0.0 and traj.score["fraction"] < 1.0


class RLServer(OpenAIServer):
    """The test server answering like vLLM with a reasoning parser, ``logprobs`` and ``return_token_ids``."""

    def completion_body(self, req: ReceivedRequest, reply: Reply) -> dict[str, Any]:
        body = super().completion_body(req, reply)
        choice = body["choices"][0]
        n = _assistants(req)
        choice["message"]["reasoning_content"] = f"thinking about turn {n}"
        if (req.body or {}).get("logprobs"):
            choice["logprobs"] = {
                "content": [
                    {"token": f"token_id:{100 + n}", "logprob": -0.5, "bytes": None, "top_logprobs": []}
                ]
            }
        if (req.body or {}).get("return_token_ids"):
            choice["token_ids"] = [100 + n, 7]
            body["prompt_token_ids"] = list(range(5 + n))
        return body


def test_trajectories_keep_reasoning_usage_logprobs_and_token_ids(gold_tool_task) -> None:
    gold = _gold(gold_tool_task)[:2]
    config = RolloutConfig(logprobs=True, top_logprobs=2, token_ids=True)
    with RLServer(responder=scripted_agent(gold)) as server:
        model = get_model(f"{server.base_url}::agent", cache=False)
        traj = asyncio.run(run_rollout(model, ToolTaskHarness(gold_tool_task), config))
        bodies = server.chat_bodies()
    assert all(b["logprobs"] is True and b["top_logprobs"] == 2 and b["return_token_ids"] for b in bodies)
    assert len(traj.model_turns) == traj.turns == 3
    for n, turn in enumerate(traj.model_turns):
        assert turn["reasoning_content"] == f"thinking about turn {n}"
        assert turn["logprobs"][0]["token"] == f"token_id:{100 + n}"
        assert turn["token_ids"] == [100 + n, 7] and turn["prompt_token_ids"] == list(range(5 + n))
        assert turn["prompt_tokens"] > 0 and turn["completion_tokens"] > 0 and turn["finish_reason"]
    assert sum(t["prompt_tokens"] for t in traj.model_turns) == traj.usage["prompt_tokens"]
    stored = [m for m in traj.messages if m["role"] == "assistant"]
    assert [m["reasoning_content"] for m in stored] == [f"thinking about turn {n}" for n in range(3)]
    # reasoning is kept in the record, never sent back to the server
    assert not any("reasoning_content" in m for b in bodies for m in b["messages"])


def test_cli_rollout_samples_and_sampling_flags_reach_the_server(gold_tool_task, tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(gold_tool_task) + "\n")
    with OpenAIServer(responder=lambda req: Reply.text("No.")) as server:
        cmd = [
            str(Path(sys.executable).parent / "dataclaw"), "tasks", "rollout", str(tasks),
            "-o", str(tmp_path / "run"), "--model", f"{server.base_url}::agent", "-n", "3", "--seed", "7",
            "--temperature", "0.6", "--top-p", "0.95", "--max-tokens", "3000",
        ]  # fmt: skip
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stdout + res.stderr
        bodies = server.chat_bodies()
    assert sorted(b["seed"] for b in bodies) == [7, 8, 9]
    assert {(b["temperature"], b["top_p"], b["max_tokens"]) for b in bodies} == {(0.6, 0.95, 3000)}
    recs = [json.loads(line) for line in (tmp_path / "run" / "rollouts.jsonl").read_text().splitlines()]
    assert sorted(r["seed"] for r in recs) == [7, 8, 9] and len({r["id"] for r in recs}) == 3
    assert all(r["model_turns"] and "metrics" in r for r in recs)
