"""How bad a failed check is, and so which failure is a reject's headline (issue 27 "reasons that help").

A sample that fails several checks is rejected for the most severe of them, not for the first one a list
happens to hold: "key_concept: 1 words" must not stand in front of an answer whose frames lie outside the
clip. Every failure is still kept in the reject's ``detail.failures``, in severity order.

The order, most severe first (a lower tier wins; within a tier the validator's own order is kept):

=====  ==============  ===============================================================================
tier   name            reasons
=====  ==============  ===============================================================================
0      ``parse``       the answer is not JSON, or the record cannot be read (``unparsable``, ``bad_record``)
1      ``schema``      the JSON does not have the intent's shape (``schema_invalid``)
2      ``structure``   frames, ranges, orders and labels that cannot be right whatever the text says
                       (indices out of range, a freeze frame outside the observation, an invalid
                       permutation, a distractor in the solution, a missing placeholder …)
3      ``grounding``   text that disagrees with its evidence (a frame not selected, an order the frames
                       contradict, an event outside its anchor, an ungrounded action or text) — and any
                       reason this table does not name (new grounding gates register theirs or land here)
4      ``content``     text that says little (prompt echo, repetition, a question that is not one)
5      ``style``       length and form (too little text)
=====  ==============  ===============================================================================

Plugins and new gates add their reasons with :func:`register_severity`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import IntEnum

from dataclaw.tailor.validation.base import Failure


class Severity(IntEnum):
    """Severity tiers, most severe first (lower wins)."""

    PARSE = 0
    SCHEMA = 1
    STRUCTURE = 2
    GROUNDING = 3
    CONTENT = 4
    STYLE = 5


TIERS: dict[Severity, tuple[str, ...]] = {
    Severity.PARSE: ("unparsable", "bad_record"),
    Severity.SCHEMA: ("schema_invalid",),
    Severity.STRUCTURE: (
        "index_out_of_range", "non_positive_duration", "freeze_outside_observation",
        "recovery_outside_future", "outside_range", "frames_out_of_order", "invalid_label",
        "invalid_permutation", "distractor_in_solution", "missing_fragment", "wrong_order",
        "fragments_overlap", "fragments_gap", "fragments_incomplete", "missing_placeholder",
        "unknown_placeholder",
    ),
    Severity.GROUNDING: (
        "frame_not_selected", "order_contradicts_frames", "outside_anchor", "ungrounded_action",
        "ungrounded_text",
    ),
    Severity.CONTENT: ("prompt_echo", "repetitive_text", "duplicate_sentence", "duplicate_steps",
                       "not_a_question"),
    Severity.STYLE: ("too_little_text",),
}  # fmt: skip
"""The built-in reasons of each tier."""

SEVERITY: dict[str, Severity] = {reason: tier for tier, reasons in TIERS.items() for reason in reasons}
"""Reason code → tier. A reason not listed counts as :attr:`Severity.GROUNDING` (:func:`severity`)."""

DEFAULT_SEVERITY = Severity.GROUNDING
"""The tier of a reason nobody registered: the gates added after this table are grounding gates, and a
check that is new should not hide behind style."""


def register_severity(reason: str, tier: Severity) -> None:
    """Give ``reason`` (a reason code) its tier; a reason registered twice with another tier is refused."""
    known = SEVERITY.get(str(reason))
    if known is not None and known != tier:
        raise ValueError(f"reason '{reason}' already has severity {known.name.lower()}")
    SEVERITY[str(reason)] = tier


def severity(reason: str) -> Severity:
    """The tier of a reason code."""
    return SEVERITY.get(str(reason), DEFAULT_SEVERITY)


def by_severity(failures: Iterable[Failure]) -> list[Failure]:
    """``failures`` most severe first; equal tiers keep their order (the validators' order)."""
    return sorted(failures, key=lambda f: severity(f.reason))


def headline(failures: Sequence[Failure]) -> Failure:
    """The failure a reject is named after: the most severe (the first of equals)."""
    if not failures:
        raise ValueError("no failure to name a reject after")
    return by_severity(failures)[0]


def reject_message(failures: Sequence[Failure]) -> str:
    """The one line of a reject: its headline failure as ``validator: message`` (the others are in the
    reject's ``detail.failures``)."""
    top = headline(failures)
    return f"{top.validator}: {top.message}" if top.validator else top.message


def severity_key(failures: Sequence[Failure]) -> tuple[int, ...]:
    """A sort key that ranks failing answers from least to most bad: the tier of the worst failure
    (higher is milder, so negated), then the number of failures per tier from the worst tier down."""
    counts = [0] * len(Severity)
    for f in failures:
        counts[severity(f.reason)] += 1
    worst = min((severity(f.reason) for f in failures), default=len(Severity))
    return (-worst, *counts)
