"""A tool task record around a grounded chain, as the soundness tests run it (one shape, shared)."""

from __future__ import annotations

TICKETS = "transactional_workspace"


def tool_task(g: dict, verifier: dict, env: str = TICKETS) -> dict:
    """The task of grounded chain ``g`` with ``verifier``: its S0, its steps as the gold chain."""
    return {
        "id": "task:t",
        "env": env,
        "scenario_id": g["scenario_id"],
        "instruction": "Update the ticket.",
        "initial_state": g["initial_state"],
        "verifier": verifier,
        "gold_chain": [{"tool": s["tool"], "params": s["params"]} for s in g["steps"]],
    }
