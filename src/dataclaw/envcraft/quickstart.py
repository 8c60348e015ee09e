"""EnvCraft's demonstrations (``dataclaw quickstart``'s "envcraft" and "envsynth" parts): each engine step on
small inputs with one model, into a run directory, resumable, nothing faked.

:func:`tasks_demo`: an archetype → chains → grounded, verified tool tasks (text by the model), the bundled
claw tasks audited by code, then the model as the agent on both kinds. :func:`synth_demo`: two catalogue
scenarios → specs by the model → compiled, sandbox-audited packages → tool tasks in the passing ones.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataclaw.core.store import RunStore
from dataclaw.envcraft.graph import ChainSampler, build_tool_graph
from dataclaw.envcraft.tasks.tool.stages import GroundStage, SynthStage, chain_record
from dataclaw.pipeline import run_stage

DEMO_ENV = "temporal_scheduling"
"""The archetype :func:`tasks_demo` samples chains in."""
SYNTH_SCENARIOS = ("support_ticketing", "monitoring_logging")
"""The catalogue scenarios :func:`synth_demo` synthesises."""


@dataclass
class TasksDemo:
    """What :func:`tasks_demo` made: chains → grounded → tool tasks (with the rejects' reasons), the claw
    tasks that pass the code audit out of all, and the rollouts with their summary."""

    chains: int
    grounded: int
    tool_tasks: list[dict[str, Any]]
    rejects: list[tuple[str, int]]
    """Reasons of the chains and tasks rejected, most common first."""
    claw_passed: int
    claw_total: int
    rollouts: list[dict[str, Any]]
    summary: dict[str, Any]


def tasks_demo(examples: Path, out: Path, model: str) -> TasksDemo:
    """Four chains in :data:`DEMO_ENV`, grounded and given text by ``model``; the claw tasks of
    ``examples/claw_tasks`` audited by code; ``model`` as the agent on two tool tasks and the passing
    claw tasks (a weak model's rewards are mostly 0, and that is the honest result)."""
    from dataclaw.envcraft import archetypes
    from dataclaw.envcraft.quality.runs import audit_by_code, load_task_source
    from dataclaw.envcraft.rollout import RolloutConfig
    from dataclaw.envcraft.rollout.run import rollout_summary, rollout_tasks
    from dataclaw.models import get_model

    cache = out / "model_cache.sqlite"
    with RunStore(out) as store:
        graph = build_tool_graph(archetypes.get(DEMO_ENV))
        for chain in ChainSampler([graph]).sample(4, seed=0, min_len=2, max_len=4):
            store.stage("chains").append(chain_record(chain))
        run_stage(GroundStage(), list(store.records("chains")), store)
        run_stage(SynthStage(model, cache=str(cache)), list(store.records("grounded")), store)
        tool_tasks = list(store.records("tasks"))[:2]
        claw = load_task_source(examples / "claw_tasks")
        audits = {r["id"]: r for r in audit_by_code(claw, store)}
        claw_ok = [t for t in claw.tasks if audits[t.task_id]["passed"]]
        agent = get_model(model, cache=cache)
        config = RolloutConfig(max_turns=4, timeout_s=180, max_tokens=256)
        recs = asyncio.run(rollout_tasks(agent, [*tool_tasks, *claw_ok], store, config, concurrency=1))
        n_chains, n_grounded = len(store.stage("chains")), len(store.stage("grounded"))
        why = Counter(r["reason"] for r in store.rejects() if r["stage"] in ("grounded", "tasks"))
    return TasksDemo(
        chains=n_chains, grounded=n_grounded, tool_tasks=tool_tasks, rejects=why.most_common(),
        claw_passed=len(claw_ok), claw_total=len(claw.tasks), rollouts=recs, summary=rollout_summary(recs),
    )  # fmt: skip


@dataclass
class SynthDemo:
    """What :func:`synth_demo` made: the library's rows and summary, its passing packages, and chains →
    tool tasks in them."""

    library: Path
    rows: list[dict[str, Any]]
    summary: dict[str, Any]
    packages: list[tuple[dict[str, Any], Path]]
    chains: int
    tasks: int


def synth_demo(out: Path, model: str) -> SynthDemo:
    """``dataclaw env synth`` on :data:`SYNTH_SCENARIOS` (the model writes the specs, the compiler the
    packages, the sandboxed audit judges them) into ``out/LIB``, then tool tasks in the passing environments
    into ``out/tasks`` (chains sampled, grounded in the packages' sandboxed env workers, verifiers proven,
    text by the model)."""
    from dataclaw.envcraft.scenarios import load_catalogue
    from dataclaw.envcraft.synth.library import (
        Requests,
        SynthConfig,
        library_packages,
        summarize,
        synthesize,
    )
    from dataclaw.envcraft.worker import open_environment

    lib, run = out / "LIB", out / "tasks"
    catalogue = load_catalogue()
    rows = synthesize(
        lib, Requests(scenarios=[catalogue.get(s) for s in SYNTH_SCENARIOS]), SynthConfig(model)
    )
    pkgs = library_packages(lib)
    n_tasks = n_chains = 0
    if pkgs:
        modules, graphs = {}, []
        for _, folder in pkgs:
            handle = open_environment(folder)  # the package's sandboxed env worker
            graphs.append(build_tool_graph(handle))
            modules[graphs[-1].env] = str(folder)
        with RunStore(run) as store:
            for chain in ChainSampler(graphs).sample(4, seed=0, min_len=2, max_len=4):
                store.stage("chains").append(chain_record(chain, modules))
            run_stage(GroundStage(), list(store.records("chains")), store)
            grounded = list(store.records("grounded"))[:2]
            run_stage(SynthStage(model, cache=str(run / "model_cache.sqlite")), grounded, store)
            n_chains, n_tasks = len(store.stage("chains")), len(store.stage("tasks"))
    return SynthDemo(lib, rows, summarize(rows), pkgs, n_chains, n_tasks)
