"""The validator contract (paper A.3.4, B.2.1 "structural verification & grounding").

A validator is a function ``(output, ctx, **params) -> list[Failure]`` registered by name; intents list
the validators they need with parameters. ``ctx`` is the request context the response was built from
(frame ranges, sampled frames, fragments and their true order, GUI events, evidence text), stored in the
response record so validation needs nothing else and can be audited later. Every failure is a reject of
the sample with the validator's reason code (:class:`ValidationIssue`) and, where there is one, the
offending span of text.

Built-in validators live in the modules of this package (:mod:`.structural`, :mod:`.quality`,
:mod:`.grounding`), found when the registry is first read; plugins add theirs through the entry-point
group ``dataclaw.validators`` or ``--plugin MODULE``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from dataclaw.core.errors import ConfigError
from dataclaw.core.registry import Registry


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
    OUTSIDE_CANDIDATE_WINDOW = "outside_candidate_window"
    """The text names a frame or time outside the candidate's window (:mod:`.grounding`)."""
    STEP_NOT_SELECTED = "step_not_selected"
    """The text names a step the answer does not have."""
    DUPLICATE_FIELDS = "duplicate_fields"
    """One field repeats another word for word (reasoning = answer, a step = the title)."""
    NEAR_DUPLICATE_FIELDS = "near_duplicate_fields"
    """One field nearly repeats another (same words in nearly the same order, or same content words)."""
    CONTRADICTS_ANCHOR = "contradicts_anchor"
    """A claim (object colour, manipulated object, app, value, GUI action) the anchors contradict."""
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
VALIDATORS: Registry[Validator] = Registry("validator", builtins="dataclaw.tailor.validation")
"""Validators by name: the modules of this package (:mod:`.structural`, :mod:`.quality`) and plugins
(entry-point group ``dataclaw.validators`` or ``--plugin MODULE``)."""


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
