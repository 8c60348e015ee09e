"""Tasks and scripted agents shared by the rollout and quality tests (envcraft.rollout.rollout_helpers).

``scripted_agent(calls)`` is a responder for the OpenAI-compatible test server (a test double for the model
servers we don't own): it answers the n-th assistant turn with the n-th planned tool call, then with text.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dataclaw.envcraft import archetypes
from dataclaw.envcraft.tasks.claw.workspace import WorkspaceTask, load_task
from dataclaw.envcraft.tasks.tool.verifier import derive_verifier
from support.openai_server import ReceivedRequest, Reply

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "claw_tasks"
ENV = "transactional_workspace"


def tool_task(env: str = ENV) -> dict[str, Any]:
    """A tool task record (the colleague's Task shape) from an archetype scenario's reference solution:
    initial state S0, the solution as gold chain, a verifier derived from the S0 → gold diff."""
    env_cls = archetypes.get(env).env_cls
    scenario = next(s for s in env_cls.scenarios().values() if s.reference_solution)
    with tempfile.TemporaryDirectory() as root:
        e = env_cls(root)
        sid = e.create_session(scenario.scenario_id, session_id="gold")
        initial = e.get_session_state(sid)
        for step in scenario.reference_solution:
            assert e.call(sid, step["tool"], **step.get("params", {}))["status"] == "ok"
        final = e.get_session_state(sid)
    fields = {
        f for s in scenario.reference_solution for f in env_cls.tools.get(s["tool"]).state_fields_affected
    }
    return {
        "id": f"task:{env}-{scenario.scenario_id}",
        "env": env,
        "env_module": env_cls.__module__.rsplit(".", 1)[0],
        "scenario_id": scenario.scenario_id,
        "persona": {"id": "p0", "description": "an operations lead"},
        "instruction": scenario.task_prompt,
        "user_turns": [scenario.task_prompt],
        "initial_state": initial,
        "verifier": derive_verifier(initial, final, fields),
        "gold_chain": [
            {"tool": s["tool"], "params": s.get("params", {})} for s in scenario.reference_solution
        ],
        "metadata": {},
    }


def scripted_agent(calls: list[tuple[str, dict[str, Any]]], final_text: str = "Done.") -> Callable:
    """A responder that plays ``calls`` one per turn (by counting earlier assistant turns)."""

    def respond(req: ReceivedRequest) -> Reply:
        msgs = (req.body or {})["messages"]
        n = sum(1 for m in msgs if m["role"] == "assistant")
        if n < len(calls):
            name, args = calls[n]
            return Reply.tool_call(name, args, call_id=f"call_{n}")
        return Reply.text(final_text)

    return respond


def example_claw_task(task_id: str) -> WorkspaceTask:
    task = load_task(EXAMPLES, task_id)
    assert isinstance(task, WorkspaceTask), task
    return task


def solution_calls(task: WorkspaceTask) -> list[tuple[str, dict[str, Any]]]:
    """The reference solution as claw tool calls: write it to a scratch file, run it, finish."""
    return [
        ("ls", {"path": "."}),
        ("write", {"path": ".solve.py", "content": task.solution}),
        ("bash", {"command": "python3 .solve.py && rm .solve.py"}),
        ("finish", {"summary": "report written"}),
    ]
