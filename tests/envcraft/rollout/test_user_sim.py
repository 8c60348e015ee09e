"""The simulated user (τ²-bench's user simulator) in the agent loop: scenarios from our tasks and τ²'s,
the stop protocol, the user turn budget, the leak guard, the user's view (no tool calls or results), the
budget, and ``tasks rollout --user-model`` through the model layer (cache, ledger) over HTTP.

The chat models here are test doubles (in-process, or the OpenAI-compatible test server): they play
scripted parts so the loop's logic is what is tested; the real-server run is in ``test_user_sim_e2e``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dataclaw.cli.app import _run
from dataclaw.envcraft.rollout import ClawTaskHarness, RolloutConfig, ToolTaskHarness, run_rollout
from dataclaw.envcraft.rollout.loop import rollout_id
from dataclaw.envcraft.rollout.user_sim import (
    GREETING,
    OUT_OF_SCOPE,
    STOP,
    TRANSFER,
    UserConfig,
    scenario_of,
)
from dataclaw.envcraft.runtime.task import ToolTask
from dataclaw.models.errors import ContextLengthError
from dataclaw.models.types import Completion, Usage
from envcraft.rollout.rollout_helpers import example_claw_task
from support.openai_server import OpenAIServer, Reply

SHARED_TAU2 = Path(__file__).resolve().parents[4] / "shared" / "data" / "tau2"
Respond = Callable[[list[dict[str, Any]], dict[str, Any]], Completion]


class FakeChat:
    """A chat-model test double: ``respond(messages, params)`` makes each answer; requests are kept."""

    def __init__(self, model_id: str, respond: Respond, delay: float = 0.0) -> None:
        self.model_id = model_id
        self.respond = respond
        self.delay = delay
        self.requests: list[dict[str, Any]] = []

    async def complete(
        self, messages: Any, schema: Any = None, tools: Any = None, **params: Any
    ) -> Completion:
        self.requests.append({"messages": messages, "tools": tools, "params": params})
        if self.delay:
            await asyncio.sleep(self.delay)
        return self.respond(messages, params)


def text(content: str, tokens: int = 3) -> Completion:
    return Completion(
        text=content, usage=Usage(prompt_tokens=10, completion_tokens=tokens), finish_reason="stop"
    )


def gold_agent(task: dict[str, Any], final: str = "All done.") -> FakeChat:
    """Plays the task's gold chain, one call per turn, then answers in text."""
    gold = task["gold_chain"]

    def respond(messages: list[dict[str, Any]], params: dict[str, Any]) -> Completion:
        n = sum(1 for m in messages if m["role"] == "tool")
        if n < len(gold):
            fn = {"name": gold[n]["tool"], "arguments": json.dumps(gold[n]["params"])}
            call = {"id": f"c{n}", "type": "function", "function": fn}
            return Completion(text="", tool_calls=[call], usage=Usage(prompt_tokens=5, completion_tokens=5))
        return text(final)

    return FakeChat("fake:agent", respond)


def user_says(*lines: str) -> FakeChat:
    """A user that says ``lines`` in order (the last one again and again)."""

    def respond(messages: list[dict[str, Any]], params: dict[str, Any]) -> Completion:
        n = sum(1 for m in messages if m["role"] == "assistant")
        return text(lines[min(n, len(lines) - 1)])

    return FakeChat("fake:user", respond)


def roll(task: dict[str, Any], agent: FakeChat, user: FakeChat | None, **kw: Any) -> Any:
    config = kw.pop("config", RolloutConfig(max_turns=12, timeout_s=30))
    return asyncio.run(run_rollout(agent, ToolTaskHarness(task), config, user_model=user, **kw))


@pytest.fixture
def our_task(gold_tool_task: dict[str, Any]) -> dict[str, Any]:
    """The gold tool task with our synthesis's metadata: two turns, a user-specified value and the
    tool-derived ids the agent must look up."""
    gold = gold_tool_task["gold_chain"]
    derived = [
        {"step": i, "param": k, "value": v} for i, s in enumerate(gold) for k, v in s["params"].items()
    ]
    return {
        **gold_tool_task,
        "user_turns": ["Please log me in.", "Then resolve my open ticket."],
        "metadata": {
            "user_specified": [{"step": 0, "param": "note", "value": "urgent"}],
            "tool_derived": derived,
        },
    }


def test_our_task_becomes_user_instructions_with_its_persona_and_without_the_values_to_look_up(
    our_task,
) -> None:
    sc = scenario_of(ToolTask.of(our_task))
    assert sc is not None and sc.source == "task" and sc.persona == "an operations lead"
    prompt = sc.system_prompt()
    assert "1. Please log me in." in prompt and "2. Then resolve my open ticket." in prompt
    assert "- note: urgent" in prompt and STOP in prompt and our_task["instruction"] in prompt
    numbered = scenario_of(ToolTask.of({**our_task, "user_turns": ["1. Log in.", "2. Resolve it."]}))
    assert "\n1. Log in.\n2. Resolve it.\n" in numbered.instructions  # turns already numbered stay so
    hidden = {str(v) for s in our_task["gold_chain"] for v in s["params"].values() if len(str(v)) >= 3}
    assert sc.hidden and set(sc.hidden) <= hidden
    for value in sc.hidden:  # what the agent must find out is never told to the user
        assert value.casefold() not in prompt.casefold()


@pytest.mark.skipif(not (SHARED_TAU2 / "retail").is_dir(), reason="needs ../shared/data/tau2")
def test_a_tau2_task_plays_its_user_scenario_and_hides_only_what_it_does_not_tell() -> None:
    raw = json.loads((SHARED_TAU2 / "retail" / "tasks.json").read_text())[0]
    gold = [{"tool": a["name"], "params": a["arguments"]} for a in raw["evaluation_criteria"]["actions"]]
    meta = {"source": "tau2", "user_scenario": raw["user_scenario"]}
    task = ToolTask(
        id="t", env="tau2_retail", scenario_id=raw["id"], initial_state={}, verifier={}, gold_chain=gold,
        user_turns=["x"], metadata=meta,
    )  # fmt: skip
    sc = scenario_of(task)
    assert sc is not None and sc.source == "tau2" and sc.persona is None
    ins = raw["user_scenario"]["instructions"]
    assert f"Reason for call:\n{ins['reason_for_call']}" in sc.instructions
    assert f"Unknown info:\n{ins['unknown_info']}" in sc.instructions
    # the order id, name and zip are the user's to give; item ids and the payment method are looked up
    assert not {"#W2378156", "Yusuf", "Rossi", "19122"} & set(sc.hidden)
    assert {"1151293680", "7706410293", "credit_card_9513926"} <= set(sc.hidden)
    plain = scenario_of(task.model_copy(update={"gold_chain": [{"tool": "t", "params": {"s": "completed"}}]}))
    assert plain.hidden == ()  # a plain word is no secret a user could leak


def test_a_simulated_user_opens_the_talk_and_its_stop_token_ends_it(our_task) -> None:
    user = user_says("Hi, please log me in and resolve my open ticket.", f"Thanks! {STOP}")
    traj = roll(our_task, gold_agent(our_task), user, seed=7)
    assert traj.error is None and traj.reward == 1.0
    assert traj.stop_reason == "user_stop"
    roles = [m["role"] for m in traj.messages]
    assert roles[:3] == ["system", "user", "assistant"] and roles[-2:] == ["assistant", "user"]
    assert traj.messages[1]["content"].startswith("Hi, please log me in")
    assert STOP in traj.messages[-1]["content"]
    rec = traj.user
    assert rec["model"] == "fake:user" and rec["source"] == "task" and rec["stop"] == "user_stop"
    assert [t["turn"] for t in rec["turns"]] == [1, 2] and not rec["cut"]
    assert rec["usage"] == {"prompt_tokens": 20, "completion_tokens": 6}
    # the user's view: its system prompt, the greeting, the agent's text only (no tool calls or results)
    first, second = user.requests
    assert first["messages"][0]["role"] == "system" and first["messages"][1:] == [
        {"role": "user", "content": GREETING}
    ]
    assert first["tools"] is None and first["params"]["seed"] == 7
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
    assert second["messages"][-1] == {"role": "user", "content": "All done."}
    assert not any(m.get("tool_calls") or m["role"] == "tool" for m in second["messages"])
    json.dumps(traj.to_record())


@pytest.mark.parametrize(
    ("token", "reason"), [(TRANSFER, "user_transfer"), (OUT_OF_SCOPE, "user_out_of_scope")]
)
def test_transfer_and_out_of_scope_end_the_episode_with_their_reason(our_task, token, reason) -> None:
    traj = roll(our_task, gold_agent(our_task), user_says("Log me in please.", token))
    assert traj.stop_reason == reason and traj.messages[-1] == {"role": "user", "content": token}


def test_a_user_that_never_stops_is_cut_at_its_budget_and_recorded_so(our_task) -> None:
    agent = FakeChat("fake:agent", lambda m, p: text("How else can I help?"))
    traj = roll(our_task, agent, user_says("And one more thing…"), user_config=UserConfig(max_turns=3))
    assert traj.stop_reason == "user_max_turns" and traj.user["cut"] is True
    assert sum(m["role"] == "user" for m in traj.messages) == 3 and len(traj.user["turns"]) == 3
    assert traj.reward == 0.0  # the agent did nothing: the state reached is scored as it is


def test_a_leaked_hidden_value_is_asked_again_and_a_second_leak_ends_the_episode_undelivered(
    our_task,
) -> None:
    sc = scenario_of(ToolTask.of(our_task))
    secret = sc.hidden[0]
    leaky = user_says(f"Use {secret} please.")
    traj = roll(our_task, gold_agent(our_task), leaky, seed=1)
    assert traj.stop_reason == "user_leak" and traj.reward == 0.0
    assert [m["role"] for m in traj.messages] == ["system"]  # the agent never saw it
    assert [d["problem"] for d in traj.user["discarded"]] == ["leak", "leak"]
    assert traj.user["discarded"][0]["values"] == [secret]
    assert [r["params"]["seed"] for r in leaky.requests] == [1, 1 + 100_003]  # the re-ask is a new request

    # leaked once, then a clean message: the clean one is delivered and the talk goes on
    calls = iter([f"it is {secret}", "Please log me in and resolve my ticket.", STOP])
    once = FakeChat("fake:user", lambda m, p: text(next(calls)))
    traj = roll(our_task, gold_agent(our_task), once)
    assert traj.stop_reason == "user_stop" and traj.reward == 1.0
    assert traj.messages[1]["content"] == "Please log me in and resolve my ticket."
    assert secret not in json.dumps(traj.messages[1:2])


def test_a_value_the_agent_said_first_may_be_repeated_and_a_longer_token_is_no_leak(our_task) -> None:
    secret = scenario_of(ToolTask.of(our_task)).hidden[0]
    agent = FakeChat("fake:agent", lambda m, p: text(f"I found {secret}. Is that the one?"))
    user = user_says(f"Hello, ticket {secret}0 is not mine.", f"Yes, {secret} is it. {STOP}")
    traj = roll(our_task, agent, user)
    assert traj.stop_reason == "user_stop" and traj.user["discarded"] == []


def test_an_empty_user_message_is_asked_again_then_ends_as_silent(our_task) -> None:
    traj = roll(our_task, gold_agent(our_task), user_says("  "))
    assert traj.stop_reason == "user_silent" and len(traj.user["discarded"]) == 2


def test_the_user_models_time_counts_against_the_budget(our_task) -> None:
    slow = FakeChat("fake:user", lambda m, p: text("hi"), delay=5.0)
    traj = roll(our_task, gold_agent(our_task), slow, config=RolloutConfig(timeout_s=0.3))
    assert traj.stop_reason == "budget_exceeded" and traj.budget_exceeded and traj.error is None
    assert traj.wall_s < 2.0


def test_a_user_model_out_of_context_ends_the_episode_and_its_failure_is_a_model_error(our_task) -> None:
    said = iter(["Please log me in and resolve my ticket."])

    def respond(messages, params) -> Completion:
        if (line := next(said, None)) is not None:
            return text(line)
        raise ContextLengthError("too long", limit=2048, requested=4000)

    traj = roll(our_task, gold_agent(our_task), FakeChat("fake:user", respond))
    assert traj.stop_reason == "user_context_overflow" and traj.error is None and traj.reward == 1.0
    assert traj.user["stop"] == "user_context_overflow"

    def down(messages, params) -> Completion:
        raise ConnectionError("server gone")

    traj = roll(our_task, gold_agent(our_task), FakeChat("fake:user", down))
    assert traj.error["boundary"] == "model" and "user model call" in traj.error["what"]


def test_without_a_user_model_the_scripted_turns_and_ids_stay_as_they_were(our_task) -> None:
    traj = roll(our_task, gold_agent(our_task), None)
    assert traj.user is None and traj.stop_reason == "agent_stopped" and traj.reward == 1.0
    assert [m["content"] for m in traj.messages if m["role"] == "user"] == our_task["user_turns"]
    assert traj.id == rollout_id(our_task["id"], "fake:agent", 0)
    with_user = roll(our_task, gold_agent(our_task), user_says(STOP))
    assert with_user.id == rollout_id(our_task["id"], "fake:agent", 0, None, "fake:user") != traj.id


def test_tasks_rollout_with_a_user_model_over_http_keeps_the_user_and_its_usage(
    our_task, tmp_path, capsys
) -> None:
    src = tmp_path / "tasks.jsonl"
    src.write_text(json.dumps(our_task) + "\n")
    gold = our_task["gold_chain"]

    def respond(req) -> Reply:
        body = req.body
        if body["model"] == "user":
            said = sum(1 for m in body["messages"] if m["role"] == "assistant")
            return Reply.text("Please log me in and resolve my ticket." if said == 0 else STOP)
        n = sum(1 for m in body["messages"] if m["role"] == "tool")
        if n < len(gold):
            return Reply.tool_call(gold[n]["tool"], gold[n]["params"], call_id=f"c{n}")
        return Reply.text("Done: logged in and resolved.")

    out = tmp_path / "run"
    args = ["tasks", "rollout", str(src), "-o", str(out), "-n", "2", "--user-max-turns", "4"]
    with OpenAIServer(responder=respond) as server:
        user_spec = f"{server.base_url}::user"
        args += ["--model", f"{server.base_url}::agent", "--user-model", user_spec]
        assert _run(args) == 0
        sent = server.request_count
        assert _run(args) == 0  # a rerun resumes: nothing is asked again
        assert server.request_count == sent
    recs = [json.loads(x) for x in (out / "rollouts.jsonl").read_text().splitlines()]
    assert (
        len(recs) == 2
        and {r["stop_reason"] for r in recs} == {"user_stop"}
        and {r["reward"] for r in recs} == {1.0}
    )
    assert {r["user"]["model"] for r in recs} == {user_spec}
    assert all(r["user"]["usage"]["completion_tokens"] > 0 and len(r["user"]["turns"]) == 2 for r in recs)
    manifest = json.loads((out / "manifest.json").read_text())
    u = manifest["rollout"]["summary"]["user"]
    assert (u["rollouts"], u["mean_turns"], u["cut"], u["leaks"], u["models"]) == (2, 2.0, 0, 0, [user_spec])
    assert "simulated user " in capsys.readouterr().out
    assert manifest["rollout"]["user"] == {"model": user_spec, "max_turns": 4, "temperature": None}
    assert _run([*args[:-2], "--user-model", "x", "--user-max-turns", "0"]) != 0


def test_a_claw_workspace_task_has_no_conversation_to_simulate_and_keeps_its_prompt() -> None:
    assert ClawTaskHarness(example_claw_task("logistics_manager_review")).user_scenario() is None
