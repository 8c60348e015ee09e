"""A reject is named after its most severe failure, and keeps all of them (issue 27 "reasons that help")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.validation.base import Failure, ValidationIssue
from dataclaw.tailor.validation.severity import (
    DEFAULT_SEVERITY,
    Severity,
    by_severity,
    headline,
    register_severity,
    severity,
    severity_key,
)
from dataclaw.tailor.validation.stage import ValidateStage

RECORDED = Path(__file__).resolve().parents[1] / "data" / "smollm_responses.jsonl"


def test_the_tiers_run_parse_schema_structure_grounding_content_style() -> None:
    order = ["unparsable", "schema_invalid", "freeze_outside_observation", "frame_not_selected",
             "prompt_echo", "too_little_text"]  # fmt: skip
    assert [severity(r) for r in order] == sorted(severity(r) for r in order)
    assert len({severity(r) for r in order}) == len(order)
    assert severity("a_gate_nobody_registered") == DEFAULT_SEVERITY == Severity.GROUNDING


def test_headline_is_the_most_severe_and_all_are_kept_in_order() -> None:
    fails = [
        Failure(ValidationIssue.TOO_LITTLE_TEXT, "key_concept: 1 words, need 2", "min_words"),
        Failure(ValidationIssue.DUPLICATE_STEPS, "steps[1] repeats steps[0]", "repetition"),
        Failure(ValidationIssue.FRAME_NOT_SELECTED, "answer: names frame 434", "temporal_consistency"),
    ]
    assert headline(fails).reason == ValidationIssue.FRAME_NOT_SELECTED
    assert [f.reason for f in by_severity(fails)] == [
        "frame_not_selected",
        "duplicate_steps",
        "too_little_text",
    ]
    # fewer and milder failures rank as less bad
    assert severity_key(fails[:1]) < severity_key(fails[:2]) < severity_key(fails)
    with pytest.raises(ValueError):
        headline([])


def test_register_severity_refuses_a_second_tier() -> None:
    register_severity("schema_invalid", Severity.SCHEMA)  # the same tier again: fine
    with pytest.raises(ValueError, match="already has severity schema"):
        register_severity("schema_invalid", Severity.STYLE)


def test_the_recorded_lesson_is_rejected_for_its_steps_not_its_one_word_concept() -> None:
    """The embedded model's real interleaved_lesson answer: key_concept "cryptocurrency" (one word: a
    legitimate concept, which the lesson intent no longer counts), six steps that all ask the same
    question and no image placeholder. The headline is the most severe real problem, every one kept."""
    rec = next(json.loads(line) for line in RECORDED.open(encoding="utf-8") if '"interleaved_lesson"' in line)
    reject = ValidateStage(IntentCatalog.builtin()).process(rec)
    reasons = [f["reason"] for f in reject.detail["failures"]]
    assert reject.reason == reasons[0] == "missing_placeholder" and "duplicate_steps" in reasons
    assert [severity(r) for r in reasons] == sorted(severity(r) for r in reasons)
    assert not any(
        "key_concept" in f["message"] and f["reason"] == "too_little_text" for f in reject.detail["failures"]
    )
