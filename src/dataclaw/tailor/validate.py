"""Deterministic validation after synthesis (paper A.3.4, B.2.1 "structural verification & grounding").

A validator is a function ``(output, ctx, **params) -> list[Failure]`` registered by name; intents list
the validators they need with parameters. ``ctx`` is the request context the response was built from
(frame ranges, sampled frames, fragments and their true order, GUI events, evidence text), stored in the
response record so validation needs nothing else and can be audited later.

Checks: schema; temporal (indices inside the stream, positive durations, a freeze frame inside the
observation range, a recovery inside the future range, input before output); task structure (a valid
permutation of the given fragment labels, no distractor in the ordered solution, fragments contiguous
and non-overlapping); grounding against anchors (a claimed click on an element that never appears in
the events is flagged; text must share words with the evidence). The quality checks that stop
plausible garbage (repetition, prompt echo, question form, temporal consistency of the text, anchor
windows) live in :mod:`dataclaw.tailor.quality` and register here. Every failure is a reject of the
sample with the validator's reason code and, where there is one, the offending span of text.

:class:`ValidateStage` turns a response record into a :class:`~dataclaw.tailor.records.Sample` in
``validated.jsonl`` or a reject.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar

import jsonschema
from jsonschema.validators import validator_for

from dataclaw.core.errors import ConfigError
from dataclaw.core.ids import child_id, stable_hash
from dataclaw.core.registry import Registry
from dataclaw.pipeline.stage import Record, Resources, Result, Stage

VALIDATED = "validated"
"""Validated samples, before materialisation (which publishes the final ``samples.jsonl``)."""


class ValidationIssue(StrEnum):
    """Why a synthesised response did not become a sample."""

    UNPARSABLE = "unparsable"
    SCHEMA_INVALID = "schema_invalid"
    INDEX_OUT_OF_RANGE = "index_out_of_range"
    NON_POSITIVE_DURATION = "non_positive_duration"
    FREEZE_OUTSIDE_OBSERVATION = "freeze_outside_observation"
    RECOVERY_OUTSIDE_FUTURE = "recovery_outside_future"
    OUTSIDE_RANGE = "outside_range"
    FRAMES_OUT_OF_ORDER = "frames_out_of_order"
    INVALID_LABEL = "invalid_label"
    INVALID_PERMUTATION = "invalid_permutation"
    DISTRACTOR_IN_SOLUTION = "distractor_in_solution"
    MISSING_FRAGMENT = "missing_fragment"
    WRONG_ORDER = "wrong_order"
    FRAGMENTS_OVERLAP = "fragments_overlap"
    FRAGMENTS_GAP = "fragments_gap"
    FRAGMENTS_INCOMPLETE = "fragments_incomplete"
    UNGROUNDED_ACTION = "ungrounded_action"
    UNGROUNDED_TEXT = "ungrounded_text"
    TOO_LITTLE_TEXT = "too_little_text"
    MISSING_PLACEHOLDER = "missing_placeholder"
    UNKNOWN_PLACEHOLDER = "unknown_placeholder"
    REPETITIVE_TEXT = "repetitive_text"
    """Character or word n-gram repetition ratio above the limit (data-juicer's definitions)."""
    DUPLICATE_SENTENCE = "duplicate_sentence"
    """The same sentence twice in one text."""
    DUPLICATE_STEPS = "duplicate_steps"
    """Two items of a list (steps, motion phases) say the same thing."""
    PROMPT_ECHO = "prompt_echo"
    """The text repeats the prompt's template or its anchor / frame lines instead of answering."""
    NOT_A_QUESTION = "not_a_question"
    FRAME_NOT_SELECTED = "frame_not_selected"
    """The text names a frame or time outside the frames the sample selected."""
    ORDER_CONTRADICTS_FRAMES = "order_contradicts_frames"
    """before / after / then in the text disagree with the order of the frames it names."""
    OUTSIDE_ANCHOR = "outside_anchor"
    """A grasp / release / stall frame lies outside the matching proprioception anchor."""
    BAD_RECORD = "bad_record"


@dataclass(frozen=True)
class Failure:
    """One failed check: the reason code, a message naming the field, the validator, and the offending
    span of the answer's text where there is one (at most 200 characters)."""

    reason: ValidationIssue
    message: str
    validator: str = ""
    span: str | None = None

    def to_dict(self) -> dict[str, str]:
        out = {"reason": str(self.reason), "message": self.message, "validator": self.validator}
        if self.span is not None:
            out["span"] = self.span[:200]
        return out


Validator = Callable[..., list[Failure]]
VALIDATORS: Registry[Validator] = Registry("validator", builtins=["dataclaw.tailor.quality"])
"""Validators by name: the checks below, :mod:`dataclaw.tailor.quality`, and plugins (entry-point group
``dataclaw.validators`` or ``--plugin MODULE``)."""


def register_validator(name: str) -> Callable[[Validator], Validator]:
    """Register ``fn(output, ctx, **params) -> list[Failure]`` under ``name``; duplicates are refused."""
    return VALIDATORS.named(name)


def validator_names() -> list[str]:
    return VALIDATORS.names()


def get_validator(name: str) -> Validator:
    return VALIDATORS.get(name)


def run_validator(name: str, output: Any, ctx: dict[str, Any], params: dict[str, Any]) -> list[Failure]:
    """Run one validator; its failures carry its name."""
    try:
        fails = get_validator(name)(output, ctx, **params)
    except TypeError as exc:  # an intent file passing a parameter the validator does not take
        raise ConfigError(
            f"validator '{name}' does not take the parameters {sorted(params)}: {exc}"
        ) from None
    return [Failure(_issue(name, f.reason), f.message, name, f.span) for f in fails]


def _issue(validator: str, reason: Any) -> ValidationIssue:
    """A failure's reason as the enum (a plugin may return the code as a string)."""
    try:
        return ValidationIssue(reason)
    except ValueError:
        raise ConfigError(
            f"validator '{validator}' returned the reason '{reason}', which is not a ValidationIssue "
            f"({', '.join(ValidationIssue)})"
        ) from None


# ------------------------------------------------------------------------------------------------
# field access: "a.b", "list[]" (every item), "list[].start"


def values_at(obj: Any, path: str) -> list[tuple[str, Any]]:
    """Every ``(concrete path, value)`` at ``path`` in ``obj``; missing parts yield nothing."""
    found: list[tuple[str, Any]] = [("", obj)]
    for part in path.split("."):
        items = part.endswith("[]")
        name = part[:-2] if items else part
        nxt: list[tuple[str, Any]] = []
        for where, value in found:
            if name:
                if not isinstance(value, dict) or name not in value:
                    continue
                where, value = f"{where}.{name}" if where else name, value[name]
            if items:
                if isinstance(value, list):
                    nxt.extend((f"{where}[{i}]", v) for i, v in enumerate(value))
            else:
                nxt.append((where, value))
        found = nxt
    return found


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


# ------------------------------------------------------------------------------------------------
# the stage


def validate_output(
    output: Any, ctx: dict[str, Any], steps: list[tuple[str, dict[str, Any]]], schema: dict[str, Any],
    sent_schema: dict[str, Any] | None = None,
) -> list[Failure]:  # fmt: skip
    """All failures of ``output``: the intent's schema first (later checks assume the shape), then every
    listed validator, then the per-request bounds of the schema that was sent (``sent_schema``), so a
    freeze frame outside the observation range is reported as that, not as a schema bound. (An output
    valid under the stricter sent schema is valid under the intent's, so that check is skipped then.)"""
    sent = without_range_enums(sent_schema) if sent_schema is not None and sent_schema != schema else None
    sent_fails = run_validator("schema", output, {**ctx, "schema": sent}, {}) if sent is not None else None
    if sent_fails is None or sent_fails:
        fails = run_validator("schema", output, {**ctx, "schema": schema}, {})
        if fails:
            return fails
    out: list[Failure] = []
    for name, params in steps:
        if name != "schema":
            out.extend(run_validator(name, output, ctx, params))
    return out or list(sent_fails or [])


def without_range_enums(schema: Any) -> Any:
    """``schema`` without enums that only spell out an integer ``minimum..maximum`` range (added for
    grammar decoders; the bounds say the same and check in O(1) instead of O(range))."""
    if isinstance(schema, list):
        return [without_range_enums(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: without_range_enums(v) for k, v in schema.items() if k != "enum"}
    enum, lo, hi = schema.get("enum"), schema.get("minimum"), schema.get("maximum")
    if enum is not None and not (
        isinstance(lo, int) and isinstance(hi, int) and enum == list(range(lo, hi + 1))
    ):
        out["enum"] = enum
    return out


class ValidateStage(Stage):
    """Response record → :class:`Sample` record (``samples.jsonl``) or a reject with a ValidationIssue."""

    name: ClassVar[str] = VALIDATED
    resources: ClassVar[Resources] = Resources.CPU

    def __init__(self, intents: Any = None, extra_intent_files: list[str] | None = None) -> None:
        self.extra_intent_files = list(extra_intent_files or [])
        self._catalog = intents

    def setup(self) -> None:
        if self._catalog is None:
            from dataclaw.tailor.intents.registry import IntentCatalog

            catalog = IntentCatalog.builtin()
            for path in self.extra_intent_files:
                catalog.resolve(path)
            self._catalog = catalog

    def process(self, item: Record) -> Result:
        from dataclaw.tailor.intents.base import TemplateError
        from dataclaw.tailor.synthesize import build_sample

        if self._catalog is None:
            self.setup()
        try:
            intent = self._catalog.get(item["intent"])
            ctx = item["context"]
        except (KeyError, ConfigError) as exc:
            return self.reject(item, ValidationIssue.BAD_RECORD, f"response record unusable: {exc}")
        if item.get("output") is None:
            return self.reject(
                item,
                ValidationIssue.UNPARSABLE,
                f"the model's answer is not JSON: {item.get('error') or 'no output'}",
                raw_text=(item.get("raw_text") or "")[:500],
            )
        steps = [(s.name, s.params) for s in intent.validators]
        ctx = {**ctx, "prompt_template": prompt_template(intent)}
        fails = validate_output(item["output"], ctx, steps, intent.output_schema, item.get("schema"))
        if fails:
            return self.reject(
                item,
                fails[0].reason,
                f"{fails[0].validator}: {fails[0].message}",
                failures=[f.to_dict() for f in fails],
            )
        try:
            sample = build_sample(item, intent, [name for name, _ in [("schema", {}), *steps]])
        except TemplateError as exc:
            return self.reject(item, ValidationIssue.BAD_RECORD, str(exc))
        return [sample.model_dump(mode="json")]


_TEMPLATE_FIELD = re.compile(r"\{\{.*?\}\}", re.DOTALL)
_TEMPLATES: dict[tuple[str, str, str], list[str]] = {}


def prompt_template(intent: Any) -> list[str]:
    """The literal text of ``intent``'s prompt (system, user, the fixed footer) without its ``{{ … }}``
    fields, one piece per line between fields: what an answer must not echo (``prompt_echo``)."""
    from dataclaw.tailor.synthesize import FOOTER

    key = (intent.id, intent.prompt.system, intent.prompt.user)
    if key not in _TEMPLATES:
        pieces = []
        for text in (intent.prompt.system, intent.prompt.user, FOOTER):
            for part in _TEMPLATE_FIELD.split(text):
                pieces.extend(line.strip() for line in part.splitlines() if line.strip())
        _TEMPLATES[key] = pieces
    return _TEMPLATES[key]


def sample_id(candidate_id: str, intent_id: str) -> str:
    """Id of the sample built for ``candidate_id`` under ``intent_id``."""
    return child_id(candidate_id, "sample", intent_id, label=intent_id)
