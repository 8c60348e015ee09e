"""Validators (A.3.4): each rejects a crafted bad response for the right reason; good responses pass."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.synthesis.route import RouteConfig
from dataclaw.tailor.synthesis.stage import SynthesizeStage, synth_item
from dataclaw.tailor.validation.base import ValidationIssue, register_validator, validator_names
from dataclaw.tailor.validation.stage import ValidateStage

SID = "stream:ep-1"
ROBOT = {
    "id": SID,
    "modality": "robot",
    "fps": 30.0,
    "frame_count": 393,
    "metadata": {"task": "Pick up the yellow bottle on the table."},
}
FAULT = {
    "id": f"{SID}/cand-fault",
    "stream_id": SID,
    "kind": "fault_window",
    "camera": "cam",
    "fps": 30.0,
    "frame_count": 393,
    "observation": {"start": 48, "end": 137, "t_start": 1.6, "t_end": 4.57},
    "future": {"start": 138, "end": 227, "t_start": 4.6, "t_end": 7.57},
    "observation_frames": [53, 76, 98, 121],
    "future_frames": [149, 194],
    "why": "test",
    "payload": {},
}
GOOD_FAULT = {
    "fault_type": "approach_stall",
    "input_video": {"start": 60, "end": 130},
    "freeze_frame": 100,
    "repeat_count": 30,
    "output_video": {"start": 140, "end": 220},
    "output_image": 190,
    "question": "The robot froze while reaching for the bottle. What went wrong and how should it recover?",
    "answer": "It stalled on approach; resume the reach and close the hand. <video_gen> <image_recall>",
    "reasoning": "The hand stops moving for many frames before contact; the future shows the grasp.",
}

GID = "stream:gui-1"
GUI_STREAM = {
    "id": GID,
    "modality": "gui",
    "fps": 30.0,
    "frame_count": 3678,
    "metadata": {"task": "Open display settings, then turn on night light"},
}


def _anchor(i: int, kind: str, t: float, title: str, nx: float, ny: float) -> dict[str, Any]:
    return {
        "id": f"{GID}/anchor-{kind}-{i}",
        "stream_id": GID,
        "t": t,
        "t_end": None,
        "kind": kind,
        "source": "gui",
        "confidence": 1.0,
        "payload": {"nx": nx, "ny": ny, "target": {"title": title}},
    }


GUI_ANCHORS = [
    _anchor(0, "click", 7.0, "Action Centre", 0.972, 0.970),
    _anchor(1, "right_click", 9.0, "Night light", 0.955, 0.512),
    _anchor(2, "click", 10.4, "Go to Settings", 0.928, 0.529),
    _anchor(3, "click", 46.6, "Night light toggle", 0.761, 0.724),
]
GUI_TASK = {
    "id": f"{GID}/cand-seq",
    "stream_id": GID,
    "kind": "gui_task",
    "camera": "screen",
    "fps": 30.0,
    "frame_count": 3678,
    "why": "test",
    "anchor_ids": [a["id"] for a in GUI_ANCHORS],
    "payload": {
        "instruction": GUI_STREAM["metadata"]["task"],
        "subtasks": [
            {"index": 0, "label": "Open display settings", "anchor_ids": [a["id"] for a in GUI_ANCHORS[:3]]},
            {"index": 1, "label": "turn on night light", "anchor_ids": [GUI_ANCHORS[3]["id"]]},
        ],
    },
}


@pytest.fixture(scope="module")
def catalog() -> IntentCatalog:
    return IntentCatalog.builtin()


def response(
    catalog: IntentCatalog, intent_id: str, cand: dict, stream: dict, anchors: list, output: Any
) -> dict:
    """A response record as SynthesizeStage writes it, with ``output`` as the model's answer."""
    stage = SynthesizeStage(RouteConfig.omni("replay:unused.jsonl"), catalog=catalog, distractor_pool=[])
    intent = catalog.get(intent_id)
    item = synth_item(cand, stream, anchors, intent)
    ctx, schema, messages = stage.prepare(item, intent)
    return {
        "id": item["id"],
        "candidate_id": cand["id"],
        "stream_id": cand["stream_id"],
        "intent": intent_id,
        "model": "replay:x",
        "router": "omni",
        "request_hash": "h",
        "messages": messages,
        "schema": schema,
        "context": ctx,
        "output": output,
        "frames": ctx["frame_indices"],
    }


def validate(catalog: IntentCatalog, rec: dict) -> Any:
    stage = ValidateStage(catalog)
    return stage.process(rec)


def fault(catalog: IntentCatalog, **changes: Any) -> Any:
    out = copy.deepcopy(GOOD_FAULT)
    out.update(changes)
    return validate(catalog, response(catalog, "robot_fault_recovery", FAULT, ROBOT, [], out))


def test_good_fault_response_becomes_a_sample(catalog: IntentCatalog) -> None:
    [sample] = fault(catalog)
    assert sample["intent"] == "robot_fault_recovery" and sample["domain"] == "embodied"
    assert sample["conversation"][0]["content"].startswith("<video>The robot froze")
    assert "<video_gen>" in sample["conversation"][1]["content"]
    plan = {p["materialiser"]: p for p in sample["provenance"]["materialize"]}
    assert plan["freeze"]["frame"] == 100 and plan["freeze"]["repeat"] == 30
    assert plan["clip"] == {**plan["clip"], "start": 140, "end": 220, "placeholder": "<video_gen>"}
    assert plan["still"]["frame"] == 190
    assert all(sample["checks"].values()) and "inside" in sample["checks"]


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"question": 3}, ValidationIssue.SCHEMA_INVALID),
        ({"input_video": {"start": 60}}, ValidationIssue.SCHEMA_INVALID),
        ({"freeze_frame": 500}, ValidationIssue.INDEX_OUT_OF_RANGE),
        ({"input_video": {"start": 120, "end": 90}}, ValidationIssue.NON_POSITIVE_DURATION),
        ({"freeze_frame": 150}, ValidationIssue.FREEZE_OUTSIDE_OBSERVATION),
        ({"input_video": {"start": 10, "end": 60}}, ValidationIssue.OUTSIDE_RANGE),
        ({"output_video": {"start": 100, "end": 200}}, ValidationIssue.RECOVERY_OUTSIDE_FUTURE),
        ({"output_image": 40}, ValidationIssue.RECOVERY_OUTSIDE_FUTURE),
        (
            {"answer": "Resume the reach and grasp the bottle. <video_gen>"},
            ValidationIssue.MISSING_PLACEHOLDER,
        ),
        ({"answer": "Resume. <video_gen> <image_recall> <audio_clip>"}, ValidationIssue.UNKNOWN_PLACEHOLDER),
        ({"repeat_count": 2}, ValidationIssue.SCHEMA_INVALID),
    ],
)
def test_fault_validators_reject_for_the_right_reason(
    catalog: IntentCatalog, changes: dict, reason: str
) -> None:
    result = fault(catalog, **changes)
    assert not isinstance(result, list), "a bad response became a sample"
    assert result.reason == reason, result.message


def test_unparsable_answer_is_rejected(catalog: IntentCatalog) -> None:
    rec = response(catalog, "robot_fault_recovery", FAULT, ROBOT, [], None)
    rec["raw_text"] = "I think the robot stalls"
    assert validate(catalog, rec).reason == ValidationIssue.UNPARSABLE


def gui(catalog: IntentCatalog, intent: str, output: Any, seed: int = 0) -> Any:
    pool = [
        {
            "source": "bundled",
            "description": "Set the due date of a Trello card",
            "actions": ["click 'Dates'"],
        }
    ]
    stage = SynthesizeStage(
        RouteConfig.omni("replay:unused.jsonl"), catalog=catalog, distractor_pool=pool, seed=seed
    )
    item = synth_item(GUI_TASK, GUI_STREAM, GUI_ANCHORS, catalog.get(intent))
    ctx, schema, _ = stage.prepare(item, catalog.get(intent))
    rec = response(catalog, intent, GUI_TASK, GUI_STREAM, GUI_ANCHORS, output)
    rec.update(context=ctx, schema=schema)
    return ctx, validate(catalog, rec)


def test_gui_reconstruction_permutation_checks(catalog: IntentCatalog) -> None:
    ctx, _ = gui(catalog, "gui_task_reconstruction", {})
    truth, [distractor] = ctx["answer_order"], ctx["distractor_labels"]
    assert len(truth) == 2 and set(ctx["labels"]) == {*truth, distractor}
    base = {
        "distractors": [distractor],
        "reconstructed_goal": "Open display settings and turn on night light",
        "reasoning": "Both fragments act on the Windows display settings.",
    }
    _, ok = gui(catalog, "gui_task_reconstruction", {**base, "ordered_labels": truth})
    assert isinstance(ok, list), ok
    cases = {
        ValidationIssue.WRONG_ORDER: truth[::-1],
        ValidationIssue.DISTRACTOR_IN_SOLUTION: [*truth, distractor],
        ValidationIssue.MISSING_FRAGMENT: truth[:1],
        ValidationIssue.INVALID_PERMUTATION: [truth[0], truth[0], truth[1]],
        ValidationIssue.INVALID_LABEL: [*truth, "Z"],
    }
    for reason, labels in cases.items():
        _, bad = gui(catalog, "gui_task_reconstruction", {**base, "ordered_labels": labels})
        assert not isinstance(bad, list) and bad.reason == reason, (reason, bad)


def test_gui_reconstruction_is_deterministic_per_seed(catalog: IntentCatalog) -> None:
    a, _ = gui(catalog, "gui_task_reconstruction", {})
    b, _ = gui(catalog, "gui_task_reconstruction", {})
    assert a["fragments"] == b["fragments"] and a["answer_order"] == b["answer_order"]
    # and the seed is what decides it: other seeds shuffle the fragments into other orders
    orders = {
        tuple(f["description"] for f in gui(catalog, "gui_task_reconstruction", {}, seed=s)[0]["fragments"])
        for s in range(8)
    }
    assert len(orders) > 1


def test_claimed_click_on_an_app_never_seen_is_flagged(catalog: IntentCatalog) -> None:
    good = {
        "goal": "Open display settings and turn on night light",
        "actions": [
            {"step": 0, "type": "click", "x": 0.97, "y": 0.97, "target": "Action Centre", "text": ""},
            {"step": 2, "type": "click", "x": 0.93, "y": 0.53, "target": "Go to Settings", "text": ""},
        ],
    }
    _, ok = gui(catalog, "gui_action_extraction", good)
    assert isinstance(ok, list), ok
    bad = copy.deepcopy(good)
    bad["actions"][1]["target"] = "Spotify"
    _, rej = gui(catalog, "gui_action_extraction", bad)
    assert rej.reason == ValidationIssue.UNGROUNDED_ACTION and "Spotify" in rej.message
    far = copy.deepcopy(good)
    far["actions"][0].update(x=0.2, y=0.2)
    _, rej = gui(catalog, "gui_action_extraction", far)
    assert rej.reason == ValidationIssue.UNGROUNDED_ACTION and "near" in rej.message


@pytest.mark.parametrize(
    ("fragments", "reason"),
    [
        ([(0, 2), (3, 3)], None),
        ([(0, 2), (2, 3)], ValidationIssue.FRAGMENTS_OVERLAP),
        ([(0, 1), (3, 3)], ValidationIssue.FRAGMENTS_GAP),
        ([(0, 2)], ValidationIssue.FRAGMENTS_INCOMPLETE),
    ],
)
def test_decomposition_fragments_contiguous(
    catalog: IntentCatalog, fragments: list, reason: str | None
) -> None:
    labels = ["open display settings", "turn on night light"]
    out = {
        "structure": "sequential",
        "fragments": [
            {"start": s, "end": e, "subtask": labels[min(k, 1)]} for k, (s, e) in enumerate(fragments)
        ],
    }
    _, result = gui(catalog, "gui_task_decomposition", out)
    if reason is None:
        assert isinstance(result, list), result
    else:
        assert result.reason == reason, result.message


def test_ungrounded_text_is_flagged(catalog: IntentCatalog) -> None:
    out = {
        "distractors": [],
        "ordered_labels": [],
        "reconstructed_goal": "Book a flight to Paris with loyalty miles",
        "reasoning": "These are travel booking steps",
    }
    ctx, _ = gui(catalog, "gui_task_reconstruction", {})
    out.update(ordered_labels=ctx["answer_order"], distractors=ctx["distractor_labels"])
    _, rej = gui(catalog, "gui_task_reconstruction", out)
    assert rej.reason == ValidationIssue.UNGROUNDED_TEXT


def test_frames_out_of_order(catalog: IntentCatalog) -> None:
    seg = {
        "id": "stream:v/cand-seg",
        "stream_id": "stream:v",
        "kind": "dynamic_segment",
        "camera": "video",
        "fps": 24.0,
        "frame_count": 282,
        "span": {"start": 10, "end": 200, "t_start": 0.4, "t_end": 8.3},
        "frames": [20, 60, 100, 140, 180],
        "why": "motion",
        "payload": {},
    }
    stream = {"id": "stream:v", "modality": "video", "fps": 24.0, "frame_count": 282, "metadata": {}}
    out = {
        "question": "Where does the person go next?",
        "answer": "Toward the door on the left.",
        "reasoning": "The camera turns left.",
        "input_frames": [140, 180],
        "output_frames": [20],
    }
    rej = validate(catalog, response(catalog, "vln_navigation", seg, stream, [], out))
    assert rej.reason == ValidationIssue.FRAMES_OUT_OF_ORDER
    out.update(input_frames=[20, 60], output_frames=[140, 180])
    assert isinstance(validate(catalog, response(catalog, "vln_navigation", seg, stream, [], out)), list)


def test_validator_registry_refuses_duplicates() -> None:
    assert {"schema", "inside", "permutation", "grounded_actions"} <= set(validator_names())
    with pytest.raises(ConfigError, match="already registered"):
        register_validator("inside")(lambda output, ctx: [])


def test_too_little_text_is_flagged(catalog: IntentCatalog) -> None:
    result = fault(catalog, question="10.27, answer: ")
    # "10.27, answer: " is also no question, the more severe failure: it names the reject, and the
    # length failure is kept beside it
    assert result.reason == ValidationIssue.NOT_A_QUESTION
    reasons = [f["reason"] for f in result.detail["failures"]]
    assert reasons[0] == "not_a_question" and "too_little_text" in reasons
    assert result.message.startswith("question_form: question: not a question")
