"""The tool-task run composition (EnvCraft §4.1–4.2): ``dataclaw tasks sample`` and ``dataclaw tasks synth``.

:func:`sample_chains`: tool graphs of the environments (built-in archetypes, package folders, a library's
passing packages, node-link graph files), optionally with model-proposed edges, → weighted random walks
ending with a write tool → ``chains.jsonl``. :func:`synth_tasks`: chains → ``grounded.jsonl`` (executed in
real sessions, S0 with distractors, a proven verifier) → ``tasks.jsonl`` (the user's text by the model).
Both resume per record in the run directory and save the model usage into its manifest.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError
from dataclaw.core.progress import ProgressFactory, progress_for
from dataclaw.core.store import RunStore
from dataclaw.envcraft.graph import ChainSampler, ToolGraph, build_env_graph, chain_stats
from dataclaw.envcraft.graph.propose import propose_env_edges, propose_tool_edges
from dataclaw.envcraft.graph.sampling import ToolChain
from dataclaw.envcraft.quality.common import StageCount, reject_reasons
from dataclaw.envcraft.runtime.task import ToolTask
from dataclaw.envcraft.tasks.tool.stages import GroundStage, SynthStage, chain_record
from dataclaw.models.ledger import saved_usage

OnProposed = Callable[[str, dict[str, Any]], None]
"""``on_proposed(graph, counts)``: told after each graph got its model-proposed edges (``graph`` is an
environment's name, or ``"env graph"``; ``counts`` what :func:`~dataclaw.envcraft.graph.propose.describe`
reads)."""


def tool_graphs(
    envs: list[str], graph_files: list[Path], modules: dict[str, str] | None = None
) -> list[ToolGraph]:
    """Tool graphs of the environments (default: every archetype, unless graph files are given) and of the
    node-link graph files. ``modules`` collects env name → package folder of each package that is not a
    built-in archetype, so chains record where it lives (its code runs in its sandboxed env worker)."""
    from dataclaw.envcraft import archetypes
    from dataclaw.envcraft.graph import build_tool_graph, load_tool_graph
    from dataclaw.envcraft.worker import open_environment

    out = [load_tool_graph(p) for p in graph_files]
    for name in envs or ([] if graph_files else archetypes.names()):
        handle = open_environment(name)
        out.append(build_tool_graph(handle))
        if modules is not None and not handle.builtin:
            modules[out[-1].env] = str(handle.folder)
    return out


def propose_edges(
    graphs: list[ToolGraph], env_graph: Any, chat: Any, on_proposed: OnProposed | None = None
) -> None:
    """Add model-proposed (``llm_weak``) edges to every tool graph and, if given, the env graph."""

    async def run() -> None:
        for tg in graphs:
            counts = await propose_tool_edges(tg, chat)
            if on_proposed is not None:
                on_proposed(tg.env, counts)
        if env_graph is not None:
            docs = {tg.env: "tools: " + ", ".join(tg.tools()[:40]) for tg in graphs}
            counts = await propose_env_edges(env_graph, docs, chat)
            if on_proposed is not None:
                on_proposed("env graph", counts)

    asyncio.run(run())


@dataclass
class ChainSample:
    """What :func:`sample_chains` did: the chains sampled, how many were new to the run, their statistics."""

    n: int
    """Chains asked for."""
    chains: list[ToolChain]
    added: int
    stats: dict[str, Any]

    @property
    def stage_count(self) -> StageCount:
        """Asked → sampled; a walk that repeats a chain or ends on no write tool is the shortfall."""
        short = {"duplicate_or_no_write_end": self.n - len(self.chains)} if self.n > len(self.chains) else {}
        return StageCount("chains", self.n, len(self.chains), short)


def sample_chains(
    out: Path,
    *,
    envs: list[str] | None = None,
    graph_files: list[Path] | None = None,
    library: Path | None = None,
    n: int = 100,
    seed: int = 0,
    min_len: int = 2,
    max_len: int = 6,
    cross_env: float = 0.0,
    model: str | None = None,
    on_proposed: OnProposed | None = None,
) -> ChainSample:
    """Sample ``n`` tool chains into ``out/chains.jsonl`` (same seed, same chains; a rerun adds only new
    ones). ``library`` adds every passing environment of a synthesised library; ``model`` adds its proposed
    edges to each graph first; ``cross_env`` is the fraction of cross-environment chains."""
    from dataclaw.models import get_model

    if n < 1:
        raise ConfigError(f"-n must be at least 1, got {n}")
    names = list(envs or [])
    if library is not None:
        from dataclaw.envcraft.synth.library import library_packages

        found = [str(folder) for _, folder in library_packages(library)]
        if not found:
            raise ConfigError(f"library {library} has no passing environment (see {library / 'index.jsonl'})")
        names += found
    modules: dict[str, str] = {}
    graphs = tool_graphs(names, graph_files or [], modules)
    env_graph = build_env_graph(graphs) if cross_env > 0 else None
    with RunStore(out) as store, saved_usage(store) as ledger:
        if model is not None:
            propose_edges(graphs, env_graph, get_model(model, ledger=ledger), on_proposed)
        sampler = ChainSampler(graphs, env_graph)
        chains = sampler.sample(n, seed, cross_env_fraction=cross_env, min_len=min_len, max_len=max_len)
        stage = store.stage("chains")
        added = sum(stage.append(chain_record(c, modules)) for c in chains)
        stats = chain_stats(chains, graphs)
        store.update_manifest(chains={"seed": seed, "n": n, "stats": stats})
    return ChainSample(n=n, chains=chains, added=added, stats=stats)


def synth_tasks(
    run: Path,
    model: str = "local:smollm2-135m",
    *,
    workers: int = 1,
    limit: int | None = None,
    distractors: int = 1,
    long_context: bool = False,
    strict_text: bool = False,
    progress: ProgressFactory | None = None,
) -> list[StageCount]:
    """Ground the first ``limit`` chains of ``run`` in real sessions and derive and prove their verifiers
    (``grounded``, ``workers`` processes), then write the user's text with ``model`` (``tasks``); returns
    raw → kept with the reject reasons of both stages, counted over this call's chains."""
    from dataclaw.pipeline import run_stage
    from dataclaw.pipeline.registry import make_executor

    if not (run / "chains.jsonl").is_file():
        raise ConfigError(f"{run} has no chains.jsonl: run `dataclaw tasks sample --out {run}` first")
    with RunStore(run) as store:
        chains = list(store.records("chains"))[:limit]
        with progress_for(progress, "ground") as bar:
            ground = GroundStage(long_context=long_context, distractors_per_entity=distractors)
            run_stage(ground, chains, store, make_executor(workers=workers), bar)
        chain_ids = {c["id"] for c in chains}
        grounded = [g for g in store.records("grounded") if g["chain_id"] in chain_ids]
        with progress_for(progress, "synth") as bar, saved_usage(store) as ledger:
            cache = str(run / "model_cache.sqlite")
            stage = SynthStage(model, cache=cache, strict=strict_text, ledger=ledger)
            run_stage(stage, grounded, store, make_executor(workers=1), bar)
        grounded_ids = {g["id"] for g in grounded}
        made = (ToolTask.from_row(t) for t in store.records("tasks"))
        tasks = [t for t in made if t.metadata["grounded_id"] in grounded_ids]
        counts = [
            StageCount("grounded", len(chains), len(grounded), reject_reasons(store, "grounded", chain_ids)),
            StageCount("tasks", len(grounded), len(tasks), reject_reasons(store, "tasks", grounded_ids)),
        ]
        store.update_manifest(tasks={"model": model, "chains": len(chains), "tasks": len(tasks)})
    return counts
