"""Model-proposed edges from tool pre/post-conditions (EnvCraft §4.1 "LLM reasoning"): weak tier only.

The model sees each tool's description, side effect, parameters and declared state fields and names
ordered pairs where one tool's post-condition enables another's pre-condition. Unknown tool names,
self-loops and malformed answers are dropped (counted), never trusted; proposals only ever add
``llm_weak`` edges, so they cannot outrank code-derived data flow.
"""

from __future__ import annotations

import json
from typing import Any

import networkx as nx

from dataclaw.envcraft.graph.tool_graph import ToolGraph, add_edge, node_params

EDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "edges": {
            "type": "array",
            "maxItems": 40,
            "items": {
                "type": "object",
                "properties": {
                    "source": {"type": "string"},
                    "target": {"type": "string"},
                    "reason": {"type": "string"},
                },
                "required": ["source", "target", "reason"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["edges"],
    "additionalProperties": False,
}

_TOOL_PROMPT = """You are analysing the tools of the environment "{env}".
For each tool you get its side effect, parameters and the state fields it writes.
List ordered pairs (source, target) where the source tool's post-condition (what it returns or changes)
is a natural pre-condition of calling the target tool next. Only use tool names from the list.
Give a one-sentence reason per pair. Answer as JSON {{"edges": [{{"source", "target", "reason"}}]}}.

Tools:
{tools}"""

_ENV_PROMPT = """These environments could be combined in one cross-system workflow.
List ordered pairs (source, target) of environment names where the output of work in the source
environment plausibly feeds work in the target (same domain or data that flows between them).
Only use names from the list. Answer as JSON {{"edges": [{{"source", "target", "reason"}}]}}.

Environments:
{envs}"""


def _tool_lines(tg: ToolGraph) -> str:
    lines = []
    for n in tg.tools():
        d = tg.graph.nodes[n]
        lines.append(
            json.dumps(
                {
                    "name": n,
                    "side_effect": "write" if tg.is_write(n) else "read",
                    "description": d.get("description", ""),
                    "params": node_params(d),
                    "writes": d.get("fields", []),
                },
                ensure_ascii=False,
            )
        )
    return "\n".join(lines)


def _apply(g: nx.DiGraph, answer: Any, known: set[str]) -> tuple[int, int]:
    added = dropped = 0
    for e in (answer or {}).get("edges", []) if isinstance(answer, dict) else []:
        src, dst = e.get("source"), e.get("target")
        if src in known and dst in known and src != dst:
            before = g.get_edge_data(src, dst)
            add_edge(g, src, dst, "llm_weak", str(e.get("reason", ""))[:200] or "plausible follow-up")
            added += before is None
        else:
            dropped += 1
    return added, dropped


async def _propose(g: nx.DiGraph, prompt: str, known: set[str], model: Any) -> dict[str, Any]:
    """One model answer applied to ``g``: ``{added, dropped}``, plus ``error`` when the model gave no
    usable answer (the graph keeps its code-derived edges and the run goes on)."""
    from dataclaw.models.errors import ModelError

    try:
        done = await model.complete(
            [{"role": "user", "content": prompt}], schema=EDGE_SCHEMA, temperature=0.0
        )
    except ModelError as exc:
        return {"added": 0, "dropped": 0, "error": str(exc)}
    added, dropped = _apply(g, done.parsed, known)
    return {"added": added, "dropped": dropped}


async def propose_tool_edges(tg: ToolGraph, model: Any) -> dict[str, Any]:
    """Ask ``model`` for pre/post-condition edges and add them as ``llm_weak`` edges to ``tg``."""
    prompt = _TOOL_PROMPT.format(env=tg.env, tools=_tool_lines(tg))
    return await _propose(tg.graph, prompt, set(tg.tools()), model)


async def propose_env_edges(env_graph: nx.DiGraph, docs: dict[str, str], model: Any) -> dict[str, Any]:
    """Ask ``model`` for semantic cross-environment edges (``docs``: env name → short description)."""
    envs = "\n".join(f"- {name}: {docs.get(name, '')[:300]}" for name in env_graph.nodes)
    return await _propose(env_graph, _ENV_PROMPT.format(envs=envs), set(env_graph.nodes), model)


def describe(counts: dict[str, Any]) -> str:
    """``3 model edges added, 1 dropped`` or why none could be added."""
    if "error" in counts:
        return f"no model edges added: {counts['error']}"
    return f"{counts['added']} model edges added, {counts['dropped']} dropped"
