"""Chain sampling throughput: seeded weighted random walks (ending with a write tool) on a 50-tool graph.

The graph is random but fixed (seed 0): 50 tools, a third of them write tools, ~6 out-edges per tool
with ClawForge's tier weights. Measures chains/s for raw walks (no dedup) and for the deduplicating
``sample`` call, with the networkx build excluded. Baseline in the same run: a naive walk that calls
``random.choices`` over networkx adjacency per step, to show what compiling the graph buys.
Prints one JSON line; exits 1 below the target of 10,000 chains/s (raw walks).
"""

from __future__ import annotations

import json
import random
import sys
import time

import networkx as nx

from dataclaw.envcraft.graph import TIER_WEIGHTS, ChainSampler, ToolGraph

TARGET_CHAINS_PER_S = 10_000.0
N_TOOLS, OUT_DEGREE, N_CHAINS = 50, 6, 50_000


def make_graph(seed: int = 0) -> ToolGraph:
    rng = random.Random(seed)
    g = nx.DiGraph()
    for i in range(N_TOOLS):
        g.add_node(f"tool_{i:02d}", role="write" if i % 3 == 0 else "read", layer="tool")
    tiers = list(TIER_WEIGHTS.items())
    for i in range(N_TOOLS):
        for j in rng.sample([k for k in range(N_TOOLS) if k != i], OUT_DEGREE):
            tier, w = rng.choice(tiers)
            g.add_edge(f"tool_{i:02d}", f"tool_{j:02d}", weight=w, tier=tier, relationship=tier)
    return ToolGraph("bench", g)


def naive_walks(tg: ToolGraph, n: int, seed: int) -> int:
    rng, g, ok = random.Random(seed), tg.graph, 0
    nodes = list(g.nodes)
    for _ in range(n):
        target, cur = rng.randint(2, 6), rng.choice(nodes)
        out = [cur]
        while len(out) < 6 and not (len(out) >= target and tg.is_write(cur)):
            succ = list(g[cur])
            cur = rng.choices(succ, weights=[g[cur][s]["weight"] for s in succ])[0]
            out.append(cur)
        ok += any(tg.is_write(t) for t in out)
    return ok


def main() -> int:
    tg = make_graph()
    sampler = ChainSampler([tg])
    rng = random.Random(1)
    t0 = time.perf_counter()
    made = sum(sampler.walk("bench", rng, 2, 6) is not None for _ in range(N_CHAINS))
    raw_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    unique = sampler.sample(5_000, seed=2, min_len=2, max_len=6)
    dedup_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    naive_walks(tg, 5_000, 3)
    naive_s = time.perf_counter() - t0
    rate = made / raw_s
    naive_rate = 5_000 / naive_s
    result = {
        "bench": "chain_sampling",
        "tools": N_TOOLS,
        "edges": tg.graph.number_of_edges(),
        "walks": N_CHAINS,
        "valid_chains": made,
        "chains_per_s": round(rate),
        "dedup_unique_chains": len(unique),
        "dedup_chains_per_s": round(len(unique) / dedup_s),
        "naive_networkx_walks_per_s": round(naive_rate),
        "speedup_vs_naive": round(rate / naive_rate, 2),
        "target_chains_per_s": TARGET_CHAINS_PER_S,
        "ok": rate >= TARGET_CHAINS_PER_S,
    }
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
