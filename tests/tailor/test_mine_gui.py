"""GUI multi-event filtering (A.3.2 Stage 1) and initial subtask proposal (Stage 2)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataclaw.tailor.anchors.base import Anchor, make_anchor
from dataclaw.tailor.mine import CandidateKind, StreamView
from dataclaw.tailor.mine_gui import (
    GuiTasks,
    MultiEvent,
    action_events,
    gather_signals,
    instruction_goals,
    propose_subtasks,
    repeated_pattern,
)

SID = "stream:gui-00000000"


def act(t: float, kind: str, **payload: Any) -> Anchor:
    return make_anchor(SID, t, kind, "gui", payload)


def window(t: float, name: str) -> Anchor:
    return make_anchor(SID, t, "window_change", "gui", {"window": name})


def view(instruction: str) -> StreamView:
    return StreamView(
        id=SID, modality="gui", fps=30.0, frame_count=30 * 60, duration=60.0, instruction=instruction
    )


def classify(instruction: str, anchors: list[Anchor]) -> tuple[MultiEvent, Any]:
    events = action_events(anchors)
    sig = gather_signals(instruction, anchors, events)
    return sig.classify(), sig


def test_instruction_goals() -> None:
    goals = instruction_goals("Open the settings, adjust the brightness to 78, then turn on night light.")
    assert goals == ["Open the settings", "adjust the brightness to 78", "turn on night light"]
    assert instruction_goals("What a nice day") == []


def test_repeated_pattern_needs_two_kinds_three_times() -> None:
    kinds = ["click", "typing", "click", "typing", "click", "typing", "key"]
    gram, starts = repeated_pattern(kinds)  # type: ignore[misc]
    assert set(gram) == {"click", "typing"} and len(starts) == 3
    assert repeated_pattern(["click"] * 10) is None  # only one kind: not a repeated *operation*


def test_single_goal_is_none() -> None:
    anchors = [act(1.0, "click", target={"title": "Search"}), act(2.0, "typing", text="weather")]
    cls, _sig = classify("Search for the weather", anchors)
    assert cls is MultiEvent.NONE
    assert GuiTasks().mine(view("Search for the weather"), anchors) == []
    (kept,) = GuiTasks(keep_single=True).mine(view("Search for the weather"), anchors)
    assert kept.payload["multi_event"] == "none" and kept.payload["subtasks"] == []


def sequential_case() -> tuple[str, list[Anchor]]:
    text = "First open the report in Excel, then email it to Bob"
    anchors = [
        window(0.0, "Excel"),
        act(1.0, "click", target={"title": "File"}),
        act(2.0, "click", target={"title": "Open"}),
        act(3.0, "typing", text="report.xlsx"),
        window(20.0, "Outlook"),
        act(21.0, "click", target={"title": "New mail"}),
        act(22.0, "typing", text="bob@example.com"),
        act(23.0, "click", target={"title": "Send"}),
    ]
    return text, anchors


def test_sequential_task_split_at_the_app_switch() -> None:
    text, anchors = sequential_case()
    cls, sig = classify(text, anchors)
    assert cls is MultiEvent.SEQUENTIAL
    assert sig.sequential_markers == ["First", "then"] and sig.crosses_contexts
    (cand,) = GuiTasks().mine(view(text), anchors)
    assert cand.kind is CandidateKind.GUI_TASK
    frags = cand.payload["subtasks"]
    assert [f["event_range"] for f in frags] == [[0, 2], [3, 5]]
    assert [f["label"] for f in frags] == ["open the report in Excel", "email it to Bob"]
    assert "sequential_markers" in cand.payload["signals"] and cand.why.startswith("sequential:")
    assert set(cand.anchor_ids) >= {a.id for a in anchors if a.kind != "window_change"}
    assert cand.span is not None and cand.span.start == 30 and cand.t_end == pytest.approx(23.0)


def parallel_case() -> tuple[str, list[Anchor]]:
    text = "Rename each of the three files and add a star to them"
    anchors: list[Anchor] = []
    for i, name in enumerate(["a.txt", "b.txt", "c.txt"]):
        anchors += [
            act(10.0 * i + 1, "right_click", target={"title": name}),
            act(10.0 * i + 2, "click", target={"title": "Rename"}),
            act(10.0 * i + 3, "typing", text=f"new_{name}"),
        ]
    return text, anchors


def test_parallel_task_split_per_object() -> None:
    text, anchors = parallel_case()
    cls, sig = classify(text, anchors)
    assert cls is MultiEvent.PARALLEL and sig.pattern is not None
    frags = propose_subtasks(action_events(anchors), sig, cls)
    assert [f["event_range"] for f in frags] == [[0, 2], [3, 5], [6, 8]]
    assert [f["label"] for f in frags] == ["repeat on a.txt", "repeat on b.txt", "repeat on c.txt"]


def test_hybrid_task_stages_then_repetitions() -> None:
    text = "First open the folder in Explorer, then rename each file"
    anchors = [
        window(0.0, "Explorer"),
        act(1.0, "double_click", target={"title": "Docs"}),
        window(5.0, "Docs"),
    ]
    for i, name in enumerate(["a.txt", "b.txt", "c.txt"]):
        anchors += [
            act(10.0 + 5 * i, "right_click", target={"title": name}),
            act(11.0 + 5 * i, "typing", text=name),
        ]
    cls, sig = classify(text, anchors)
    assert cls is MultiEvent.HYBRID
    frags = propose_subtasks(action_events(anchors), sig, cls)
    assert frags[0]["event_range"] == [0, 0] and frags[0]["structure"] == "sequential"
    assert [f["index"] for f in frags] == list(range(len(frags)))
    assert [f["structure"] for f in frags[1:]] == ["parallel"] * 3


@pytest.mark.parametrize("case", [sequential_case, parallel_case])
def test_fragments_are_contiguous_non_overlapping_and_complete(case: Any) -> None:
    """A.3.4: fragments continuous, non-overlapping, collectively covering the trajectory."""
    text, anchors = case()
    events = action_events(anchors)
    cls, sig = classify(text, anchors)
    frags = propose_subtasks(events, sig, cls)
    covered = [i for f in frags for i in range(f["event_range"][0], f["event_range"][1] + 1)]
    assert covered == list(range(len(events)))
    assert [f["index"] for f in frags] == list(range(len(frags)))


def test_phase_changes_from_ocr_turnover() -> None:
    """Screenshots whose text changes completely count as phase changes (trajectories have no video)."""
    ocr = [
        make_anchor(SID, 0.0, "ocr_text", "ocr", {"text": "Inbox Compose Drafts Sent"}, confidence=0.9),
        make_anchor(
            SID, 1.0, "ocr_text", "ocr", {"text": "Inbox Compose Drafts Sent Archive"}, confidence=0.9
        ),
        make_anchor(
            SID, 2.0, "ocr_text", "ocr", {"text": "Spreadsheet Formula Column Format"}, confidence=0.9
        ),
    ]
    anchors = [*ocr, act(0.0, "click"), act(1.0, "click"), act(2.0, "typing", text="x")]
    _cls, sig = classify("Open the inbox and format the spreadsheet", anchors)
    assert [a.t for a in sig.phase_changes] == [2.0]


KINDS = ["click", "typing", "scroll", "shortcut", "right_click"]
INSTRUCTIONS = [
    "Open the file",
    "First open the file, then rename it and finally send it to Ann",
    "Rename each of the files",
    "Open Excel, format the header, fix the typo, then save it and close the window",
]


@settings(max_examples=150, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(KINDS), min_size=2, max_size=40),
    gaps=st.lists(st.floats(0.1, 30.0), min_size=40, max_size=40),
    windows=st.lists(st.sampled_from(["Excel", "Chrome", "Outlook"]), min_size=40, max_size=40),
    switch_every=st.integers(1, 50),
    instruction=st.sampled_from(INSTRUCTIONS),
)
def test_proposed_fragments_always_partition_the_actions(
    kinds: list[str], gaps: list[float], windows: list[str], switch_every: int, instruction: str
) -> None:
    """A.3.4's structure rules hold for any trajectory: fragments are contiguous, non-overlapping and
    cover every action exactly once, in order; single-goal trajectories get no fragments."""
    anchors: list[Anchor] = []
    t = 0.0
    for i, kind in enumerate(kinds):
        if i % switch_every == 0:
            anchors.append(window(t, windows[i]))
        t += gaps[i]
        anchors.append(act(t, kind, target={"title": f"item {i % 3}"}))
    events = action_events(anchors)
    sig = gather_signals(instruction, anchors, events)
    cls = sig.classify()
    frags = propose_subtasks(events, sig, cls)
    if cls is MultiEvent.NONE:
        assert frags == []
        return
    covered = [i for f in frags for i in range(f["event_range"][0], f["event_range"][1] + 1)]
    assert covered == list(range(len(events)))
    assert all(f["t_start"] <= f["t_end"] for f in frags)
    assert [f["t_start"] for f in frags] == sorted(f["t_start"] for f in frags)
    assert sum(len(f["anchor_ids"]) for f in frags) == len(events)
    assert [f["index"] for f in frags] == list(range(len(frags)))
