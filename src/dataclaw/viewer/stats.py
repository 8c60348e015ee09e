"""Statistics of a run's stage files, gathered while the line-offset index scans them.

Each stage file's :class:`StageStats` sees every current record once, when :class:`LineIndex` parses it
(the first scan, then only the appended lines), so the overview of a 100k-record run never rereads the
file: numbers kept per field (an ``array`` of floats), value counts per categorical field, model usage
per model, and the (task, reward) pairs pass^k needs. What is recorded per stage is a registry
(:data:`FIELDS`): a new record kind adds its fields in one place.

:func:`headline` turns a run's statistics into the figures the overview shows first (inputs → kept,
yield, pass rate, mean reward, pass^k, …), one block per kind of output the run holds; each figure names
the stage file it was counted from.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from dataclaw.viewer.run import Run

MAX_VALUES = 2000
"""Distinct values counted per categorical field; the rest are counted as ``(other)``."""


def _get(rec: Any, path: str) -> Any:
    for part in path.split("."):
        rec = rec.get(part) if isinstance(rec, dict) else None
    return rec


def _len(path: str) -> Callable[[dict[str, Any]], float | None]:
    def fn(rec: dict[str, Any]) -> float | None:
        value = _get(rec, path)
        return float(len(value)) if isinstance(value, list | dict | str) else None

    return fn


def _num(path: str) -> Callable[[dict[str, Any]], float | None]:
    def fn(rec: dict[str, Any]) -> float | None:
        value = _get(rec, path)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    return fn


def _cat(path: str) -> Callable[[dict[str, Any]], str | None]:
    def fn(rec: dict[str, Any]) -> str | None:
        value = _get(rec, path)
        if isinstance(value, bool):
            return str(value).lower()
        return str(value) if isinstance(value, str | int | float) else None

    return fn


def _text_chars(path: str) -> Callable[[dict[str, Any]], float | None]:
    """Characters of a value as text (a JSON object counted as its compact JSON)."""

    def fn(rec: dict[str, Any]) -> float | None:
        value = _get(rec, path)
        if value is None:
            return None
        if isinstance(value, str):
            return float(len(value))
        return float(len(orjson.dumps(value).decode()))

    return fn


def _tools_per_task(rec: dict[str, Any]) -> float | None:
    chain = rec.get("gold_chain")
    if not isinstance(chain, list):
        return None
    return float(len({s.get("tool") for s in chain if isinstance(s, dict)}))


@dataclass(frozen=True)
class Field:
    """One statistic of a stage's records: ``kind`` "num" (a histogram) or "cat" (value counts)."""

    name: str
    get: Callable[[dict[str, Any]], Any]
    kind: str = "num"


FIELDS: dict[str, tuple[Field, ...]] = {
    "streams": (
        Field("modality", _cat("modality"), "cat"),
        Field("reader", _cat("reader"), "cat"),
        Field("duration s", _num("duration")),
        Field("frames", _num("frame_count")),
    ),
    "candidates": (
        Field("intent", _cat("intent"), "cat"),
        Field("frames", _len("frames")),
    ),
    "responses": (
        Field("intent", _cat("intent"), "cat"),
        Field("model", _cat("model"), "cat"),
        Field("images requested", _num("images")),
        Field("images sent", _num("sent.images")),
        Field("evidence", _cat("evidence"), "cat"),
        Field("frames", _len("frames")),
        Field("answer chars", _text_chars("raw_text")),
        Field("latency s", _num("latency_s")),
    ),
    "samples": (
        Field("intent", _cat("intent"), "cat"),
        Field("domain", _cat("domain"), "cat"),
        Field("model", _cat("route.model"), "cat"),
        Field("answer chars", _text_chars("output")),
        Field("turns", _len("conversation")),
        Field("frames per sample", _len("provenance.frames")),
        Field("images sent", _num("provenance.sent.images")),
        Field("evidence", _cat("evidence"), "cat"),
        Field("grounding", _cat("grounding"), "cat"),
        Field("media per sample", _len("media")),
    ),
    "tasks": (
        Field("environment", _cat("env"), "cat"),
        Field("tools per task", _tools_per_task),
        Field("gold chain steps", _len("gold_chain")),
        Field("user turns", _len("user_turns")),
        Field("assertions", _len("verifier.assertions")),
        Field("instruction chars", _text_chars("instruction")),
    ),
    "chains": (
        Field("environment", _cat("env"), "cat"),
        Field("steps", _len("steps")),
    ),
    "rollouts": (
        Field("reward", _num("reward")),
        Field("stop reason", _cat("stop_reason"), "cat"),
        Field("model", _cat("model"), "cat"),
        Field("turns", _num("turns")),
        Field("tool calls", _num("metrics.tool_calls")),
        Field("invalid calls", _num("metrics.invalid_calls")),
        Field("wall s", _num("wall_s")),
    ),
    "index": (
        Field("status", _cat("status"), "cat"),
        Field("category", _cat("category"), "cat"),
        Field("tools", _num("tools")),
    ),
    "rejects": (
        Field("stage", _cat("stage"), "cat"),
        Field("reason", _cat("reason"), "cat"),
    ),
}

KEPT_STAGES = ("samples", "tasks", "rollouts", "index", "chains", "streams")
"""The stages whose records are a run's product (their field plots come first on the overview)."""

USAGE_STAGES = {"responses": "usage", "rollouts": "usage"}
"""Stages whose records carry a model call's usage (tokens; ``cost_usd`` beside it)."""


@dataclass
class NumSummary:
    """A numeric field of a stage's current records, summarised for one small plot."""

    n: int
    min: float
    median: float
    mean: float
    max: float
    bins: list[tuple[float, float, int]]
    """(low, high, count) per histogram bin."""


@dataclass
class StageStats:
    """What one stage file's current records add up to (filled by :class:`LineIndex`)."""

    stage: str
    fields: tuple[Field, ...] = ()
    nums: dict[str, array] = field(default_factory=dict)
    cats: dict[str, Counter[str]] = field(default_factory=dict)
    usage: dict[str, dict[str, float]] = field(default_factory=dict)
    trials: list[tuple[str, float | None]] = field(default_factory=list)
    components: dict[str, list[float]] = field(default_factory=dict)
    _cache: dict[tuple[str, int], NumSummary | None] = field(default_factory=dict)

    @classmethod
    def for_stage(cls, stage: str) -> StageStats:
        stats = cls(stage, FIELDS.get(stage, ()))
        stats.reset()
        return stats

    def reset(self) -> None:
        self.nums = {f.name: array("d") for f in self.fields if f.kind == "num"}
        self.cats = {f.name: Counter() for f in self.fields if f.kind == "cat"}
        self.usage, self.trials, self.components = {}, [], {}
        self._cache = {}

    def add(self, rec: dict[str, Any]) -> None:
        """Count one current record (called once per record, in file order)."""
        for f in self.fields:
            try:
                value = f.get(rec)
            except (TypeError, ValueError, AttributeError):
                value = None
            if value is None:
                continue
            if f.kind == "num":
                self.nums[f.name].append(value)
            else:
                counts = self.cats[f.name]
                counts[value if value in counts or len(counts) < MAX_VALUES else "(other)"] += 1
        key = USAGE_STAGES.get(self.stage)
        if key is not None:
            self._add_usage(rec, rec.get(key))
        if self.stage == "rollouts" and isinstance(rec.get("task_id"), str):
            reward = rec.get("reward")
            self.trials.append((rec["task_id"], float(reward) if isinstance(reward, int | float) else None))
            comps = rec.get("reward_components")
            for name, comp in comps.items() if isinstance(comps, dict) else ():
                score = comp.get("score") if isinstance(comp, dict) else None
                if isinstance(score, int | float):
                    self.components.setdefault(str(name), []).append(float(score))

    def _add_usage(self, rec: dict[str, Any], usage: Any) -> None:
        model = rec.get("model") if isinstance(rec.get("model"), str) else "(unnamed model)"
        u = self.usage.setdefault(
            model,
            {"calls": 0, "failed": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0},
        )
        u["calls"] += 1
        if rec.get("error"):
            u["failed"] += 1
        usage = usage if isinstance(usage, dict) else {}
        for k in ("prompt_tokens", "completion_tokens"):
            if isinstance(usage.get(k), int | float):
                u[k] += usage[k]
        cost = rec.get("cost_usd")
        if isinstance(cost, int | float):
            u["cost_usd"] += cost

    def summary(self, name: str) -> NumSummary | None:
        """Min, median, mean, max and a 10-bin histogram of numeric field ``name`` (cached per count)."""
        values = self.nums.get(name)
        if not values:
            return None
        key = (name, len(values))
        if key not in self._cache:
            self._cache[key] = _summarise(values)
        return self._cache[key]


def _summarise(values: array, bins: int = 10) -> NumSummary:
    import numpy as np

    # a copy, made in one call: a view would pin the array's buffer, and a scan appending to it on
    # another thread (a live run being indexed) would fail with BufferError
    arr = np.array(values, dtype=np.float64)
    lo, hi = float(arr.min()), float(arr.max())
    if hi == lo:
        edges = [lo, hi]
        counts = [len(arr)]
    else:
        ints = bool(np.all(arr == np.round(arr))) and hi - lo < bins
        nb = int(hi - lo) + 1 if ints else bins
        hist, e = np.histogram(arr, bins=nb, range=(lo - 0.5, hi + 0.5) if ints else (lo, hi))
        counts, edges = [int(c) for c in hist], [float(x) for x in e]
    return NumSummary(
        n=len(arr),
        min=lo,
        median=float(np.median(arr)),
        mean=float(arr.mean()),
        max=hi,
        bins=[(edges[i], edges[i + 1], counts[i]) for i in range(len(counts))],
    )


# headline figures -------------------------------------------------------------------------------


@dataclass
class Figure:
    """One headline figure: ``key`` is stable (tests and the side-by-side view match on it)."""

    key: str
    label: str
    value: float | int | str | None
    source: str
    fmt: str = "int"
    """Format: int, pct (a share in [0, 1]), float, s (seconds), text."""

    def text(self) -> str:
        v = self.value
        if v is None:
            return "—"
        if self.fmt == "pct" and isinstance(v, int | float):
            return f"{100 * v:.1f}%"
        if self.fmt == "float" and isinstance(v, int | float):
            return f"{v:.3f}"
        if self.fmt == "s" and isinstance(v, int | float):
            return f"{v:,.1f} s"
        if self.fmt == "int" and isinstance(v, int | float):
            return f"{int(v):,}"
        return str(v)


@dataclass
class Block:
    """The headline of one kind of output a run holds (Tailor samples, tasks, rollouts, a library)."""

    kind: str
    title: str
    figures: list[Figure]


def _n(run: Run, stage: str) -> int:
    idx = run.indexes.get(stage)
    return len(idx) if idx is not None else 0


def _rejects(run: Run, stages: Iterable[str]) -> int:
    idx = run.indexes.get("rejects")
    want = set(stages)
    return sum(1 for f in idx.facets if f.get("stage") in want) if idx is not None else 0


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _sum(run: Run, stage: str, name: str) -> float | None:
    stats = _stats(run, stage)
    values = stats.nums.get(name) if stats is not None else None
    return float(sum(values)) if values else None


def _stats(run: Run, stage: str) -> StageStats | None:
    idx = run.indexes.get(stage)
    return idx.stats if idx is not None else None


def _tailor_ingest(run: Run) -> Block | None:
    if "streams" not in run.indexes or "responses" in run.indexes or "samples" in run.indexes:
        return None
    streams, failed = _n(run, "streams"), _rejects(run, ("ingest", "streams"))
    return Block(
        "tailor_ingest",
        "Tailor ingest",
        [
            Figure("inputs", "inputs read", streams + failed, "streams.jsonl + ingest rejects"),
            Figure("kept", "streams kept", streams, "streams.jsonl"),
            Figure("yield", "yield", _share(streams, streams + failed), "kept / inputs", "pct"),
            Figure("anchors", "anchors", _n(run, "anchors"), "anchors.jsonl"),
            Figure("candidates", "candidates", _n(run, "candidates"), "candidates.jsonl"),
        ],
    )


def _marked(run: Run, stage: str, name: str, value: str, label: str) -> Figure:
    """How many kept records carry ``name: value`` (None, shown "—", when no record says either way:
    a run older than the mark)."""
    st = _stats(run, stage)
    counts = st.cats.get(name) if st is not None else None
    n = counts.get(value, 0) if counts else None
    return Figure(value, label, n, f"{stage}.jsonl ({name})")


def _tailor_run(run: Run) -> Block | None:
    if "responses" not in run.indexes and "samples" not in run.indexes:
        return None
    answers = _n(run, "responses")
    kept_stage = "samples" if "samples" in run.indexes else "validated"
    kept = _n(run, kept_stage)
    return Block(
        "tailor_run",
        "Tailor run",
        [
            Figure("inputs", "model answers", answers, "responses.jsonl"),
            Figure("kept", "samples kept", kept, f"{kept_stage}.jsonl"),
            Figure("yield", "yield", _share(kept, answers), f"{kept_stage} / responses", "pct"),
            Figure(
                "rejected", "answers rejected", _rejects(run, ("validated",)), "rejects.jsonl (validated)"
            ),
            _marked(run, kept_stage, "evidence", "text_only", "kept on text-only evidence"),
            _marked(run, kept_stage, "grounding", "unchecked", "kept with grounding unchecked"),
            Figure("streams", "streams", _n(run, "streams"), "streams.jsonl"),
            Figure("candidates", "candidates", _n(run, "candidates"), "candidates.jsonl"),
            Figure(
                "model_s",
                "model time (sum)",
                _sum(run, "responses", "latency s"),
                "responses.jsonl (latency_s)",
                "s",
            ),
        ],
    )


def _chains(run: Run) -> Block | None:
    if "chains" not in run.indexes or "tasks" in run.indexes:
        return None
    stats = _stats(run, "chains")
    steps = stats.summary("steps") if stats else None
    return Block(
        "chains",
        "EnvCraft tool chains",
        [
            Figure("kept", "chains sampled", _n(run, "chains"), "chains.jsonl"),
            Figure("grounded", "grounded", _n(run, "grounded"), "grounded.jsonl"),
            Figure(
                "environments",
                "environments",
                len(stats.cats.get("environment", {})) if stats else 0,
                "chains.jsonl (env)",
            ),
            Figure("steps", "steps (mean)", steps.mean if steps else None, "chains.jsonl (steps)", "float"),
        ],
    )


def _tasks(run: Run) -> Block | None:
    if "tasks" not in run.indexes:
        return None
    kept, rejected = _n(run, "tasks"), _rejects(run, ("tasks",))
    stats = _stats(run, "tasks")
    envs = len(stats.cats.get("environment", {})) if stats else 0
    tools = stats.summary("tools per task") if stats else None
    return Block(
        "tasks",
        "EnvCraft tasks",
        [
            Figure("inputs", "chains tried", kept + rejected, "tasks.jsonl + rejects.jsonl (tasks)"),
            Figure("kept", "tasks kept", kept, "tasks.jsonl"),
            Figure("yield", "yield", _share(kept, kept + rejected), "kept / tried", "pct"),
            Figure("rejected", "rejected", rejected, "rejects.jsonl (tasks)"),
            Figure("grounded", "grounded chains", _n(run, "grounded"), "grounded.jsonl"),
            Figure("environments", "environments", envs, "tasks.jsonl (env)"),
            Figure(
                "tools_per_task",
                "tools per task (mean)",
                tools.mean if tools else None,
                "tasks.jsonl (gold_chain)",
                "float",
            ),
        ],
    )


def _rollouts(run: Run) -> Block | None:
    stats = _stats(run, "rollouts")
    if stats is None:
        return None
    from dataclaw.envcraft.rollout.run import is_success, pass_hat_k

    trials = stats.trials
    rewards = [r for _, r in trials if r is not None]
    passed = sum(1 for _, r in trials if is_success(r))
    figures = [
        Figure("inputs", "rollouts", len(trials), "rollouts.jsonl"),
        Figure("tasks_tried", "tasks tried", len({t for t, _ in trials}), "rollouts.jsonl (task_id)"),
        Figure("kept", "full reward", passed, "rollouts.jsonl (reward = 1)"),
        Figure("pass_rate", "pass rate", _share(passed, len(trials)), "full reward / rollouts", "pct"),
        Figure(
            "mean_reward",
            "mean reward",
            sum(rewards) / len(rewards) if rewards else None,
            "rollouts.jsonl (reward)",
            "float",
        ),
    ]
    figures.append(
        Figure(
            "episode_s", "episode time (sum)", _sum(run, "rollouts", "wall s"), "rollouts.jsonl (wall_s)", "s"
        )
    )
    calls, invalid = _sum(run, "rollouts", "tool calls"), _sum(run, "rollouts", "invalid calls")
    turns = stats.summary("turns")
    figures += [
        Figure(
            "valid_calls",
            "valid tool calls",
            (calls - (invalid or 0.0)) / calls if calls else None,
            "rollouts.jsonl (metrics: tool_calls, invalid_calls)",
            "pct",
        ),
        Figure("turns", "turns (mean)", turns.mean if turns else None, "rollouts.jsonl (turns)", "float"),
    ]
    hat = pass_hat_k([{"task_id": t, "reward": r} for t, r in trials])
    for k, value in hat.items():
        figures.append(Figure(f"pass_hat_{k}", f"pass^{k}", value, "rollouts.jsonl, per task", "float"))
    for name, scores in sorted(stats.components.items()):
        figures.append(
            Figure(
                f"component_{name}",
                f"{name} score (mean)",
                sum(scores) / len(scores),
                "rollouts.jsonl (reward_components)",
                "float",
            )
        )
    return Block("rollouts", "Rollouts", figures)


def _library(run: Run) -> Block | None:
    stats = _stats(run, "index")
    if stats is None:
        return None
    status = stats.cats.get("status", Counter())
    total = sum(status.values())
    return Block(
        "library",
        "Environment library",
        [
            Figure("inputs", "environments", total, "index.jsonl"),
            Figure("kept", "passing", status.get("passing", 0), "index.jsonl (status)"),
            Figure("pass_rate", "pass rate", _share(status.get("passing", 0), total), "passing / all", "pct"),
            Figure("floor", "floor (not passing)", status.get("floor", 0), "index.jsonl (status)"),
            Figure("failed", "failed", status.get("failed", 0), "index.jsonl (status)"),
        ],
    )


HEADLINES: list[Callable[[Run], Block | None]] = [
    _tailor_ingest,
    _tailor_run,
    _chains,
    _tasks,
    _rollouts,
    _library,
]
"""Headline blocks in the order the overview shows them; each returns None when the run has no such
output. A new run kind adds one function here."""


BLOCK_ORDER = ["tailor_ingest", "tailor_run", "chains", "tasks", "rollouts", "library"]
"""Block kinds in the order of :data:`HEADLINES` (side by side lists their rows in this order)."""


def headline(run: Run) -> list[Block]:
    """The headline blocks of ``run``, then the run-wide figures (rejects, wall time)."""
    blocks = [b for fn in HEADLINES if (b := fn(run)) is not None]
    wall = wall_time_s(run.manifest)
    rej = run.indexes.get("rejects")
    blocks.append(
        Block(
            "run",
            "Run",
            [
                Figure("rejects", "rejects (current)", len(rej) if rej is not None else 0, "rejects.jsonl"),
                Figure("wall_s", "first → last write", wall, "manifest.json created → updated", "s"),
            ],
        )
    )
    return blocks


def field_block(run: Run) -> Block:
    """The kept records' fields as figures (numbers: their mean; values: how many distinct and the most
    frequent), for putting runs side by side."""
    figures = []
    for stage in KEPT_STAGES:
        st = _stats(run, stage)
        if st is None:
            continue
        for f in st.fields:
            key = f"{stage}.{f.name.replace(' ', '_')}"
            if f.kind == "num":
                summ = st.summary(f.name)
                if summ is not None:
                    figures.append(Figure(key, f"{stage} {f.name} (mean)", summ.mean, stage, "float"))
            elif st.cats.get(f.name):
                (top, n), total = st.cats[f.name].most_common(1)[0], sum(st.cats[f.name].values())
                figures.append(
                    Figure(
                        key,
                        f"{stage} {f.name} (most frequent)",
                        f"{top} ({100 * n / total:.0f}%)",
                        stage,
                        "text",
                    )
                )
    return Block("fields", "Fields", figures)


def wall_time_s(man: dict[str, Any]) -> float | None:
    """Seconds from the manifest's first write to its last (None when either is missing)."""
    try:
        a = datetime.fromisoformat(str(man["created"]))
        b = datetime.fromisoformat(str(man["updated"]))
    except (KeyError, ValueError):
        return None
    return max(0.0, (b - a).total_seconds())


def usage_by_model(run: Run) -> tuple[dict[str, dict[str, Any]], str]:
    """Calls, tokens and cost per model: the manifest's ledger where the run kept one, else summed from
    the records that carry a call's usage (responses, rollouts). Returns the rows and their source."""
    models = run.manifest.get("models")
    by_model = _get(models, "usage.by_model") if isinstance(models, dict) else None
    if isinstance(by_model, dict) and by_model:
        return {str(k): (v if isinstance(v, dict) else {}) for k, v in by_model.items()}, "manifest.json"
    out: dict[str, dict[str, Any]] = {}
    sources = []
    for stage in USAGE_STAGES:
        stats = _stats(run, stage)
        if stats is None or not stats.usage:
            continue
        sources.append(f"{stage}.jsonl")
        for model, u in stats.usage.items():
            row = out.setdefault(model, {k: 0 for k in u})
            for k, v in u.items():
                row[k] = row.get(k, 0) + v
    return out, " + ".join(sources)


def commands(man: dict[str, Any]) -> list[str]:
    """The commands that wrote the run, oldest first: the manifest's ``commands`` history (every
    command line that wrote it), else its single ``command``."""
    hist = man.get("commands")
    out = (
        [str(c.get("command")) for c in hist if isinstance(c, dict) and c.get("command")]
        if isinstance(hist, list)
        else []
    )
    if not out and isinstance(man.get("command"), str):
        out = [man["command"]]
    return out
