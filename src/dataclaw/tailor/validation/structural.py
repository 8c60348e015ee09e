"""Structural validators (paper A.3.4, B.2.1 "structural verification & grounding").

Checks: schema; temporal (indices inside the stream, positive durations, a freeze frame inside the
observation range, a recovery inside the future range, input before output); task structure (a valid
permutation of the given fragment labels, no distractor in the ordered solution, fragments contiguous
and non-overlapping); grounding against anchors (a claimed click on an element that never appears in
the events is flagged; text must share words with the evidence). The quality checks that stop
plausible garbage (repetition, prompt echo, question form, temporal consistency of the text, anchor
windows) live in :mod:`.quality`.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import jsonschema
from jsonschema.validators import validator_for

from dataclaw.core.errors import ConfigError
from dataclaw.core.ids import stable_hash
from dataclaw.tailor.validation.base import Failure, ValidationIssue, register_validator, values_at


def _ints(value: Any) -> list[int]:
    """Frame indices held by a value: an int, a ``{start, end}`` range or a list of either."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, dict) and "start" in value and "end" in value:
        return _ints(value["start"]) + _ints(value["end"])
    if isinstance(value, list):
        return [i for v in value for i in _ints(v)]
    return []


def _range(ctx: dict[str, Any], name: str, output: Any = None) -> tuple[int, int] | None:
    """A ``{start, end}`` range from the context (``obs``, ``fut``, ``span``) or the output (``output.x``);
    None when the output lacks it (the schema check reports that)."""
    if name.startswith("output."):
        found = values_at(output, name[len("output.") :])
        rng = found[0][1] if found else None
        if (
            not isinstance(rng, dict)
            or not isinstance(rng.get("start"), int)
            or not isinstance(rng.get("end"), int)
        ):
            return None
        return rng["start"], rng["end"]
    rng = ctx.get(name)
    if not isinstance(rng, dict) or "start" not in rng or "end" not in rng:
        raise ConfigError(f"validator needs the request context range '{name}', which this candidate lacks")
    return int(rng["start"]), int(rng["end"])


# ------------------------------------------------------------------------------------------------
# schema


_COMPILED: dict[str, Any] = {}


def _validator(schema: dict[str, Any]) -> Any:
    """A jsonschema validator for ``schema``, built once per distinct schema (intents reuse theirs)."""
    key = stable_hash(schema, 24)
    if key not in _COMPILED:
        if len(_COMPILED) > 4096:
            _COMPILED.clear()
        cls = validator_for(schema, default=jsonschema.Draft202012Validator)
        _COMPILED[key] = cls(schema)
    return _COMPILED[key]


@register_validator("schema")
def check_schema_valid(output: Any, ctx: dict[str, Any]) -> list[Failure]:
    """The output validates against the (specialised) schema the request was sent with."""
    schema = ctx.get("schema")
    if not isinstance(schema, dict):
        return [Failure(ValidationIssue.BAD_RECORD, "the response record has no schema to check against")]
    out = []
    for err in sorted(_validator(schema).iter_errors(output), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in err.absolute_path) or "<root>"
        out.append(Failure(ValidationIssue.SCHEMA_INVALID, f"{where}: {err.message[:200]}"))
    return out[:5]


# ------------------------------------------------------------------------------------------------
# temporal


@register_validator("frame_indices")
def check_frame_indices(output: Any, ctx: dict[str, Any], fields: list[str]) -> list[Failure]:
    """Every frame index in ``fields`` lies inside the stream (0 .. frame_count - 1)."""
    n = int(ctx.get("stream", {}).get("frame_count") or 0)
    out = []
    for path in fields:
        for where, value in values_at(output, path):
            for i in _ints(value):
                if not 0 <= i < n:
                    out.append(
                        Failure(
                            ValidationIssue.INDEX_OUT_OF_RANGE, f"{where}: frame {i} is outside 0..{n - 1}"
                        )
                    )
    return out


@register_validator("positive_duration")
def check_positive_duration(output: Any, ctx: dict[str, Any], fields: list[str]) -> list[Failure]:
    """Every ``{start, end}`` range in ``fields`` has end > start."""
    out = []
    for path in fields:
        for where, value in values_at(output, path):
            if (
                isinstance(value, dict)
                and isinstance(value.get("start"), int)
                and isinstance(value.get("end"), int)
            ):
                if value["end"] <= value["start"]:
                    out.append(
                        Failure(
                            ValidationIssue.NON_POSITIVE_DURATION,
                            f"{where}: range {value['start']}..{value['end']} has no positive duration",
                        )
                    )
    return out


@register_validator("inside")
def check_inside(
    output: Any, ctx: dict[str, Any], field: str, within: str, reason: str = "outside_range"
) -> list[Failure]:
    """Every frame index at ``field`` lies inside the range ``within``: a context range (``obs``,
    ``fut``, ``span``) or one of the output's own (``output.segment``)."""
    bounds = _range(ctx, within, output)
    if bounds is None:
        return []
    lo, hi = bounds
    code = ValidationIssue(reason)
    out = []
    for where, value in values_at(output, field):
        bad = [i for i in _ints(value) if not lo <= i <= hi]
        if bad:
            out.append(Failure(code, f"{where}: frame(s) {bad} outside the {within} range {lo}..{hi}"))
    return out


@register_validator("ordered")
def check_ordered(
    output: Any, ctx: dict[str, Any], fields: list[str] | None = None, before: str | None = None,
    after: str | None = None,
) -> list[Failure]:  # fmt: skip
    """Frame lists in ``fields`` ascend strictly; all frames at ``before`` precede all at ``after``."""
    out = []
    for path in fields or []:
        for where, value in values_at(output, path):
            idx = _ints(value)
            if any(b <= a for a, b in itertools.pairwise(idx)):
                out.append(
                    Failure(ValidationIssue.FRAMES_OUT_OF_ORDER, f"{where}: frames {idx} do not ascend")
                )
    if before and after:
        first = [i for _, v in values_at(output, before) for i in _ints(v)]
        then = [i for _, v in values_at(output, after) for i in _ints(v)]
        if first and then and max(first) >= min(then):
            out.append(
                Failure(
                    ValidationIssue.FRAMES_OUT_OF_ORDER,
                    f"{before} (up to frame {max(first)}) must come before {after} (from frame {min(then)})",
                )
            )
    return out


# ------------------------------------------------------------------------------------------------
# task structure (GUI)


@register_validator("permutation")
def check_permutation(
    output: Any, ctx: dict[str, Any], field: str = "ordered_labels", exact_order: bool = True
) -> list[Failure]:
    """The ordered solution uses given labels once each, holds no distractor, misses no genuine fragment
    and (``exact_order``) follows the recorded order of the original task."""
    labels = list(ctx.get("labels") or [])
    truth = list(ctx.get("answer_order") or [])
    distractors = set(ctx.get("distractor_labels") or [])
    got = [v for _, v in values_at(output, field)]
    got = got[0] if len(got) == 1 and isinstance(got[0], list) else got
    unknown = [x for x in got if x not in labels]
    if unknown:
        return [
            Failure(ValidationIssue.INVALID_LABEL, f"{field}: {unknown} are not fragment labels {labels}")
        ]
    dupes = sorted({x for x in got if got.count(x) > 1})
    if dupes:
        return [
            Failure(ValidationIssue.INVALID_PERMUTATION, f"{field}: labels {dupes} appear more than once")
        ]
    bad = [x for x in got if x in distractors]
    if bad:
        return [
            Failure(ValidationIssue.DISTRACTOR_IN_SOLUTION, f"{field}: distractor fragment(s) {bad} included")
        ]
    missing = [x for x in truth if x not in got]
    if missing:
        return [Failure(ValidationIssue.MISSING_FRAGMENT, f"{field}: genuine fragment(s) {missing} left out")]
    if exact_order and got != truth:
        return [
            Failure(ValidationIssue.WRONG_ORDER, f"{field}: order {got} differs from the recorded {truth}")
        ]
    return []


@register_validator("fragments_contiguous")
def check_fragments_contiguous(
    output: Any, ctx: dict[str, Any], field: str = "fragments", total: str = "n_events"
) -> list[Failure]:
    """Fragments ``[{start, end}]`` over event indices are contiguous, non-overlapping and cover all
    ``ctx[total]`` events (A.3.2 Stage 3, A.3.4)."""
    n = int(ctx.get(total) or 0)
    frags = [v for _, v in values_at(output, f"{field}[]") if isinstance(v, dict)]
    out: list[Failure] = []
    expect = 0
    for k, f in enumerate(frags):
        s, e = f.get("start"), f.get("end")
        if not isinstance(s, int) or not isinstance(e, int) or e < s:
            out.append(Failure(ValidationIssue.NON_POSITIVE_DURATION, f"{field}[{k}]: bad range {s}..{e}"))
            return out
        if s < expect:
            out.append(
                Failure(ValidationIssue.FRAGMENTS_OVERLAP, f"{field}[{k}] starts at {s}, inside the previous")
            )
        elif s > expect:
            out.append(
                Failure(
                    ValidationIssue.FRAGMENTS_GAP,
                    f"{field}[{k}] starts at {s}: events {expect}..{s - 1} are in none",
                )
            )
        expect = e + 1
    if not out and expect != n:
        out.append(
            Failure(ValidationIssue.FRAGMENTS_INCOMPLETE, f"{field}: cover events 0..{expect - 1} of {n}")
        )
    return out


# ------------------------------------------------------------------------------------------------
# grounding against anchors

_WORD = re.compile(r"[a-z0-9]{3,}")
_STOP = frozenset(
    "the and for with from that this then into onto over under your you are was were will has have its "
    "click button select open set turn change window page screen using use".split()
)


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(str(text).lower()) if w not in _STOP}


@register_validator("grounded_actions")
def check_grounded_actions(
    output: Any, ctx: dict[str, Any], field: str = "actions", tolerance: float = 0.08
) -> list[Failure]:
    """Each claimed action matches a recorded GUI event: the same kind at about the same coordinates,
    and its target names something that appears in the events (a claimed click on an app or element
    that never appears in the events is flagged)."""
    events = ctx.get("events") or []
    vocab = content_words(ctx.get("evidence_text", ""))
    out = []
    for where, act in values_at(output, f"{field}[]"):
        if not isinstance(act, dict):
            continue
        kind = act.get("type")
        same = [e for e in events if e.get("kind") == kind]
        if not same:
            out.append(Failure(ValidationIssue.UNGROUNDED_ACTION, f"{where}: no '{kind}' event was recorded"))
            continue
        x, y = act.get("x"), act.get("y")
        located = [e for e in same if e.get("x") is not None and e.get("y") is not None]
        if isinstance(x, int | float) and isinstance(y, int | float) and located:
            near = min(max(abs(e["x"] - x), abs(e["y"] - y)) for e in located)
            if near > tolerance:
                out.append(
                    Failure(
                        ValidationIssue.UNGROUNDED_ACTION,
                        f"{where}: no '{kind}' event near ({x:.3f}, {y:.3f}) (closest is {near:.3f} away)",
                    )
                )
                continue
        target = content_words(act.get("target") or "")
        if target and not target & vocab:
            out.append(
                Failure(
                    ValidationIssue.UNGROUNDED_ACTION,
                    f"{where}: target {act.get('target')!r} appears nowhere in the recorded events",
                )
            )
    return out


@register_validator("grounded_text")
def check_grounded_text(
    output: Any, ctx: dict[str, Any], fields: list[str], min_overlap: float = 0.2
) -> list[Failure]:
    """At least ``min_overlap`` of the content words of each text field appear in the evidence (task,
    anchors, transcript, slide text): text about things the stream never shows is flagged."""
    vocab = content_words(ctx.get("evidence_text", ""))
    out = []
    for path in fields:
        for where, value in values_at(output, path):
            words = content_words(value) if isinstance(value, str) else set()
            if not words:
                continue
            share = len(words & vocab) / len(words)
            if share < min_overlap:
                out.append(
                    Failure(
                        ValidationIssue.UNGROUNDED_TEXT,
                        f"{where}: {share:.0%} of its words appear in the evidence (need {min_overlap:.0%})",
                    )
                )
    return out


@register_validator("min_words")
def check_min_words(output: Any, ctx: dict[str, Any], fields: list[str], minimum: int = 3) -> list[Failure]:
    """Each text field has at least ``minimum`` words of letters (numbers and fragments are not a
    question, an answer or a subtask)."""
    out = []
    for path in fields:
        for where, value in values_at(output, path):
            words = re.findall(r"[A-Za-z]{2,}", value) if isinstance(value, str) else []
            if len(words) < minimum:
                out.append(
                    Failure(ValidationIssue.TOO_LITTLE_TEXT, f"{where}: {len(words)} words, need {minimum}")
                )
    return out


_PLACEHOLDER = re.compile(r"<([a-z]+(?:_[a-z0-9]+)*)>")


@register_validator("placeholders")
def check_placeholders(
    output: Any, ctx: dict[str, Any], fields: list[str], required: list[str] | None = None,
    allowed: list[str] | None = None, images: str | None = None,
) -> list[Failure]:  # fmt: skip
    """Media placeholders (``<video_gen>``, ``<image_recall>``, ``<image_1>`` …): the ``required`` ones
    appear in ``fields``; none outside ``allowed`` (default: the required ones) does. With ``images``
    (a context or ``output.`` path to a list), numbered ``<image_k>`` are allowed for k = 1..len(list)."""
    required = required or []
    allowed_set = set(allowed or required)
    if images:
        pool = values_at(output, images[7:]) if images.startswith("output.") else values_at(ctx, images)
        count = len(pool[0][1]) if pool and isinstance(pool[0][1], list) else 0
        allowed_set |= {f"<image_{k}>" for k in range(1, count + 1)}
    text = " ".join(str(v) for p in fields for _, v in values_at(output, p) if isinstance(v, str))
    found = {f"<{m}>" for m in _PLACEHOLDER.findall(text)}
    out = []
    missing = [p for p in required if p not in found]
    if missing:
        out.append(Failure(ValidationIssue.MISSING_PLACEHOLDER, f"{', '.join(fields)}: missing {missing}"))
    extra = sorted(p for p in found if p not in allowed_set)
    if extra:
        out.append(Failure(ValidationIssue.UNKNOWN_PLACEHOLDER, f"{', '.join(fields)}: unknown {extra}"))
    return out
