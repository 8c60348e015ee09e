"""``dataclaw tailor``: Tailor (DataClaw0) commands. ``ingest`` reads raw inputs into streams, anchors and
candidates; ``inspect`` summarises a run directory; ``run`` goes from inputs to exported samples;
``export`` writes a run's samples for training; ``intents`` lists the intent catalogue."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from inspect import signature
from itertools import islice
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from dataclaw.cli._executor import ExecutorOptions, executor_scope
from dataclaw.cli._options import fields_of, with_options
from dataclaw.cli._produced import NothingProduced
from dataclaw.core.errors import ConfigError
from dataclaw.tailor.anchors.ocr import OcrText
from dataclaw.tailor.anchors.shots import ShotBoundaries
from dataclaw.tailor.mining.base import MINERS, Miner
from dataclaw.tailor.mining.lecture import LectureSegments
from dataclaw.tailor.mining.robot import FaultWindows, Keyframes
from dataclaw.tailor.mining.video import DynamicSegments
from dataclaw.tailor.pipeline import IngestConfig, TailorRunConfig

app = typer.Typer(no_args_is_help=True, help="Tailor: raw streams → anchors → candidates → samples.")


Plugins = Annotated[
    list[str] | None,
    typer.Option(
        "--plugin",
        help="Import this module first (repeatable): it registers validators, readers, anchors, miners, "
        "materialisers or exporters with the usual decorators. Installed packages can instead declare "
        "entry points (dataclaw.validators, dataclaw.readers, dataclaw.anchors …).",
    ),
]


def _plugins(modules: list[str] | None) -> None:
    from dataclaw.core.registry import load_plugins

    load_plugins(modules or [])


def _names(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def _fractions(value: str) -> list[float]:
    try:
        return [float(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise ConfigError(f"--fault-fractions must be comma-separated numbers, got '{value}'") from None


def _require_inputs(inputs: list[Path]) -> None:
    """Paths the user typed must exist (a folder that exists but is not a dataset is a per-input reject)."""
    missing = [str(p) for p in inputs if not p.exists()]
    if missing:
        raise ConfigError(f"input not found: {', '.join(missing)}")


def _setting(
    component: type, name: str, help: str, *, text: Callable[[Any], Any] | None = None,
    parse: Callable[[Any], Any] | None = None,
) -> Any:  # fmt: skip
    """An option for setting ``name`` of an anchor extractor or miner. Its default is the component's own
    (its constructor's), so the option shows what the component does unasked; ``text``/``parse`` turn
    that default into the option's value and the option's value back into the setting."""
    default = signature(component).parameters[name].default
    return field(
        default=text(default) if text else default,
        metadata={"help": help, "component": component, "setting": name, "parse": parse},
    )


@dataclass(frozen=True)
class IngestOptions:
    """The extractor and miner options `tailor ingest` and `tailor run` share. Each is part of its anchors'
    and candidates' producer and id: a rerun with other settings makes new ones."""

    extractors: str | None = field(
        default=None, metadata={"help": "Comma-separated anchor extractors (default all)."}
    )
    miners: str | None = field(
        default=None, metadata={"help": "Comma-separated candidate miners (default all)."}
    )
    ocr_backend: str = _setting(OcrText, "backend", "OCR backend: tesseract or rapidocr.")
    ocr_max_images: int = _setting(OcrText, "max_images", "At most this many screens OCR'd per stream.")
    shot_detector: str = _setting(
        ShotBoundaries, "detector", "Shot detector (PySceneDetect): content (cuts), adaptive (cuts, robust "
        "to camera motion) or threshold (fades to black).",
    )  # fmt: skip
    shot_threshold: float = _setting(ShotBoundaries, "threshold", "content: ContentDetector threshold.")
    min_scene_len: int = _setting(
        ShotBoundaries, "min_scene_len", "Minimum shot length in frames (every detector)."
    )
    adaptive_threshold: float = _setting(
        ShotBoundaries, "adaptive_threshold", "adaptive: ratio to the neighbours' mean score."
    )
    min_content_val: float = _setting(
        ShotBoundaries, "min_content_val", "adaptive: minimum content score of a cut."
    )
    window_width: int = _setting(ShotBoundaries, "window_width", "adaptive: frames on either side averaged.")
    fade_threshold: float = _setting(
        ShotBoundaries, "fade_threshold", "threshold: mean brightness (0-255) of a fade."
    )
    fault_fractions: str = _setting(
        FaultWindows, "fractions", "Fault windows without grasp anchors: fractions of an episode.",
        text=lambda fractions: ",".join(str(f) for f in fractions), parse=_fractions,
    )  # fmt: skip
    observation_s: float = _setting(FaultWindows, "observation_s", "Fault-window observation range, seconds.")
    future_s: float = _setting(FaultWindows, "future_s", "Fault-window future range, seconds.")
    keyframes: int = _setting(Keyframes, "k", "Keyframes per robot episode.")
    min_energy: float = _setting(
        DynamicSegments, "min_energy", "Dynamic segments: minimum mean motion energy."
    )
    min_slide_s: float = _setting(LectureSegments, "min_s", "Lecture segments: minimum slide dwell, seconds.")
    setting: list[str] | None = field(
        default=None,
        metadata={
            "flags": ("--set",),
            "help": "COMPONENT.SETTING=VALUE for any extractor or miner setting (repeatable; VALUE is YAML), "
            "e.g. --set gui_task.keep_single=true --set proprio.min_delta=0.2.",
        },
    )

    def config(self, workers: int) -> IngestConfig:
        """The IngestConfig these options say (``--set`` wins over the named options)."""
        extractor_config: dict[str, dict[str, Any]] = {}
        miner_config: dict[str, dict[str, Any]] = {}
        for f in fields(self):
            component = f.metadata.get("component")
            if component is not None:
                target = miner_config if issubclass(component, Miner) else extractor_config
                value, parse = getattr(self, f.name), f.metadata["parse"]
                target.setdefault(component.name, {})[f.metadata["setting"]] = (
                    parse(value) if parse else value
                )
        for name, values in _settings(self.setting).items():
            target = miner_config if name in MINERS.names() else extractor_config
            target.setdefault(name, {}).update(values)
        return IngestConfig(
            extractors=_names(self.extractors), miners=_names(self.miners), extractor_config=extractor_config,
            miner_config=miner_config, workers=workers,
        )  # fmt: skip


def _settings(pairs: list[str] | None) -> dict[str, dict[str, Any]]:
    """``["shots.fade_bias=0.5"]`` → ``{"shots": {"fade_bias": 0.5}}`` (values parsed as YAML)."""
    import yaml

    out: dict[str, dict[str, Any]] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        name, dot, setting = key.strip().partition(".")
        if not sep or not dot or not name or not setting:
            raise ConfigError(f"--set takes COMPONENT.SETTING=VALUE, got '{pair}'")
        try:
            out.setdefault(name, {})[setting] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise ConfigError(f"--set {key}: '{value}' is not a value") from None
    return out


@app.command("ingest")
@with_options(config=fields_of(IngestConfig, "workers"), ingest=IngestOptions, executor=ExecutorOptions)
def ingest(
    inputs: Annotated[list[Path], typer.Argument(help="Dataset folders, recordings, videos, slide decks.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run directory (created; reruns resume).")],
    config: dict[str, Any],
    ingest: IngestOptions,
    executor: ExecutorOptions,
    plugin: Plugins = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON line.")] = False,
) -> None:
    """Read INPUTs into RUN: streams.jsonl → anchors.jsonl → candidates.jsonl (+ rejects.jsonl)."""
    _require_inputs(inputs)
    _plugins(plugin)
    from dataclaw.core.progress import progress_bar
    from dataclaw.tailor.pipeline import ingest as run_ingest

    ingest_config = ingest.config(config["workers"])
    with executor_scope(executor):
        summary = run_ingest(inputs, out, ingest_config, progress=progress_bar)
    if as_json:
        typer.echo(json.dumps(summary.to_dict()))
    else:
        _print_summary(summary.to_dict(), "tailor ingest")
    if not summary.streams:
        raise NothingProduced(f"no stream was read from the inputs: {_reasons(summary.rejects, out)}")


def _reasons(rejects: dict[str, int], run: Path | str, *stages: str) -> str:
    """``ingest:corrupt_video 1, …`` (of ``stages`` only, when given) and where the rejects are."""
    shown = {k: v for k, v in rejects.items() if not stages or k.split(":", 1)[0] in stages}
    listed = ", ".join(f"{k} {v}" for k, v in sorted(shown.items(), key=lambda kv: -kv[1])[:6])
    return f"{listed or 'no reject recorded'} (see {Path(run) / 'rejects.jsonl'})"


def nothing_made(summary: dict[str, Any]) -> str | None:
    """Why a ``tailor run`` made no sample, from its summary (None when it made some): the first step
    that came out empty, with the rejects that emptied it."""
    counts, rejects, run = summary["counts"], summary["rejects"], summary["run"]
    exported = summary.get("export")
    if counts.get("samples") and (exported is None or exported.get("samples")):
        return None
    if not counts.get("streams"):
        return f"no stream was read from the inputs: {_reasons(rejects, run, 'ingest')}"
    if not counts.get("candidates"):
        return f"{counts['streams']} streams read, but no candidate was mined: {_reasons(rejects, run)}"
    if not summary.get("requests"):
        return f"none of the intents applies to the {summary['candidates']} candidates of this run"
    if not counts.get("responses"):
        return f"no model answer among {summary['requests']} requests: {_reasons(rejects, run, 'responses')}"
    if not counts.get("samples"):
        later = ("responses", "validated", "materialize", "samples", "artifacts")
        return f"every answer was rejected: {_reasons(rejects, run, *later)}"
    return f"every sample was left out of the export: {exported.get('note') or exported.get('reasons')}"


def _print_summary(summary: dict[str, Any], title: str) -> None:
    """One table: streams, then anchors / candidates / rejects with their per-kind counts. ``title``:
    the command that made the run (``tailor ingest`` or ``tailor run``), never assumed."""
    table = Table(title=f"{title} {summary['run']}")
    table.add_column("records")
    table.add_column("total", justify="right")
    table.add_column("by kind", overflow="fold")
    table.add_row("streams", str(summary["streams"]), "")
    for section in ("anchors", "candidates", "rejects"):
        counts: dict[str, int] = summary[section]
        detail = ", ".join(f"{name} {count}" for name, count in counts.items())
        table.add_row(section, str(sum(counts.values())), detail)
    Console().print(table)


@app.command("inspect")
def inspect(
    run: Annotated[Path, typer.Argument(help="Run directory written by `dataclaw tailor ingest`.")],
    streams: Annotated[int, typer.Option(help="Show at most this many streams.")] = 50,
    candidates: Annotated[
        int, typer.Option(help="Show this many candidates with why they were chosen.")
    ] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object instead of tables.")] = False,
) -> None:
    """Counts, a per-stream summary, sample candidates (with why) and the rejects of a Tailor run."""
    from dataclaw.core import lock
    from dataclaw.core.store import RunStore
    from dataclaw.tailor.pipeline import CANDIDATES, stream_rows, summarize

    if not (run / "streams.jsonl").is_file() and not (run / "rejects.jsonl").is_file():
        raise ConfigError(f"{run} is not a Tailor run directory (no streams.jsonl or rejects.jsonl)")
    store = RunStore(run)
    summary = summarize(store).to_dict()
    rejects = store.rejects()
    rows = [row.to_dict() for row in stream_rows(store, rejects)]
    torn = [t.to_dict() for t in store.torn()]  # each also warned about, with file and line
    held = lock.status(run)  # a dead holder's pid left in RUN/.lock is reported as stale, not as a holder
    if as_json:
        extra = {"per_stream": rows, "reject_records": rejects, "torn_lines": torn, "lock": held}
        typer.echo(json.dumps({**summary, **extra}))
        return
    _print_summary(summary, str(store.manifest().get("command") or "tailor run directory"))
    console = Console()
    for t in torn:
        typer.echo(f"torn line skipped: {t['path']} line {t['line']} ({t['bytes']} bytes)")
    if held["state"] == "stale":
        typer.echo(str(held["message"]))
    table = Table(title=f"streams ({len(rows)})")
    for col in ("stream", "modality", "seconds", "anchors", "candidates", "reject"):
        table.add_column(col, overflow="fold")
    for row in rows[:streams]:
        table.add_row(
            row["stream"], row["modality"], f"{row['duration_s']:g}",
            ", ".join(f"{k} {v}" for k, v in sorted(row["anchors"].items())),
            ", ".join(f"{k} {v}" for k, v in sorted(row["candidates"].items())) or "-",
            row["reject"] or "",
        )  # fmt: skip
    console.print(table)
    shown = list(islice(store.records(CANDIDATES), candidates))
    if shown:
        ctable = Table(title=f"candidates (first {len(shown)})")
        for col in ("candidate", "kind", "seconds", "why"):
            ctable.add_column(col, overflow="fold")
        for c in shown:
            span = f"{c['t_start']:.2f}-{c['t_end']:.2f}" if c.get("t_start") is not None else ""
            ctable.add_row(c["id"], c["kind"], span, c["why"])
        console.print(ctable)
    if rejects:
        _print_rejects(console, rejects)


def _print_rejects(console: Console, rejects: list[dict[str, Any]]) -> None:
    """Rejects grouped by stage and reason, with one example message each."""
    from dataclaw.tailor.pipeline import group_rejects

    table = Table(title=f"rejects ({len(rejects)})")
    for col in ("stage", "reason", "count", "example"):
        table.add_column(col, overflow="fold")
    for g in group_rejects(rejects):
        table.add_row(g.stage, g.reason, str(g.count), g.example)
    console.print(table)


@app.command("export")
def export(
    run: Annotated[Path, typer.Argument(help="Run directory with samples.jsonl and artifacts.jsonl.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="llamafactory | hf | jsonl")] = "llamafactory",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Output dir [RUN/export/FORMAT].")] = None,
    name: Annotated[str | None, typer.Option(help="llamafactory: dataset name (file + info key).")] = None,
    verify: Annotated[bool, typer.Option(help="Check every media file against its sha256.")] = True,
    reviewed_only: Annotated[
        bool,
        typer.Option(
            "--reviewed-only",
            help="Only samples a reviewer accepted in `dataclaw view` (rejected ones are always left out).",
        ),
    ] = False,
    plugin: Plugins = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON line.")] = False,
) -> None:
    """Export RUN's samples for training: LLaMA-Factory ShareGPT, Hugging Face parquet, or JSONL."""
    _plugins(plugin)
    from dataclaw.tailor.export import export as run_export

    config: dict[str, Any] = {"verify_hashes": verify, **({"dataset_name": name} if name else {})}
    summary = run_export(run, fmt, out, reviewed_only=reviewed_only, **config).to_dict()
    if as_json:
        typer.echo(json.dumps(summary))
    else:
        typer.echo(
            f"{summary['samples']} samples, {summary['media_files']} media files → {summary['out_dir']}"
        )
        _say_evidence(summary)
        if summary.get("note"):
            typer.echo(summary["note"])
        for reason, count in sorted(summary["reasons"].items()):
            typer.echo(f"  left out: {count} {reason} (see rejects.jsonl)")
    if not summary["samples"]:
        note = str(summary.get("note") or "the run has none").removeprefix("0 samples: ")
        raise NothingProduced(f"exported no sample: {note}")


def _say_evidence(export: dict[str, Any]) -> None:
    """A line when some exported samples were made from text alone by a model that could not see."""
    blind = (export.get("evidence") or {}).get("text_only", 0)
    if blind:
        typer.echo(
            f"{blind} of {export['samples']} samples are marked evidence: text_only (made without seeing "
            "their frames or images)"
        )


_RUN_OPTIONS = fields_of(
    TailorRunConfig, "seed", "concurrency", "workers", "codec", "crf", "max_media_gb", "max_candidates",
    "max_per_kind", "export", "generations", "retries", "sample_temperature", "text_only_evidence",
)  # fmt: skip


@app.command("run")
@with_options(
    wanted=fields_of(TailorRunConfig, "intents", "request"), config=_RUN_OPTIONS, ingest=IngestOptions,
    executor=ExecutorOptions,
)  # fmt: skip
def run(
    inputs: Annotated[list[Path], typer.Argument(help="Dataset folders, recordings, videos, slide decks.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run directory (created; reruns resume).")],
    *,
    wanted: dict[str, Any],
    model: Annotated[str | None, typer.Option(help="Model string (omni, or the expert default).")] = (
        "local:smollm2-135m"
    ),
    expert: Annotated[
        list[str] | None, typer.Option(help="DOMAIN=MODEL: expert routing, one per domain (repeatable).")
    ] = None,
    route: Annotated[Path | None, typer.Option(help="Routing config file (YAML): omni or expert.")] = None,
    config: dict[str, Any],
    ingest: IngestOptions,
    images: Annotated[bool, typer.Option(help="Send sampled frames to vision models.")] = True,
    send_images: Annotated[
        str,
        typer.Option(
            "--send-images",
            help="always: send frames (a model that refuses them is an error); auto: send them, and if the "
            "model refuses images drop them once and go on with anchors as text (recorded as a downgrade); "
            "never: text only (same as --no-images).",
        ),
    ] = "always",
    executor: ExecutorOptions,
    plugin: Plugins = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON line.")] = False,
) -> None:
    """INPUTs → samples: ingest, synthesise per intent, validate, materialise, export (resumable)."""
    _require_inputs(inputs)
    _plugins(plugin)
    if send_images not in ("always", "auto", "never"):
        raise ConfigError(f"--send-images must be always, auto or never, got '{send_images}'")
    from dataclaw.core.progress import progress_bar
    from dataclaw.tailor.intents.registry import IntentCatalog

    catalog = IntentCatalog.builtin()
    for name in wanted["intents"]:  # a typo fails now, not after the whole ingest
        catalog.resolve(name)
    from dataclaw.tailor.pipeline import tailor_run
    from dataclaw.tailor.synthesis.route import RouteConfig

    routing = RouteConfig.from_file(route) if route else RouteConfig.from_cli(model, expert)
    run_config = TailorRunConfig(
        **wanted, **{**config, "export": None if config["export"] in (None, "none") else config["export"]},
        route=routing, ingest=ingest.config(config["workers"]),
        send_images=images and send_images != "never", drop_images=send_images == "auto",
    )  # fmt: skip
    with executor_scope(executor):
        summary = tailor_run(inputs, out, run_config, progress=progress_bar)
    if as_json:
        typer.echo(json.dumps(summary, default=str))
    else:
        _print_run(summary)
    why = nothing_made(summary)
    if why is not None:
        raise NothingProduced(f"the run made no sample: {why}")


def run_rows(summary: dict[str, Any]) -> list[tuple[str, str, dict[str, int]]]:
    """The stage table's rows (stage, records, rejects by reason): one per stage file, then stages that
    rejected but keep no file (``ingest``). ``rejects.jsonl`` is not a stage: its records are the rejects
    column, their total the table's caption."""
    from dataclaw.core.store import REJECTS
    from dataclaw.tailor.pipeline import rejects_by_stage

    by_stage = rejects_by_stage(summary["rejects"])
    rows = [(n, str(c), by_stage.pop(n, {})) for n, c in summary["counts"].items() if n != REJECTS]
    return rows + [(stage, "-", reasons) for stage, reasons in by_stage.items()]


def _print_run(summary: dict[str, Any]) -> None:
    """The run's summary as tables and lines."""
    from dataclaw.models.ledger import render_summary

    title = f"tailor run {summary['run']} ({summary['router']}: {', '.join(summary['models'])})"
    table = Table(title=title, caption=f"{sum(summary['rejects'].values())} rejects (rejects.jsonl)")
    table.add_column("stage")
    table.add_column("records", justify="right")
    table.add_column("rejects", overflow="fold")
    for name, count, reasons in run_rows(summary):
        table.add_row(name, count, ", ".join(f"{k} {v}" for k, v in reasons.items()))
    Console().print(table)
    for choice in summary["intent_choices"]:
        typer.echo(f"{choice['candidate_kind']}: {', '.join(choice['chosen']) or '-'} ({choice['reason']})")
    typer.echo(render_summary({"by_model": summary["usage_by_model"], "total": summary["usage"]}))
    for name, sent in summary["model_requests"].items():  # what reached the server, failures included
        errors = ", ".join(f"{k} {v}" for k, v in sent["errors"].items())
        counts = f"{sent['started']} sent, {sent['answered']} answered, {sent['failed']} failed"
        typer.echo(f"requests to {name}: {counts}" + (f" ({errors})" if errors else ""))
    for name, m in summary.get("media", {}).items():
        typer.echo(
            f"clips ({name}): {m['videos']} videos, {m['seconds']:.1f} s, {m['bytes'] / 1e6:.1f} MB, "
            f"{m['bytes_per_second'] / 1e3:.0f} kB per second"
        )
    if summary["export"]:
        typer.echo(f"exported {summary['export']['samples']} samples → {summary['export']['out_dir']}")
        _say_evidence(summary["export"])
        if summary["export"].get("note"):
            typer.echo(summary["export"]["note"])


@app.command("intents")
def intents(
    intent_file: Annotated[
        list[Path] | None, typer.Option("--intent", "-i", help="Also load these intent files.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object per intent.")] = False,
) -> None:
    """The intent catalogue: built-in intents (and intent files) with their domain and candidates."""
    from dataclaw.tailor.intents.registry import IntentCatalog

    catalog = IntentCatalog.builtin()
    for path in intent_file or []:
        catalog.add_file(path)
    if as_json:
        for i in catalog:
            typer.echo(json.dumps(i.model_dump(mode="json", by_alias=True)))
        return
    table = Table(title=f"intents ({len(catalog)})")
    for col in ("id", "domain", "candidates", "description"):
        table.add_column(col, overflow="fold")
    for i in catalog:
        table.add_row(i.id, str(i.domain), ", ".join(i.applies_to.candidate_kinds), i.description)
    Console().print(table)


from dataclaw.cli.tailor_score import register as _register_scoring  # noqa: E402  (bench, cost)

_register_scoring(app)
