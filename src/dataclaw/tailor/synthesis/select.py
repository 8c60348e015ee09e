"""Selection, not luck (issue 27): N generations per request, one re-ask with the failed checks, and the
best passing answer chosen by a documented score.

``tailor run -n N`` asks the model N times for each (candidate, intent). Generation 0 is the intent's own
request (its temperature, greedy by default: the same request, and so the same cached answer, as a run
without ``-n``); generation ``j >= 1`` samples at ``sample_temperature`` with ``seed = run seed + j``, a
distinct request each, so the response cache never hands one answer back N times. Every answer is checked
with the intent's validators (:func:`~dataclaw.tailor.validation.stage.check_answer`, exactly what the
validate stage rejects on). When none passes, the model is asked once more (``retries``, default 1): the
original request, its least bad answer as the assistant's turn, and a user turn listing the failed checks'
messages, most severe first.

The answer kept is the best by :func:`rank` — passing answers first, then:

1. **fewer warnings** — soft findings that do not fail a check: a text at 95 % or more of its schema
   ``maxLength`` (likely cut off), two text fields sharing half of the shorter one's word 4-grams (a
   near-copy), a text whose word 4-gram repetition ratio is above 0.25 (half data-juicer's limit);
2. **higher grounding coverage** — the share of the answer's content words that occur in the evidence
   text (task, anchors, transcript, slide text);
3. **length sanity** — the total words of its texts closest to the median of the answers being ranked
   (neither cut short nor rambling);
4. the earlier generation (the greedy one first).

When nothing passes, the least bad answer is kept (the mildest worst failure, then the fewest failures per
tier, :func:`~dataclaw.tailor.validation.severity.severity_key`) so the validate stage rejects it for its
real reason. Every generation is recorded in the response (``generations``) with its checks and score.
"""

from __future__ import annotations

import asyncio
import math
import re
import statistics
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from dataclaw.models import ModelOutputError, ModelRequestError
from dataclaw.models.errors import ReplayMissError
from dataclaw.models.schema import loads_answer
from dataclaw.tailor.validation.base import Failure
from dataclaw.tailor.validation.quality import word_rep_ratio
from dataclaw.tailor.validation.severity import by_severity, severity_key
from dataclaw.tailor.validation.structural import content_words

CUT_OFF_SHARE = 0.95
"""A text at this share of its schema ``maxLength`` or more is probably cut off."""
COPY_SHARE = 0.5
"""Two text fields sharing this share of the shorter one's word 4-grams are a near-copy (a warning)."""
REPETITION_WARN = 0.25
"""Word 4-gram repetition ratio above which a text is a warning (data-juicer's limit is 0.5)."""
MAX_RETRY_LINES = 8
"""Failed checks listed in a re-ask, at most."""


@dataclass
class Judged:
    """One generation of a request: its answer, its failed checks and its score."""

    index: int
    output: Any
    failures: list[Failure]
    raw_text: str | None = None
    retry: bool = False
    warnings: list[str] = field(default_factory=list)
    coverage: float = 0.0
    words: int = 0

    @property
    def passed(self) -> bool:
        return not self.failures


def texts(output: Any, where: str = "") -> list[tuple[str, str]]:
    """``(path, text)`` of every string in an output (keys in order)."""
    if isinstance(output, str):
        return [(where, output)]
    if isinstance(output, dict):
        return [t for k, v in output.items() for t in texts(v, f"{where}.{k}" if where else str(k))]
    if isinstance(output, list):
        return [t for i, v in enumerate(output) for t in texts(v, f"{where}[{i}]")]
    return []


_WORD = re.compile(r"[a-z0-9]+")


def _grams(text: str, n: int = 4) -> set[tuple[str, ...]]:
    toks = _WORD.findall(text.lower())
    return {tuple(toks[i : i + n]) for i in range(len(toks) - n + 1)}


def _max_length(schema: Any, path: str) -> int | None:
    """The ``maxLength`` the schema gives the string at ``path`` (``a.b``, ``a[0].b``)."""
    node = schema
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if not isinstance(node, dict):
            return None
        node = node.get("items") if part.startswith("[") else (node.get("properties") or {}).get(part)
    return node.get("maxLength") if isinstance(node, dict) else None


def warnings(output: Any, schema: dict[str, Any] | None) -> list[str]:
    """Soft findings on an answer that passed its checks (see the module doc)."""
    found: list[str] = []
    fields = [(w, t) for w, t in texts(output) if len(t.split()) >= 3]
    for where, text in texts(output):
        limit = _max_length(schema or {}, where)
        if limit and len(text) >= CUT_OFF_SHARE * limit:
            found.append(f"{where}: {len(text)} characters of at most {limit} (cut off?)")
    grams = [(w, _grams(t)) for w, t in fields]
    for i, (wa, ga) in enumerate(grams):
        for wb, gb in grams[i + 1 :]:
            small = min(len(ga), len(gb))
            if small and len(ga & gb) / small >= COPY_SHARE:
                found.append(f"{wa} and {wb} share {len(ga & gb)} of {small} word 4-grams")
    for where, text in fields:
        ratio, gram = word_rep_ratio(text, 4)
        if ratio > REPETITION_WARN:
            found.append(f"{where}: word 4-gram repetition {ratio:.2f} ('{gram}')")
    return found


def coverage(output: Any, ctx: dict[str, Any]) -> float:
    """Share of the answer's content words that occur in the evidence text (0 when it has none)."""
    words: set[str] = set()
    for _, text in texts(output):
        words |= content_words(text)
    if not words:
        return 0.0
    return len(words & content_words(ctx.get("evidence_text") or "")) / len(words)


def judge(
    index: int, output: Any, failures: list[Failure], ctx: dict[str, Any], schema: dict[str, Any] | None,
    raw_text: str | None = None, retry: bool = False,
) -> Judged:  # fmt: skip
    """One generation with its score parts."""
    fails = by_severity(failures)
    return Judged(
        index=index, output=output, failures=fails, raw_text=raw_text, retry=retry,
        warnings=warnings(output, schema) if output is not None else [],
        coverage=round(coverage(output, ctx), 4) if output is not None else 0.0,
        words=sum(len(t.split()) for _, t in texts(output)),
    )  # fmt: skip


def rank(gens: list[Judged]) -> list[Judged]:
    """``gens`` best first: passing before failing; passing by warnings, coverage, length sanity, index;
    failing by :func:`severity_key`, then the same."""
    median = statistics.median([g.words for g in gens]) if gens else 0

    def key(g: Judged) -> tuple[Any, ...]:
        sanity = abs(math.log((g.words + 1) / (median + 1)))
        tail = (len(g.warnings), -g.coverage, round(sanity, 6), g.index)
        return (0, *tail) if g.passed else (1, severity_key(g.failures), *tail)

    return sorted(gens, key=key)


def retry_message(failures: list[Failure]) -> str:
    """The user turn of a re-ask: the failed checks, most severe first."""
    lines = [f"- {f.validator + ': ' if f.validator else ''}{f.message}" for f in by_severity(failures)]
    more = len(lines) - MAX_RETRY_LINES
    lines = lines[:MAX_RETRY_LINES] + ([f"- … and {more} more"] if more > 0 else [])
    return (
        "Your answer failed these checks:\n" + "\n".join(lines) + "\nWrite the whole JSON answer again, "
        "fixed, in the same format. Name only frames and facts the request shows."
    )


def summary(g: Judged, chosen: bool) -> dict[str, Any]:
    """What a response records of one generation."""
    return {
        "index": g.index, "retry": g.retry, "chosen": chosen, "passed": g.passed,
        "failures": [f.to_dict() for f in g.failures], "warnings": g.warnings, "coverage": g.coverage,
        "words": g.words,
    }  # fmt: skip


# ------------------------------------------------------------------------------------------------
# asking: N generations, one re-ask, the choice


@dataclass
class Attempt:
    """One model answer: its text and JSON (None when it is not JSON), the error that made it no valid
    completion, and what it cost."""

    text: str | None
    output: Any
    error: str | None
    usage: dict[str, Any]
    cost_usd: float
    cached: bool
    latency_s: float
    images_sent: int
    params: dict[str, Any]


def loose_json(text: str | None) -> Any:
    """The answer decoded as a JSON object when it is one at all (schema checks happen in validation),
    read as the models layer reads answers: fences dropped, raw newlines inside strings allowed."""
    if not text:
        return None
    try:
        value = loads_answer(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


async def ask(
    model: Any, messages: list[dict[str, Any]], schema: dict[str, Any], images: list[bytes],
    params: dict[str, Any],
) -> Attempt:  # fmt: skip
    """One request; an answer that is no valid completion (bad JSON, the wrong shape) is an attempt with
    its error, not an exception. :class:`ModelRequestError` and transient errors propagate."""
    try:
        done = await model.complete(messages, schema=schema, images=images or None, **params)
    except ModelOutputError as exc:  # a failed call still took time and tokens: the error says how many
        sent = getattr(exc, "images_sent", None)
        return Attempt(
            exc.raw_text, loose_json(exc.raw_text), str(exc), exc.usage(), exc.cost_usd, False,
            round(exc.latency_s or 0.0, 4), len(images) if sent is None else sent, params,
        )  # fmt: skip
    return Attempt(
        done.text, done.parsed, None, done.usage.model_dump(), done.cost_usd, done.cached,
        round(done.latency_s, 4), getattr(done, "images_sent", len(images)), params,
    )  # fmt: skip


@dataclass(frozen=True)
class Selection:
    """How many generations to ask for and how to re-ask: ``n`` generations, ``retries`` re-asks when none
    passes, generations after the first sampled at ``temperature`` with ``seed + j``."""

    n: int = 1
    retries: int = 1
    temperature: float = 0.7

    def params(self, base: dict[str, Any], j: int, seed: int) -> dict[str, Any]:
        """The sampling parameters of generation ``j``: the intent's own for 0, sampled for the others."""
        if j == 0:
            return dict(base)
        return {
            **base,
            "temperature": max(self.temperature, base.get("temperature") or 0.0),
            "seed": seed + j,
        }

    def producer(self) -> dict[str, Any]:
        """What of this changes the answers kept (part of a response's id)."""
        return {"n": self.n, "retries": self.retries, "temperature": self.temperature}


@dataclass
class Outcome:
    """The generations of one request, best first, and what they cost together."""

    ranked: list[Judged]
    attempts: dict[int, Attempt]

    @property
    def chosen(self) -> Judged:
        return self.ranked[0]

    @property
    def attempt(self) -> Attempt:
        return self.attempts[self.chosen.index]

    def usage(self) -> dict[str, Any]:
        """Token counts summed over every generation."""
        total: dict[str, Any] = {}
        for a in self.attempts.values():
            for k, v in a.usage.items():
                if isinstance(v, int | float) and not isinstance(v, bool):
                    total[k] = total.get(k, 0) + v
        return total

    def _generation(self, g: Judged) -> dict[str, Any]:
        a = self.attempts[g.index]
        return {
            **summary(g, g.index == self.chosen.index), "seed": a.params.get("seed"),
            "temperature": a.params.get("temperature"), "raw_text": a.text, "error": a.error,
        }  # fmt: skip

    def record(self) -> dict[str, Any]:
        """The response fields this adds: the chosen answer, summed usage and cost, every generation."""
        a = self.attempt
        gens = sorted(self.ranked, key=lambda g: g.index)
        return {
            "raw_text": a.text, "output": a.output, "error": a.error, "usage": self.usage(),
            "cost_usd": sum(x.cost_usd for x in self.attempts.values()),
            "cached": all(x.cached for x in self.attempts.values()),
            "latency_s": round(sum(x.latency_s for x in self.attempts.values()), 4),
            "generations": [self._generation(g) for g in gens],
            "selection": {
                "chosen": self.chosen.index, "passed": sum(g.passed for g in gens), "asked": len(gens),
                "retried": any(g.retry for g in gens),
            },
        }  # fmt: skip


Check = Callable[[Any], Awaitable[list[Failure]]]


async def generate(
    model: Any, messages: list[dict[str, Any]], schema: dict[str, Any], images: list[bytes],
    params: dict[str, Any], check: Check, ctx: dict[str, Any], selection: Selection, seed: int,
) -> Outcome:  # fmt: skip
    """``selection.n`` generations (concurrently), each checked by ``check``; when none passes, up to
    ``selection.retries`` re-asks with the failed checks of the least bad answer; ranked by :func:`rank`.
    A :class:`ModelRequestError` of generation 0 propagates (the request itself is refused); of a later
    generation or a re-ask it leaves that one out, as does a replay file (``replay:``, tests) that
    recorded no answer for it. Other errors (timeouts, rate limits) propagate: the item is retried on
    the next run, its answers so far served by the response cache."""
    attempts: dict[int, Attempt] = {}

    async def one(j: int) -> None:
        try:
            attempts[j] = await ask(model, messages, schema, images, selection.params(params, j, seed))
        except (ModelRequestError, ReplayMissError):
            if j == 0:
                raise

    await asyncio.gather(*(one(j) for j in range(selection.n)))
    judged = [
        judge(j, a.output, await check(a.output), ctx, schema, a.text) for j, a in sorted(attempts.items())
    ]
    for _ in range(selection.retries):
        ranked = rank(judged)
        if ranked[0].passed:
            break
        best = ranked[0]
        follow = [
            *messages,
            {"role": "assistant", "content": best.raw_text or ""},
            {"role": "user", "content": retry_message(best.failures)},
        ]
        j = max(attempts) + 1
        try:
            attempts[j] = await ask(model, follow, schema, images, dict(params))
        except (ModelRequestError, ReplayMissError):  # e.g. the longer conversation no longer fits the
            break  # context, or a recording (replay:) that holds no re-ask
        a = attempts[j]
        judged.append(judge(j, a.output, await check(a.output), ctx, schema, a.text, retry=True))
    return Outcome(rank(judged), attempts)
