"""The Tailor run composition (paper A.3 steps 1–5): ``dataclaw tailor ingest`` and ``dataclaw tailor run``.

Ingestion: raw inputs → ``streams.jsonl`` → ``anchors.jsonl`` → ``candidates.jsonl``, each step resumable
per record through :class:`~dataclaw.core.store.RunStore`:

1. read every input path with the registered stream readers (a path is marked done once all its units
   are written; a unit that cannot be used is a reject of stage ``ingest``);
2. :class:`~dataclaw.tailor.anchors.stage.AnchorStage` runs the anchor extractors that apply to each stream;
3. :class:`~dataclaw.tailor.mining.stage.MineStage` runs the candidate miners over each stream and its
   anchors.

Bad input never stops the run: it becomes a reject with a reason code, and a rerun resumes. The
anchors' producer is the effective extractor config (names and every setting, defaults included), the
candidates' the anchors' plus the miner config: change a setting and the affected stage runs again, its
earlier records superseded (they stay in the file; readers no longer see them).

The whole run: ingest → intent selection (explicit ids/files, or a fuzzy request resolved per candidate
kind) → synthesis (``responses.jsonl``: ``-n`` generations, one re-ask, the best kept) → validation
(``validated.jsonl``) → dedup across the run (exact, near, semantic) → materialisation
(``artifacts.jsonl`` + ``samples.jsonl``) → export. Every step resumes per record, model answers come from
the response cache when seen before, and model usage (requests per model, tokens, $) is saved into
``manifest.json`` as the run goes.

The run holds its directory's lock throughout; its model strings are checked (and their endpoints
probed) before ingest starts. What produced each stage's records (routing, intent definitions, seed,
candidates) is its *producer*: change any of it and new answers are made, the old ones superseded. A
fatal model error, or a synthesis whose first requests all fail, stops the run with one line; a run in
which no request succeeded fails (:class:`RunFailed`).
"""

from __future__ import annotations

import asyncio
import inspect
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError, DataclawError, Reject
from dataclaw.core.ids import root_id, stable_hash
from dataclaw.core.lock import run_lock
from dataclaw.core.progress import progress_for
from dataclaw.core.store import RunStore
from dataclaw.models import UsageLedger
from dataclaw.pipeline import run_stage
from dataclaw.pipeline.registry import make_executor
from dataclaw.pipeline.runner import StageAborted, StageStats
from dataclaw.pipeline.stage import Record
from dataclaw.pipeline.usage import LiveUsage
from dataclaw.tailor import records
from dataclaw.tailor.anchors.base import EXTRACTORS
from dataclaw.tailor.anchors.stage import ANCHORS, AnchorStage
from dataclaw.tailor.intents.base import Intent
from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.mining.base import MINERS
from dataclaw.tailor.mining.stage import CANDIDATES, MineStage
from dataclaw.tailor.streams.base import detect_reader, read_streams
from dataclaw.tailor.synthesis.fragments import load_distractors, run_distractors
from dataclaw.tailor.synthesis.perception import refuse_blind, vision_of
from dataclaw.tailor.synthesis.route import RouteConfig, RouteMode, Router
from dataclaw.tailor.synthesis.select import Selection
from dataclaw.tailor.synthesis.stage import RESPONSES, SynthesizeStage, synth_item
from dataclaw.tailor.validation.dedup import DEDUP, dedup_samples
from dataclaw.tailor.validation.stage import VALIDATED, ValidateStage

STREAMS = "streams"
INPUTS = "inputs"


@dataclass
class IngestConfig:
    """What ``dataclaw tailor ingest`` runs. Extractor/miner config maps a name to its keyword arguments."""

    extractors: list[str] | None = field(default=None, metadata={"help": "anchor extractors (None = all)"})
    miners: list[str] | None = field(default=None, metadata={"help": "candidate miners (None = all)"})
    extractor_config: dict[str, dict[str, Any]] = field(default_factory=dict)
    miner_config: dict[str, dict[str, Any]] = field(default_factory=dict)
    workers: int = field(default=2, metadata={"help": "Processes for anchors and mining."})

    def __post_init__(self) -> None:
        for name in [*(self.extractors or []), *self.extractor_config]:
            EXTRACTORS.get(name)  # an unknown name is a ConfigError listing the known ones
        for name in [*(self.miners or []), *self.miner_config]:
            MINERS.get(name)
        if self.workers < 1:
            raise ConfigError(f"workers must be >= 1, got {self.workers}")


# ------------------------------------------------------------------------------------------------
# ingest


@dataclass
class IngestSummary:
    """What an ingest run produced (cumulative over resumed runs)."""

    run: str
    streams: int
    anchors: dict[str, int]
    candidates: dict[str, int]
    rejects: dict[str, int]
    stages: dict[str, dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_inputs(
    paths: Iterable[str | Path], store: RunStore, progress: Callable[[int, int], None] | None = None
) -> int:
    """Read every input path not yet done into ``streams.jsonl``; return the streams written now."""
    paths = [Path(p) for p in paths]
    done = store.done(INPUTS)
    out = store.stage(STREAMS)
    written = 0
    for n, path in enumerate(paths, 1):
        key = root_id("input", path.name or "input", str(path.resolve()))
        if key in done:
            continue
        for unit in read_streams([path]):  # a path no reader knows is a NOT_A_DATASET reject
            if isinstance(unit, Reject):
                store.reject(unit)
            else:
                written += out.append(unit.model_dump(mode="json"))
        done.append({"id": key, "path": str(path)})
        if progress:
            progress(n, len(paths))
    return written


def discover_inputs(root: str | Path) -> list[Path]:
    """The paths under ``root`` (itself, else its entries, recursively) that a stream reader reads.

    A folder a reader claims is not searched further (a LeRobot dataset is one input, not its files).
    """
    root = Path(root)
    try:
        detect_reader(root)
        return [root]
    except ConfigError:
        pass
    if not root.is_dir():
        return []
    found: list[Path] = []
    for child in sorted(root.iterdir()):
        if not child.name.startswith("."):
            found.extend(discover_inputs(child))
    return found


def mine_items(store: RunStore) -> list[Record]:
    """One item per stream whose anchors are done (and not rejected): the stream and its anchors."""
    anchored = store.done(ANCHORS).ids()
    rejected = {r["record_id"] for r in store.rejects(ANCHORS)}
    by_stream: dict[str, list[dict[str, Any]]] = {}
    for a in store.records(ANCHORS):
        by_stream.setdefault(a["stream_id"], []).append(a)
    return [
        {"id": s["id"], "stream": s, "anchors": by_stream.get(s["id"], [])}
        for s in store.records(STREAMS)
        if s["id"] in anchored and s["id"] not in rejected
    ]


def effective_config(
    registry: Any, names: Sequence[str] | None, config: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Each component that runs (``names``, default all registered) with every setting it gets: its
    constructor's defaults overlaid with ``config``, plus its ``version`` attribute when it has one.
    Equal behaviour gives an equal config whether a setting was spelt out or left to its default."""
    out: dict[str, dict[str, Any]] = {}
    for name in names if names is not None else registry.names():
        cls = registry.get(name)
        try:
            params = inspect.signature(cls).parameters.values()
        except (TypeError, ValueError):
            params = []
        settings = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
        settings.update(config.get(name, {}))
        if getattr(cls, "version", None) is not None:
            settings["version"] = cls.version
        out[name] = settings
    return out


def ingest_producers(config: IngestConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """(anchors producer, candidates producer) of ``config``."""
    anchors = {"extractors": effective_config(EXTRACTORS, config.extractors, config.extractor_config)}
    candidates = {"anchors": anchors, "miners": effective_config(MINERS, config.miners, config.miner_config)}
    return anchors, candidates


def stats_dict(stats: StageStats) -> dict[str, Any]:
    """What a stage run did, for the manifest's ``last_run`` (the stage name is its key there)."""
    return {k: v for k, v in asdict(stats).items() if k != "stage"}


def ingest(
    inputs: Sequence[str | Path],
    run_dir: str | Path,
    config: IngestConfig | None = None,
    progress: Callable[[str], Any] | None = None,
) -> IngestSummary:
    """Run streams → anchors → candidates into ``run_dir``; resumable. ``progress(label)`` may return a
    context manager yielding ``update(done, total)`` (e.g. :func:`dataclaw.core.progress.progress_bar`)."""
    config = config or IngestConfig()
    if not inputs:
        raise ConfigError("no inputs given: pass dataset folders, recordings, videos or slide decks")
    anchor_stage = AnchorStage(config.extractors, config.extractor_config)
    mine_stage = MineStage(config.miners, config.miner_config)
    # build every extractor and miner once here, so bad settings or a missing backend fail the run up
    # front with one clear error (the stages sent to workers stay unbuilt: they build in each worker)
    AnchorStage(config.extractors, config.extractor_config).setup()
    MineStage(config.miners, config.miner_config).setup()
    executor = make_executor(workers=config.workers, stages=(anchor_stage, mine_stage))
    anchors_by, candidates_by = ingest_producers(config)
    stages: dict[str, dict[str, Any]] = {}
    with run_lock(run_dir, "tailor ingest"), RunStore(run_dir) as store:
        store.update_manifest(command="tailor ingest", inputs=[str(p) for p in inputs], config=asdict(config))
        with progress_for(progress, "streams") as update:
            read_inputs(inputs, store, update)
        with progress_for(progress, "anchors") as update:
            stats = run_stage(
                anchor_stage, list(store.records(STREAMS)), store, executor, update, producer=anchors_by
            )
        stages[ANCHORS] = stats_dict(stats)
        store.set_producer(CANDIDATES, candidates_by)
        with progress_for(progress, "candidates") as update:
            stats = run_stage(mine_stage, mine_items(store), store, executor, update)
        stages[CANDIDATES] = stats_dict(stats)
        store.update_manifest(last_run=stages)
        return summarize(store, stages)


def summarize(store: RunStore, stages: dict[str, dict[str, Any]] | None = None) -> IngestSummary:
    """Counts of a run directory: streams, anchors and candidates by kind, rejects by stage:reason."""
    anchors = Counter(a["kind"] for a in store.records(ANCHORS))
    candidates = Counter(c["kind"] for c in store.records(CANDIDATES))
    rejects = Counter(f"{r['stage']}:{r['reason']}" for r in store.rejects())
    return IngestSummary(
        run=str(store.root),
        streams=len(store.stage(STREAMS)),
        anchors=dict(sorted(anchors.items())),
        candidates=dict(sorted(candidates.items())),
        rejects=dict(sorted(rejects.items())),
        stages=stages or store.manifest().get("last_run", {}),
    )


@dataclass
class StreamRow:
    """One stream of a run directory at a glance: anchors and candidates by kind, and its reject if any."""

    stream: str
    modality: str
    duration_s: float
    anchors: dict[str, int]
    candidates: dict[str, int]
    reject: str | None
    """``stage:reason`` of the reject recorded against the stream."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def stream_rows(store: RunStore, rejects: list[dict[str, Any]] | None = None) -> list[StreamRow]:
    """One :class:`StreamRow` per stream of the run (``rejects``: the run's, when already read)."""
    anchors: dict[str, Counter[str]] = defaultdict(Counter)
    for a in store.records(ANCHORS):
        anchors[a["stream_id"]][a["kind"]] += 1
    cands: dict[str, Counter[str]] = defaultdict(Counter)
    for c in store.records(CANDIDATES):
        cands[c["stream_id"]][c["kind"]] += 1
    rejects = store.rejects() if rejects is None else rejects
    rejected = {r["record_id"]: f"{r['stage']}:{r['reason']}" for r in rejects}
    return [
        StreamRow(
            stream=s["id"],
            modality=s["modality"],
            duration_s=round(float(s.get("duration") or 0.0), 2),
            anchors=dict(anchors[s["id"]]),
            candidates=dict(cands[s["id"]]),
            reject=rejected.get(s["id"]),
        )
        for s in store.records(STREAMS)
    ]


@dataclass(frozen=True)
class RejectGroup:
    """The rejects of one stage for one reason: how many, and one example message."""

    stage: str
    reason: str
    count: int
    example: str


def group_rejects(rejects: list[dict[str, Any]]) -> list[RejectGroup]:
    """A run's reject records grouped by (stage, reason), sorted; each with its first message."""
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rejects:
        grouped[(r["stage"], r["reason"])].append(r)
    return [
        RejectGroup(stage, reason, len(items), items[0]["message"])
        for (stage, reason), items in sorted(grouped.items())
    ]


def rejects_by_stage(rejects: dict[str, int]) -> dict[str, dict[str, int]]:
    """A summary's reject counts by ``stage:reason`` → per stage, reason → count (in the given order)."""
    out: dict[str, dict[str, int]] = {}
    for key, count in rejects.items():
        stage, _, reason = key.partition(":")
        out.setdefault(stage, {})[reason] = count
    return out


# ------------------------------------------------------------------------------------------------
# the whole run

MATERIALIZED = ("materialize", "samples", "artifacts")
CHOICES = "intent_choices"
Progress = Callable[[str], Any]
FAIL_FAST = 8
"""Synthesis stops when this many requests failed before any succeeded."""


class RunFailed(DataclawError):
    """The run made no sample at all: every model request failed."""


@dataclass
class TailorRunConfig:
    """What one ``tailor run`` does."""

    route: RouteConfig
    # the metadata is each field's `dataclaw tailor run` option (cli/_options.py): its help and flags
    intents: list[str] = field(
        default_factory=list,
        metadata={"flags": ("--intent", "-i"), "help": "Intent id or intent file (repeatable)."},
    )
    request: str | None = field(
        default=None,
        metadata={"flags": ("--request", "-r"), "help": "Free-text request resolved to intents."},
    )
    seed: int = field(default=0, metadata={"help": "Seed of GUI fragment shuffling and distractors."})
    generations: int = field(
        default=1,
        metadata={
            "flags": ("--generations", "-n"),
            "help": "Answers asked per request; the best passing one is kept (generation j > 0 samples at "
            "--sample-temperature with seed + j).",
        },
    )
    retries: int = field(
        default=1, metadata={"help": "Re-asks with the failed checks' messages when no answer passes."}
    )
    sample_temperature: float = field(
        default=0.7, metadata={"help": "Temperature of generations 2..N (the first is the intent's own)."}
    )
    concurrency: int = field(default=16, metadata={"help": "Model calls in flight."})
    workers: int = field(default=2, metadata={"help": "Processes for ingest and materialisation."})
    ingest: IngestConfig | None = None
    export: str | None = field(
        default="jsonl", metadata={"flags": ("--export",), "help": "jsonl | llamafactory | hf | none"}
    )
    send_images: bool = True
    text_only_evidence: bool = field(
        default=False,
        metadata={
            "flags": ("--text-only-evidence",),
            "help": "Let a model that cannot see (text-only, or images off) answer intents that must see "
            "frames or images, from the anchors as text; each such sample is marked evidence: text_only "
            "(without it, such a run is refused before it starts).",
        },
    )
    drop_images: bool = field(
        default=False, metadata={"help": "a model that refuses images gets the request again without them"}
    )
    max_candidates: int | None = field(default=None, metadata={"help": "Use at most this many candidates."})
    max_per_kind: int | None = field(
        default=None, metadata={"help": "At most this many candidates per kind."}
    )
    codec: str = field(
        default="h264",
        metadata={
            "help": "Clips: h264 (visually lossless yuv420p, CRF 18, plays in browsers), lossless "
            "(RGB H.264, frame-exact) or ffv1 (frame-exact, .mkv)."
        },
    )
    crf: int | None = field(
        default=None, metadata={"help": "h264 constant rate factor (default 18; lower = bigger)."}
    )
    max_media_gb: float | None = field(
        default=None,
        metadata={"help": "Refuse before writing when the clips are estimated above this size."},
    )

    def __post_init__(self) -> None:
        if bool(self.intents) == bool(self.request):
            raise ConfigError(
                "give intents (--intent ID|FILE, repeatable) or a free-text --request, not both"
            )
        if self.concurrency < 1 or self.workers < 1:
            raise ConfigError("concurrency and workers must be >= 1")
        if self.generations < 1 or self.retries < 0 or not 0 <= self.sample_temperature <= 2:
            raise ConfigError("--generations must be >= 1, --retries >= 0, --sample-temperature in 0..2")
        from dataclaw.media.writers import get_codec

        get_codec(self.codec, self.crf)  # an unknown codec or a bad CRF fails before any work
        if self.max_media_gb is not None and self.max_media_gb <= 0:
            raise ConfigError(f"--max-media-gb must be > 0, got {self.max_media_gb}")


def resolve_choices(
    store: RunStore,
    request: str,
    kinds: Sequence[tuple[str, str | None]],
    catalog: IntentCatalog,
    router: Router,
) -> dict[tuple[str, str | None], dict[str, Any]]:
    """Fuzzy request → intents per (candidate kind, modality); stored in ``intent_choices.jsonl`` so a
    resumed run keeps the same choice."""
    from dataclaw.models.embed import Embedder
    from dataclaw.tailor.intents.fuzzy import FuzzyResolver

    cfg = router.config
    spec = cfg.default or next(iter(cfg.experts.values()))
    resolver = FuzzyResolver(catalog, Embedder(), router.model(spec))
    known = {r["id"]: r for r in store.records(CHOICES)}
    out: dict[tuple[str, str | None], dict[str, Any]] = {}
    for kind, modality in kinds:
        rid = stable_hash([request, kind, modality, spec], 16)
        if rid not in known:
            choice = asyncio.run(resolver.aresolve(request, kind, modality))
            known[rid] = {"id": rid, **choice.model_dump()}
            store.stage(CHOICES).append(known[rid])
        out[(kind, modality)] = known[rid]
    return out


def plan_items(
    store: RunStore,
    catalog: IntentCatalog,
    config: TailorRunConfig,
    router: Router,
    streams: dict[str, dict[str, Any]],
    anchors: dict[str, dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(synthesis items, candidates) for every candidate and each intent chosen for it; ``streams`` and
    ``anchors`` are the run's records by id."""
    candidates = [c for c in store.records(CANDIDATES) if c["stream_id"] in streams]
    if config.max_per_kind:
        seen: Counter[str] = Counter()
        candidates = [
            c for c in candidates if (seen.update([c["kind"]]) or seen[c["kind"]]) <= config.max_per_kind
        ]
    candidates = candidates[: config.max_candidates] if config.max_candidates else candidates
    explicit: list[Intent] = [catalog.resolve(ref) for ref in config.intents]
    choices: dict[tuple[str, str | None], dict[str, Any]] = {}
    if config.request:
        kinds = sorted({(c["kind"], streams[c["stream_id"]].get("modality")) for c in candidates})
        choices = resolve_choices(store, config.request, kinds, catalog, router)
    items = []
    versions: dict[str, str] = {}  # intent id -> definition hash, once per intent (not per candidate)
    for cand in candidates:
        stream = streams[cand["stream_id"]]
        if config.request:
            choice = choices[(cand["kind"], stream.get("modality"))]
            chosen = [(catalog.get(i), {**choice, "intent": i}) for i in choice["chosen"]]
        else:
            chosen = [(i, {"intent": i.id, "method": "explicit"}) for i in explicit]
        used = [anchors[a] for a in cand.get("anchor_ids", []) if a in anchors]
        for intent, why in chosen:
            if intent.applies(cand["kind"], stream.get("modality")):
                item = synth_item(cand, stream, used, intent, why)
                version = versions.get(intent.id) or versions.setdefault(intent.id, intent_hash(intent))
                item["id"] = response_id(cand["id"], intent, config, store.producer(CANDIDATES), version)
                items.append(item)
    return items, candidates


def intent_hash(intent: Intent) -> str:
    """The hash of an intent's definition (prompt, schema, validators, frame plan …): its version."""
    return stable_hash(intent.model_dump(mode="json"), 12)


def response_id(
    candidate_id: str,
    intent: Intent,
    config: TailorRunConfig,
    candidates: str | None,
    version: str | None = None,
) -> str:
    """The id of a response: the candidate, the intent and the hash of what produces the answer (the
    model routed to, the intent's definition — ``version``, its :func:`intent_hash` —, seed, whether
    frames are sent, the candidates' producer), so a changed model or intent is a new response, not a
    reuse of the old one."""
    model = config.route.spec_for(intent.domain)
    producer = [model, version or intent_hash(intent), config.seed, config.send_images, candidates]
    producer.append(selection_of(config).producer())  # how many answers, re-asks: what is kept differs
    if config.text_only_evidence:  # text-only answers kept rather than rejected: other records
        producer.append("text_only_evidence")
    return records.response_id(candidate_id, intent.id, producer)


def selection_of(config: TailorRunConfig) -> Selection:
    """The generations, re-asks and sampling temperature of a run (:mod:`.synthesis.select`)."""
    return Selection(n=config.generations, retries=config.retries, temperature=config.sample_temperature)


def synthesis_producer(
    config: TailorRunConfig, intents: Sequence[Intent], candidates: str | None
) -> dict[str, Any]:
    """What makes this run's responses (and so its samples): routing, intents, seed, images, candidates."""
    return {
        "route": config.route.model_dump(mode="json"),
        "intents": {i.id: intent_hash(i) for i in sorted(intents, key=lambda i: i.id)},
        "request": config.request,
        "seed": config.seed,
        "send_images": config.send_images,
        "text_only_evidence": config.text_only_evidence,
        "selection": selection_of(config).producer(),
        "drop_images": config.drop_images,
        "candidates": candidates,
    }


def route_specs(route: RouteConfig) -> list[str]:
    """Every model string a routing config names."""
    return sorted({route.default, *route.experts.values()} - {None})  # type: ignore[arg-type]


def check_models(route: RouteConfig) -> dict[str, Any]:
    """Fail now, before any ingest, when a model string is wrong or its endpoint cannot answer: parse
    each string and probe its endpoint once (cached). Returns what each endpoint can do, by model string."""
    from dataclaw.models import get_model

    try:
        from dataclaw.models.probe import probe_endpoint
    except ImportError:  # an older models package: parse only
        probe_endpoint = None
    found: dict[str, Any] = {}
    for spec in route_specs(route):
        if probe_endpoint is not None:
            caps = probe_endpoint(spec)
            dump = getattr(caps, "model_dump", None)
            found[spec] = dump(mode="json") if dump else caps
        else:
            get_model(spec, cache=False)
    return found


def _failed_all(stats: StageStats) -> bool:
    """No request of this synthesis succeeded, and some failed."""
    return (
        stats.processed > 0
        and stats.outputs == 0
        and stats.errors + stats.reasons.get("model_refused", 0) > 0
    )


def tailor_run(
    inputs: Sequence[str | Path],
    run_dir: str | Path,
    config: TailorRunConfig,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run the pipeline into ``run_dir``; return a summary (counts, rejects by reason, usage per model,
    export). Raises :class:`RunFailed` when no request succeeded, :class:`StageAborted` when the model
    failed fatally (unreachable, wrong key or model) or every early request failed."""
    with run_lock(run_dir, "tailor run"):
        capabilities = check_models(config.route)
        if config.intents:  # a model that must see but cannot is refused before any work
            catalog = IntentCatalog.builtin()
            routed = [(it, config.route.spec_for(it.domain)) for it in map(catalog.resolve, config.intents)]
            refuse_blind(routed, capabilities, send_images=config.send_images,
                         text_only_evidence=config.text_only_evidence)  # fmt: skip
        if capabilities:
            with RunStore(run_dir) as store:
                store.update_manifest(models={"capabilities": capabilities})
        ingest(inputs, run_dir, config.ingest or IngestConfig(workers=config.workers), progress=progress)
        return _synthesize_and_publish(run_dir, config, progress, capabilities)


def _synthesize_and_publish(
    run_dir: str | Path,
    config: TailorRunConfig,
    progress: Progress | None,
    capabilities: dict[str, Any] | None = None,
) -> dict[str, Any]:
    from dataclaw.tailor.export import export
    from dataclaw.tailor.materialize import make_item, materialize, media_summary

    catalog = IntentCatalog.builtin()
    ledger = UsageLedger(in_flight_limit=config.concurrency)  # the summary names what bounded requests
    options = {"drop_images": True} if config.drop_images else {}
    router = Router(config.route, ledger=ledger, model_options=options)
    stages: dict[str, dict[str, Any]] = {}
    with RunStore(run_dir, command="tailor run") as store:
        live = LiveUsage(store, ledger)
        for spec in route_specs(config.route):
            live.watch(router.model(spec))
        try:
            store.update_manifest(
                command="tailor run", route=config.route.model_dump(mode="json"), intents=config.intents,
                request=config.request, seed=config.seed,
            )  # fmt: skip
            streams = {s["id"]: s for s in store.records(STREAMS)}
            anchors = {a["id"]: a for a in store.records(ANCHORS)}
            items, candidates = plan_items(store, catalog, config, router, streams, anchors)
            used = {i["intent"]: catalog.get(i["intent"]) for i in items}
            router.check(list(used.values()))
            text_only = refuse_blind(  # -r: the intents are known only now, before any model call
                [(i, config.route.spec_for(i.domain)) for i in used.values()], capabilities or {},
                send_images=config.send_images, text_only_evidence=config.text_only_evidence,
            )  # fmt: skip
            store.update_manifest(evidence={"text_only": [{"intent": i, "model": m} for i, m in text_only]})
            pool = run_distractors(candidates, anchors) + load_distractors()
            synth = SynthesizeStage(
                config.route, catalog=catalog, seed=config.seed, distractor_pool=pool, router=router,
                send_images=config.send_images, text_only_evidence=config.text_only_evidence,
                vision=vision_of(capabilities or {}), selection=selection_of(config),
            )  # fmt: skip
            executor = make_executor(workers=1, concurrency=config.concurrency)
            produced = synthesis_producer(config, list(used.values()), store.producer(CANDIDATES))

            def after_record(item: dict[str, Any], result: Any, stats: StageStats) -> None:
                fatal = live.fatal_for(result.message) if isinstance(result, Reject) else None
                if fatal is not None:  # e.g. a wrong model name: every other request fails the same way
                    raise StageAborted(f"stage {RESPONSES} stopped: {fatal}")
                live.save(force=False)

            with progress_for(progress, "responses") as update:
                stats = run_stage(
                    synth, items, store, executor, update, producer=produced, fail_fast=FAIL_FAST,
                    on_record=after_record,
                )  # fmt: skip
            stages[RESPONSES] = stats_dict(stats)
            if _failed_all(stats):
                store.update_manifest(last_run=stages)
                raise RunFailed(
                    f"no model request succeeded ({stats.errors} failed, {stats.rejects} refused): see "
                    f"{Path(run_dir) / 'rejects.jsonl'}"
                )
            wanted = {i["id"] for i in items}
            responses = [r for r in store.records(RESPONSES) if r["id"] in wanted]
            with progress_for(progress, "validated") as update:
                stages[VALIDATED] = stats_dict(
                    run_stage(
                        ValidateStage(catalog),
                        responses,
                        store,
                        executor,
                        update,
                        producer={RESPONSES: store.producer(RESPONSES)},
                    )
                )
            cands = {c["id"]: c for c in candidates}
            valid = [s for s in store.records(VALIDATED) if s["stream_id"] in streams]
            kept, dedup = dedup_samples(store, valid, producer=store.producer(VALIDATED))  # across the run
            stages[DEDUP] = dedup.to_dict()
            mats = [make_item(s, streams[s["stream_id"]], cands.get(s["candidate_id"])) for s in kept]
            for name in MATERIALIZED:  # materialize() publishes samples and artifacts of this producer
                store.set_producer(name, {VALIDATED: store.producer(VALIDATED)})
        finally:
            live.close()
    stats = materialize(
        mats, run_dir, executor=make_executor(workers=config.workers), codec=config.codec, crf=config.crf,
        max_media_gb=config.max_media_gb,
    )  # fmt: skip
    stages["materialize"] = stats_dict(stats)
    exported = export(run_dir, config.export).to_dict() if config.export else None  # empty: says so
    media = media_summary(run_dir)  # bytes and seconds of the clips by codec, bytes per second
    with RunStore(run_dir) as store:
        store.update_manifest(last_run=stages, export=exported, media=media)
        rejects = Counter(f"{r['stage']}:{r['reason']}" for r in store.rejects())
        usage = ledger.summary()
        return {
            "run": str(run_dir),
            "router": str(config.route.mode),
            "models": sorted({config.route.spec_for(catalog.get(i["intent"]).domain) for i in items})
            if config.route.mode is RouteMode.EXPERT
            else [config.route.default],
            "candidates": len(candidates),
            "requests": len(items),
            "counts": store.counts(),
            "stages": stages,
            "rejects": dict(sorted(rejects.items())),
            "grounding": dict(
                sorted(Counter(s.get("grounding") or "unrecorded" for s in store.records(VALIDATED)).items())
            ),
            "usage": usage["total"],
            "usage_by_model": usage["by_model"],
            "model_requests": live.requests()["by_model"],
            "export": exported,
            "media": media,
            "intent_choices": [r for r in store.records(CHOICES)],
        }


# ------------------------------------------------------------------------------------------------
# the quickstart: the bundled examples through ingest, and through the whole run with a model

QUICKSTART_INTENTS = ("robot_fault_recovery", "describe_current_subtask", "video_generation_segment")
"""What the quickstart's run asks of a robot episode and a video."""


def quickstart_ingest(examples: Path, out: Path) -> tuple[list[Path], IngestSummary]:
    """Ingest every input under ``examples`` a stream reader recognises into ``out`` (no model involved);
    returns the inputs and the summary."""
    inputs = discover_inputs(examples)
    if not inputs:
        raise ConfigError(f"no bundled Tailor examples (recordings, datasets, videos) found in {examples}")
    return inputs, ingest(inputs, out, IngestConfig(workers=2))


def quickstart_run(examples: Path, out: Path, model: str) -> dict[str, Any]:
    """The whole run on a bundled robot episode and video with ``model``: fault-recovery, subtask and
    video-generation samples (ingest → synthesis → validation → materialisation → JSONL export), one per
    candidate kind. A weak model's answers are mostly rejected by validation, with their reasons; returns
    :func:`tailor_run`'s summary."""
    inputs = [examples / "lerobot_g1", examples / "videos" / "dj_video1.mp4"]
    missing = [str(p) for p in inputs if not p.exists()]
    if missing:
        raise ConfigError(f"bundled Tailor examples are missing: {', '.join(missing)}")
    config = TailorRunConfig(
        route=RouteConfig.omni(model),
        intents=list(QUICKSTART_INTENTS),
        ingest=IngestConfig(workers=2, extractors=["proprio", "shots", "motion"]),
        max_per_kind=1,
        concurrency=2,
        workers=2,
        text_only_evidence=True,  # it must run offline on the embedded, text-only model: samples say so
    )
    return tailor_run(inputs, out, config)
