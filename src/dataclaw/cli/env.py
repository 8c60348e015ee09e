"""``dataclaw env`` (also ``envcraft``): list, inspect and poke at EnvCraft environments by hand."""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from dataclaw.cli._executor import ExecutorOptions, executor_scope
from dataclaw.cli._importers import ImportOptions, list_importers, run_import_cli
from dataclaw.cli._options import with_options
from dataclaw.cli._produced import reasons_text, require_made
from dataclaw.core.errors import ConfigError
from dataclaw.sandbox.cli import UNSAFE_OPTION

if TYPE_CHECKING:
    from dataclaw.envcraft.synth.run import LibraryRun

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="EnvCraft environments: look at, poke and audit them; synthesise, import and serve them.",
)
_DEFAULT_ROOT = Path(".envcraft_state")


def _echo_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False))


@app.command("list")
def list_(
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    library: Annotated[
        Path | None,
        typer.Option("--library", help="List a library's environments: passing, floor and failed, with why."),
    ] = None,
) -> None:
    """List the built-in archetype environments, or a synthesised library's environments."""
    from dataclaw.envcraft.envs import archetype_rows

    if library is not None:
        _list_library(library, as_json)
        return
    rows = archetype_rows()
    if as_json:
        _echo_json([asdict(r) for r in rows])
        return
    table = Table("name", "tools", "scenarios", "description")
    for r in rows:
        table.add_row(r.name, str(r.tools), str(r.scenarios), r.description)
    Console().print(table)


def _list_library(library: Path, as_json: bool) -> None:
    """A library's environments by status — passing, floor (invalid spec, smoke tests only), failed —
    with the reasons of the others, from its index (nothing of theirs is imported or run)."""
    from dataclaw.envcraft.envs import library_rows

    listing = library_rows(library)
    if as_json:
        _echo_json([asdict(r) for r in listing.all()])
        return
    table = Table(
        "name", "status", "path", "tools", "scenarios", "archetypes", "package", "why not passing",
        title=f"{library}: {len(listing.rows)} passing, {len(listing.floor)} floor (not counted as passing),"
        f" {listing.failed} failed",
    )  # fmt: skip
    for r in listing.all():
        codes = ", ".join(r.codes)
        table.add_row(
            r.name, r.status, r.path, str(r.tools if r.tools is not None else "-"),
            str(r.scenarios if r.scenarios is not None else "-"), ", ".join(r.archetypes), r.package, codes,
        )  # fmt: skip
    Console().print(table)
    if listing.floor or listing.failures:
        typer.echo(f"why, in full: env list --library {library} --json, or {library / 'index.jsonl'}")


@app.command()
def show(name: str = typer.Argument(..., help="Archetype name, import name or package folder.")) -> None:
    """Describe an environment: bindings, scenarios, evaluator dimensions and tools."""
    from dataclaw.envcraft.envs import describe_env

    _echo_json(describe_env(name))


@app.command()
def tools(
    name: str = typer.Argument(..., help="Archetype name, import name or package folder."),
    fmt: str = typer.Option("unified", "--format", help="unified (EnvCraft C.3) or openai."),
) -> None:
    """Print the tool schemas of an environment as JSON."""
    from dataclaw.envcraft.envs import open_package

    env_cls = open_package(name).env_cls
    if fmt not in ("unified", "openai"):
        raise ConfigError(f"--format must be 'unified' or 'openai', not {fmt!r}")
    _echo_json(env_cls.tools.unified_schemas() if fmt == "unified" else env_cls.tools.openai_schemas())


@app.command()
def call(
    name: str = typer.Argument(..., help="Archetype name, import name or package folder."),
    tool: str = typer.Argument(..., help="Tool name (see `dataclaw env tools NAME`)."),
    arg: Annotated[
        list[str] | None,
        typer.Option("--arg", help="key=value (JSON for numbers, booleans, lists, objects)."),
    ] = None,
    scenario: str | None = typer.Option(
        None, "--scenario", help="Scenario for a new session (default: the first)."
    ),
    session: str | None = typer.Option(None, "--session", help="Session id (default: poke-<scenario>)."),
    state_root: Annotated[
        Path, typer.Option("--state-root", help="Where sessions are stored.")
    ] = _DEFAULT_ROOT,
    fresh: bool = typer.Option(
        False, "--fresh", help="Delete the session first and start from the scenario."
    ),
    evaluate: bool = typer.Option(False, "--evaluate", help="Also print the session's evaluation."),
) -> None:
    """Call one tool in a persistent poke session (created from a scenario on first use)."""
    from dataclaw.envcraft.envs import poke

    out = poke(
        name, tool, arg, state_root=state_root, scenario=scenario, session=session, fresh=fresh,
        evaluate=evaluate,
    )  # fmt: skip
    _echo_json(out)
    if out["status"] != "ok":
        raise SystemExit(1)  # the JSON above is the message; only the exit status is left to set


@app.command()
def contract(name: str = typer.Argument(..., help="Archetype name, import name or package folder.")) -> None:
    """Run the runtime contract test-suite against an environment package."""
    from dataclaw.envcraft.envs import check_contract

    outcome = check_contract(name)
    for check in outcome.checks:
        typer.echo(f"{'PASS' if check.passed else 'FAIL'} {check.name}: {check.detail}")
    typer.echo(outcome.summary)
    if not outcome.passed:
        raise SystemExit(1)


@app.command()
@with_options(executor=ExecutorOptions)
def audit(
    paths: Annotated[
        list[str] | None, typer.Argument(help="Environment package folders or archetype names.")
    ] = None,
    all_archetypes: bool = typer.Option(False, "--all-archetypes", help="Audit every built-in archetype."),
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Also write the reports to this JSON file.")
    ] = None,
    static_only: bool = typer.Option(False, "--static-only", help="Only the AST rules (no sandbox run)."),
    no_tests: bool = typer.Option(False, "--no-tests", help="Skip the packages' own tests/."),
    timeout: float = typer.Option(300.0, "--timeout", help="Wall-clock seconds per sandboxed run."),
    unsafe: Annotated[bool, UNSAFE_OPTION] = False,
    workers: Annotated[int, typer.Option(help="Packages audited at once.")] = 1,
    executor: ExecutorOptions = ExecutorOptions(),
) -> None:
    """Audit environment packages: static AST rules + contract checks and own tests in the sandbox."""
    from dataclaw.envcraft.audit import DynamicOptions
    from dataclaw.envcraft.audit.report import (
        audit_all,
        check_sandbox,
        render_table,
        resolve_targets,
        write_json,
    )

    targets = resolve_targets(paths or [], all_archetypes)
    if not static_only:
        check_sandbox(unsafe)
    opts = DynamicOptions(timeout_s=timeout, tests_timeout_s=timeout, run_tests=not no_tests, unsafe=unsafe)
    if workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {workers}")
    with executor_scope(executor):  # each package in its own fresh sandbox workspace
        reports = audit_all(targets, opts, dynamic=not static_only, workers=workers)
    render_table(reports)
    if json_out is not None:
        write_json(reports, json_out)
    if not all(r.passed for r in reports):
        raise SystemExit(1)


@app.command()
def graph(
    name: str = typer.Argument(..., help="Archetype name, import name, package folder or node-link JSON."),
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write node-link JSON here.")] = None,
    as_json: bool = typer.Option(False, "--json", help="Print the node-link JSON instead of a table."),
    model: Annotated[
        str | None, typer.Option(help="Also add model-proposed (llm_weak) edges from this model.")
    ] = None,
) -> None:
    """Tool dependency graph of an environment (tiered edges, read/write tools), EnvCraft §4.1."""
    from dataclaw.envcraft.graph.build import env_tool_graph

    made = env_tool_graph(name, model=model, out=out)
    if made.proposal is not None:
        typer.echo(made.proposal, err=True)
    if out is not None:
        typer.echo(f"wrote {out}")
    tg = made.graph
    if as_json:
        _echo_json(tg.to_json())
        return
    table = Table(title=f"{tg.env}: {tg.stats()['tools']} tools, {tg.graph.number_of_edges()} edges")
    for col in ("source", "target", "tier", "weight", "relationship"):
        table.add_column(col)
    for e in tg.edge_rows():
        role = "w" if e.target_writes else "r"
        table.add_row(e.source, f"{e.target} ({role})", e.tier, str(e.weight), e.relationship)
    Console().print(table)


@app.command()
def scenarios(
    category: Annotated[
        str | None, typer.Option("--category", "-c", help="Only this category: general or claw.")
    ] = None,
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON Lines (one scenario object per line) instead of a table."
    ),
    extra: Annotated[
        list[Path] | None,
        typer.Option("--scenarios", help="Folder of your own scenario YAML files (repeatable)."),
    ] = None,
) -> None:
    """List the scenario catalogue: the paper's 83 (B.2, Tables 5-14) plus your own YAML files."""
    from dataclaw.envcraft.scenarios import Category, load_catalogue

    if category is not None and category not in {c.value for c in Category}:
        raise ConfigError(
            f"unknown category {category!r}; use one of: {', '.join(c.value for c in Category)}"
        )
    rows = load_catalogue(extra or []).filter(category)
    if as_json:
        for s in rows:
            typer.echo(json.dumps({**s.model_dump(mode="json"), "source": s.source}, ensure_ascii=False))
        return
    table = Table(title=f"{len(rows)} scenarios")
    table.add_column("id", no_wrap=True)
    for col in ("category", "name", "paper envs", "description"):
        table.add_column(col)
    for s in rows:
        envs = "" if s.paper_envs is None else str(s.paper_envs)
        table.add_row(s.id, s.category.value, s.name, envs, s.description)
    Console().print(table)


@app.command()
def serve(
    name: str = typer.Argument(
        ..., help="Built-in archetype (a+b for a task group) or any environment package folder (sandboxed)."
    ),
    tasks: Annotated[
        Path | None,
        typer.Option("--tasks", help="tasks.jsonl (or a run directory holding one); default: the scenarios."),
    ] = None,
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind (default: this machine only)."),
    port: int = typer.Option(8000, "--port", help="TCP port."),
    max_sessions: int = typer.Option(64, "--max-sessions", help="Concurrent client sessions."),
    max_steps: int = typer.Option(64, "--max-steps", help="Tool steps per episode before it is scored."),
    idle_timeout: float = typer.Option(600.0, "--idle-timeout", help="Seconds an idle session lives."),
    limit: Annotated[int | None, typer.Option(help="Only the first N tasks.")] = None,
    unsafe: Annotated[bool, UNSAFE_OPTION] = False,
) -> None:
    """Serve an environment and its tasks as an OpenEnv server (needs the openenv extra).

    reset(task_id=…) loads a task's S0 (seed= and index= pick one too); MCP tools list and call the task's tools; finish ends the episode with the verifier's reward. Reach it with OpenEnv's MCPToolClient or EnvClient (TRL, verifiers) at http://HOST:PORT.
    """  # noqa: E501 - typer keeps the docstring's line breaks
    from dataclaw.envcraft.serve import build_app, load_catalogue, require_openenv

    require_openenv()
    if max_sessions < 1 or max_steps < 1 or idle_timeout <= 0 or not 0 < port < 65536:
        raise ConfigError(
            "--max-sessions and --max-steps must be at least 1, --idle-timeout positive, --port in 1..65535"
        )
    from dataclaw.sandbox import SandboxPolicy

    catalogue = load_catalogue(name, tasks, limit, policy=SandboxPolicy(unsafe=unsafe))
    app_ = build_app(catalogue, max_sessions=max_sessions, max_steps=max_steps, idle_timeout_s=idle_timeout)
    from dataclaw.envcraft.serve.startup import startup_lines

    lines = startup_lines(len(catalogue), catalogue.kind, catalogue.env, host, port, catalogue.skipped)
    typer.echo("\n".join(lines), err=True)
    import uvicorn

    # no permessage-deflate: compressing every small step message costs both ends more CPU than it saves
    uvicorn.run(app_, host=host, port=port, log_level="warning", ws_per_message_deflate=False)


@app.command("import")
@with_options(importing=ImportOptions)
def import_(
    fmt: str = typer.Argument("auto", metavar="FORMAT", help="Importer name, or auto (the first matching)."),
    src: Path | None = typer.Argument(None, help="The published environments (a folder or file)."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Library (packages + index.jsonl)."),
    importing: ImportOptions = ImportOptions(),
    unsafe: Annotated[bool, UNSAFE_OPTION] = False,
) -> None:
    """Import published environments (ClawForge, BFCL backends, τ²-bench domains) into a library folder.

    Each becomes a package folder ``LIB/<name>/`` on the runtime contract (run in its sandboxed env
    worker) and a row in the library index ``LIB/index.jsonl``; bad items are rejects, a rerun resumes."""
    if importing.list_formats:
        list_importers("environments")
        return
    if src is None or out is None:
        raise ConfigError("usage: dataclaw env import FORMAT SRC -o LIB (FORMAT may be auto)")
    run_import_cli(fmt, src, out, "environments", importing, unsafe=unsafe)


@app.command()
@with_options(executor=ExecutorOptions)
def synth(
    out: Annotated[Path, typer.Option("--out", "-o", help="Library folder (created; a rerun resumes it).")],
    scenario: Annotated[
        list[str] | None, typer.Option("--scenario", help="Catalogue scenario id (repeatable).")
    ] = None,
    all_: bool = typer.Option(False, "--all", help="Every scenario of the catalogue (and --scenarios)."),
    description: Annotated[
        list[str] | None,
        typer.Option("--description", help="Describe an environment in words: a user scenario (repeatable)."),
    ] = None,
    extra: Annotated[
        list[Path] | None,
        typer.Option("--scenarios", help="Folder of your own scenario YAML files (repeatable)."),
    ] = None,
    model: Annotated[
        str, typer.Option(help="Model for specs (and code, for codegen).")
    ] = "local:smollm2-135m",
    path: Annotated[
        str, typer.Option("--path", help="compile (spec compiler), codegen (model writes code) or both.")
    ] = "compile",
    repair_rounds: Annotated[int, typer.Option(help="Repair rounds: spec and code self-healing.")] = 2,
    spec_bounds: Annotated[
        str,
        typer.Option(help="Spec schema bounds: compact (small models), full, or auto (compact for local:)."),
    ] = "auto",
    workers: Annotated[int, typer.Option(help="Packages built and audited at once.")] = 1,
    timeout: float = typer.Option(300.0, "--timeout", help="Wall-clock seconds per sandboxed audit run."),
    unsafe: Annotated[bool, UNSAFE_OPTION] = False,
    executor: ExecutorOptions = ExecutorOptions(),
) -> None:
    """Synthesise environments: scenario → spec → package → audit (+ self-healing) → LIB/index.jsonl.

    A package passes only with a valid spec, the meaning gates, the audit and the soundness suite on
    tool tasks grounded in it (LIB/envs/<path>/); an invalid spec's package that still passes the audit is
    a floor environment (LIB/floor/<path>/, smoke tests only, never in the pass rate); failed ones land in
    LIB/failed/<path>/, with their reasons in the index. Use the library with `env list --library LIB`
    and `tasks sample --library LIB`.
    """
    from dataclaw.envcraft.synth.run import SynthRequest, synth_library

    request = SynthRequest(
        model=model, scenarios=tuple(scenario or ()), all_=all_,
        descriptions=None if description is None else tuple(description), extra=tuple(extra or ()),
        path=path, repair_rounds=repair_rounds, spec_bounds=spec_bounds, workers=workers, timeout_s=timeout,
        unsafe=unsafe,
    )  # fmt: skip
    with executor_scope(executor), _phases() as progress:
        run = synth_library(out, request, progress=progress)
    _synth_summary(run)
    s = run.summary
    why = f"{s['failed']} failed, {s['floor']} floor ({reasons_text(s['reasons']) or 'no reason recorded'})"
    why = why if s["raw"] else "no scenario to synthesise"
    require_made("passing environments", s["passed"], why=why, where=out, file="index.jsonl")


@contextlib.contextmanager
def _phases() -> Any:
    """One progress bar per phase (specs, packages), driven by ``progress(phase, done, total)``."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from dataclaw.core.progress import console

    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, disable=not console.is_terminal,
    ) as prog:  # fmt: skip
        tasks: dict[str, Any] = {}

        def update(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                tasks[phase] = prog.add_task(phase, total=None)
            prog.update(tasks[phase], completed=done, total=total)

        yield update


def _synth_summary(run: LibraryRun) -> None:
    """Raw → passing per path and per archetype with floor environments counted apart (never in the
    rate), the floor and failed rows with why, tokens and cost; the paper's rate beside."""
    table = Table(title=f"env synth: {run.lib}", caption=run.headline())
    for col in ("", "raw", "passing", "floor", "pass rate"):
        table.add_column(col)
    for r in run.rates():
        rate = f"{r.pass_rate:.1%}" if r.raw else "-"
        table.add_row(f"{r.kind} {r.name}", str(r.raw), str(r.passed), str(r.floor), rate)
    Console().print(table)
    for f in run.failures():
        typer.echo(f"{f.status} {f.scenario} [{f.path}]: {f.why}")
    typer.echo(f"index: {run.index}")
