"""Grounding gates by meaning (issue 27) on real answers of the embedded model.

Negative fixtures are recorded answers: ``../data/smollm_responses.jsonl`` (see test_quality.py) and
``data/grounding_responses.jsonl``, written by ``dataclaw tailor run examples/lerobot_g1 examples/videos
examples/opencua_recording --model local:smollm2-135m --max-per-kind 3 -i <11 intents>`` before these
gates existed; two of them (``294e4caa``, ``12eaf767``) were accepted by that run and are garbage (the
reasoning restates the answer). The issue's quoted garbage ("the critical moment is frame 434" with key
frames 266–406, "picking up a blue ball" for "pick up the yellow bottle") is checked on the same requests.
Positive fixtures are careful answers to the same requests, checked by hand against the frames and
anchors; they must pass the whole validate stage, not only the gate.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.synthesis.context import _facts
from dataclaw.tailor.validation.base import ValidationIssue, run_validator
from dataclaw.tailor.validation.grounding import grounding_status, similarity
from dataclaw.tailor.validation.severity import Severity, headline, severity
from dataclaw.tailor.validation.stage import ValidateStage

HERE = Path(__file__).parent
FILES = [HERE.parent / "data" / "smollm_responses.jsonl", HERE / "data" / "grounding_responses.jsonl"]
GATES = {"selected_frames", "cross_field_duplicate", "anchor_agreement"}

# the GUI recording's window log as the gui extractor reads it from examples/opencua_recording
WINDOWS = [
    {"kind": "window_change", "source": "gui", "t": 0.06677, "payload": {"window": "agentnet-annotator"}},
    {"kind": "window_change", "source": "gui", "t": 1.692143, "payload": {"window": "explorer"}},
    {"kind": "window_change", "source": "gui", "t": 7.526329, "payload": {"window": "ShellExperienceHost"}},
    {"kind": "window_change", "source": "gui", "t": 11.213575, "payload": {"window": "ApplicationFrameHost"}},
    {"kind": "ocr_text", "source": "ocr", "t": 27.87, "payload": {"text": "1366 x 768"}},
]


@pytest.fixture(scope="module")
def recorded() -> dict[str, dict[str, Any]]:
    records = [json.loads(line) for path in FILES for line in path.read_text().splitlines()]
    assert all(r["model"] == "local:smollm2-135m" for r in records)
    return {r["id"][-8:]: r for r in records}


@pytest.fixture(scope="module")
def stage() -> ValidateStage:
    return ValidateStage(IntentCatalog.builtin())


def _failures(stage: ValidateStage, record: dict[str, Any]) -> list[dict[str, str]]:
    result = stage.process(record)
    return [] if isinstance(result, list) else list(result.detail.get("failures") or [])


def _with(record: dict[str, Any], **output: Any) -> dict[str, Any]:
    out = copy.deepcopy(record)
    out["output"].update(output)
    return out


def _accepted(stage: ValidateStage, record: dict[str, Any]) -> dict[str, Any]:
    result = stage.process(record)
    assert isinstance(result, list), _failures(stage, record)
    return result[0]


# recorded garbage → (validator, reason, field the message names, a piece of the span)
CASES = [
    ("743f5b46", "selected_frames", ValidationIssue.FRAME_NOT_SELECTED, "answer", "frame 9"),
    ("080e0a82", "cross_field_duplicate", ValidationIssue.DUPLICATE_FIELDS, "reasoning", "reasoning behind"),
    ("12eaf767", "cross_field_duplicate", ValidationIssue.DUPLICATE_FIELDS, "reasoning", "reasoning behind"),
    ("60cc8a03", "cross_field_duplicate", ValidationIssue.NEAR_DUPLICATE_FIELDS, "reasoning", "current task"),
    ("294e4caa", "cross_field_duplicate", ValidationIssue.NEAR_DUPLICATE_FIELDS, "reasoning", "current task"),
    ("84b2f675", "cross_field_duplicate", ValidationIssue.NEAR_DUPLICATE_FIELDS, "reasoning", "start place"),
    ("1026b2a8", "cross_field_duplicate", ValidationIssue.DUPLICATE_FIELDS, "steps[0].text", "How to do"),
    ("10e69683", "cross_field_duplicate", ValidationIssue.DUPLICATE_FIELDS, "motion_plan[0]", "short phases"),
    ("c351e1d5", "cross_field_duplicate", ValidationIssue.DUPLICATE_FIELDS, "reasoning", "game of chess"),
    ("213b37f5", "cross_field_duplicate", ValidationIssue.DUPLICATE_FIELDS, "reasoning", "game of chess"),
    ("34af6812", "anchor_agreement", ValidationIssue.CONTRADICTS_ANCHOR, "answer", "blue bottle"),
]


@pytest.mark.parametrize(("rid", "validator", "reason", "field", "span"), CASES)
def test_recorded_garbage_fails_its_gate_with_field_value_and_evidence(
    stage: ValidateStage, recorded: dict[str, dict[str, Any]], rid: str, validator: str,
    reason: ValidationIssue, field: str, span: str,
) -> None:  # fmt: skip
    fails = _failures(stage, recorded[rid])
    mine = [f for f in fails if f["validator"] == validator and f["reason"] == reason]
    assert mine, f"{validator} did not reject {rid}: {fails}"
    assert any(f["message"].startswith(field) for f in mine), mine
    assert any(span.lower() in f.get("span", "").lower() for f in mine), mine


def test_what_the_run_before_the_gates_accepted_is_now_rejected(
    stage: ValidateStage, recorded: dict[str, dict[str, Any]]
) -> None:
    for rid in ("294e4caa", "12eaf767"):  # validated.jsonl of that run held exactly these two
        result = stage.process(recorded[rid])
        assert not isinstance(result, list), rid
        assert result.reason in (ValidationIssue.DUPLICATE_FIELDS, ValidationIssue.NEAR_DUPLICATE_FIELDS)


def test_blue_bottle_names_the_task_anchor(recorded: dict[str, dict[str, Any]]) -> None:
    rec = recorded["34af6812"]
    fails = run_validator("anchor_agreement", rec["output"], rec["context"], {"fields": ["answer"]})
    assert [f.message for f in fails] == [
        "answer: says 'blue bottle', but the task anchor says 'yellow bottle'"
    ]


# ------------------------------------------------------------------------------------------------
# selected frames


def test_frame_434_with_key_frames_266_to_406_fails_though_it_was_shown() -> None:
    """The issue's accepted sample: frame 434 was among the frames shown, not among the key frames."""
    ctx = {
        "span": {"start": 200, "end": 500},
        "frame_indices": [266, 300, 372, 406, 434],
        "stream": {"fps": 30.0},
    }
    out = {"answer": "The critical moment is frame 434.", "key_frames": [266, 300, 372, 406]}
    params = {"fields": ["answer"], "selected": ["key_frames"], "window": ["span"]}
    fails = run_validator("selected_frames", out, ctx, params)
    assert [(f.reason, f.span) for f in fails] == [(ValidationIssue.FRAME_NOT_SELECTED, "frame 434")]
    assert fails[0].message == (
        "answer: names frame 434, which the answer did not select (key_frames 266, 300, 372, 406)"
    )
    ok = {**out, "answer": "The critical moment is frame 372, between frames 300 and 406."}
    assert run_validator("selected_frames", ok, ctx, params) == []
    late = {**out, "answer": "The cup tips over at 14.5 s."}  # frame 435
    assert run_validator("selected_frames", late, ctx, params)[0].reason is ValidationIssue.FRAME_NOT_SELECTED
    ordinal = {**out, "answer": "Everything changes in the 434th frame."}
    assert run_validator("selected_frames", ordinal, ctx, params)[0].span == "the 434th frame"
    near = {**out, "answer": "The cup tips over at 13.6 s."}  # frame 408: within the 0.5 s of times
    assert run_validator("selected_frames", near, ctx, params) == []
    outside = {**out, "answer": "It ends at frame 620.", "key_frames": [266, 620]}
    fails = run_validator("selected_frames", outside, ctx, params)
    assert [f.reason for f in fails] == [ValidationIssue.OUTSIDE_CANDIDATE_WINDOW]
    assert "span 200–500" in fails[0].message


def test_ranges_and_steps_the_answer_selected(recorded: dict[str, dict[str, Any]]) -> None:
    rec = recorded["1026b2a8"]  # robot_tutorial on the 357-frame episode
    steps = [{"frame": 44, "text": "Reach toward the bottle"}, {"frame": 98, "text": "Grasp it"}]
    params = {"fields": ["title", "steps[].text"], "selected": ["steps[].frame"], "steps": "steps"}
    good = {"title": "Grasp at frame 98, as in step 2", "steps": steps}
    assert run_validator("selected_frames", good, rec["context"], params) == []
    bad = {"title": "Grasp the bottle as in step 3", "steps": steps}
    fails = run_validator("selected_frames", bad, rec["context"], params)
    assert [f.reason for f in fails] == [ValidationIssue.STEP_NOT_SELECTED]
    assert "step 3" in fails[0].message and "steps 1–2" in fails[0].message
    clip = {"answer": "The hand closes at frame 120.", "input_video": {"start": 80, "end": 140}}
    in_clip = {"fields": ["answer"], "selected": ["input_video"], "window": ["span"]}
    assert run_validator("selected_frames", clip, rec["context"], in_clip) == []
    clip["input_video"] = {"start": 0, "end": 100}
    assert run_validator("selected_frames", clip, rec["context"], in_clip)[0].span == "frame 120"


def test_a_cited_proprioception_anchor_frame_is_not_an_unselected_frame(
    recorded: dict[str, dict[str, Any]],
) -> None:
    rec = recorded["454f095d"]  # hand_close anchor: frames 90-136; output_video chosen 101-146
    out = {
        "reasoning": "The hand closes between frames 90 and 136.",
        "output_video": {"start": 101, "end": 146},
    }
    params = {"fields": ["reasoning"], "selected": ["output_video"], "window": ["obs", "fut"]}
    assert run_validator("selected_frames", out, rec["context"], params) == []
    out["reasoning"] = "The hand closes between frames 95 and 136."  # 95 is neither chosen nor an anchor
    assert run_validator("selected_frames", out, rec["context"], params)[0].span == "frames 95 and 136"
    params["cite_anchors"] = False
    out["reasoning"] = "The hand closes between frames 90 and 136."
    assert run_validator("selected_frames", out, rec["context"], params)[0].span == "frames 90 and 136"


# ------------------------------------------------------------------------------------------------
# cross-field duplicates: gaming them


def test_restating_the_answer_with_a_tail_or_in_another_order_fails_a_real_reason_passes() -> None:
    answer = "The robot picks up the yellow bottle from the table with its right hand."
    params = {"pairs": [["answer", "reasoning"]]}
    tail = {"answer": answer, "reasoning": answer + " This is correct."}
    assert run_validator("cross_field_duplicate", tail, {}, params)[0].reason is (
        ValidationIssue.NEAR_DUPLICATE_FIELDS
    )
    shuffled = {
        "answer": answer,
        "reasoning": "With its right hand, from the table, the robot picks up a yellow bottle.",
    }
    fails = run_validator("cross_field_duplicate", shuffled, {}, params)
    assert fails and "content words" in fails[0].message
    reason = {
        "answer": answer,
        "reasoning": "Proprioception shows the right hand closing from frame 90 to 136, and the task names "
        "the yellow bottle as the object.",
    }
    assert run_validator("cross_field_duplicate", reason, {}, params) == []
    seq, jac = similarity(answer, reason["reasoning"])
    assert seq < 0.8 and jac < 0.8
    short = {"answer": "Yes.", "reasoning": "Yes."}  # below min_words: a one-word answer may repeat
    assert run_validator("cross_field_duplicate", short, {}, params) == []
    q_and_a = {"question": "Which bottle does the robot pick up from the table?",
               "answer": "The robot picks up the yellow bottle from the table."}  # fmt: skip
    assert (
        run_validator(
            "cross_field_duplicate", q_and_a, {}, {"pairs": [["question", "answer"]], "max_overlap": None}
        )
        == []
    )


# ------------------------------------------------------------------------------------------------
# agreement with anchors


def test_blue_ball_for_the_yellow_bottle_fails_a_careful_subtask_passes(
    stage: ValidateStage, recorded: dict[str, dict[str, Any]]
) -> None:
    rec = recorded["60cc8a03"]  # describe_current_subtask; task: "Pick up the yellow bottle on the table."
    bad = _with(
        rec,
        input_video={"start": 80, "end": 140},
        current_subtask="pick up the yellow bottle",
        answer="The robot is picking up a blue ball with its right hand.",
        reasoning="Its hand closes around the object between frames 90 and 136.",
    )
    fails = [f for f in _failures(stage, bad) if f["validator"] == "anchor_agreement"]
    assert [f["reason"] for f in fails] == ["contradicts_anchor"]
    assert fails[0]["message"] == (
        "answer: says 'picking up a blue ball', but the task anchor says 'Pick up the yellow bottle' and no "
        "anchor names a blue ball"
    )
    good = _with(
        rec,
        input_video={"start": 80, "end": 140},
        current_subtask="grasp the yellow bottle on the table",
        question="What is the robot doing with its right hand in this clip?",
        answer="It closes its right hand around the yellow bottle and starts to lift it.",
        reasoning="Proprioception records the right hand closing from frame 90 to frame 136, inside the "
        "clip, and the task names the yellow bottle.",
    )
    sample = _accepted(stage, good)
    assert sample["grounding"] == "anchors"
    # claims the anchors say nothing about are not contradictions
    quiet = _with(good, answer="Its black gripper closes around the container and lifts it off the table.")
    _accepted(stage, quiet)


def _gui(recorded: dict[str, dict[str, Any]]) -> dict[str, Any]:
    rec = copy.deepcopy(recorded["0220890a"])  # gui_action_extraction on examples/opencua_recording
    rec["context"]["facts"] = _facts(WINDOWS, rec["context"].get("span"))
    return rec


def test_gui_claims_against_windows_task_values_and_event_log(recorded: dict[str, dict[str, Any]]) -> None:
    rec = _gui(recorded)
    ctx, params = rec["context"], {"fields": ["goal"]}

    def fails(goal: str) -> list[str]:
        return [f.message for f in run_validator("anchor_agreement", {"goal": goal}, ctx, params)]

    assert fails("In Excel, set the display scale to 125%") == [
        "goal: names the application Excel, which no anchor shows; the anchors show Settings (the task "
        "anchor); windows agentnet-annotator, explorer, ShellExperienceHost, ApplicationFrameHost "
        "(window_change anchors)"
    ]
    assert fails("Open Settings and turn on Night light") == []
    assert fails("Set the brightness to 50 in display settings") == [
        "goal: says 'brightness to 50', but the task anchor says 'brightness to 78'"
    ]
    assert fails("Set the brightness to 78 in display settings") == []
    assert fails("Note that the resolution: 1366 x 768 is shown first") == []  # the screen shows it (OCR)
    assert fails("Double-click Night light to turn it on") == [
        "goal: says 'Double-click', but the GUI event log (8 events: click 5, drag 1, right_click 1, "
        "scroll 1) has no double_click"
    ]
    assert fails("Right-click Night light, then go to Settings and scroll down") == []


def test_without_any_app_evidence_an_app_name_is_not_a_contradiction(
    recorded: dict[str, dict[str, Any]],
) -> None:
    rec = copy.deepcopy(recorded["0220890a"])
    ctx = {**rec["context"], "task": "Change how the screen looks.", "events": [], "facts": []}
    assert run_validator("anchor_agreement", {"goal": "Open Excel"}, ctx, {"fields": ["goal"]}) == []


# ------------------------------------------------------------------------------------------------
# unchecked: video without content anchors


def test_video_without_content_anchors_is_marked_unchecked_not_grounded(
    stage: ValidateStage, recorded: dict[str, dict[str, Any]]
) -> None:
    rec = recorded["c351e1d5"]  # world_model_prediction on examples/videos/dj_video1.mp4 (shots, motion)
    assert grounding_status(rec["context"], ["anchor_agreement"]) == "unchecked"
    careful = _with(
        rec,
        output_frames=[273, 279],
        question="What happens after the brush reaches the ends of the hair?",
        answer="The brush is lifted and starts again from the top of the head.",
        reasoning="The input frames show one stroke from the top of the head to the ends of the hair; the "
        "strokes repeat.",
    )
    sample = _accepted(stage, careful)
    assert sample["grounding"] == "unchecked"
    robot = recorded["60cc8a03"]
    assert grounding_status(robot["context"], ["anchor_agreement"]) == "anchors"
    assert grounding_status(robot["context"], ["repetition"]) == "unchecked"  # no gate ran: not checked


def test_facts_keep_window_titles_and_ocr_inside_the_span_once() -> None:
    ocr_outside = {"kind": "ocr_text", "source": "ocr", "t": 2.0, "payload": {"text": "far away"}}
    facts = _facts([*WINDOWS, WINDOWS[1], ocr_outside], {"t_start": 7.0, "t_end": 34.0})
    assert [f["text"] for f in facts] == [
        "agentnet-annotator", "explorer", "ShellExperienceHost", "ApplicationFrameHost", "1366 x 768",
    ]  # fmt: skip


def test_a_contradiction_heads_a_reject_that_also_repeats_itself(recorded: dict[str, dict[str, Any]]) -> None:
    """A blue bottle said twice: the headline is the contradiction (grounding), not the copy (content)."""
    rec = recorded["34af6812"]
    fails = [
        *run_validator(
            "cross_field_duplicate", rec["output"], rec["context"], {"pairs": [["answer", "reasoning"]]}
        ),
        *run_validator("anchor_agreement", rec["output"], rec["context"], {"fields": ["answer"]}),
    ]
    assert [f.reason for f in fails] == [ValidationIssue.DUPLICATE_FIELDS, ValidationIssue.CONTRADICTS_ANCHOR]
    assert headline(fails).reason is ValidationIssue.CONTRADICTS_ANCHOR
    assert severity("near_duplicate_fields") is Severity.CONTENT
    assert severity("outside_candidate_window") is Severity.GROUNDING


def test_another_coloured_object_beside_the_task_object_is_not_a_contradiction(
    recorded: dict[str, dict[str, Any]],
) -> None:
    ctx, params = recorded["34af6812"]["context"], {"fields": ["answer", "reasoning"]}
    two = {"answer": "The robot passes the green bottle.", "reasoning": "Then it grasps the yellow bottle."}
    assert run_validator("anchor_agreement", two, ctx, params) == []
    one = {"answer": "The robot passes the green bottle.", "reasoning": "Then it grasps it."}
    assert [f.span for f in run_validator("anchor_agreement", one, ctx, params)] == ["green bottle"]
