"""Quality validators on real failures of the embedded model.

``data/smollm_responses.jsonl`` holds response records written by
``dataclaw tailor run examples/{lerobot_g1,videos,lectures,opencua_recording} --model local:smollm2-135m
--max-per-kind 2 -i <every built-in intent>`` (kept unchanged: prompt, context, schema, raw text,
output). Each new validator must reject the garbage it was made for, with its reason code and the
offending span, and accept a careful answer to the same request.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.validation.base import ValidationIssue, run_validator
from dataclaw.tailor.validation.quality import char_rep_ratio, mentions, word_rep_ratio
from dataclaw.tailor.validation.stage import ValidateStage

DATA = Path(__file__).parents[1] / "data" / "smollm_responses.jsonl"


@pytest.fixture(scope="module")
def recorded() -> dict[str, dict[str, Any]]:
    """The recorded responses by the last 8 characters of their id."""
    records = [json.loads(line) for line in DATA.read_text().splitlines()]
    assert all(r["model"] == "local:smollm2-135m" for r in records)
    return {r["id"][-8:]: r for r in records}


@pytest.fixture(scope="module")
def stage() -> ValidateStage:
    return ValidateStage(IntentCatalog.builtin())


def _failures(stage: ValidateStage, record: dict[str, Any]) -> list[dict[str, str]]:
    result = stage.process(record)
    if isinstance(result, list):
        return []
    return list(result.detail.get("failures") or [])


def _with(record: dict[str, Any], **output: Any) -> dict[str, Any]:
    out = copy.deepcopy(record)
    out["output"].update(output)
    return out


# which recorded answer trips which new check (validator, reason, field, a word of the span)
CASES = [
    ("454f095d", "repetition", ValidationIssue.REPETITIVE_TEXT, "reasoning", "fixing the stall"),
    ("1026b2a8", "repetition", ValidationIssue.DUPLICATE_STEPS, "steps[1].text", "How to do the task"),
    ("10e69683", "repetition", ValidationIssue.DUPLICATE_STEPS, "motion_plan[1]", "short phases"),
    ("6ad145f5", "repetition", ValidationIssue.DUPLICATE_STEPS, "steps[1]", "key concept"),
    ("743f5b46", "repetition", ValidationIssue.REPETITIVE_TEXT, "answer", "frame s frame s"),
    ("23390fea", "repetition", ValidationIssue.REPETITIVE_TEXT, "reasoning", "current system"),
    ("2b8f789b", "prompt_echo", ValidationIssue.PROMPT_ECHO, "title", "sampled frames in time order"),
    ("10e69683", "prompt_echo", ValidationIssue.PROMPT_ECHO, "prompt", "1 to 5 short phases"),
    ("1026b2a8", "prompt_echo", ValidationIssue.PROMPT_ECHO, "title", "task of the episode"),
    ("84b2f675", "question_form", ValidationIssue.NOT_A_QUESTION, "question", "How to get from"),
    ("1026b2a8", "question_form", ValidationIssue.NOT_A_QUESTION, "question", "How to do the task"),
    ("743f5b46", "temporal_consistency", ValidationIssue.FRAME_NOT_SELECTED, "answer", "frame 163"),
]


@pytest.mark.parametrize(("rid", "validator", "reason", "field", "span"), CASES)
def test_recorded_failures_of_the_embedded_model_are_rejected_with_span(
    stage: ValidateStage, recorded: dict[str, dict[str, Any]], rid: str, validator: str,
    reason: ValidationIssue, field: str, span: str,
) -> None:  # fmt: skip
    fails = _failures(stage, recorded[rid])
    mine = [f for f in fails if f["validator"] == validator and f["reason"] == reason]
    assert mine, f"{validator} did not reject {rid}: {fails}"
    assert any(f["message"].startswith(f"{field}:") or f["message"].startswith(field) for f in mine)
    assert any(span.lower() in f.get("span", "").lower() for f in mine)


def test_careful_answers_to_the_same_requests_pass(
    stage: ValidateStage, recorded: dict[str, dict[str, Any]]
) -> None:
    fault = _with(
        recorded["454f095d"],
        question="The robot froze while reaching for the bottle. What went wrong, and how should it recover?",
        answer="It stalled on the approach; it should resume the reach and close the hand at frame 100. "
        "<video_gen> <image_recall>",
        reasoning="The arm stops moving at frame 57 before touching the bottle; the real continuation "
        "shows the hand closing around it between frames 90 and 136.",
    )
    assert isinstance(stage.process(fault), list), _failures(stage, fault)
    knowledge = _with(
        recorded["080e0a82"],
        question="Why does the camera move toward the table around frame 207?",
        answer="To show the object that is picked up next.",
        reasoning="From frame 161 to frame 207 the view narrows on the table, then at frame 231 the "
        "object is in hand.",
        key_frames=[161, 207, 231],
    )
    assert isinstance(stage.process(knowledge), list), _failures(stage, knowledge)
    tutorial = _with(
        recorded["1026b2a8"],
        title="Picking up the yellow bottle",
        question="How does the robot pick up the yellow bottle?",
        steps=[
            {"frame": 44, "text": "Reach toward the bottle"},
            {"frame": 98, "text": "Grasp the bottle with the right hand"},
            {"frame": 169, "text": "Lift the bottle off the table"},
            {"frame": 276, "text": "Release the bottle on the tray"},
        ],
    )
    assert isinstance(stage.process(tutorial), list), _failures(stage, tutorial)


def test_temporal_consistency_frame_434_outside_the_chosen_frames_266_to_406() -> None:
    ctx = {"frame_indices": [266, 300, 340, 372, 406], "stream": {"fps": 30.0}}
    params = {"fields": ["answer"], "within": ["frame_indices"]}
    bad = run_validator("temporal_consistency", {"answer": "The critical moment is frame 434."}, ctx, params)
    assert [(f.reason, f.span) for f in bad] == [(ValidationIssue.FRAME_NOT_SELECTED, "frame 434")]
    assert "266–406" in bad[0].message
    ok = run_validator("temporal_consistency", {"answer": "The critical moment is frame 372."}, ctx, params)
    assert ok == []
    late = run_validator(  # 14.5 s is frame 435 at 30 fps
        "temporal_consistency", {"answer": "The cup tips over at 14.5 s."}, ctx, params
    )
    assert late[0].reason is ValidationIssue.FRAME_NOT_SELECTED and "14.5 s" in (late[0].span or "")
    assert run_validator("temporal_consistency", {"answer": "It takes 20 seconds."}, ctx, params) == []
    order = run_validator(
        "temporal_consistency",
        {"answer": "The hand opens at frame 372, then the cup falls at frame 300."},
        ctx,
        params,
    )
    assert [f.reason for f in order] == [ValidationIssue.ORDER_CONTRADICTS_FRAMES]
    assert "then" in order[0].message and "frame 300" in (order[0].span or "")
    agree = {"answer": "The cup falls at frame 372 after the hand opens at frame 300."}
    assert run_validator("temporal_consistency", agree, ctx, params) == []
    assert [m[0] for m in mentions("frames 266 to 406, and at 9.5 s", 30.0)] == [266, 406, 285]


def test_anchor_window_on_the_recorded_robot_context(recorded: dict[str, dict[str, Any]]) -> None:
    ctx = recorded["60cc8a03"]["context"]  # hand_close 90–136, hand_open 265–289, stall 16–31 (proprio)
    params = {"fields": ["reasoning"]}
    for text in (
        "The robot grasps the bottle at frame 40.",
        "The hand releases the bottle at frame 120.",
        "The arm stalls at frame 200 before the grasp.",
    ):
        fails = run_validator("anchor_window", {"reasoning": text}, ctx, params)
        assert [f.reason for f in fails] == [ValidationIssue.OUTSIDE_ANCHOR], text
        assert "frame" in (fails[0].span or "")
    good = "The robot grasps the bottle at frame 100 and releases it at frame 280."
    assert run_validator("anchor_window", {"reasoning": good}, ctx, params) == []
    near = "The robot grasps the bottle at frame 80."  # 10 frames early: inside the 0.5 s tolerance
    assert run_validator("anchor_window", {"reasoning": near}, ctx, params) == []
    assert run_validator("anchor_window", {"reasoning": near}, ctx, {**params, "tolerance": 0})
    steps = {"steps": [{"frame": 40, "text": "Grasp the bottle"}, {"frame": 100, "text": "Lift it"}]}
    fails = run_validator("anchor_window", steps, ctx, {"items": "steps[]"})
    assert [f.span for f in fails] == ["Grasp the bottle"]
    grasp_field = {"frame_fields": {"grasp_frame": "grasp"}}
    fields = run_validator("anchor_window", {"grasp_frame": 300}, ctx, grasp_field)
    assert fields[0].reason is ValidationIssue.OUTSIDE_ANCHOR
    no_proprio = {"anchor_windows": [], "stream": {"fps": 30.0}}
    assert run_validator("anchor_window", {"reasoning": "It grasps at frame 5."}, no_proprio, params) == []
    fault = recorded["454f095d"]  # the stall is the synthesised freeze frame (57)
    stall = {"reasoning": "The robot freezes at frame 120.", "freeze_frame": 57}
    events = {"fields": ["reasoning"], "events": {"stall": "output.freeze_frame"}}
    assert run_validator("anchor_window", stall, fault["context"], events)[0].span == "frame 120"
    at_freeze = {**stall, "reasoning": "It freezes at frame 60."}
    assert run_validator("anchor_window", at_freeze, fault["context"], events) == []


def test_repetition_statistics_follow_data_juicer() -> None:
    # character_repetition_filter: floor(sqrt(#distinct)) most frequent n-grams seen more than once,
    # summed over all n-grams. "abcabcabc" with n=3: abc 3, bca 2, cab 2 (7 grams, 3 distinct) → k=1.
    assert char_rep_ratio("abcabcabc", 3) == (pytest.approx(3 / 7), "abc")
    assert char_rep_ratio("abcdefgh", 3)[0] == 0.0 and char_rep_ratio("ab", 3)[0] == 0.0
    # word_repetition_filter: words lower-cased, punctuation stripped; repeated n-grams' occurrences
    # over all n-grams. "a b a b a" n=2: ab 2, ba 2 of 4 → 1.0
    assert word_rep_ratio("A, b. a b a", 2)[0] == 1.0
    assert word_rep_ratio("one two three four", 2)[0] == 0.0


def test_question_form_and_prompt_echo_details() -> None:
    q = {"fields": ["question"]}
    for text in ("What happens next?", "Describe the motion <image>", "Is the lid open", "Why?"):
        assert run_validator("question_form", {"question": text}, {}, q) == [], text
    for text in ("The robot picks up a cup.", "How to open the drawer", "Sampled frames:"):
        assert run_validator("question_form", {"question": text}, {}, q)[0].reason == "not_a_question"
    ctx = {
        "prompt_template": ["Sampled frames (in time order):"],
        "frame_lines": ["frame 9 (0.38 s), keyframe"],
    }
    echoed = {"q": "Sampled frames (in time order): frame 9"}
    echo = run_validator("prompt_echo", echoed, ctx, {"fields": ["q"]})
    assert echo[0].reason is ValidationIssue.PROMPT_ECHO and echo[0].span == "sampled frames in time order"
    fresh = {"q": "Why does the cook tilt the pan before serving?"}
    assert run_validator("prompt_echo", fresh, ctx, {"fields": ["q"]}) == []


def test_every_quality_validator_is_on_in_the_builtin_intents_where_it_applies() -> None:
    catalog = IntentCatalog.builtin()
    on = {i.id: {s.name for s in i.validators} for i in catalog}
    assert all({"repetition", "prompt_echo"} <= names for names in on.values())
    asks = [i.id for i in catalog if "question" in i.output_schema["properties"]]
    assert asks and all("question_form" in on[i] for i in asks)
    frames = [i.id for i in catalog if i.domain in ("embodied", "daily_life", "aigc_world")]
    assert all("temporal_consistency" in on[i] for i in frames)
    robot = [i.id for i in catalog if i.applies_to.modalities == ["robot"]]
    assert robot and all("anchor_window" in on[i] for i in robot)
