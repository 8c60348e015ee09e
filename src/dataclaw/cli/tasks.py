"""``dataclaw tasks``: EnvCraft task synthesis. ``sample`` writes tool chains, ``synth`` grounds them and
writes verifiable tasks; ``audit``, ``calibrate`` and ``rollout`` check and run tasks; ``export`` writes
them for TRL or VERL; ``claw-synth`` writes claw workspace tasks. Each writes into a run directory and
prints a summary."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from dataclaw.cli._executor import ExecutorOptions, executor_scope
from dataclaw.cli._importers import ImportOptions, list_importers, run_import_cli
from dataclaw.cli._options import with_options
from dataclaw.cli._summary import console, stage_summary
from dataclaw.core.errors import ConfigError
from dataclaw.envcraft.export.cli import export_command
from dataclaw.sandbox import SandboxPolicy
from dataclaw.sandbox.cli import UNSAFE_OPTION

app = typer.Typer(no_args_is_help=True, help="EnvCraft tasks: tool chains → verifiable RL tasks.")


def _graphs(envs: list[str], graph_files: list[Path], modules: dict[str, str] | None = None) -> list:  # type: ignore[type-arg]
    """Tool graphs of the environments (default: every archetype) and graph files; ``modules`` collects
    env name → package folder of each non-built-in package, so chains record where it lives."""
    from dataclaw.cli.env import env_package
    from dataclaw.envcraft import archetypes
    from dataclaw.envcraft.graph import build_tool_graph, load_tool_graph

    out = [load_tool_graph(p) for p in graph_files]
    for name in envs or ([] if graph_files else archetypes.names()):
        pkg = env_package(name)
        out.append(build_tool_graph(pkg))
        if modules is not None and not getattr(pkg, "builtin", True):
            modules[out[-1].env] = str(pkg.folder)
    return out


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
    library: Annotated[
        Path | None,
        typer.Option("--library", help="Also every passing environment of a library (dataclaw env synth)."),
    ] = None,
) -> None:
    """Sample tool chains (weighted random walks ending with a write tool) into ``chains.jsonl``."""
    from dataclaw.core.store import RunStore
    from dataclaw.envcraft.graph import ChainSampler, build_env_graph, chain_stats
    from dataclaw.envcraft.tasks import chain_record

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
    graphs = _graphs(names, graph_files or [], modules)
    env_graph = build_env_graph(graphs) if cross_env > 0 else None
    with RunStore(out) as store, _usage(store) as ledger:
        if model is not None:
            _propose(graphs, env_graph, model, ledger)
        sampler = ChainSampler(graphs, env_graph)
        chains = sampler.sample(n, seed, cross_env_fraction=cross_env, min_len=min_len, max_len=max_len)
        stage = store.stage("chains")
        added = sum(stage.append(chain_record(c, modules)) for c in chains)
        stats = chain_stats(chains, graphs)
        store.update_manifest(chains={"seed": seed, "n": n, "stats": stats})
    console.print(f"chains: {len(chains)} sampled, {added} new in {out / 'chains.jsonl'}")
    console.print_json(data=stats)
    short = {"duplicate_or_no_write_end": n - len(chains)} if n > len(chains) else {}
    stage_summary([("chains", n, len(chains), short)])


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
    from dataclaw.envcraft.runtime.task import ToolTask
    from dataclaw.envcraft.tasks import GroundStage, SynthStage
    from dataclaw.pipeline import run_stage
    from dataclaw.pipeline.registry import make_executor

    if not (run / "chains.jsonl").is_file():
        raise ConfigError(f"{run} has no chains.jsonl: run `dataclaw tasks sample --out {run}` first")
    with RunStore(run) as store:
        chains = list(store.records("chains"))[:limit]
        with progress_bar("ground") as bar:
            ground = GroundStage(long_context=long_context, distractors_per_entity=distractors)
            run_stage(ground, chains, store, make_executor(workers=workers), bar)
        chain_ids = {c["id"] for c in chains}
        grounded = [g for g in store.records("grounded") if g["chain_id"] in chain_ids]
        with progress_bar("synth") as bar, _usage(store) as ledger:
            cache = str(run / "model_cache.sqlite")
            stage = SynthStage(model, cache=cache, strict=strict_text, ledger=ledger)
            run_stage(stage, grounded, store, make_executor(workers=1), bar)
        grounded_ids = {g["id"] for g in grounded}
        made = (ToolTask.from_row(t) for t in store.records("tasks"))
        tasks = [t for t in made if t.metadata["grounded_id"] in grounded_ids]
        rows = [
            ("grounded", len(chains), len(grounded), _reasons(store, "grounded", chain_ids)),
            ("tasks", len(grounded), len(tasks), _reasons(store, "tasks", grounded_ids)),
        ]
        store.update_manifest(tasks={"model": model, "chains": len(chains), "tasks": len(tasks)})
    stage_summary(rows, paper=True)


def _reasons(store: object, stage: str, ids: set[str]) -> dict[str, int]:
    """Reject reasons of ``stage`` counted over the records in ``ids``."""
    return Counter(r["reason"] for r in store.rejects(stage) if r["record_id"] in ids)  # type: ignore[attr-defined]


# ---- quality and rollouts: audit | calibrate | rollout --------------------------------------------------

_TASKS_HELP = "tasks.jsonl, a run directory holding one, or a folder of claw tasks (tasks/<id>.yaml …)."


def _run_model(spec: str, run: Path, ledger: Any) -> Any:
    """A model whose answers are cached in the run directory and whose usage goes to the run's ledger."""
    from dataclaw.models import get_model

    return get_model(spec, cache=run / "model_cache.sqlite", ledger=ledger)


def _rollout_config(max_turns: int, timeout: float, max_tokens: int, strict: bool, **sampling: Any) -> object:
    from dataclaw.envcraft.rollout import RolloutConfig

    try:
        return RolloutConfig(
            max_turns=max_turns,
            timeout_s=timeout,
            max_tokens=max_tokens,
            strict_tool_calls=strict,
            **sampling,
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _rollout_table(title: str, s: dict) -> None:
    table = Table(title=title)
    cols = ["tasks", "unloadable", "rollouts", "mean reward", "full reward", "defects", "errors"]
    cols.append("stop reasons")
    for col in cols:
        table.add_column(col)
    fmt = lambda d: ", ".join(f"{k}={v}" for k, v in sorted(d.items())) or "-"  # noqa: E731
    table.add_row(
        str(s["tasks"]), str(s.get("unloadable", 0)), str(s["rollouts"]), str(s["mean_reward"]),
        str(s["full_reward"]), str(s["defects"]), fmt(s["errors"]), fmt(s["stop_reasons"]),
    )  # fmt: skip
    console.print(table)


def _unloadable(loaded: Any, store: Any, stage: str, source: Path) -> list[dict[str, Any]]:
    """Record every task that cannot be loaded as a reject of ``stage`` and list them; when not one task
    could be loaded, a ConfigError (exit 1: a run over nothing is not a success)."""
    from dataclaw.envcraft.quality.runs import reject_unloadable

    broken = reject_unloadable(loaded, store, stage)
    for b in broken[:10]:
        console.print(f"unloadable: {b['id']} [{b['reason']}] {b['message']}", markup=False, highlight=False)
    if len(broken) > 10:
        console.print(f"… {len(broken) - 10} more unloadable tasks in {store.root / 'rejects.jsonl'}")
    if not loaded.tasks:
        why = Counter(b["reason"] for b in broken)
        detail = ", ".join(f"{k}={v}" for k, v in why.most_common()) or "the folder holds none"
        raise ConfigError(f"no task could be loaded from {source} ({detail}; rejects in {store.root})")
    return broken


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


@app.command("audit")
@with_options(executor=ExecutorOptions)
def audit(
    tasks: Annotated[Path, typer.Argument(help=_TASKS_HELP)],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Run directory (default: a temp dir; reruns resume).")
    ] = None,
    floor: Annotated[float, typer.Option(help="Highest score allowed on the untouched workspace.")] = 0.0,
    workers: Annotated[
        int | None, typer.Option(help="Claw tasks audited at once (default: the CPU count).")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Also score every task with the LLM rubric.")] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also print the per-task table (verdict, failed checks).")
    ] = False,
    strict: Annotated[bool, typer.Option(help="Exit 1 when any task fails.")] = False,
    unsafe: Annotated[bool, UNSAFE_OPTION] = False,
    executor: ExecutorOptions = ExecutorOptions(),
) -> None:
    """Audit tasks: claw workspace tasks by code (C.6 checks in the sandbox), any task by the LLM rubric.

    Prints a summary (verdicts, reasons, warnings, pass rate, slowest tasks); every report is in
    ``code_audit.jsonl`` and every failure in ``rejects.jsonl`` of the run directory."""
    import asyncio
    import tempfile
    import time

    from dataclaw.core.progress import progress_bar
    from dataclaw.core.store import RunStore
    from dataclaw.envcraft.quality.runs import audit_by_code, default_workers, load_task_source, rubric_tasks

    if workers is not None and workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {workers}")
    n_workers = workers or default_workers()
    loaded = load_task_source(tasks)
    if not loaded.tasks and not loaded.broken:
        raise ConfigError(f"no tasks found in {tasks}")
    run = out or Path(tempfile.mkdtemp(prefix="dataclaw-audit-"))
    with executor_scope(executor), RunStore(run) as store:
        before = store.stage("code_audit").ids()
        t0 = time.perf_counter()
        with progress_bar("audit") as bar:
            rows = audit_by_code(
                loaded,
                store,
                floor=floor,
                policy=SandboxPolicy(unsafe=unsafe),
                progress=bar,
                workers=n_workers,
            )
        took = time.perf_counter() - t0
        resumed = sum(1 for r in rows if r["id"] in before and "layout" not in r)
        if verbose and rows:
            _audit_table(rows, floor)
        summary = _audit_summary(rows, floor=floor, workers=n_workers, seconds=took, resumed=resumed)
        failed = len(rows) - sum(r["passed"] for r in rows)
        if model:
            with _usage(store) as ledger:
                chat = _run_model(model, run, ledger)
                with progress_bar("rubric") as bar:
                    verdicts = asyncio.run(rubric_tasks(chat, loaded.tasks, store, progress=bar))
            kept = sum(v["qualified"] for v in verdicts)
            stage_summary(
                [("rubric", len(loaded.tasks), kept, _reasons(store, "rubric", {v["id"] for v in verdicts}))]
            )
            failed += len(loaded.tasks) - kept
        store.update_manifest(
            audit={
                "source": str(tasks),
                "floor": floor,
                "model": model,
                "workers": n_workers,
                "summary": summary,
            }
        )
    console.print(f"records: {run / 'code_audit.jsonl'} (reports), {run / 'rejects.jsonl'} (failures)")
    if strict and failed:
        raise typer.Exit(1)


def _verdict(row: dict[str, Any]) -> str:
    """One word per task: pass, FAIL (the task is broken), DEFECT (its verifier failed: repair it),
    unloadable (its files do not form a task), error (the audit itself crashed on it)."""
    if row.get("layout"):
        return "unloadable"
    if row.get("error"):
        return "error"
    if row["passed"]:
        return "pass"
    return "DEFECT" if row.get("defect") else "FAIL"


def _warnings(row: dict[str, Any]) -> list[dict[str, Any]]:
    """A report's warnings: uncertain heuristics that do not fail the task (a ``warnings`` list, or checks
    marked ``severity: warning``)."""
    out = [w if isinstance(w, dict) else {"message": str(w)} for w in row.get("warnings") or []]
    out += [c for c in row.get("checks", []) if c.get("severity") == "warning"]
    return out


def _audit_table(rows: list[dict[str, Any]], floor: float) -> None:
    table = Table(title=f"code audit (floor {floor:g})", show_lines=True)
    for col in ("task", "verdict", "untouched", "solution", "failed checks", "warnings"):
        table.add_column(col)
    for r in rows:
        why = "\n".join(
            f"{c['name']} [{c['reason']}]: {c['message']}" for c in r["checks"] if not c["passed"]
        )
        warned = "\n".join(
            f"{w.get('name', 'warning')} [{w.get('reason', '-')}]: {w.get('message', '')}"
            for w in _warnings(r)
        )
        table.add_row(
            r["id"],
            _verdict(r),
            _num(r.get("untouched_score")),
            _num(r.get("solved_score")),
            why or "-",
            warned or "-",
        )
    console.print(table)


def _audit_summary(
    rows: list[dict[str, Any]], *, floor: float, workers: int, seconds: float, resumed: int
) -> dict[str, Any]:
    """Print the audit's summary: tasks per verdict, per failure reason and per warning, the pass rate and
    the slowest tasks; return the same numbers (they go into the run manifest)."""
    verdicts = Counter(_verdict(r) for r in rows)
    failing: Counter[str] = Counter()
    warned: Counter[str] = Counter()
    example: dict[str, str] = {}
    for r in rows:
        for reason in dict.fromkeys(str(c["reason"]) for c in r["checks"] if not c["passed"]):
            failing[reason] += 1
            example.setdefault(reason, r["id"])
        for reason in dict.fromkeys(str(w.get("reason") or w.get("name") or "warning") for w in _warnings(r)):
            warned[reason] += 1
            example.setdefault(reason, r["id"])
    n, passed = len(rows), verdicts.get("pass", 0)
    n_warnings = sum(len(_warnings(r)) for r in rows)
    audited = n - resumed - verdicts.get("unloadable", 0)
    rate = audited / seconds if seconds > 0 and audited else None
    timed = sorted((r for r in rows if r.get("duration_s") is not None), key=lambda r: -r["duration_s"])
    line = f"pass rate {passed}/{n} = {passed / n:.1%}" if n else "no tasks"
    line += f"; {n_warnings} warnings on {sum(1 for r in rows if _warnings(r))} tasks"
    title = f"code audit of {n} tasks (floor {floor:g})"
    table = Table(title=title, min_width=len(title) + 2)
    for col in ("verdict", "tasks", "share"):
        table.add_column(col)
    for name in ("pass", "FAIL", "DEFECT", "unloadable", "error"):
        if verdicts.get(name) or name in ("pass", "FAIL"):
            table.add_row(name, str(verdicts.get(name, 0)), f"{verdicts.get(name, 0) / n:.1%}" if n else "-")
    console.print(table)
    console.print(line)
    if failing or warned:
        reasons = Table(title="reasons (tasks per reason; a task may have several)")
        for col in ("reason", "failed", "warned", "e.g."):
            reasons.add_column(col)
        for reason in sorted({*failing, *warned}, key=lambda k: (-failing[k], -warned[k], k)):
            reasons.add_row(reason, str(failing[reason] or "-"), str(warned[reason] or "-"), example[reason])
        console.print(reasons)
    slowest = [(r["id"], r["duration_s"]) for r in timed[:5]]
    if slowest:
        console.print("slowest: " + ", ".join(f"{tid} {sec:.1f} s" for tid, sec in slowest))
    pace = f"{audited} audited in {seconds:.1f} s with {workers} workers"
    pace += f" ({rate:.2f} tasks/s)" if rate else ""
    console.print(pace + (f"; {resumed} resumed from the run directory" if resumed else ""))
    return {
        "tasks": n,
        "verdicts": dict(verdicts),
        "reasons": dict(failing),
        "warnings": dict(warned),
        "pass_rate": round(passed / n, 4) if n else None,
        "audited": audited,
        "resumed": resumed,
        "seconds": round(seconds, 2),
        "tasks_per_s": round(rate, 3) if rate else None,
        "slowest": slowest,
    }


@app.command("rollout")
@with_options(executor=ExecutorOptions)
def rollout(
    tasks: Annotated[Path, typer.Argument(help=_TASKS_HELP)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run directory (reruns resume).")],
    model: Annotated[str, typer.Option(help="Agent model (any OpenAI-compatible tool-calling model).")],
    samples: Annotated[int, typer.Option("-n", help="Rollouts per task.")] = 1,
    max_turns: Annotated[int, typer.Option(help="Model turns per rollout.")] = 32,
    timeout: Annotated[float, typer.Option(help="Wall-clock seconds per rollout.")] = 300.0,
    max_tokens: Annotated[
        int, typer.Option(help="Tokens per model answer (thinking models reason out of this budget).")
    ] = 4096,
    temperature: Annotated[float | None, typer.Option(help="Sampling temperature (server default).")] = None,
    top_p: Annotated[float | None, typer.Option(help="Nucleus sampling top-p (server default).")] = None,
    seed: Annotated[
        int | None, typer.Option(help="Base seed: sample j of every task sends seed + j (default: j).")
    ] = None,
    logprobs: Annotated[bool, typer.Option(help="Keep per-token logprobs of every model turn.")] = False,
    token_ids: Annotated[
        bool, typer.Option(help="Keep prompt/completion token ids (vLLM return_token_ids).")
    ] = False,
    concurrency: Annotated[int, typer.Option(help="Rollouts in flight.")] = 8,
    limit: Annotated[int | None, typer.Option(help="Only the first N tasks.")] = None,
    strict_calls: Annotated[bool, typer.Option(help="An invalid tool call ends the rollout.")] = False,
    unsafe: Annotated[bool, UNSAFE_OPTION] = False,
    executor: ExecutorOptions = ExecutorOptions(),
) -> None:
    """Run the agent on tasks; trajectories (messages, observations, reward) go to ``rollouts.jsonl``.

    The -n samples of a task are independent (each sends its own seed); trajectories keep per-turn usage, reasoning text and, asked for, logprobs and token ids.
    """  # noqa: E501 - typer keeps the docstring's line breaks
    import asyncio

    from dataclaw.core.progress import progress_bar
    from dataclaw.core.store import RunStore
    from dataclaw.envcraft.quality.runs import load_task_source
    from dataclaw.envcraft.rollout.run import rollout_summary, rollout_tasks

    if samples < 1:
        raise ConfigError(f"-n must be at least 1, got {samples}")
    sampling = {"temperature": temperature, "top_p": top_p, "seed": seed}
    config = _rollout_config(
        max_turns, timeout, max_tokens, strict_calls, **sampling, logprobs=logprobs, token_ids=token_ids
    )
    loaded = load_task_source(tasks, limit)
    with executor_scope(executor), RunStore(out) as store, _usage(store) as ledger:
        broken = _unloadable(loaded, store, "rollouts", tasks)
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
                    # an explicit seed is part of each rollout's id: a rerun with another seed is new work
                    seeds=(lambda j: seed + j) if seed is not None else (lambda j: None),
                    policy=SandboxPolicy(unsafe=unsafe),
                    progress=bar,
                )
            )
        summary = {**rollout_summary(recs), "unloadable": len(broken)}
        store.update_manifest(
            rollout={
                "model": model, "samples": samples, "summary": summary,
                "sampling": {**sampling, "max_tokens": max_tokens},
            }
        )  # fmt: skip
    _rollout_table("rollouts", summary)


@app.command("calibrate")
@with_options(executor=ExecutorOptions)
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
    executor: ExecutorOptions = ExecutorOptions(),
) -> None:
    """Difficulty calibration: k rollouts per task, keep 0 < p < 1; verifier failures go to repair."""
    import asyncio

    from dataclaw.core.progress import progress_bar
    from dataclaw.core.store import RunStore
    from dataclaw.envcraft.quality import CalibrationConfig
    from dataclaw.envcraft.quality.runs import calibrate_tasks, load_task_source
    from dataclaw.envcraft.rollout.run import rollout_summary

    try:
        cal_config = CalibrationConfig(k=k, success_threshold=threshold, concurrency=concurrency)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    config = _rollout_config(max_turns, timeout, 4096, False)
    loaded = load_task_source(tasks, limit)
    with executor_scope(executor), RunStore(out) as store, _usage(store) as ledger:
        broken = _unloadable(loaded, store, "calibration", tasks)
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
        summary = {**rollout_summary(list(store.records("rollouts"))), "unloadable": len(broken)}
        store.update_manifest(calibrate={"model": model, "k": k, "threshold": threshold})
    _rollout_table("calibration rollouts", summary)
    kept = sum(r["verdict"] == "keep" for r in rows)
    reasons = Counter(r["verdict"] for r in rows if r["verdict"] != "keep")
    reasons.update(f"unloadable: {b['reason']}" for b in broken)
    repaired = sum(1 for r in rows if (r.get("repair") or {}).get("ok"))
    if repaired:
        reasons["repaired (see repaired_tasks.jsonl)"] = repaired
    stage_summary([("calibration", len(rows) + len(broken), kept, reasons)])


@app.command("claw-synth")
def claw_synth(
    chains: Annotated[
        Path, typer.Argument(help="Chains JSONL: ClawForge chain lines or tasks sample output.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run directory; tasks go to <out>/claw_tasks/.")],
    model: Annotated[str, typer.Option(help="Model that writes the four files in one pass.")],
    limit: Annotated[int | None, typer.Option(help="Only the first N chains.")] = None,
    floor: Annotated[float, typer.Option(help="Highest score allowed on the untouched workspace.")] = 0.0,
    workers: Annotated[
        int | None, typer.Option(help="Tasks audited at once (default: the CPU count).")
    ] = None,
    unsafe: Annotated[bool, UNSAFE_OPTION] = False,
) -> None:
    """Claw workspace tasks from chains (C.5 one-pass generation), then the code audit of each (C.6)."""
    import asyncio
    import json

    from dataclaw.core.progress import progress_bar
    from dataclaw.core.store import RunStore
    from dataclaw.envcraft.quality.runs import audit_by_code, default_workers, load_task_source
    from dataclaw.envcraft.tasks.claw.generate import synth_claw_tasks

    if workers is not None and workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {workers}")
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
        policy = SandboxPolicy(unsafe=unsafe)
        n = workers or default_workers()
        rows = audit_by_code(loaded, store, floor=floor, policy=policy, workers=n) if loaded else []
        wanted = set(ids)
        rows = [r for r in rows if r["id"] in wanted]
        store.update_manifest(claw_synth={"chains": str(chains), "model": model})
        gen_reasons = Counter(r["reason"] for r in store.rejects("claw_generate"))
    passed = sum(r["passed"] for r in rows)
    audit_reasons = Counter(str(c["reason"]) for r in rows for c in r["checks"] if not c["passed"])
    stage_summary(
        [
            ("claw_generate", len(recs), len(ids), gen_reasons),
            ("code_audit", len(ids), passed, audit_reasons),
        ],
        paper=True,
    )
    console.print(f"tasks in {root}; audit records in {out / 'code_audit.jsonl'}")


# ---- import: published task sets → task records -------------------------------------------------------

_FORMAT_HELP = "Importer name (see `dataclaw tasks import --list`), or auto: the first whose format matches."


@app.command("import")
@with_options(importing=ImportOptions)
def import_(
    fmt: Annotated[str, typer.Argument(metavar="FORMAT", help=_FORMAT_HELP)] = "auto",
    src: Annotated[Path | None, typer.Argument(help="The published task set (a folder or file).")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Run directory (reruns resume).")] = None,
    importing: ImportOptions = ImportOptions(),
    unsafe: Annotated[bool, UNSAFE_OPTION] = False,
) -> None:
    """Import a published task set (PinchBench, BFCL-v3, τ²-bench …) as task records: ``RUN/tasks.jsonl``.

    Every later command reads the run: tasks audit, calibrate, rollout, export, the viewer. One reject
    per bad item (``rejects.jsonl``); a rerun resumes."""
    if importing.list_formats:
        list_importers("tasks")
        return
    if src is None or out is None:
        raise ConfigError("usage: dataclaw tasks import FORMAT SRC -o RUN (FORMAT may be auto)")
    run_import_cli(fmt, src, out, "tasks", importing, unsafe=unsafe)


# the export command lives with the exporters (dataclaw/envcraft/export)
app.command("export")(export_command)
