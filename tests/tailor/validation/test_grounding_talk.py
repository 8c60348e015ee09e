"""anchor_agreement against what was said and typed (issue 27): transcript and slide anchors of lecture
segments, the GUI event log's typing, and the window log the gui_task miner now attaches.

Negative fixtures are real answers: ``data/lecture_responses.jsonl`` holds every answer of ``dataclaw
tailor run examples/lectures -i interleaved_lesson --model local:smollm2-135m --max-per-kind 6
--text-only-evidence`` (the embedded model; six segments of the MaViLS cryptocurrency lecture). Each
names as its key concept the lecture's title ("crypto", "cryptocurrency", "crypto-123"), which none of
the segments says. Positive fixtures are careful answers to the same requests, written from the slide
text and the transcript; they must pass the whole validate stage, not only the gate.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from dataclaw.tailor.anchors.base import make_anchor
from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.mining.base import StreamView
from dataclaw.tailor.mining.gui import GuiTasks
from dataclaw.tailor.validation.base import ValidationIssue, run_validator
from dataclaw.tailor.validation.stage import ValidateStage

HERE = Path(__file__).parent
LESSON = {"fields": ["key_concept", "question", "steps[]"]}


@pytest.fixture(scope="module")
def lessons() -> dict[str, dict[str, Any]]:
    records = [json.loads(x) for x in (HERE / "data" / "lecture_responses.jsonl").read_text().splitlines()]
    assert all(r["model"] == "local:smollm2-135m" and r["intent"] == "interleaved_lesson" for r in records)
    return {r["id"][-8:]: r for r in records}


def _messages(output: dict[str, Any], ctx: dict[str, Any], **params: Any) -> list[str]:
    return [f.message for f in run_validator("anchor_agreement", output, ctx, {**LESSON, **params})]


def test_every_recorded_lesson_names_a_concept_its_segment_never_says(
    lessons: dict[str, dict[str, Any]],
) -> None:
    for rid, rec in lessons.items():
        fails = run_validator("anchor_agreement", rec["output"], rec["context"], LESSON)
        assert [(f.reason, f.message.split(":", 1)[0]) for f in fails] == [
            (ValidationIssue.CONTRADICTS_ANCHOR, "key_concept")
        ], rid
    assert _messages(lessons["d901e940"]["output"], lessons["d901e940"]["context"]) == [
        "key_concept: names the concept 'cryptocurrency', which this segment never mentions: no "
        "cryptocurrency in the transcript (30.4–44.0 s) or slide 1's text"
    ]


def test_a_careful_lesson_on_the_same_segment_passes_the_whole_stage(
    lessons: dict[str, dict[str, Any]],
) -> None:
    """Slide index 1 (page 2): "today payment channels recap optimizations: key addition, hash trees
    cross chain swaps"; the lecturer: "We'll recap a little bit. We'll talk about some optimizations,
    one of which is key addition. The other is hash trees. …"."""
    rec = copy.deepcopy(lessons["d901e940"])
    rec["output"] = {
        "key_concept": "payment channel optimizations",
        "question": "Which two optimizations of payment channels does this part of the lecture announce?",
        "steps": [
            "The lecture starts with a recap of payment channels <image_1>.",
            "It names two optimizations: key addition and hash trees.",
            'The lecturer says "we\'ll talk about some optimizations" before cross-chain swaps.',
        ],
    }
    assert _messages(rec["output"], rec["context"]) == []
    result = ValidateStage(IntentCatalog.builtin()).process(rec)
    assert isinstance(result, list), result.detail["failures"]
    assert result[0]["grounding"] == "anchors"
    # the concept may be said in other forms: a stem, or a word that starts another ("commit")
    assert _messages({"key_concept": "hash tree"}, rec["context"]) == []
    assert _messages({"key_concept": "optimization"}, rec["context"]) == []


def test_a_quote_the_segment_never_said_fails_naming_transcript_and_slide(
    lessons: dict[str, dict[str, Any]],
) -> None:
    ctx = lessons["d901e940"]["context"]
    ok = {"steps": ["The lecturer says 'the other is hash trees' and moves on."]}
    assert _messages(ok, ctx) == []
    slide = {"steps": ['The slide lists "key addition, hash trees" as optimizations.']}
    assert _messages(slide, ctx) == []
    made_up = {"steps": ['The lecturer says "proof of stake replaces mining" here.']}
    assert _messages(made_up, ctx) == [
        "steps[0]: quotes 'proof of stake replaces mining', which is not in the transcript (30.4–44.0 s) or "
        "slide 1's text"
    ]
    # gaming: the quote's words scattered over the transcript are not a quotation
    scattered = {"steps": ['He says "recap the hash swaps".']}
    assert _messages(scattered, ctx) != []
    one_word = {"steps": ["The term 'blockchain' is used."]}  # a single quoted word is a term, not a quote
    assert _messages(one_word, ctx) == []


def test_times_and_slides_must_be_this_segment(lessons: dict[str, dict[str, Any]]) -> None:
    ctx = lessons["d901e940"]["context"]  # transcript anchors 30.4–44.0 s, slide index 1 (page 2)
    assert _messages({"steps": ["At 0:35 the lecturer names hash trees."]}, ctx) == []
    assert _messages({"steps": ["At 05:00 the lecturer names hash trees."]}, ctx) == [
        "steps[0]: names the time '05:00' (300 s), but this segment's transcript anchors run 30.4–44.0 s"
    ]
    assert _messages({"steps": ["Around 400 seconds he names hash trees."]}, ctx) != []
    assert _messages({"steps": ["Slide 2 lists the optimizations."]}, ctx) == []
    assert _messages({"steps": ["Slide 1 lists the optimizations."]}, ctx) == []  # the index the prompt gave
    assert _messages({"steps": ["Slide 7 lists the optimizations."]}, ctx) == [
        "steps[0]: names slide 7, but the slide anchor of this segment is slide 1 (page 2)"
    ]


def test_without_transcript_or_slide_text_nothing_is_checked(lessons: dict[str, dict[str, Any]]) -> None:
    ctx = copy.deepcopy(lessons["d901e940"]["context"])
    ctx["lecture"] = {"title": "cryptocurrency", "slide": 1, "slide_text": "", "transcript": ""}
    ctx["facts"] = []
    out = {"key_concept": "crypto", "steps": ['He says "proof of stake" at 05:00 on slide 7.']}
    assert _messages(out, ctx) == []


# ------------------------------------------------------------------------------------------------
# GUI: typing and the window log


def _gui_ctx() -> dict[str, Any]:
    """The AgentNetBench Spotify trajectory's typing events as the request context has them."""
    events = [
        {"i": 0, "kind": "click", "t": 0.0, "target": "Search", "text": ""},
        {"i": 1, "kind": "typing", "t": 1.0, "target": "", "text": "SPOTIFY"},
        {"i": 2, "kind": "key", "t": 2.0, "target": "", "text": "enter"},
        {"i": 3, "kind": "typing", "t": 4.0, "target": "", "text": "VAMPIRE WEEKEND"},
    ]
    return {
        "stream": {"modality": "trajectory"},
        "task": "Find Vampire Weekend on Spotify.",
        "events": events,
    }


def test_typed_text_the_event_log_never_typed_fails_naming_the_typing_events() -> None:
    ctx, params = _gui_ctx(), {"fields": ["goal"]}

    def fails(goal: str) -> list[str]:
        return [f.message for f in run_validator("anchor_agreement", {"goal": goal}, ctx, params)]

    assert fails("Type 'SPOTIFY' in the search bar, then search for 'Vampire Weekend'") == []
    assert fails("Type 'THE BEATLES' into the search bar") == [
        "goal: says it types 'THE BEATLES', but the GUI event log types only [1] at 1.00 s 'SPOTIFY'; "
        "[3] at 4.00 s 'VAMPIRE WEEKEND' (typing events) and no screen text shows it"
    ]
    assert fails('Search for "Weekend" and play it') == []  # part of what was typed
    quiet = {**ctx, "events": [e for e in ctx["events"] if e["kind"] != "typing"]}
    goal = {"goal": "Type 'THE BEATLES'"}
    assert run_validator("anchor_agreement", goal, quiet, params) == []  # nothing typed: no contradiction


def test_the_gui_miner_attaches_the_window_log_its_actions_ran_under() -> None:
    """The OpenCUA recording's window log (examples/opencua_recording/top_window.jsonl): a window opened
    before the first action, the ones during the actions, none after the last."""
    sid = "stream:gui-00000000"

    def anchor(t: float, kind: str, **payload: Any):
        return make_anchor(sid, t, kind, "gui", payload)

    before = anchor(0.07, "window_change", window="agentnet-annotator")
    explorer = anchor(1.69, "window_change", window="explorer")
    during = anchor(11.21, "window_change", window="ApplicationFrameHost")
    after = anchor(90.0, "window_change", window="Notepad")
    actions = [
        anchor(3.0, "click", target={"title": "Action Centre"}),
        anchor(6.0, "right_click", target={"title": "Night light"}),
        anchor(12.0, "click", target={"title": "Go to Settings"}),
        anchor(20.0, "click", target={"title": "125%"}),
    ]
    view = StreamView(id=sid, modality="gui", fps=30.0, frame_count=3000, duration=100.0,
                      instruction="Open the display settings, then change the scale to 125%")  # fmt: skip
    (cand,) = GuiTasks().mine(view, [before, explorer, *actions, during, after])
    windows = [a for a in (before, explorer, during, after) if a.id in cand.anchor_ids]
    assert windows == [explorer, during]


@pytest.fixture(scope="module")
def gui() -> dict[str, dict[str, Any]]:
    """Every answer of ``dataclaw tailor run <shared data>/opencua/agentnetbench examples/opencua_recording
    -i gui_action_extraction -i gui_task_reconstruction --model local:smollm2-135m --text-only-evidence``
    (none accepted), with the request contexts the pipeline built."""
    records = [json.loads(x) for x in (HERE / "data" / "gui_responses.jsonl").read_text().splitlines()]
    return {r["id"][-8:]: r for r in records}


def test_the_recordings_window_log_reaches_the_request_and_an_app_claim_is_checked_against_it(
    gui: dict[str, dict[str, Any]],
) -> None:
    ctx = gui["695eb9b9"]["context"]  # gui_action_extraction on examples/opencua_recording
    windows = [f["text"] for f in ctx["facts"] if f["kind"] == "window_change"]
    assert windows == ["explorer", "ShellExperienceHost", "ApplicationFrameHost"]  # attached by the miner
    params = {"fields": ["goal"]}
    fails = run_validator(
        "anchor_agreement", {"goal": "In Excel, set the display scale to 125%"}, ctx, params
    )
    assert [f.message for f in fails] == [
        "goal: names the application Excel, which no anchor shows; the anchors show Settings (the task "
        "anchor); windows explorer, ShellExperienceHost, ApplicationFrameHost (window_change anchors)"
    ]
    assert (
        run_validator("anchor_agreement", {"goal": "Open Settings and set the scale to 125%"}, ctx, params)
        == []
    )
    assert (
        run_validator("anchor_agreement", gui["695eb9b9"]["output"], ctx, params) == []
    )  # its goal claims nothing


def test_a_real_trajectorys_typing_is_what_typed_text_is_checked_against(
    gui: dict[str, dict[str, Any]],
) -> None:
    ctx = gui["64a08ccc"]["context"]  # AgentNetBench: select text in Overleaf, ask ChatGPT to polish it
    params = {"fields": ["goal"]}

    def fails(goal: str) -> list[str]:
        return [f.message for f in run_validator("anchor_agreement", {"goal": goal}, ctx, params)]

    assert fails("Type 'help me polish this' in ChatGPT and paste the answer into background.tex") == []
    assert fails("Type 'summarize this paragraph' in ChatGPT") == [
        "goal: says it types 'summarize this paragraph', but the GUI event log types only [3] at 3.00 s "
        "'help me polish this: '' (typing events) and no screen text shows it"
    ]
