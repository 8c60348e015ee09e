"""Rollout harness overhead: env-side cost per agent turn, model time excluded, 32 concurrent rollouts.

A tool task is built from the ``transactional_workspace`` archetype (reference solution as gold chain, a
verifier derived from the S0 → gold diff). The agent is a *replay model*: a scripted policy that plays the
gold chain is recorded once to a replay file (``get_model(..., record_to=...)``), and the measured runs
answer from ``replay:<file>`` — so model time is a hash and a dict lookup, and the agent really drives the
environment through the OpenAI tool-call path. Each rollout gets its own session (state on disk, journal,
locks) and the verifier scores it at the end.

Baseline in the same run: the same loop and replay model against a *null harness* (tool calls answered
with a canned observation, no environment), so

    env overhead per tool turn = (wall_env - wall_null) / tool turns

is what the environment adds per turn (session store, validation, dispatch, the thread hop, setup and
scoring amortised) while 32 rollouts share 2 cores. Also printed: turns/s, and the per-step latency the
loop saw (thread-pool queueing under 32-way load included, so it is latency, not cost). Prints one JSON
line; exits 1 above 5 ms per tool turn or when a gold rollout does not get reward 1.0. The per-call cost
of the claw tools (bash through a one-shot sandbox run, read on the host) is printed for information.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dataclaw.envcraft import archetypes
from dataclaw.envcraft.rollout import ToolResult, ToolTaskHarness, run_rollouts
from dataclaw.envcraft.rollout.harness import Harness, Score
from dataclaw.envcraft.tasks.tool.verifier import derive_verifier
from dataclaw.models import get_model
from dataclaw.models.backends.replay import RecordingBackend
from dataclaw.models.client import Model
from dataclaw.models.types import Backend, ChatRequest, Generation

TARGET_MS = 5.0
CONCURRENCY = 32
ROUNDS = 3
ENV = "transactional_workspace"


def build_task() -> dict[str, Any]:
    env_cls = archetypes.get(ENV).env_cls
    sc = next(s for s in env_cls.scenarios().values() if s.reference_solution)
    with tempfile.TemporaryDirectory() as root:
        env = env_cls(root)
        sid = env.create_session(sc.scenario_id, session_id="gold")
        initial = env.get_session_state(sid)
        for step in sc.reference_solution:
            env.call(sid, step["tool"], **step.get("params", {}))
        final = env.get_session_state(sid)
    fields = {f for s in sc.reference_solution for f in env_cls.tools.get(s["tool"]).state_fields_affected}
    return {
        "id": f"bench:{ENV}",
        "env": ENV,
        "env_module": env_cls.__module__.rsplit(".", 1)[0],
        "scenario_id": sc.scenario_id,
        "user_turns": [sc.task_prompt],
        "initial_state": initial,
        "verifier": derive_verifier(initial, final, fields),
        "gold_chain": [{"tool": s["tool"], "params": s.get("params", {})} for s in sc.reference_solution],
    }


class GoldPolicy(Backend):
    """The scripted agent that is recorded once: n-th assistant turn = n-th gold call, then text."""

    free = True
    cache_by_default = False

    def __init__(self, calls: list[dict[str, Any]]) -> None:
        super().__init__("gold-policy", "gold-policy")
        self.calls = calls

    async def generate(self, request: ChatRequest) -> Generation:
        n = sum(1 for m in request.messages if m["role"] == "assistant")
        if n < len(self.calls):
            c = self.calls[n]
            fn = {"name": c["tool"], "arguments": json.dumps(c["params"])}
            return Generation(tool_calls=[{"id": f"call_{n}", "type": "function", "function": fn}])
        return Generation(text="Done.")


class NullHarness(Harness):
    """Same prompts and tools as the task, no environment: the baseline."""

    kind = "null"

    def __init__(self, task: dict[str, Any]) -> None:
        super().__init__(task["id"])
        self._tools = archetypes.get(ENV).env_cls.tools.openai_schemas()
        self.task = task

    def setup(self) -> None:
        return None

    def tools(self) -> list[dict[str, Any]]:
        return self._tools

    def system_prompt(self) -> str:
        return "You are an agent operating a software environment through its tools."

    def user_turns(self) -> list[str]:
        return self.task["user_turns"]

    def execute(self, name: str, args: dict[str, Any]) -> ToolResult:
        return ToolResult('{"status": "ok", "data": {}}')

    def score(self) -> Score:
        return Score(1.0)


def make_harnesses(kind: str, task: dict[str, Any], n: int) -> list[Harness]:
    return [ToolTaskHarness(task) if kind == "env" else NullHarness(task) for _ in range(n)]


def record(task: dict[str, Any], path: Path) -> None:
    """Play the gold policy once per harness kind and sample index, recording every answer to the replay
    file (sample i sends its own seed, so each of the CONCURRENCY samples is its own request)."""
    model = Model(RecordingBackend(GoldPolicy(task["gold_chain"]), path))
    for kind in ("env", "null"):
        trajs = asyncio.run(
            run_rollouts(model, make_harnesses(kind, task, CONCURRENCY), concurrency=CONCURRENCY)
        )
        bad = next((t for t in trajs if t.reward != 1.0), None)
        if bad is not None:
            raise SystemExit(f"recording run ({kind}) did not solve the task: {bad.error}")


def measure(kind: str, task: dict[str, Any], replay: Path) -> dict[str, Any]:
    model = get_model(f"replay:{replay}")
    wall, turns, tool_turns, env_steps, rewards = 0.0, 0, 0, [], []
    for _ in range(ROUNDS):
        harnesses = make_harnesses(kind, task, CONCURRENCY)
        t0 = time.perf_counter()
        trajs = asyncio.run(run_rollouts(model, harnesses, concurrency=CONCURRENCY))
        wall += time.perf_counter() - t0
        for t in trajs:
            if t.error is not None:
                raise SystemExit(f"{kind} rollout failed: {t.error}")
            turns += t.turns
            tool_turns += len(t.steps)
            env_steps += [s.env_ms for s in t.steps]
            rewards.append(t.reward)
    return {
        "wall_s": wall,
        "turns": turns,
        "tool_turns": tool_turns,
        "env_step_ms": env_steps,
        "mean_reward": sum(rewards) / len(rewards),
    }


def claw_tool_ms() -> dict[str, float]:
    """Informational: per-call cost of the claw tools (bash = one sandboxed run; file tools on the host)."""
    from dataclaw.envcraft.rollout import ClawTools

    with tempfile.TemporaryDirectory() as tmp:
        tools = ClawTools(Path(tmp))
        tools.call("write", {"path": "data/a.txt", "content": "x\n" * 1000})
        out = {}
        for name, args, n in (
            ("bash", {"command": "wc -l data/a.txt"}, 10),
            ("read", {"path": "data/a.txt"}, 200),
        ):
            t0 = time.perf_counter()
            for _ in range(n):
                assert tools.call(name, args).ok
            out[f"claw_{name}_ms_per_call"] = round((time.perf_counter() - t0) / n * 1000, 3)
    return out


def main() -> int:
    if hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) > 2:
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:2])
    task = build_task()
    with tempfile.TemporaryDirectory() as tmp:
        replay = Path(tmp) / "agent.jsonl"
        record(task, replay)
        measure("env", task, replay)  # warm-up: imports, caches
        env = measure("env", task, replay)
        null = measure("null", task, replay)
    per_turn_ms = (env["wall_s"] - null["wall_s"]) / env["tool_turns"] * 1000
    out = {
        "bench": "rollout",
        "env": ENV,
        "concurrency": CONCURRENCY,
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "rollouts": CONCURRENCY * ROUNDS,
        "tool_turns": env["tool_turns"],
        "turns_per_s": round(env["turns"] / env["wall_s"], 1),
        "baseline_turns_per_s": round(null["turns"] / null["wall_s"], 1),
        "env_overhead_ms_per_tool_turn": round(per_turn_ms, 3),
        "env_step_latency_ms_mean_under_load": round(statistics.fmean(env["env_step_ms"]), 3),
        "env_step_latency_ms_p50_under_load": round(statistics.median(env["env_step_ms"]), 3),
        "mean_reward": env["mean_reward"],
        "target_ms_per_tool_turn": TARGET_MS,
        **claw_tool_ms(),
    }
    out["passed"] = per_turn_ms <= TARGET_MS and env["mean_reward"] == 1.0
    print(json.dumps(out))
    return 0 if out["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
