"""``dataclaw tasks``: EnvCraft task synthesis. ``sample`` writes tool chains, ``synth`` grounds them and
writes verifiable tasks; ``audit``, ``calibrate`` and ``rollout`` check and run tasks; ``claw-synth`` writes
claw workspace tasks. Each writes into a run directory and prints a summary."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from dataclaw.core.errors import ConfigError
from dataclaw.sandbox import SandboxPolicy
from dataclaw.sandbox.cli import UNSAFE_OPTION

app = typer.Typer(no_args_is_help=True, help="EnvCraft tasks: tool chains → verifiable RL tasks.")
console = Console()


def _graphs(envs: list[str], graph_files: list[Path]) -> list:  # type: ignore[type-arg]
    from dataclaw.cli.env import env_package
    from dataclaw.envcraft import archetypes
    from dataclaw.envcraft.graph import build_tool_graph, load_tool_graph

    out = [load_tool_graph(p) for p in graph_files]
    for name in envs or ([] if graph_files else archetypes.names()):
        out.append(build_tool_graph(env_package(name)))
    return out


# EnvCraft Table 2: data entries kept after quality auditing, out of the raw candidates
PAPER_RAW, PAPER_KEPT = 35_464, 19_777


def _summary(rows: list[tuple[str, int, int, dict[str, int]]]) -> None:
    """Per stage raw → kept, pass rate and reject reasons, with the end-to-end rate next to the paper's."""
    raw, kept = (rows[0][1], rows[-1][2]) if rows else (0, 0)
    overall = f"{kept}/{raw} = {kept / raw:.1%}" if raw else "-"
    paper = f"{PAPER_RAW:,} → {PAPER_KEPT:,} = {PAPER_KEPT / PAPER_RAW:.1%}"
    table = Table(
        title="tasks pipeline", caption=f"end to end {overall} · paper (Table 2, after auditing) {paper}"
    )
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
    model: Annotated[
        str | None, typer.Option(help="Add model-proposed (llm_weak) edges to each graph first.")
    ] = None,
) -> None:
    """Sample tool chains (weighted random walks ending with a write tool) into ``chains.jsonl``."""
    from dataclaw.core.store import RunStore
    from dataclaw.envcraft.graph import ChainSampler, build_env_graph, chain_stats
    from dataclaw.envcraft.tasks import chain_record

    if n < 1:
        raise ConfigError(f"-n must be at least 1, got {n}")
    graphs = _graphs(envs or [], graph_files or [])
    env_graph = build_env_graph(graphs) if cross_env > 0 else None
    with RunStore(out) as store, _usage(store) as ledger:
        if model is not None:
            _propose(graphs, env_graph, model, ledger)
        sampler = ChainSampler(graphs, env_graph)
        chains = sampler.sample(n, seed, cross_env_fraction=cross_env, min_len=min_len, max_len=max_len)
        stage = store.stage("chains")
        added = sum(stage.append(chain_record(c)) for c in chains)
        stats = chain_stats(chains, graphs)
        store.update_manifest(chains={"seed": seed, "n": n, "stats": stats})
    console.print(f"chains: {len(chains)} sampled, {added} new in {out / 'chains.jsonl'}")
    console.print_json(data=stats)
    short = {"duplicate_or_no_write_end": n - len(chains)} if n > len(chains) else {}
    _summary([("chains", n, len(chains), short)])


@contextlib.contextmanager
def _usage(store: Any) -> Iterator[Any]:
    """A usage ledger for this invocation's model calls, saved into the run manifest (``models.usage``,
    a total over invocations) even when the command fails part-way."""
    from dataclaw.models import UsageLedger

    ledger = UsageLedger()
    try:
        yield ledger
    finally:
        if ledger.models():
            ledger.save(store)


def _propose(graphs: list, env_graph: object, model: str, ledger: Any) -> None:  # type: ignore[type-arg]
    """Add model-proposed (llm_weak) edges to every tool graph and, if given, the env graph."""
    import asyncio

    from dataclaw.envcraft.graph.propose import describe, propose_env_edges, propose_tool_edges
    from dataclaw.models import get_model

    chat = get_model(model, ledger=ledger)

    async def run() -> None:
        for tg in graphs:
            counts = await propose_tool_edges(tg, chat)
            console.print(f"{tg.env}: {describe(counts)}")
        if env_graph is not None:
            docs = {tg.env: "tools: " + ", ".join(tg.tools()[:40]) for tg in graphs}
            counts = await propose_env_edges(env_graph, docs, chat)  # type: ignore[arg-type]
            console.print(f"env graph: {describe(counts)}")

    asyncio.run(run())


@app.command("synth")
def synth(
    run: Annotated[Path, typer.Option("--run", "-r", help="Run directory holding chains.jsonl.")],
    model: Annotated[str, typer.Option(help="Model for the natural-language parts.")] = "local:smollm2-135m",
    workers: Annotated[int, typer.Option(help="Processes for grounding.")] = 1,
    limit: Annotated[int | None, typer.Option(help="Only the first N chains.")] = None,
    distractors: Annotated[
        int, typer.Option(help="Near-duplicate distractors added per entity the chain names (0: none).")
    ] = 1,
    long_context: Annotated[
        bool, typer.Option(help="Start from the scenarios' long-context states (their history records).")
    ] = False,
    strict_text: Annotated[
        bool,
        typer.Option(
            help="Reject text that omits a user-specified value (missing_user_value) instead of adding "
            "the value in a 'Details:' sentence (recorded in metadata.values_added_by_code)."
        ),
    ] = False,
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
            ground = GroundStage(long_context=long_context, distractors_per_entity=distractors)
            run_stage(ground, chains, store, LocalExecutor(workers=workers), bar)
        chain_ids = {c["id"] for c in chains}
        grounded = [g for g in store.records("grounded") if g["chain_id"] in chain_ids]
        with progress_bar("synth") as bar, _usage(store) as ledger:
            cache = str(run / "model_cache.sqlite")
            stage = SynthStage(model, cache=cache, strict=strict_text, ledger=ledger)
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
    """Reject reasons of ``stage`` counted over the records in ``ids``."""
    return Counter(r["reason"] for r in store.rejects(stage) if r["record_id"] in ids)  # type: ignore[attr-defined]


# ---- quality and rollouts: audit | calibrate | rollout --------------------------------------------------

_TASKS_HELP = "tasks.jsonl, a run directory holding one, or a folder of claw tasks (tasks/<id>.yaml …)."


def _run_model(spec: str, run: Path, ledger: Any) -> Any:
    """A model whose answers are cached in the run directory and whose usage goes to the run's ledger."""
    from dataclaw.models import get_model

    return get_model(spec, cache=run / "model_cache.sqlite", ledger=ledger)


def _rollout_config(max_turns: int, timeout: float, max_tokens: int, strict: bool) -> object:
    from dataclaw.envcraft.rollout import RolloutConfig

    try:
        return RolloutConfig(
            max_turns=max_turns, timeout_s=timeout, max_tokens=max_tokens, strict_tool_calls=strict
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _rollout_table(title: str, s: dict) -> None:
    table = Table(title=title)
    for col in ("tasks", "rollouts", "mean reward", "full reward", "defects", "errors", "stop reasons"):
        table.add_column(col)
    fmt = lambda d: ", ".join(f"{k}={v}" for k, v in sorted(d.items())) or "-"  # noqa: E731
    table.add_row(
        str(s["tasks"]), str(s["rollouts"]), str(s["mean_reward"]), str(s["full_reward"]),
        str(s["defects"]), fmt(s["errors"]), fmt(s["stop_reasons"]),
    )  # fmt: skip
    console.print(table)


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


@app.command("audit")
def audit(
    tasks: Annotated[Path, typer.Argument(help=_TASKS_HELP)],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Run directory (default: a temp dir).")
    ] = None,
    floor: Annotated[float, typer.Option(help="Highest score allowed on the untouched workspace.")] = 0.0,
    model: Annotated[str | None, typer.Option(help="Also score every task with the LLM rubric.")] = None,
    strict: Annotated[bool, typer.Option(help="Exit 1 when any task fails.")] = False,
    unsafe: Annotated[bool, UNSAFE_OPTION] = False,
) -> None:
    """Audit tasks: claw workspace tasks by code (C.6 checks in the sandbox), any task by the LLM rubric."""
    import asyncio
    import tempfile

    from dataclaw.core.progress import progress_bar
    from dataclaw.core.store import RunStore
    from dataclaw.envcraft.quality.runs import audit_by_code, load_task_source, rubric_tasks

    loaded = load_task_source(tasks)
    run = out or Path(tempfile.mkdtemp(prefix="dataclaw-audit-"))
    with RunStore(run) as store:
        with progress_bar("audit") as bar:
            rows = audit_by_code(
                loaded, store, floor=floor, policy=SandboxPolicy(unsafe=unsafe), progress=bar
            )
        passed = sum(r["passed"] for r in rows)
        failed = len(rows) - passed
        if rows:
            table = Table(title=f"code audit (floor {floor:g})", show_lines=True)
            for col in ("task", "verdict", "untouched", "solution", "failed checks"):
                table.add_column(col)
            for r in rows:
                why = "\n".join(
                    f"{c['name']} [{c['reason']}]: {c['message']}" for c in r["checks"] if not c["passed"]
                )
                table.add_row(
                    r["id"],
                    "pass" if r["passed"] else ("DEFECT" if r.get("defect") else "FAIL"),
                    _num(r.get("untouched_score")),
                    _num(r.get("solved_score")),
                    why or "-",
                )
            console.print(table)
        if model:
            with _usage(store) as ledger:
                chat = _run_model(model, run, ledger)
                with progress_bar("rubric") as bar:
                    verdicts = asyncio.run(rubric_tasks(chat, loaded.tasks, store, progress=bar))
            kept = sum(v["qualified"] for v in verdicts)
            _summary(
                [("rubric", len(loaded.tasks), kept, _reasons(store, "rubric", {v["id"] for v in verdicts}))]
            )
            failed += len(loaded.tasks) - kept
        store.update_manifest(audit={"source": str(tasks), "floor": floor, "model": model})
    _summary([("code_audit", len(rows), passed, _reasons(store, "code_audit", {r["id"] for r in rows}))])
    console.print(f"records in {run}")
    if strict and failed:
        raise typer.Exit(1)


@app.command("rollout")
def rollout(
    tasks: Annotated[Path, typer.Argument(help=_TASKS_HELP)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run directory (reruns resume).")],
    model: Annotated[str, typer.Option(help="Agent model (any OpenAI-compatible tool-calling model).")],
    samples: Annotated[int, typer.Option("-n", help="Rollouts per task.")] = 1,
    max_turns: Annotated[int, typer.Option(help="Model turns per rollout.")] = 32,
    timeout: Annotated[float, typer.Option(help="Wall-clock seconds per rollout.")] = 300.0,
    max_tokens: Annotated[int, typer.Option(help="Tokens per model answer.")] = 1024,
    concurrency: Annotated[int, typer.Option(help="Rollouts in flight.")] = 8,
    limit: Annotated[int | None, typer.Option(help="Only the first N tasks.")] = None,
    strict_calls: Annotated[bool, typer.Option(help="An invalid tool call ends the rollout.")] = False,
    unsafe: Annotated[bool, UNSAFE_OPTION] = False,
) -> None:
    """Run the agent on tasks; trajectories (messages, observations, reward) go to ``rollouts.jsonl``."""
    import asyncio

    from dataclaw.core.progress import progress_bar
    from dataclaw.core.store import RunStore
    from dataclaw.envcraft.quality.runs import load_task_source, rollout_summary, rollout_tasks

    if samples < 1:
        raise ConfigError(f"-n must be at least 1, got {samples}")
    config = _rollout_config(max_turns, timeout, max_tokens, strict_calls)
    loaded = load_task_source(tasks, limit)
    with RunStore(out) as store, _usage(store) as ledger:
        chat = _run_model(model, out, ledger)
        with progress_bar("rollouts") as bar:
            recs = asyncio.run(
                rollout_tasks(
                    chat,
                    loaded.tasks,
                    store,
                    config,
                    samples=samples,
                    concurrency=concurrency,
                    policy=SandboxPolicy(unsafe=unsafe),
                    progress=bar,
                )
            )
        summary = rollout_summary(recs)
        store.update_manifest(rollout={"model": model, "samples": samples, "summary": summary})
    _rollout_table("rollouts", summary)


@app.command("calibrate")
def calibrate(
    tasks: Annotated[Path, typer.Argument(help=_TASKS_HELP)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run directory (reruns resume).")],
    model: Annotated[str, typer.Option(help="Calibration model (the paper uses one strong open model).")],
    k: Annotated[int, typer.Option("-k", help="Rollouts per task.")] = 8,
    threshold: Annotated[float, typer.Option(help="Reward that counts as success (claw: full score).")] = 1.0,
    repair_model: Annotated[
        str | None, typer.Option(help="Model that rewrites failing verifiers (≤ 2 tries).")
    ] = None,
    max_turns: Annotated[int, typer.Option(help="Model turns per rollout.")] = 32,
    timeout: Annotated[float, typer.Option(help="Wall-clock seconds per rollout.")] = 300.0,
    concurrency: Annotated[int, typer.Option(help="Rollouts in flight.")] = 8,
    limit: Annotated[int | None, typer.Option(help="Only the first N tasks.")] = None,
    unsafe: Annotated[bool, UNSAFE_OPTION] = False,
) -> None:
    """Difficulty calibration: k rollouts per task, keep 0 < p < 1; verifier failures go to repair."""
    import asyncio

    from dataclaw.core.progress import progress_bar
    from dataclaw.core.store import RunStore
    from dataclaw.envcraft.quality import CalibrationConfig
    from dataclaw.envcraft.quality.runs import calibrate_tasks, load_task_source, rollout_summary

    try:
        cal_config = CalibrationConfig(k=k, success_threshold=threshold, concurrency=concurrency)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    config = _rollout_config(max_turns, timeout, 1024, False)
    loaded = load_task_source(tasks, limit)
    with RunStore(out) as store, _usage(store) as ledger:
        chat = _run_model(model, out, ledger)
        fixer = _run_model(repair_model, out, ledger) if repair_model else None
        with progress_bar("calibration rollouts") as bar:
            rows = asyncio.run(
                calibrate_tasks(
                    chat,
                    loaded.tasks,
                    store,
                    cal_config,
                    config,
                    repair_model=fixer,
                    policy=SandboxPolicy(unsafe=unsafe),
                    progress=bar,
                )
            )
        summary = rollout_summary(list(store.records("rollouts")))
        store.update_manifest(calibrate={"model": model, "k": k, "threshold": threshold})
    _rollout_table("calibration rollouts", summary)
    kept = sum(r["verdict"] == "keep" for r in rows)
    reasons = Counter(r["verdict"] for r in rows if r["verdict"] != "keep")
    repaired = sum(1 for r in rows if (r.get("repair") or {}).get("ok"))
    if repaired:
        reasons["repaired (see repaired_tasks.jsonl)"] = repaired
    _summary([("calibration", len(rows), kept, reasons)])


@app.command("claw-synth")
def claw_synth(
    chains: Annotated[
        Path, typer.Argument(help="Chains JSONL: ClawForge chain lines or tasks sample output.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run directory; tasks go to <out>/claw_tasks/.")],
    model: Annotated[str, typer.Option(help="Model that writes the four files in one pass.")],
    limit: Annotated[int | None, typer.Option(help="Only the first N chains.")] = None,
    floor: Annotated[float, typer.Option(help="Highest score allowed on the untouched workspace.")] = 0.0,
    unsafe: Annotated[bool, UNSAFE_OPTION] = False,
) -> None:
    """Claw workspace tasks from chains (C.5 one-pass generation), then the code audit of each (C.6)."""
    import asyncio
    import json

    from dataclaw.core.progress import progress_bar
    from dataclaw.core.store import RunStore
    from dataclaw.envcraft.quality.runs import audit_by_code, load_task_source
    from dataclaw.envcraft.tasks.claw_generate import synth_claw_tasks

    if not chains.is_file():
        raise ConfigError(f"{chains} is not a file (expected a chains JSONL)")
    try:
        recs = [json.loads(x) for x in chains.read_text(encoding="utf-8").splitlines() if x.strip()][:limit]
    except ValueError as exc:
        raise ConfigError(f"{chains}: not JSONL ({exc})") from None
    root = out / "claw_tasks"
    with RunStore(out) as store, _usage(store) as ledger:
        chat = _run_model(model, out, ledger)
        with progress_bar("generate") as bar:
            ids = asyncio.run(synth_claw_tasks(chat, recs, root, store, bar))
        loaded = load_task_source(root) if ids else None
        rows = (
            audit_by_code(loaded, store, floor=floor, policy=SandboxPolicy(unsafe=unsafe)) if loaded else []
        )
        wanted = set(ids)
        rows = [r for r in rows if r["id"] in wanted]
        store.update_manifest(claw_synth={"chains": str(chains), "model": model})
        gen_reasons = Counter(r["reason"] for r in store.rejects("claw_generate"))
    passed = sum(r["passed"] for r in rows)
    audit_reasons = Counter(str(c["reason"]) for r in rows for c in r["checks"] if not c["passed"])
    _summary(
        [("claw_generate", len(recs), len(ids), gen_reasons), ("code_audit", len(ids), passed, audit_reasons)]
    )
    console.print(f"tasks in {root}; audit records in {out / 'code_audit.jsonl'}")
