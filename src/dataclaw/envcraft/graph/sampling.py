"""Tool-chain sampling: hierarchical weighted random walks over the bi-level graph (EnvCraft §4.1).

Single-environment chains walk one tool graph; cross-environment chains first walk the env graph to pick
2–5 connected environments, then walk each one's tool graph and concatenate the ``env.tool``-prefixed
sub-chains. Every chain (and every sub-chain) ends with a write tool, so the task it becomes changes
state and can be verified on the state. Walks are seeded (``random.Random``) and so reproducible; the
graph is compiled once into successor lists with cumulative weights (a step is one bisect).
"""

from __future__ import annotations

import math
import random
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import networkx as nx

from dataclaw.core.errors import ConfigError
from dataclaw.core.ids import stable_hash
from dataclaw.envcraft.graph.tool_graph import ToolGraph


@dataclass(frozen=True)
class ToolChain:
    """A sampled chain: tool names in call order (``env.tool`` when it spans environments)."""

    envs: tuple[str, ...]
    steps: tuple[str, ...]

    @property
    def cross_env(self) -> bool:
        return len(self.envs) > 1

    @property
    def key(self) -> str:
        return stable_hash([list(self.envs), list(self.steps)], 12)

    def to_dict(self) -> dict[str, Any]:
        return {"envs": list(self.envs), "steps": list(self.steps), "cross_env": self.cross_env}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ToolChain:
        return cls(tuple(raw["envs"]), tuple(raw["steps"]))


class _Compiled:
    """A weighted digraph as int arrays: successors and cumulative weights per node."""

    __slots__ = ("cum", "is_end", "names", "start_cum", "succ")

    def __init__(self, g: nx.DiGraph, nodes: Sequence[str], is_end: Sequence[bool]) -> None:
        index = {n: i for i, n in enumerate(nodes)}
        self.names = list(nodes)
        self.is_end = list(is_end)
        self.succ: list[list[int]] = []
        self.cum: list[list[float]] = []
        for n in nodes:
            succ, cum, total = [], [], 0.0
            for m, d in g[n].items():
                if m in index and m != n:
                    total += float(d.get("weight", 1.0))
                    succ.append(index[m])
                    cum.append(total)
            self.succ.append(succ)
            self.cum.append(cum)
        # start anywhere, in proportion to a node's outgoing weight (+ a floor so sinks can start)
        total, self.start_cum = 0.0, []
        for c in self.cum:
            total += (c[-1] if c else 0.0) + 0.1
            self.start_cum.append(total)

    def walk(self, rng: random.Random, lo: int, hi: int) -> list[int] | None:
        """One walk of ``lo``..``hi`` nodes ending on an end node (a write tool), or None."""
        target = rng.randint(lo, hi)
        cur = bisect_right(self.start_cum, rng.random() * self.start_cum[-1])
        out = [cur]
        while len(out) < hi and not (len(out) >= target and self.is_end[cur]):
            cum = self.cum[cur]
            if not cum:
                break
            cur = self.succ[cur][bisect_right(cum, rng.random() * cum[-1])]
            out.append(cur)
        last = len(out) - 1
        while last >= 0 and not self.is_end[out[last]]:
            last -= 1
        if last + 1 < lo:
            return None
        return out[: last + 1]


class ChainSampler:
    """Seeded single- and cross-environment chain sampling over tool graphs and an env graph."""

    def __init__(self, graphs: Iterable[ToolGraph], env_graph: nx.DiGraph | None = None) -> None:
        self.graphs = {tg.env: tg for tg in graphs}
        if not self.graphs:
            raise ConfigError("chain sampling needs at least one tool graph")
        self._compiled: dict[str, _Compiled] = {}
        for env, tg in self.graphs.items():
            nodes = tg.tools()
            if not tg.write_tools():
                raise ConfigError(f"tool graph of {env!r} has no write tool: no chain could end on one")
            self._compiled[env] = _Compiled(tg.graph, nodes, [tg.is_write(n) for n in nodes])
        self.env_graph = env_graph
        self._envs: _Compiled | None = None
        if env_graph is not None:
            envs = [e for e in env_graph.nodes if e in self.graphs]
            sym = nx.DiGraph()
            sym.add_nodes_from(envs)
            for a, b, d in env_graph.edges(data=True):  # env links are walked both ways
                for x, y in ((a, b), (b, a)):
                    w = max(float(d.get("weight", 1.0)), sym.get_edge_data(x, y, {}).get("weight", 0.0))
                    sym.add_edge(x, y, weight=w)
            self._envs = _Compiled(sym, envs, [True] * len(envs))

    def walk(self, env: str, rng: random.Random, min_len: int = 2, max_len: int = 6) -> ToolChain | None:
        """One single-environment chain (None when the walk found no write tool in range)."""
        c = self._compiled[env]
        idx = c.walk(rng, min_len, max_len)
        return None if idx is None else ToolChain((env,), tuple(c.names[i] for i in idx))

    def cross_walk(
        self,
        rng: random.Random,
        min_envs: int = 2,
        max_envs: int = 5,
        min_len: int = 1,
        max_len: int = 4,
    ) -> ToolChain | None:
        """Sample ``min_envs``..``max_envs`` connected environments (no repeats), then a prefixed
        sub-chain in each; every sub-chain ends with a write tool."""
        if self._envs is None:
            raise ConfigError("cross-environment chains need an env dependency graph")
        e = self._envs
        want = rng.randint(min_envs, max_envs)
        cur = bisect_right(e.start_cum, rng.random() * e.start_cum[-1])
        path = [cur]
        while len(path) < want:
            succ = zip(e.succ[cur], _weights(e.cum[cur]), strict=True)
            options = [(s, w) for s, w in succ if s not in path]
            if not options:
                break
            cur = rng.choices([s for s, _ in options], [w for _, w in options])[0]
            path.append(cur)
        if len(path) < min_envs:
            return None
        envs = tuple(e.names[i] for i in path)
        steps: list[str] = []
        for env in envs:
            sub = self.walk(env, rng, min_len, max_len)
            if sub is None:
                return None
            steps.extend(f"{env}.{t}" for t in sub.steps)
        return ToolChain(envs, tuple(steps))

    def sample(
        self,
        n: int,
        seed: int = 0,
        *,
        envs: Sequence[str] | None = None,
        cross_env_fraction: float = 0.0,
        min_len: int = 2,
        max_len: int = 6,
        dedup: bool = True,
        max_attempts: int | None = None,
    ) -> list[ToolChain]:
        """Up to ``n`` chains (fewer when the graphs cannot yield that many distinct ones), reproducible
        for a given ``seed``. Single-env chains rotate through ``envs`` (default: all)."""
        if min_len < 1 or max_len < min_len:
            raise ConfigError(f"chain length range {min_len}..{max_len} is empty")
        if not 0.0 <= cross_env_fraction <= 1.0:
            raise ConfigError(f"cross_env_fraction must be in [0, 1], got {cross_env_fraction}")
        names = list(envs or sorted(self.graphs))
        unknown = [x for x in names if x not in self.graphs]
        if unknown:
            have = ", ".join(sorted(self.graphs))
            raise ConfigError(f"no tool graph for {', '.join(unknown)}; have {have}")
        rng = random.Random(seed)
        seen: set[tuple[str, ...]] = set()
        out: list[ToolChain] = []
        attempts, limit = 0, max_attempts if max_attempts is not None else 50 * n + 100
        while len(out) < n and attempts < limit:
            attempts += 1
            if cross_env_fraction and rng.random() < cross_env_fraction:
                chain = self.cross_walk(rng)
            else:
                chain = self.walk(names[attempts % len(names)], rng, min_len, max_len)
            if chain is None or (dedup and chain.steps in seen):
                continue
            seen.add(chain.steps)
            out.append(chain)
        return out


def _weights(cum: list[float]) -> list[float]:
    return [b - a for a, b in zip([0.0, *cum], cum, strict=False)]


def chain_stats(chains: Sequence[ToolChain], graphs: Iterable[ToolGraph] = ()) -> dict[str, Any]:
    """Length and diversity statistics of a chain set: lengths, distinct chains, tool coverage and
    the normalised entropy of tool use (1.0 = every tool used equally)."""
    lengths = [len(c.steps) for c in chains]
    tools = Counter(t for c in chains for t in c.steps)
    bigrams = {(a, b) for c in chains for a, b in pairwise(c.steps)}
    total = sum(tools.values())
    entropy = -sum(v / total * math.log(v / total) for v in tools.values()) if total else 0.0
    universe = {f"{tg.env}.{t}" for tg in graphs for t in tg.tools()}
    used = {t if c.cross_env else f"{c.envs[0]}.{t}" for c in chains for t in c.steps}
    return {
        "chains": len(chains),
        "distinct": len({c.steps for c in chains}),
        "cross_env": sum(c.cross_env for c in chains),
        "length_mean": round(sum(lengths) / len(lengths), 3) if lengths else 0.0,
        "length_min": min(lengths, default=0),
        "length_max": max(lengths, default=0),
        "length_hist": dict(sorted(Counter(lengths).items())),
        "distinct_tools": len(tools),
        "tool_coverage": round(len(used & universe) / len(universe), 3) if universe else None,
        "distinct_bigrams": len(bigrams),
        "tool_entropy": round(entropy / math.log(len(tools)), 3) if len(tools) > 1 else 0.0,
    }
