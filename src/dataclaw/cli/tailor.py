"""``dataclaw tailor``: Tailor (DataClaw0) commands. ``ingest`` reads raw inputs into streams, anchors and
candidates; ``inspect`` summarises a run directory; ``run`` goes from inputs to exported samples;
``export`` writes a run's samples for training; ``intents`` lists the intent catalogue."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from itertools import islice
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from dataclaw.cli._executor import ExecutorName, RayAddress, executor_scope
from dataclaw.core.errors import ConfigError

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


# extractor and miner settings, the same on `tailor ingest` and `tailor run` (part of each anchor's and
# candidate's producer and id: a rerun with other settings makes new ones)
Extractors = Annotated[str | None, typer.Option(help="Comma-separated anchor extractors (default all).")]
Miners = Annotated[str | None, typer.Option(help="Comma-separated candidate miners (default all).")]
OcrBackend = Annotated[str, typer.Option(help="OCR backend: tesseract or rapidocr.")]
OcrMax = Annotated[int, typer.Option(help="At most this many screens OCR'd per stream.")]
ShotDetector = Annotated[
    str, typer.Option(help="Shot detector (PySceneDetect): content (cuts), adaptive (cuts, robust to camera "
                      "motion) or threshold (fades to black).")
]  # fmt: skip
ShotThreshold = Annotated[float, typer.Option(help="content: ContentDetector threshold.")]
MinSceneLen = Annotated[int, typer.Option(help="Minimum shot length in frames (every detector).")]
AdaptiveThreshold = Annotated[float, typer.Option(help="adaptive: ratio to the neighbours' mean score.")]
MinContentVal = Annotated[float, typer.Option(help="adaptive: minimum content score of a cut.")]
WindowWidth = Annotated[int, typer.Option(help="adaptive: frames on either side averaged.")]
FadeThreshold = Annotated[float, typer.Option(help="threshold: mean brightness (0-255) of a fade.")]
FaultFractions = Annotated[
    str, typer.Option(help="Fault windows without grasp anchors: fractions of an episode.")
]
ObservationS = Annotated[float, typer.Option(help="Fault-window observation range, seconds.")]
FutureS = Annotated[float, typer.Option(help="Fault-window future range, seconds.")]
Keyframes = Annotated[int, typer.Option(help="Keyframes per robot episode.")]
MinEnergy = Annotated[float, typer.Option(help="Dynamic segments: minimum mean motion energy.")]
MinSlideS = Annotated[float, typer.Option(help="Lecture segments: minimum slide dwell, seconds.")]
Settings = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="COMPONENT.SETTING=VALUE for any extractor or miner setting (repeatable; VALUE is YAML), "
        "e.g. --set gui_task.keep_single=true --set proprio.min_delta=0.2.",
    ),
]


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


def _ingest_config(
    workers: int, extractors: str | None, miners: str | None, settings: list[str] | None, **o: Any
) -> Any:
    """The IngestConfig of the shared extractor/miner options (``--set`` wins over the named ones)."""
    from dataclaw.tailor.ingest import IngestConfig
    from dataclaw.tailor.mine import MINERS

    extractor_config: dict[str, dict[str, Any]] = {
        "shots": {
            "detector": o["shot_detector"], "threshold": o["shot_threshold"],
            "min_scene_len": o["min_scene_len"],
            "adaptive_threshold": o["adaptive_threshold"], "min_content_val": o["min_content_val"],
            "window_width": o["window_width"], "fade_threshold": o["fade_threshold"],
        },
        "ocr": {"backend": o["ocr_backend"], "max_images": o["ocr_max_images"]},
    }  # fmt: skip
    miner_config: dict[str, dict[str, Any]] = {
        "fault_window": {
            "fractions": _fractions(o["fault_fractions"]), "observation_s": o["observation_s"],
            "future_s": o["future_s"],
        },
        "keyframes": {"k": o["keyframes"]},
        "dynamic_segment": {"min_energy": o["min_energy"]},
        "lecture_segment": {"min_s": o["min_slide_s"]},
    }  # fmt: skip
    for name, values in _settings(settings).items():
        target = miner_config if name in MINERS.names() else extractor_config
        target.setdefault(name, {}).update(values)
    return IngestConfig(
        extractors=_names(extractors), miners=_names(miners), extractor_config=extractor_config,
        miner_config=miner_config, workers=workers,
    )  # fmt: skip


@app.command("ingest")
def ingest(
    inputs: Annotated[list[Path], typer.Argument(help="Dataset folders, recordings, videos, slide decks.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run directory (created; reruns resume).")],
    workers: Annotated[int, typer.Option(help="Processes for anchors and mining.")] = 2,
    extractors: Extractors = None,
    miners: Miners = None,
    ocr_backend: OcrBackend = "tesseract",
    ocr_max_images: OcrMax = 16,
    shot_detector: ShotDetector = "content",
    shot_threshold: ShotThreshold = 27.0,
    min_scene_len: MinSceneLen = 15,
    adaptive_threshold: AdaptiveThreshold = 3.0,
    min_content_val: MinContentVal = 15.0,
    window_width: WindowWidth = 2,
    fade_threshold: FadeThreshold = 12.0,
    fault_fractions: FaultFractions = "0.35,0.5,0.65",
    observation_s: ObservationS = 3.0,
    future_s: FutureS = 3.0,
    keyframes: Keyframes = 20,
    min_energy: MinEnergy = 0.015,
    min_slide_s: MinSlideS = 5.0,
    setting: Settings = None,
    executor: ExecutorName = "local",
    ray_address: RayAddress = None,
    plugin: Plugins = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON line.")] = False,
) -> None:
    """Read INPUTs into RUN: streams.jsonl → anchors.jsonl → candidates.jsonl (+ rejects.jsonl)."""
    _require_inputs(inputs)
    _plugins(plugin)
    from dataclaw.core.progress import progress_bar
    from dataclaw.tailor.ingest import ingest as run_ingest

    config = _ingest_config(
        workers, extractors, miners, setting, ocr_backend=ocr_backend, ocr_max_images=ocr_max_images,
        shot_detector=shot_detector, shot_threshold=shot_threshold, min_scene_len=min_scene_len,
        adaptive_threshold=adaptive_threshold, min_content_val=min_content_val, window_width=window_width,
        fade_threshold=fade_threshold, fault_fractions=fault_fractions, observation_s=observation_s,
        future_s=future_s, keyframes=keyframes, min_energy=min_energy, min_slide_s=min_slide_s,
    )  # fmt: skip
    with executor_scope(executor, ray_address):
        summary = run_ingest(inputs, out, config, progress=progress_bar)
    if as_json:
        typer.echo(json.dumps(summary.to_dict()))
        return
    _print_summary(summary.to_dict())


def _print_summary(summary: dict[str, Any]) -> None:
    """One table: streams, then anchors / candidates / rejects with their per-kind counts."""
    table = Table(title=f"tailor run {summary['run']}")
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
    from dataclaw.core.store import RunStore
    from dataclaw.tailor.ingest import CANDIDATES, summarize

    if not (run / "streams.jsonl").is_file() and not (run / "rejects.jsonl").is_file():
        raise ConfigError(f"{run} is not a Tailor run directory (no streams.jsonl or rejects.jsonl)")
    store = RunStore(run)
    summary = summarize(store).to_dict()
    rejects = store.rejects()
    rows = _stream_rows(store, rejects)
    if as_json:
        typer.echo(json.dumps({**summary, "per_stream": rows, "reject_records": rejects}))
        return
    _print_summary(summary)
    console = Console()
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


def _stream_rows(store: Any, rejects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One summary row per stream: anchors and candidates by kind, and its reject if any."""
    from dataclaw.tailor.ingest import ANCHORS, CANDIDATES, STREAMS

    anchors: dict[str, Counter[str]] = defaultdict(Counter)
    for a in store.records(ANCHORS):
        anchors[a["stream_id"]][a["kind"]] += 1
    cands: dict[str, Counter[str]] = defaultdict(Counter)
    for c in store.records(CANDIDATES):
        cands[c["stream_id"]][c["kind"]] += 1
    rejected = {r["record_id"]: f"{r['stage']}:{r['reason']}" for r in rejects}
    return [
        {
            "stream": s["id"],
            "modality": s["modality"],
            "duration_s": round(float(s.get("duration") or 0.0), 2),
            "anchors": dict(anchors[s["id"]]),
            "candidates": dict(cands[s["id"]]),
            "reject": rejected.get(s["id"]),
        }
        for s in store.records(STREAMS)
    ]


def _print_rejects(console: Console, rejects: list[dict[str, Any]]) -> None:
    """Rejects grouped by stage and reason, with one example message each."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rejects:
        grouped[(r["stage"], r["reason"])].append(r)
    table = Table(title=f"rejects ({len(rejects)})")
    for col in ("stage", "reason", "count", "example"):
        table.add_column(col, overflow="fold")
    for (stage, reason), items in sorted(grouped.items()):
        table.add_row(stage, reason, str(len(items)), items[0]["message"])
    console.print(table)


@app.command("export")
def export(
    run: Annotated[Path, typer.Argument(help="Run directory with samples.jsonl and artifacts.jsonl.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="llamafactory | hf | jsonl")] = "llamafactory",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Output dir [RUN/export/FORMAT].")] = None,
    name: Annotated[str | None, typer.Option(help="llamafactory: dataset name (file + info key).")] = None,
    verify: Annotated[bool, typer.Option(help="Check every media file against its sha256.")] = True,
    plugin: Plugins = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON line.")] = False,
) -> None:
    """Export RUN's samples for training: LLaMA-Factory ShareGPT, Hugging Face parquet, or JSONL."""
    _plugins(plugin)
    from dataclaw.tailor.export import export as run_export

    config: dict[str, Any] = {"verify_hashes": verify, **({"dataset_name": name} if name else {})}
    summary = run_export(run, fmt, out, **config).to_dict()
    if as_json:
        typer.echo(json.dumps(summary))
        return
    typer.echo(f"{summary['samples']} samples, {summary['media_files']} media files → {summary['out_dir']}")
    if summary.get("note"):
        typer.echo(summary["note"])
    for reason, count in sorted(summary["reasons"].items()):
        typer.echo(f"  left out: {count} {reason} (see rejects.jsonl)")


@app.command("run")
def run(
    inputs: Annotated[list[Path], typer.Argument(help="Dataset folders, recordings, videos, slide decks.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Run directory (created; reruns resume).")],
    intent: Annotated[
        list[str] | None, typer.Option("--intent", "-i", help="Intent id or intent file (repeatable).")
    ] = None,
    request: Annotated[
        str | None, typer.Option("--request", "-r", help="Free-text request resolved to intents.")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model string (omni, or the expert default).")] = (
        "local:smollm2-135m"
    ),
    expert: Annotated[
        list[str] | None, typer.Option(help="DOMAIN=MODEL: expert routing, one per domain (repeatable).")
    ] = None,
    route: Annotated[Path | None, typer.Option(help="Routing config file (YAML): omni or expert.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of GUI fragment shuffling and distractors.")] = 0,
    concurrency: Annotated[int, typer.Option(help="Model calls in flight.")] = 16,
    workers: Annotated[int, typer.Option(help="Processes for ingest and materialisation.")] = 2,
    extractors: Extractors = None,
    miners: Miners = None,
    ocr_backend: OcrBackend = "tesseract",
    ocr_max_images: OcrMax = 16,
    shot_detector: ShotDetector = "content",
    shot_threshold: ShotThreshold = 27.0,
    min_scene_len: MinSceneLen = 15,
    adaptive_threshold: AdaptiveThreshold = 3.0,
    min_content_val: MinContentVal = 15.0,
    window_width: WindowWidth = 2,
    fade_threshold: FadeThreshold = 12.0,
    fault_fractions: FaultFractions = "0.35,0.5,0.65",
    observation_s: ObservationS = 3.0,
    future_s: FutureS = 3.0,
    keyframes: Keyframes = 20,
    min_energy: MinEnergy = 0.015,
    min_slide_s: MinSlideS = 5.0,
    setting: Settings = None,
    codec: Annotated[
        str,
        typer.Option(
            help="Clips: h264 (visually lossless yuv420p, CRF 18, plays in browsers), lossless "
            "(RGB H.264, frame-exact) or ffv1 (frame-exact, .mkv)."
        ),
    ] = "h264",
    crf: Annotated[
        int | None, typer.Option(help="h264 constant rate factor (default 18; lower = bigger).")
    ] = None,
    max_media_gb: Annotated[
        float | None, typer.Option(help="Refuse before writing when the clips are estimated above this size.")
    ] = None,
    max_candidates: Annotated[int | None, typer.Option(help="Use at most this many candidates.")] = None,
    max_per_kind: Annotated[int | None, typer.Option(help="At most this many candidates per kind.")] = None,
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
    export_format: Annotated[
        str | None, typer.Option("--export", help="jsonl | llamafactory | hf | none")
    ] = "jsonl",
    executor: ExecutorName = "local",
    ray_address: RayAddress = None,
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
    for name in intent or []:  # a typo fails now, not after the whole ingest
        catalog.resolve(name)
    from dataclaw.models.ledger import render_summary
    from dataclaw.tailor.route import RouteConfig
    from dataclaw.tailor.run import TailorRunConfig, tailor_run

    routing = RouteConfig.from_file(route) if route else RouteConfig.from_cli(model, expert)
    ingest_config = _ingest_config(
        workers, extractors, miners, setting, ocr_backend=ocr_backend, ocr_max_images=ocr_max_images,
        shot_detector=shot_detector, shot_threshold=shot_threshold, min_scene_len=min_scene_len,
        adaptive_threshold=adaptive_threshold, min_content_val=min_content_val, window_width=window_width,
        fade_threshold=fade_threshold, fault_fractions=fault_fractions, observation_s=observation_s,
        future_s=future_s, keyframes=keyframes, min_energy=min_energy, min_slide_s=min_slide_s,
    )  # fmt: skip
    config = TailorRunConfig(
        route=routing, intents=list(intent or []), request=request, seed=seed, concurrency=concurrency,
        workers=workers, ingest=ingest_config, codec=codec, crf=crf, max_media_gb=max_media_gb,
        export=None if export_format in (None, "none") else export_format,
        send_images=images and send_images != "never", drop_images=send_images == "auto",
        max_candidates=max_candidates, max_per_kind=max_per_kind,
    )  # fmt: skip
    with executor_scope(executor, ray_address):
        summary = tailor_run(inputs, out, config, progress=progress_bar)
    if as_json:
        typer.echo(json.dumps(summary, default=str))
        return
    table = Table(title=f"tailor run {summary['run']} ({summary['router']}: {', '.join(summary['models'])})")
    table.add_column("stage")
    table.add_column("records", justify="right")
    table.add_column("rejects", overflow="fold")
    for name, count in summary["counts"].items():
        reasons = {k.split(":", 1)[1]: v for k, v in summary["rejects"].items() if k.startswith(f"{name}:")}
        table.add_row(name, str(count), ", ".join(f"{k} {v}" for k, v in reasons.items()))
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
