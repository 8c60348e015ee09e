"""Tool and env dependency graphs and chain sampling (EnvCraft §4.1).

from dataclaw.envcraft.graph import build_tool_graph, build_env_graph, ChainSampler
graphs = [build_tool_graph(p) for p in archetypes.all_packages()]
sampler = ChainSampler(graphs, build_env_graph(graphs))
chains = sampler.sample(100, seed=0, cross_env_fraction=0.2)
"""

from dataclaw.envcraft.graph.env_graph import build_env_graph, env_graph_json
from dataclaw.envcraft.graph.sampling import ChainSampler, ToolChain, chain_stats
from dataclaw.envcraft.graph.tool_graph import (
    TIER_WEIGHTS,
    ToolGraph,
    build_tool_graph,
    id_kind,
    load_tool_graph,
)

__all__ = [
    "TIER_WEIGHTS",
    "ChainSampler",
    "ToolChain",
    "ToolGraph",
    "build_env_graph",
    "build_tool_graph",
    "chain_stats",
    "env_graph_json",
    "id_kind",
    "load_tool_graph",
]
