"""``dataclaw tasks``: EnvCraft task synthesis. ``sample`` writes tool chains, ``synth`` grounds them and
writes verifiable tasks; both resume a run directory and print a summary per stage."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from dataclaw.core.errors import ConfigError

app = typer.Typer(no_args_is_help=True, help="EnvCraft tasks: tool chains → verifiable RL tasks.")
console = Console()


def _graphs(envs: list[str], graph_files: list[Path]) -> list:  # type: ignore[type-arg]
    from dataclaw.envcraft import archetypes
    from dataclaw.envcraft.graph import build_tool_graph, load_tool_graph
    from dataclaw.envcraft.runtime import load_env_package

    out = [load_tool_graph(p) for p in graph_files]
    for name in envs or ([] if graph_files else archetypes.names()):
        pkg = archetypes.get(name) if name in archetypes.names() else load_env_package(name)
        out.append(build_tool_graph(pkg))
    return out


def _summary(rows: list[tuple[str, int, int, dict[str, int]]]) -> None:
    table = Table(title="tasks pipeline")
    for col in ("stage", "raw", "kept", "pass rate", "reject reasons"):
        table.add_column(col)
    for stage, raw, kept, reasons in rows:
        rate = f"{kept / raw:.1%}" if raw else "-"
        why = ", ".join(f"{k}={v}" for k, v in sorted(reasons.items(), key=lambda x: -x[1]))
        table.add_row(stage, str(raw), str(kept), rate, why)
    console.print(table)


@app.command("sample")
def sample(
    out: Annotated[Path, typer.Option("--out", "-o", help="Run directory (created; reruns add to it).")],
    envs: Annotated[
        list[str] | None, typer.Option("--env", help="Environment (repeatable; default all).")
    ] = None,
    graph_files: Annotated[
        list[Path] | None, typer.Option("--graph", help="Node-link tool graph JSON (e.g. ClawForge).")
    ] = None,
    n: Annotated[int, typer.Option("-n", help="Chains to sample.")] = 100,
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same chains).")] = 0,
    min_len: Annotated[int, typer.Option(help="Shortest chain.")] = 2,
    max_len: Annotated[int, typer.Option(help="Longest single-environment chain.")] = 6,
    cross_env: Annotated[float, typer.Option(help="Fraction of cross-environment chains.")] = 0.0,
) -> None:
    """Sample tool chains (weighted random walks ending with a write tool) into ``chains.jsonl``."""
    from dataclaw.core.store import RunStore
    from dataclaw.envcraft.graph import ChainSampler, build_env_graph, chain_stats
    from dataclaw.envcraft.tasks import chain_record

    if n < 1:
        raise ConfigError(f"-n must be at least 1, got {n}")
    graphs = _graphs(envs or [], graph_files or [])
    env_graph = build_env_graph(graphs) if cross_env > 0 else None
    sampler = ChainSampler(graphs, env_graph)
    chains = sampler.sample(n, seed, cross_env_fraction=cross_env, min_len=min_len, max_len=max_len)
    with RunStore(out) as store:
        stage = store.stage("chains")
        added = sum(stage.append(chain_record(c)) for c in chains)
        stats = chain_stats(chains, graphs)
        store.update_manifest(chains={"seed": seed, "n": n, "stats": stats})
    console.print(f"chains: {len(chains)} sampled, {added} new in {out / 'chains.jsonl'}")
    console.print_json(data=stats)
    short = {"duplicate_or_no_write_end": n - len(chains)} if n > len(chains) else {}
    _summary([("chains", n, len(chains), short)])


@app.command("synth")
def synth(
    run: Annotated[Path, typer.Option("--run", "-r", help="Run directory holding chains.jsonl.")],
    model: Annotated[str, typer.Option(help="Model for the natural-language parts.")] = "local:smollm2-135m",
    workers: Annotated[int, typer.Option(help="Processes for grounding.")] = 1,
    limit: Annotated[int | None, typer.Option(help="Only the first N chains.")] = None,
) -> None:
    """Ground chains in real sessions, derive and prove verifiers, write user turns: ``tasks.jsonl``."""
    from dataclaw.core.progress import progress_bar
    from dataclaw.core.store import RunStore
    from dataclaw.envcraft.tasks import GroundStage, SynthStage
    from dataclaw.pipeline import run_stage
    from dataclaw.pipeline.executors import LocalExecutor

    if not (run / "chains.jsonl").is_file():
        raise ConfigError(f"{run} has no chains.jsonl: run `dataclaw tasks sample --out {run}` first")
    with RunStore(run) as store:
        chains = list(store.records("chains"))[:limit]
        with progress_bar("ground") as bar:
            run_stage(GroundStage(), chains, store, LocalExecutor(workers=workers), bar)
        chain_ids = {c["id"] for c in chains}
        grounded = [g for g in store.records("grounded") if g["chain_id"] in chain_ids]
        with progress_bar("synth") as bar:
            stage = SynthStage(model, cache=str(run / "model_cache.sqlite"))
            run_stage(stage, grounded, store, LocalExecutor(workers=1), bar)
        grounded_ids = {g["id"] for g in grounded}
        tasks = [t for t in store.records("tasks") if t["metadata"]["grounded_id"] in grounded_ids]
        rows = [
            ("grounded", len(chains), len(grounded), _reasons(store, "grounded", chain_ids)),
            ("tasks", len(grounded), len(tasks), _reasons(store, "tasks", grounded_ids)),
        ]
        store.update_manifest(tasks={"model": model, "chains": len(chains), "tasks": len(tasks)})
    _summary(rows)


def _reasons(store: object, stage: str, ids: set[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in store.rejects(stage):  # type: ignore[attr-defined]
        if r["record_id"] in ids:
            out[r["reason"]] = out.get(r["reason"], 0) + 1
    return out
