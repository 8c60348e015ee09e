"""Chain sampling: seeded, deduplicated walks that follow edges and end with a write tool."""

from __future__ import annotations

import random
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataclaw.core.errors import ConfigError
from dataclaw.envcraft import archetypes
from dataclaw.envcraft.graph import (
    ChainSampler,
    ToolGraph,
    build_env_graph,
    build_tool_graph,
    chain_stats,
    load_tool_graph,
)


@pytest.fixture(scope="module")
def graphs():
    return [build_tool_graph(p) for p in archetypes.all_packages()]


@pytest.fixture(scope="module")
def clawforge(shared_data: Path):
    return [load_tool_graph(f) for f in sorted((shared_data / "clawforge" / "tool_graphs").glob("*.json"))]


def _check_single(chain, tg: ToolGraph, lo: int, hi: int) -> None:
    assert lo <= len(chain.steps) <= hi
    assert tg.is_write(chain.steps[-1])
    for a, b in zip(chain.steps, chain.steps[1:], strict=False):
        assert tg.graph.has_edge(a, b), (a, b)


@pytest.mark.parametrize("which", ["archetypes", "clawforge"])
def test_single_env_chains_follow_edges_and_end_with_a_write(which, graphs, clawforge) -> None:
    gs = graphs if which == "archetypes" else clawforge
    by_env = {tg.env: tg for tg in gs}
    chains = ChainSampler(gs).sample(300, seed=7, min_len=2, max_len=6)
    assert len(chains) == 300
    assert len({c.steps for c in chains}) == 300  # deduplicated
    for c in chains:
        _check_single(c, by_env[c.envs[0]], 2, 6)
    stats = chain_stats(chains, gs)
    assert stats["length_min"] >= 2 and stats["length_max"] <= 6
    assert stats["distinct_tools"] > len(gs) and 0 < stats["tool_entropy"] <= 1


def test_sampling_is_reproducible(graphs) -> None:
    s = ChainSampler(graphs)
    assert s.sample(50, seed=3) == s.sample(50, seed=3)
    assert s.sample(50, seed=3) != s.sample(50, seed=4)


@pytest.mark.parametrize("which", ["archetypes", "clawforge"])
def test_cross_env_chains_concatenate_prefixed_sub_chains(which, graphs, clawforge) -> None:
    gs = graphs if which == "archetypes" else clawforge
    by_env = {tg.env: tg for tg in gs}
    eg = build_env_graph(gs)
    chains = ChainSampler(gs, eg).sample(60, seed=1, cross_env_fraction=1.0)
    assert chains and all(c.cross_env for c in chains)
    for c in chains:
        assert 2 <= len(c.envs) <= 5 and len(set(c.envs)) == len(c.envs)
        for a, b in zip(c.envs, c.envs[1:], strict=False):
            assert eg.has_edge(a, b) or eg.has_edge(b, a)
        assert c.steps[0].split(".", 1)[0] == c.envs[0]
        for env in c.envs:  # each environment's sub-chain is contiguous and ends with a write
            sub = [s.split(".", 1)[1] for s in c.steps if s.split(".", 1)[0] == env]
            _check_single(type(c)((env,), tuple(sub)), by_env[env], 1, 4)
        assert by_env[c.envs[-1]].is_write(c.steps[-1].split(".", 1)[1])


def test_bad_arguments_are_clear(graphs) -> None:
    s = ChainSampler(graphs)
    with pytest.raises(ConfigError, match="length range"):
        s.sample(5, min_len=4, max_len=2)
    with pytest.raises(ConfigError, match="no tool graph for nowhere"):
        s.sample(5, envs=["nowhere"])
    with pytest.raises(ConfigError, match="env dependency graph"):
        s.cross_walk(random.Random(0))


@st.composite
def random_graphs(draw):
    n = draw(st.integers(2, 12))
    g = nx.DiGraph()
    writes = draw(st.lists(st.booleans(), min_size=n, max_size=n).filter(any))
    for i in range(n):
        g.add_node(f"t{i}", role="write" if writes[i] else "read", layer="tool")
    edges = draw(
        st.lists(
            st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.sampled_from([0.25, 0.5, 0.8, 0.9])),
            max_size=40,
        )
    )
    for a, b, w in edges:
        if a != b:
            g.add_edge(f"t{a}", f"t{b}", weight=w, tier="x", relationship="x")
    return ToolGraph("r", g)


@settings(max_examples=60, deadline=None)
@given(tg=random_graphs(), seed=st.integers(0, 2**16), lo=st.integers(1, 3), extra=st.integers(0, 4))
def test_walk_constraints_hold_on_any_graph(tg, seed, lo, extra) -> None:
    for c in ChainSampler([tg]).sample(20, seed=seed, min_len=lo, max_len=lo + extra):
        _check_single(c, tg, lo, lo + extra)
