"""The per-run usage ledger: calls, cache hits, failures, tokens and cost, per model and in total.

One ledger is shared by every model of one invocation (``get_model(spec, ledger=ledger)``); print it
with :meth:`UsageLedger.render` and save it with :meth:`UsageLedger.save` into the run manifest, where
``models.usage`` is the run's total over every invocation (a resumed run adds to it; saving the same
ledger again replaces its own share) and ``models.invocations`` holds each invocation's summary.
"""

from __future__ import annotations

import contextlib
import json
import threading
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from dataclaw.core.errors import ConfigError
from dataclaw.core.store import RunStore
from dataclaw.models.types import Usage


class ModelUsage(BaseModel):
    """Totals for one model. Tokens and cost count only calls that reached the model (not cache hits)."""

    calls: int = 0
    """Every call that ended: answered, cached, failed validation or failed with an error."""
    cache_hits: int = 0
    failed: int = 0
    """Calls whose answer failed validation (the tokens were still spent)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    priced: bool = True
    """False when the model has no price (local or unknown): its cost is counted as 0."""
    prompt_tokens_estimated: int = 0
    """Prompt tokens of failed calls the server never counted (it never answered: a timeout, a reset, a
    5xx), estimated from the requests' text; kept apart from ``prompt_tokens``, which the server counted."""
    latency_s: float = 0.0
    """Summed wall time of calls that reached the model (including ones that ended in an error)."""
    errors: dict[str, int] = Field(default_factory=dict)
    """Calls that ended in a model error, by error class (``ModelTimeoutError``: 3, …)."""
    downgrades: dict[str, int] = Field(default_factory=dict)
    """Requests sent without a capability the model lacks, by capability (``images``: 12)."""
    downgrade_reasons: dict[str, str] = Field(default_factory=dict)
    """Why each capability was dropped: the first refusal's one line."""
    concurrency: dict[str, int] | None = None
    """The endpoint's request window: ``configured``, ``effective`` (now), ``lowest``, ``max_in_flight``."""


_SUMMED = (
    "calls", "cache_hits", "failed", "prompt_tokens", "completion_tokens", "prompt_tokens_estimated",
    "cost_usd", "latency_s",
)  # fmt: skip
_COUNTS = ("errors", "downgrades")


class UsageLedger:
    """Thread-safe totals of model calls for one run."""

    def __init__(self, in_flight_limit: int | None = None) -> None:
        """``in_flight_limit``: the run's own bound on requests in flight (``--concurrency``), which can
        be below an endpoint's window: recorded with each window so the summary names what bound it."""
        self._by_model: dict[str, ModelUsage] = {}
        self._lock = threading.Lock()
        self.invocation = uuid.uuid4().hex[:12]
        self.in_flight_limit = in_flight_limit

    def __getstate__(self) -> dict[str, object]:
        return {"by_model": self.models(), "invocation": self.invocation, "limit": self.in_flight_limit}

    def __setstate__(self, state: dict[str, object]) -> None:
        self._by_model = dict(state["by_model"])  # type: ignore[call-overload]
        self._lock = threading.Lock()
        self.invocation = str(state["invocation"])
        self.in_flight_limit = state.get("limit")  # type: ignore[assignment]

    def record(
        self,
        model: str,
        usage: Usage,
        *,
        cost_usd: float,
        priced: bool,
        cached: bool,
        latency_s: float,
        failed: bool = False,
    ) -> None:
        """Add one call."""
        with self._lock:
            m = self._by_model.setdefault(model, ModelUsage(priced=priced))
            m.calls += 1
            m.priced = m.priced and priced
            if cached:
                m.cache_hits += 1
                return
            m.failed += int(failed)
            m.prompt_tokens += usage.prompt_tokens
            m.completion_tokens += usage.completion_tokens
            m.cost_usd += cost_usd
            m.latency_s += latency_s

    def record_error(self, model: str, error: BaseException, *, latency_s: float) -> None:
        """Add one call that ended in ``error`` (a timeout, a refusal, an unreachable server), with its
        wall time and the tokens it sent (the error's ``prompt_tokens``: estimated ones apart)."""
        with self._lock:
            m = self._by_model.setdefault(model, ModelUsage())
            m.calls += 1
            m.latency_s += latency_s
            tokens = int(getattr(error, "prompt_tokens", 0) or 0)
            if getattr(error, "tokens_estimated", False):
                m.prompt_tokens_estimated += tokens
            else:
                m.prompt_tokens += tokens
                m.completion_tokens += int(getattr(error, "completion_tokens", 0) or 0)
            name = type(error).__name__
            m.errors[name] = m.errors.get(name, 0) + 1

    def record_downgrade(self, model: str, capability: str, reason: str) -> None:
        """One request sent without ``capability`` (e.g. images dropped for a text-only model)."""
        with self._lock:
            m = self._by_model.setdefault(model, ModelUsage())
            m.downgrades[capability] = m.downgrades.get(capability, 0) + 1
            m.downgrade_reasons.setdefault(capability, reason[:300])

    def record_concurrency(self, model: str, state: dict[str, int]) -> None:
        """The model's current request window (see :meth:`AdaptiveLimiter.state`)."""
        limit = {"run_limit": self.in_flight_limit} if self.in_flight_limit else {}
        with self._lock:
            self._by_model.setdefault(model, ModelUsage()).concurrency = {**state, **limit}

    def models(self) -> dict[str, ModelUsage]:
        with self._lock:
            return {k: v.model_copy() for k, v in self._by_model.items()}

    def totals(self) -> ModelUsage:
        return _sum(self.models().values())

    def summary(self) -> dict[str, Any]:
        """JSON-ready ``{"by_model": {...}, "total": {...}}`` for the run manifest."""
        return _summary(self.models())

    def save(self, store: RunStore) -> dict[str, Any]:
        """Record this invocation's summary in ``manifest.json`` and the run's total over every
        invocation under ``models.usage``; return the manifest."""
        models = store.manifest().get("models") or {}
        invocations = {**(models.get("invocations") or {}), self.invocation: self.summary()}
        return store.update_manifest(
            models={"usage": merge_summaries(invocations.values()), "invocations": invocations}
        )

    def render(self) -> str:
        """A plain-text table, one line per model and a total."""
        return render_summary(self.summary())


@contextlib.contextmanager
def saved_usage(store: RunStore) -> Iterator[UsageLedger]:
    """A ledger for one invocation's model calls, saved into the run manifest (``models.usage``, a total
    over invocations) when the block ends, even when it fails part-way; nothing is saved without a call."""
    ledger = UsageLedger()
    try:
        yield ledger
    finally:
        if ledger.models():
            ledger.save(store)


def run_usage(run: Path) -> dict[str, Any]:
    """The model usage summary (``{"by_model", "total"}``) a run's ``manifest.json`` records; a
    ConfigError when the run has no manifest, an unreadable one, or no usage in it."""
    manifest = run / "manifest.json"
    if not manifest.is_file():
        raise ConfigError(f"run {run} has no manifest.json")
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ConfigError(f"{manifest} is not valid JSON ({exc})") from None
    summary = (data.get("models") or {}).get("usage")
    if not summary:
        raise ConfigError(f"run {run} has no model usage recorded in its manifest")
    return dict(summary)


def merge_summaries(summaries: Any) -> dict[str, Any]:
    """The sum of ledger summaries (``{"by_model", "total"}``), e.g. over a run's invocations."""
    by_model: dict[str, list[ModelUsage]] = {}
    for summary in summaries:
        for name, raw in (summary.get("by_model") or {}).items():
            by_model.setdefault(name, []).append(ModelUsage(**raw))
    return _summary({name: _sum(parts) for name, parts in by_model.items()})


def _sum(usages: Iterable[ModelUsage]) -> ModelUsage:
    """Field-wise total; priced only when every part is; the window of the last part that has one, with
    the lowest window and the most in flight over all parts."""
    total = ModelUsage()
    for m in usages:
        for key in _SUMMED:
            setattr(total, key, getattr(total, key) + getattr(m, key))
        for key in _COUNTS:
            counts = getattr(total, key)
            for name, n in getattr(m, key).items():
                counts[name] = counts.get(name, 0) + n
        for cap, reason in m.downgrade_reasons.items():
            total.downgrade_reasons.setdefault(cap, reason)
        total.priced = total.priced and m.priced
        if m.concurrency:
            before = total.concurrency or {}
            total.concurrency = {
                **m.concurrency,
                "lowest": min(before.get("lowest", 1 << 30), m.concurrency.get("lowest", 1 << 30)),
                "max_in_flight": max(before.get("max_in_flight", 0), m.concurrency.get("max_in_flight", 0)),
            }
    return total


def _summary(by_model: dict[str, ModelUsage]) -> dict[str, Any]:
    total = _sum(by_model.values())
    total.concurrency = None  # a window belongs to one endpoint; summing them means nothing
    return {"by_model": {k: v.model_dump() for k, v in by_model.items()}, "total": total.model_dump()}


def render_summary(summary: dict[str, Any]) -> str:
    """Text table of a ledger summary (also used for summaries read back from a manifest): one line per
    model and a total, then the notes (errors by class, downgrades, effective concurrency)."""
    cols = ("calls", "cached", "failed", "errors", "in_tok", "out_tok", "cost_usd")
    widths = (6, 6, 6, 6, 9, 9, 10)
    header = f"{'model':<40} " + " ".join(f"{c:>{w}}" for c, w in zip(cols, widths, strict=True))
    lines = [header, "-" * len(header)]
    rows = [*summary.get("by_model", {}).items(), ("TOTAL", summary.get("total", {}))]
    unpriced = False
    notes: list[str] = []
    for name, m in rows:
        cost = f"{m.get('cost_usd', 0.0):.6f}"
        if not m.get("priced", True):
            cost, unpriced = cost + "*", True
        errors = m.get("errors") or {}
        lines.append(
            f"{name[:40]:<40} {m.get('calls', 0):>6} {m.get('cache_hits', 0):>6} {m.get('failed', 0):>6} "
            f"{sum(errors.values()):>6} {m.get('prompt_tokens', 0):>9} {m.get('completion_tokens', 0):>9} "
            f"{cost:>10}"
        )
        if name == "TOTAL":
            continue
        if errors:
            notes.append(f"{name}: errors " + ", ".join(f"{k} {v}" for k, v in sorted(errors.items())))
        if m.get("prompt_tokens_estimated"):
            notes.append(
                f"{name}: ~{m['prompt_tokens_estimated']} prompt tokens sent by calls the server never "
                "answered (estimated from the text, not in in_tok)"
            )
        for cap, n in sorted((m.get("downgrades") or {}).items()):
            why = (m.get("downgrade_reasons") or {}).get(cap, "")
            notes.append(f"{name}: {n} request(s) sent without {cap}" + (f" ({why})" if why else ""))
        conc = m.get("concurrency")
        if conc:
            notes.append(f"{name}: {concurrency_note(conc)}")
    if unpriced:
        lines.append("* includes a local model or one without a price in the config: counted as $0")
    return "\n".join(lines + notes)


def concurrency_note(conc: dict[str, Any]) -> str:
    """What bounded one endpoint's requests in flight: the run's ``--concurrency`` when it is below the
    endpoint's window (the model string's ``concurrency=``, default 16), else the window."""
    window = f"window {conc.get('effective')} of {conc.get('configured')}, lowest {conc.get('lowest')}"
    most = f"at most {conc.get('max_in_flight')} in flight"
    limit = conc.get("run_limit")
    if limit and limit < (conc.get("effective") or 0):
        return f"{most} (the run's --concurrency {limit}; the endpoint's {window})"
    return f"{most} (the endpoint's request {window})"
