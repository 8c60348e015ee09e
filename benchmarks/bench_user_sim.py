"""Simulated-user loop overhead: milliseconds per turn of 32 concurrent conversations, model time excluded.

Each conversation is a tool task with six requests. The agent answers each request with one tool call and
then a text reply; the user either says the six requests from the task's script (baseline: the plain
scripted-user loop) or is a simulated user (:mod:`dataclaw.envcraft.rollout.user_sim`) whose model says
them one by one and then ``###STOP###``. Both models are zero-latency in-process backends behind
dataclaw's model layer (``Model``: request normalisation, validation, usage; cache off), so what is
measured is the loop — the user's view of the conversation (roles flipped, tool traffic dropped), its
prompt, the stop protocol, the leak guard over the task's hidden values, records — plus the model
layer's own work. The harness is a null harness (canned tool observations), so no environment time is in
either figure.

    overhead per turn = (wall − time inside the model backends) / turns   (turns: agent + user model turns)

for the simulated-user run and, in the same run, the scripted baseline (where turns are agent turns only).
Prints one JSON line; exits 1 when the simulated-user loop costs more than 5 ms per turn, or when a
conversation does not end as scripted (reward 1.0, stop reason ``user_stop``, every request said).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from dataclaw.envcraft.rollout import RolloutConfig, ToolResult, run_rollout
from dataclaw.envcraft.rollout.harness import Harness, Score
from dataclaw.envcraft.rollout.user_sim import STOP, UserScenario
from dataclaw.models.client import Model
from dataclaw.models.types import Backend, ChatRequest, Generation, Usage

TARGET_MS = 5.0
CONCURRENCY = 32
ROUNDS = 3
REQUESTS = [f"Request {i}: please update record R-{i} to status done." for i in range(1, 7)]
HIDDEN = tuple(f"INTERNAL-{i:04d}" for i in range(40))
"""Values the user must not say (the leak guard checks every user message against all of them)."""
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "update_record",
            "description": "Update one record's status.",
            "parameters": {
                "type": "object",
                "properties": {"record_id": {"type": "string"}, "status": {"type": "string"}},
                "required": ["record_id", "status"],
            },
        },
    }
]


class Timed(Backend):
    """A zero-latency in-process model; the time spent inside it is summed (the model time excluded)."""

    free = True
    cache_by_default = False
    spent = 0.0

    async def generate(self, request: ChatRequest) -> Generation:
        t = time.perf_counter()
        try:
            return self.answer(request.messages)
        finally:
            Timed.spent += time.perf_counter() - t

    def answer(self, messages: list[dict[str, Any]]) -> Generation:
        raise NotImplementedError


class Agent(Timed):
    """Per user request: one tool call, then a text reply."""

    def answer(self, messages: list[dict[str, Any]]) -> Generation:
        usage = Usage(prompt_tokens=len(messages), completion_tokens=8)
        if messages[-1]["role"] == "user":
            n = sum(1 for m in messages if m["role"] == "user")
            args = json.dumps({"record_id": f"R-{n}", "status": "done"})
            fn = {"name": "update_record", "arguments": args}
            call = {"id": f"c{n}", "type": "function", "function": fn}
            return Generation(tool_calls=[call], usage=usage, finish_reason="tool_calls")
        reply = "Done: the record is updated. Anything else?"
        return Generation(text=reply, usage=usage, finish_reason="stop")


class SimUser(Timed):
    """Says the requests one by one (counting its own earlier messages), then the stop token."""

    def answer(self, messages: list[dict[str, Any]]) -> Generation:
        said = sum(1 for m in messages if m["role"] == "assistant")
        text = REQUESTS[said] if said < len(REQUESTS) else f"Thanks, that is all. {STOP}"
        return Generation(text=text, usage=Usage(prompt_tokens=len(messages), completion_tokens=12))


class NullHarness(Harness):
    """Canned observations, reward 1.0: no environment time in the figures."""

    kind = "null"

    def setup(self) -> None:
        return None

    def tools(self) -> list[dict[str, Any]]:
        return TOOLS

    def system_prompt(self) -> str:
        return "You are an agent operating a records system through its tools."

    def user_turns(self) -> list[str]:
        return list(REQUESTS)

    def user_scenario(self) -> UserScenario:
        steps = "\n".join(f"{i}. {r}" for i, r in enumerate(REQUESTS, 1))
        return UserScenario(f"Ask for these, one per message, in order:\n{steps}", "a clerk", HIDDEN)

    def execute(self, name: str, args: dict[str, Any]) -> ToolResult:
        return ToolResult('{"status": "ok", "data": {"updated": true}}')

    def score(self) -> Score:
        return Score(1.0)


async def batch(agent: Model, user: Model | None, round_: int) -> list[Any]:
    config = RolloutConfig(max_turns=64, timeout_s=120)
    return list(
        await asyncio.gather(
            *(
                run_rollout(agent, NullHarness(f"bench:{round_}:{i}"), config, sample=i, user_model=user)
                for i in range(CONCURRENCY)
            )
        )
    )


def measure(simulated: bool) -> dict[str, Any]:
    agent = Model(Agent("bench:agent", "bench-agent"))
    user = Model(SimUser("bench:user", "bench-user")) if simulated else None
    wall, model_s, turns, user_turns = 0.0, 0.0, 0, 0
    for r in range(ROUNDS):
        Timed.spent = 0.0
        t0 = time.perf_counter()
        trajs = asyncio.run(batch(agent, user, r))
        wall += time.perf_counter() - t0
        model_s += Timed.spent
        for t in trajs:
            want = "user_stop" if simulated else "agent_stopped"
            said = [m["content"] for m in t.messages if m["role"] == "user"]
            if t.error or t.reward != 1.0 or t.stop_reason != want or said[: len(REQUESTS)] != REQUESTS:
                raise SystemExit(f"conversation did not end as scripted: {t.stop_reason} {t.error}")
            turns += t.turns
            user_turns += len(t.user["turns"]) if t.user else 0
    all_turns = turns + user_turns
    return {
        "wall_s": wall,
        "model_s": model_s,
        "agent_turns": turns,
        "user_turns": user_turns,
        "ms_per_turn": (wall - model_s) / all_turns * 1000,
    }


def main() -> int:
    if hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) > 2:
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:2])
    measure(True)  # warm-up: imports, first-call costs
    scripted = measure(False)
    sim = measure(True)
    out = {
        "bench": "user_sim",
        "concurrency": CONCURRENCY,
        "conversations": CONCURRENCY * ROUNDS,
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "agent_turns": sim["agent_turns"],
        "user_turns": sim["user_turns"],
        "sim_overhead_ms_per_turn": round(sim["ms_per_turn"], 3),
        "scripted_overhead_ms_per_turn": round(scripted["ms_per_turn"], 3),
        "ratio_vs_scripted": round(sim["ms_per_turn"] / scripted["ms_per_turn"], 2),
        "sim_ms_per_user_turn_added": round(
            ((sim["wall_s"] - sim["model_s"]) - (scripted["wall_s"] - scripted["model_s"]))
            / max(1, sim["user_turns"])
            * 1000,
            3,
        ),
        "model_s_excluded": round(sim["model_s"], 4),
        "target_ms_per_turn": TARGET_MS,
    }
    out["ok"] = out["sim_overhead_ms_per_turn"] <= TARGET_MS
    print(json.dumps(out))
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
