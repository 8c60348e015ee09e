"""Env dependency graph across environments (EnvCraft §4.1, top level).

Environments are nodes; an edge says two environments can be chained in one cross-system workflow.
Edges come from data flow (one environment outputs an entity kind another takes ids of as
parameters: ``dataflow``, 0.8) and shared entity kinds (both take ids of the same kind: ``bridge``,
0.5); a model may add weak semantic edges (``llm_weak``, 0.25, see :mod:`dataclaw.envcraft.graph.propose`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import networkx as nx

from dataclaw.envcraft.graph.tool_graph import TIER_WEIGHTS, ToolGraph, add_edge

# id parameters every environment has that say nothing about its domain
GENERIC_KINDS = frozenset({"session", "scenario", "account", "user", "entity", "item", "record"})


def build_env_graph(graphs: Iterable[ToolGraph]) -> nx.DiGraph:
    """Env graph over ``graphs`` from produced/consumed entity kinds."""
    g = nx.DiGraph()
    kinds: dict[str, tuple[set[str], set[str]]] = {}
    for tg in graphs:
        produced = tg.produced_kinds() - GENERIC_KINDS
        consumed = tg.consumed_kinds() - GENERIC_KINDS
        kinds[tg.env] = (produced, consumed)
        g.add_node(
            tg.env,
            tools=len(tg.tools()),
            write_tools=len(tg.write_tools()),
            produces=sorted(produced),
            consumes=sorted(consumed),
        )
    for a in g.nodes:
        for b in g.nodes:
            if a == b:
                continue
            flow = sorted(kinds[a][0] & kinds[b][1])
            if flow:
                add_edge(g, a, b, "dataflow", f"produces_{flow[0]}_id_for")
                g.edges[a, b]["kinds"] = flow
                continue
            shared = sorted(kinds[a][1] & kinds[b][1])
            if shared and a < b:
                add_edge(g, a, b, "bridge", f"shares_{shared[0]}")
                g.edges[a, b]["kinds"] = shared
    return g


def env_graph_json(g: nx.DiGraph) -> dict[str, Any]:
    """Node-link JSON of an env graph (same format as the tool graphs)."""
    data = nx.node_link_data(g, edges="links")
    data["graph"] = {**data.get("graph", {}), "kind": "env_graph", "tiers": TIER_WEIGHTS}
    return data
