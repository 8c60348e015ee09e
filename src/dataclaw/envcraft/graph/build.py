"""The tool graph of one environment as a user names it (``dataclaw env graph``): built from its package
(an archetype, import name or package folder) or read from a node-link JSON file, optionally with a model's
proposed (``llm_weak``) edges, optionally saved.

    made = env_tool_graph("temporal_scheduling", model="local:smollm2-135m", out=Path("ts.json"))
    made.graph.edge_rows(), made.proposal
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataclaw.envcraft.envs import open_package
from dataclaw.envcraft.graph.propose import describe, propose_tool_edges
from dataclaw.envcraft.graph.tool_graph import ToolGraph, build_tool_graph, load_tool_graph


@dataclass
class EnvToolGraph:
    """A tool graph, what the model added to it (if asked) and where it was saved (if asked)."""

    graph: ToolGraph
    proposed: dict[str, Any] | None = None
    """:func:`~dataclaw.envcraft.graph.propose.propose_tool_edges`' counts (``added``, ``dropped``, and
    ``error`` when the model gave no usable answer); None when no model was asked."""
    saved: Path | None = None

    @property
    def proposal(self) -> str | None:
        """``3 model edges added, 1 dropped``, or why none could be added; None when no model was asked."""
        return None if self.proposed is None else describe(self.proposed)


def env_tool_graph(name: str, *, model: str | None = None, out: Path | None = None) -> EnvToolGraph:
    """The tool graph of ``name`` (a ``.json`` name is a node-link graph file), plus ``model``'s proposed
    edges, saved to ``out`` as node-link JSON when given."""
    tg = load_tool_graph(name) if name.endswith(".json") else build_tool_graph(open_package(name))
    made = EnvToolGraph(tg)
    if model is not None:
        from dataclaw.models import get_model

        made.proposed = asyncio.run(propose_tool_edges(tg, get_model(model)))
    if out is not None:
        made.saved = tg.save(out)
    return made
