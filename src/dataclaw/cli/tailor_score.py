"""``dataclaw tailor bench`` (the DataClaw0-val metric) and ``dataclaw tailor cost`` (the Appendix F cost
model), registered on the tailor app by :func:`register`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def bench(
    pred: Annotated[
        Path, typer.Option("--pred", "-p", help="Predictions: a Tailor run directory or a JSONL file.")
    ],
    ref: Annotated[Path, typer.Option("--ref", "-r", help="References: a JSONL file of samples (or a run).")],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Scores JSON [RUN/bench.json or PRED.bench.json].")
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="Metric weights (YAML); see docs/scoring.md.")
    ] = None,
    intent_file: Annotated[
        list[Path] | None, typer.Option("--intent", "-i", help="Also load these intent files.")
    ] = None,
    embed_cache: Annotated[
        Path | None, typer.Option(help="Embedding cache file [$DATACLAW_CACHE_DIR/embeddings.sqlite].")
    ] = None,
    no_embed_cache: Annotated[
        bool, typer.Option("--no-embed-cache", help="Keep embeddings in memory only.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the table and counts as one JSON line.")
    ] = False,
) -> None:
    """Score predictions against references with the DataClaw0-val metric (paper A.4.4): Table 1's
    Field / Semantic / Sequence per domain, Fuzzy and Overall, plus per-sample breakdowns in JSON."""
    from dataclaw.core.progress import progress_bar
    from dataclaw.tailor.scoring.bench import run_bench

    scored = run_bench(
        pred, ref, out=out, config=config, intent_files=intent_file or (), embed_cache=embed_cache,
        cache_embeddings=not no_embed_cache, progress=progress_bar,
    )  # fmt: skip
    report, target = scored.report, scored.path
    if as_json:
        typer.echo(json.dumps({"table": report["table"], "counts": report["counts"], "out": str(target)}))
        return
    rows = report["table"]
    heads = list(next(iter(rows.values())).keys()) if rows else []
    table = Table(title="DataClaw0-val (paper Table 1 layout)", caption=f"{pred} against {ref}")
    table.add_column("Metric")
    for head in heads:
        table.add_column(head, justify="right")
    for name, row in rows.items():
        table.add_row(name, *(_pct(row[h]) for h in heads))
    console = Console()
    console.print(table)
    c = report["counts"]
    console.print(
        f"{c['scored']} scored ({c['gate_passed']} pass the schema gate, {c['unanswered']} unanswered) of "
        f"{c['references']} references; {c['predictions']} predictions. Total = S_total (gated)."
    )
    for reason, count, example in scored.reject_examples():
        console.print(f"  rejected {count} {reason}: e.g. {example}")
    console.print(f"per-sample scores → {target}")


def cost(
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="Cost config (YAML, any subset of the paper's keys)."),
    ] = None,
    from_run: Annotated[
        Path | None, typer.Option("--from-run", help="Take tokens per call and the yield from this run.")
    ] = None,
    plot_path: Annotated[Path, typer.Option("--plot", help="Where to write the Fig. 14 plot.")] = Path(
        "tailor_cost.png"
    ),
    no_plot: Annotated[bool, typer.Option("--no-plot", help="Do not draw the plot.")] = False,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Also write the report as JSON here.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as one JSON line.")] = False,
) -> None:
    """The amortised cost model of Appendix F (Eq. 18): one-off and marginal cost per backbone, the
    break-even volume against each API, the sensitivity grid (Table 8) and the Fig. 14 plot."""
    from dataclaw.tailor.scoring import cost as C

    made = C.run_cost(config, run_dir=from_run, plot_path=None if no_plot else plot_path, out=out)
    cfg, report = made.config, made.report
    measured = report["measured"]
    if as_json:
        typer.echo(json.dumps(report))
        return
    console = Console()
    if measured:
        console.print(
            f"from run {from_run}: {measured['calls']} calls, {measured['samples']} samples → "
            f"{measured['input_per_call']:.0f} in / {measured['output_per_call']:.0f} out tokens a call, "
            f"{measured['calls_per_retained']:.2f} calls per retained example"
        )
    inputs = Table(title=f"Cost inputs (Table 7; {cfg.source})")
    inputs.add_column("Quantity")
    inputs.add_column("Value", justify="right")
    for api, price in cfg.apis.items():
        inputs.add_row(
            f"{api} input / output per 1M tokens",
            f"${price.input_per_mtok:.2f} / ${price.output_per_mtok:.2f}",
        )
    inputs.add_row(
        "Input / output tokens per call",
        f"{cfg.tokens.input_per_call:,.0f} / {cfg.tokens.output_per_call:,.0f}",
    )
    inputs.add_row("Retained examples", f"{cfg.corpus.retained_examples:,.0f}")
    inputs.add_row("Teacher calls per retained example", f"{cfg.corpus.calls_per_retained:.2f}")
    inputs.add_row("Accelerator rate", f"${cfg.gpu_rate_per_hour:.2f} / GPU-h")
    for name, bb in cfg.backbones.items():
        inputs.add_row(
            f"{name}: SFT + GRPO, throughput",
            f"{bb.sft_gpu_hours:g} + {bb.grpo_gpu_hours:g} GPU-h, {bb.throughput_per_gpu_hour:g} / GPU-h",
        )
    console.print(inputs)
    res = Table(title="Eq. 18: one-off cost, marginal cost, break-even n*")
    res.add_column("Backbone")
    res.add_column("Teacher", justify="right")
    res.add_column("Training", justify="right")
    res.add_column("One-off", justify="right")
    res.add_column("Marginal", justify="right")
    for api in cfg.apis:
        res.add_column(f"n* vs {api} (${report['api_price'][api]:.4f})", justify="right")
    for name, c in report["backbones"].items():
        res.add_row(
            name,
            f"${c['teacher_cost']:,.0f}",
            f"${c['training_cost']:,.0f}",
            f"${c['fixed_cost']:,.0f}",
            f"${c['marginal_cost']:.3f}",
            *(C.fmt_samples(c["break_even"][api]) for api in cfg.apis),
        )
    console.print(res)
    if report["sensitivity"]:
        sens = Table(title=f"Sensitivity (Table 8): break-even against {cfg.compare}")
        for col in ("Assumption", "$/GPU-h", "API tier", *(f"n* ({b})" for b in cfg.backbones)):
            sens.add_column(col, justify="left" if col == "Assumption" else "right")
        for row in report["sensitivity"]:
            sens.add_row(
                row["name"],
                f"${row['gpu_rate_per_hour']:.2f}",
                row["api_tier"],
                *(C.fmt_samples(row["break_even"][b]) for b in cfg.backbones),
            )
        console.print(sens)
    if not no_plot:
        console.print(f"plot → {report['plot']}")


def register(app: typer.Typer) -> None:
    """Add ``bench`` and ``cost`` to the tailor command group."""
    app.command("bench")(bench)
    app.command("cost")(cost)
