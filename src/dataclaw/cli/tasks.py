"""``dataclaw tasks``: EnvCraft task synthesis. ``sample`` writes tool chains, ``synth`` grounds them and
writes verifiable tasks; ``audit``, ``calibrate`` and ``rollout`` check and run tasks; ``export`` writes
them for TRL or VERL; ``claw-synth`` writes claw workspace tasks. Each writes into a run directory and
prints a summary."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from dataclaw.cli._executor import ExecutorOptions, executor_scope
from dataclaw.cli._importers import ImportOptions, list_importers, run_import_cli
from dataclaw.cli._options import with_options
from dataclaw.cli._produced import reasons_text, require_made, require_stages
from dataclaw.cli._summary import console, stage_summary
from dataclaw.core.errors import ConfigError
from dataclaw.envcraft.export.cli import export_command
from dataclaw.envcraft.quality.soundness import SoundnessSettings
from dataclaw.sandbox import SandboxPolicy
from dataclaw.sandbox.cli import UNSAFE_OPTION

if TYPE_CHECKING:
    from dataclaw.envcraft.quality.task_audit import AuditSummary

app = typer.Typer(no_args_is_help=True, help="EnvCraft tasks: tool chains → verifiable RL tasks.")


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
    from dataclaw.envcraft.graph.propose import describe
    from dataclaw.envcraft.tasks.tool.pipeline import sample_chains

    done = sample_chains(
        out, envs=envs, graph_files=graph_files, library=library, n=n, seed=seed, min_len=min_len,
        max_len=max_len, cross_env=cross_env, model=model,
        on_proposed=lambda graph, counts: console.print(f"{graph}: {describe(counts)}"),
    )  # fmt: skip
    console.print(f"chains: {len(done.chains)} sampled, {done.added} new in {out / 'chains.jsonl'}")
    console.print_json(data=done.stats)
    stage_summary([done.stage_count])
    require_stages("chains", [done.stage_count], where=None)


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
    from dataclaw.envcraft.tasks.tool.pipeline import synth_tasks

    counts = synth_tasks(
        run, model, workers=workers, limit=limit, distractors=distractors, long_context=long_context,
        strict_text=strict_text, progress=progress_bar,
    )  # fmt: skip
    stage_summary(counts, paper=True)
    require_stages("tasks", counts, where=run)


# ---- quality and rollouts: audit | calibrate | rollout --------------------------------------------------

_TASKS_HELP = "tasks.jsonl, a run directory holding one, or a folder of claw tasks (tasks/<id>.yaml …)."


def _rollout_table(title: str, s: dict) -> None:
    table = Table(title=title)
    cols = ["tasks", "unloadable", "rollouts", "mean reward", "full reward", "pass^k", "defects", "errors"]
    cols += ["stop reasons", "budget exceeded"]
    for col in cols:
        table.add_column(col)
    fmt = lambda d: ", ".join(f"{k}={v}" for k, v in sorted(d.items())) or "-"  # noqa: E731
    table.add_row(
        str(s["tasks"]), str(s.get("unloadable", 0)), str(s["rollouts"]), str(s["mean_reward"]),
        str(s["full_reward"]), " ".join(f"^{k}={v:.2f}" for k, v in s.get("pass_hat_k", {}).items()) or "-",
        str(s["defects"]), fmt(s["errors"]), fmt(s["stop_reasons"]),
        str(s.get("budget_exceeded", 0)),
    )  # fmt: skip
    console.print(table)
    if s.get("components"):  # the reward's components (τ²-style): mean score, rollouts, judge errors
        parts = [
            f"{k} {c['mean']:.2f} of {c['rollouts']}" + (f" ({c['errors']} errors)" if c["errors"] else "")
            for k, c in s["components"].items()
        ]
        console.print("reward components (mean score): " + ", ".join(parts), markup=False, highlight=False)
    if s.get("user"):  # the simulated users (--user-model)
        u = s["user"]
        console.print(
            f"simulated user {', '.join(u['models'])}: {u['rollouts']} rollouts, {u['mean_turns']} messages "
            f"each, {u['cut']} cut at --user-max-turns, {u['leaks']} ended by a leak, {u['discarded']} "
            f"messages discarded, {u['prompt_tokens']}+{u['completion_tokens']} tokens",
            markup=False, highlight=False,
        )  # fmt: skip
    if s.get("wall_s_max") is not None:
        over = s.get("overrun_s_max")
        console.print(
            f"episode wall time {s['wall_s_total']:.1f} s in all, longest {s['wall_s_max']:.1f} s"
            + (f"; most over its budget {over:.1f} s" if over is not None else "")
        )


def _print_unloadable(broken: list[dict[str, Any]], run: Path) -> None:
    """The tasks that could not be loaded (the first ten; the rest are in the run's rejects)."""
    for b in broken[:10]:
        console.print(f"unloadable: {b['id']} [{b['reason']}] {b['message']}", markup=False, highlight=False)
    if len(broken) > 10:
        console.print(f"… {len(broken) - 10} more unloadable tasks in {run / 'rejects.jsonl'}")


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


@app.command("audit")
@with_options(executor=ExecutorOptions, soundness=SoundnessSettings)
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
    soundness: SoundnessSettings = SoundnessSettings(),
) -> None:
    """Audit tasks: claw workspace tasks by code (C.6 checks in the sandbox), tool tasks by code and by the
    soundness suite (the --pass-threshold … --seed options), any task by the LLM rubric.

    Prints a summary (verdicts, reasons, warnings, pass rate, slowest tasks); every report is in
    ``code_audit.jsonl`` and every failure in ``rejects.jsonl`` of the run directory."""
    import tempfile

    from dataclaw.core.progress import progress_bar
    from dataclaw.envcraft.quality.runs import default_workers, load_task_source
    from dataclaw.envcraft.quality.task_audit import CodeAudit, audit_tasks

    if workers is not None and workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {workers}")
    n_workers = workers or default_workers()
    loaded = load_task_source(tasks)
    if not loaded.tasks and not loaded.broken:
        raise ConfigError(f"no tasks found in {tasks}")
    run = out or Path(tempfile.mkdtemp(prefix="dataclaw-audit-"))

    def show(code: CodeAudit) -> None:
        if verbose and code.rows:
            _audit_table(code.rows, floor)
        _print_audit_summary(code.summary, floor=floor, workers=n_workers)

    with executor_scope(executor):
        done = audit_tasks(
            tasks, loaded, run, floor=floor, workers=n_workers, model=model,
            policy=SandboxPolicy(unsafe=unsafe), progress=progress_bar, on_code_audit=show,
            soundness=soundness,
        )  # fmt: skip
    if done.rubric is not None:
        stage_summary([done.rubric])
    console.print(f"records: {run / 'code_audit.jsonl'} (reports), {run / 'rejects.jsonl'} (failures)")
    require_made("audit reports", done.code.summary.tasks, why="no task was audited", where=run)
    if strict and done.failed:
        raise typer.Exit(1)


def _audit_table(rows: list[dict[str, Any]], floor: float) -> None:
    from dataclaw.envcraft.quality.task_audit import verdict, warnings

    table = Table(title=f"code audit (floor {floor:g})", show_lines=True)
    for col in ("task", "verdict", "untouched", "solution", "failed checks", "warnings"):
        table.add_column(col)
    for r in rows:
        why = "\n".join(
            f"{c['name']} [{c['reason']}]: {c['message']}" for c in r["checks"] if not c["passed"]
        )
        warned = "\n".join(
            f"{w.get('name', 'warning')} [{w.get('reason', '-')}]: {w.get('message', '')}"
            for w in warnings(r)
        )
        table.add_row(
            r["id"],
            verdict(r),
            _num(r.get("untouched_score")),
            _num(r.get("solved_score")),
            why or "-",
            warned or "-",
        )
    console.print(table)


def _print_audit_summary(s: AuditSummary, *, floor: float, workers: int) -> None:
    """The audit's summary: tasks per verdict, per failure reason and per warning, the pass rate, the
    slowest tasks and the pace."""
    from dataclaw.envcraft.quality.task_audit import VERDICTS

    n, passed = s.tasks, s.verdicts.get("pass", 0)
    line = f"pass rate {passed}/{n} = {passed / n:.1%}" if n else "no tasks"
    line += f"; {s.n_warnings} warnings on {s.warned_tasks} tasks"
    title = f"code audit of {n} tasks (floor {floor:g})"
    table = Table(title=title, min_width=len(title) + 2)
    for col in ("verdict", "tasks", "share"):
        table.add_column(col)
    for name in VERDICTS:
        if s.verdicts.get(name) or name in ("pass", "FAIL"):
            table.add_row(
                name, str(s.verdicts.get(name, 0)), f"{s.verdicts.get(name, 0) / n:.1%}" if n else "-"
            )
    console.print(table)
    console.print(line)
    failing, warned = Counter(s.reasons), Counter(s.warnings)
    if failing or warned:
        reasons = Table(title="reasons (tasks per reason; a task may have several)")
        for col in ("reason", "failed", "warned", "e.g."):
            reasons.add_column(col)
        for reason in sorted({*failing, *warned}, key=lambda k: (-failing[k], -warned[k], k)):
            reasons.add_row(
                reason, str(failing[reason] or "-"), str(warned[reason] or "-"), s.examples[reason]
            )
        console.print(reasons)
    if s.slowest:
        console.print("slowest: " + ", ".join(f"{tid} {sec:.1f} s" for tid, sec in s.slowest))
    pace = f"{s.audited} audited in {s.seconds:.1f} s with {workers} workers"
    pace += f" ({s.tasks_per_s:.2f} tasks/s)" if s.tasks_per_s else ""
    console.print(pace + (f"; {s.resumed} resumed from the run directory" if s.resumed else ""))


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
    judge_model: Annotated[
        str | None, typer.Option(help="Judge of tasks' natural-language assertions (reward nl_assertions).")
    ] = None,
    user_model: Annotated[
        str | None,
        typer.Option(help="An LLM plays each tool task's user (τ²-bench user simulator); default: scripted."),
    ] = None,
    user_max_turns: Annotated[
        int, typer.Option(help="Messages the simulated user may send; one more request ends the episode.")
    ] = 10,
    user_temperature: Annotated[
        float | None, typer.Option(help="Sampling temperature of the simulated user (server default).")
    ] = None,
    unsafe: Annotated[bool, UNSAFE_OPTION] = False,
    executor: ExecutorOptions = ExecutorOptions(),
) -> None:
    """Run the agent on tasks; trajectories (messages, observations, reward) go to ``rollouts.jsonl``.

    The -n samples of a task are independent (each sends its own seed); trajectories keep per-turn usage, reasoning text and, asked for, logprobs and token ids.

    The user says the task's scripted turns, or with --user-model an LLM plays the user from the task's instructions (τ²-bench's user simulator: ###STOP###, a turn budget; its turns and usage go to each record's "user").
    """  # noqa: E501 - typer keeps the docstring's line breaks
    from dataclaw.core.progress import progress_bar
    from dataclaw.envcraft.quality.runs import load_task_source
    from dataclaw.envcraft.quality.task_runs import rollout_config, rollout_run, simulated_user_config

    if samples < 1:
        raise ConfigError(f"-n must be at least 1, got {samples}")
    sampling = {"temperature": temperature, "top_p": top_p, "seed": seed}
    config = rollout_config(
        max_turns, timeout, max_tokens, strict_calls, **sampling, logprobs=logprobs, token_ids=token_ids
    )
    user = simulated_user_config(user_max_turns, user_temperature)
    loaded = load_task_source(tasks, limit)
    with executor_scope(executor):
        done = rollout_run(
            tasks, out, model, config, samples=samples, concurrency=concurrency, loaded=loaded,
            policy=SandboxPolicy(unsafe=unsafe), progress=progress_bar,
            on_unloadable=lambda broken: _print_unloadable(broken, out), judge_model=judge_model,
            user_model=user_model, user_config=user,
        )  # fmt: skip
    _rollout_table("rollouts", done.summary)
    require_made("rollouts", done.summary["rollouts"], why="no task was run", where=out)


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
    from dataclaw.core.progress import progress_bar
    from dataclaw.envcraft.quality.runs import load_task_source
    from dataclaw.envcraft.quality.task_runs import calibrate_run, calibration_config, rollout_config

    cal_config = calibration_config(k, threshold, concurrency)
    config = rollout_config(max_turns, timeout, 4096, False)
    loaded = load_task_source(tasks, limit)
    with executor_scope(executor):
        done = calibrate_run(
            tasks, out, model, cal_config, config, repair_model=repair_model, loaded=loaded,
            policy=SandboxPolicy(unsafe=unsafe), progress=progress_bar,
            on_unloadable=lambda broken: _print_unloadable(broken, out),
        )  # fmt: skip
    _rollout_table("calibration rollouts", done.summary)
    stage_summary([done.stage_count])
    cal = done.stage_count
    repaired = sum(1 for r in done.rows if (r.get("repair") or {}).get("ok"))
    why = f"none of {cal.raw} has 0 < p < 1 and none was repaired ({reasons_text(cal.reasons)})"
    require_made("calibrated tasks", cal.kept + repaired, why=why, where=out)


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
    from dataclaw.core.progress import progress_bar
    from dataclaw.envcraft.tasks.claw.pipeline import claw_synth as run_claw_synth

    if workers is not None and workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {workers}")
    done = run_claw_synth(
        chains, out, model, limit=limit, floor=floor, workers=workers, policy=SandboxPolicy(unsafe=unsafe),
        progress=progress_bar,
    )  # fmt: skip
    stage_summary(done.counts, paper=True)
    console.print(f"tasks in {done.root}; audit records in {out / 'code_audit.jsonl'}")
    require_stages("claw tasks passing the code audit", done.counts, where=out)


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
