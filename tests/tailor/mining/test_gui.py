"""GUI multi-event filtering (A.3.2 Stage 1) and initial subtask proposal (Stage 2)."""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dataclaw.tailor.anchors import extract_anchors
from dataclaw.tailor.anchors.base import Anchor, make_anchor
from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.mining.base import StreamView
from dataclaw.tailor.mining.gui import (
    GuiTasks,
    MultiEvent,
    action_events,
    gather_signals,
    instruction_goals,
    propose_subtasks,
    repeated_pattern,
)
from dataclaw.tailor.mining.stage import stream_view
from dataclaw.tailor.records import CandidateKind
from dataclaw.tailor.streams import Stream, StreamSource, open_source
from dataclaw.tailor.synthesis.context import build_context
from dataclaw.tailor.synthesis.fragments import (
    DISTRACTORS,
    POINTER_KINDS,
    fragment_features,
    load_distractors,
    pick_distractors,
    run_distractors,
    shown_features,
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


# ------------------------------------------------------------------------------------------------
# anchors the miner has: AgentNet meta_info and low-level instructions, whole file names and e-mails


def test_clause_splitter_keeps_file_names_emails_and_numbers_whole() -> None:
    goals = instruction_goals("send report.final.pdf to a.b@c.com, then archive it")
    assert goals == ["send report.final.pdf to a.b@c.com", "archive it"]
    assert instruction_goals("Open https://www.example.org/a.html. Then save 1,000 rows") == [
        "Open https://www.example.org/a.html",
        "save 1,000 rows",
    ]
    # the real AgentNet instruction: the file name is part of the goal, not a clause boundary
    real = (
        "Please select the sentences in the 'background.tex' file in Overleaf, starting from \"Depending "
        'on" to the end of the paragraph. Then, request ChatGPT to polish them and paste the revised '
        "sentences back into the 'background.tex' file in Overleaf."
    )
    assert (
        instruction_goals(real)[0] == "Please select the sentences in the 'background.tex' file in Overleaf"
    )


def _trajectory(folder: Path) -> tuple[StreamView, list[Anchor], Stream]:
    [stream] = [s for s in open_source(folder) if isinstance(s, Stream)][:1]
    with StreamSource(stream) as source:
        anchors = extract_anchors(stream, source, ["gui"])
    return stream_view(stream), anchors, stream


def agentnet_copy(shared_data: Path, tmp_path: Path, task: str, meta_info: dict | None) -> Path:
    """One real AgentNetBench trajectory (publisher's file, images) with ``meta_info`` set or removed."""
    src = shared_data / "opencua/agentnetbench"
    folder = tmp_path / "agentnet"
    (folder / "images").mkdir(parents=True)
    data = json.loads((src / f"{task}.json").read_text())
    data.pop("meta_info", None)
    if meta_info is not None:
        data["meta_info"] = meta_info
    (folder / f"{task}.json").write_text(json.dumps(data))
    for step in data["steps"]:
        shutil.copy(src / "images" / step["image"], folder / "images" / step["image"])
    return folder


SPOTIFY = "s_7f27a11115e596eb"  # real meta_info: websites spotify, google; multi_application_or_website
OVERLEAF = "s_5473959e0f6e21f7"  # no meta_info in the publisher's sample


def test_agentnet_meta_info_and_low_level_instructions_place_actions(shared_data: Path) -> None:
    view_, anchors, stream = _trajectory_of(shared_data, SPOTIFY)
    assert stream.metadata["meta_info"]["websites"] == ["spotify", "google"]
    first = next(a for a in anchors if a.kind == "click")
    assert first.payload["instruction"].startswith("Click on the search bar")
    events = action_events(anchors)
    sig = gather_signals(view_.instruction or "", anchors, events, view_.metadata)
    assert sig.declared == ["spotify", "google"] and sig.declared_multi is True
    # step 0 searches Google; step 1 types 'SPOTIFY' there (typed text is not a place); step 2 (the
    # publisher's step_num 3) opens Spotify, where the rest happens
    places = dict(zip((e.payload["step"] for e in events), sig.per_event, strict=True))
    assert [places[s] for s in (0, 1, 2, 10)] == ["google", "google", "spotify", "spotify"]
    assert sig.crosses_contexts and "context_switches" in sig.fired()
    blind = gather_signals(view_.instruction or "", anchors, events, None)
    assert not blind.crosses_contexts and "context_switches" not in blind.fired()


def _trajectory_of(shared_data: Path, task: str) -> tuple[StreamView, list[Anchor], Stream]:
    for stream in open_source(shared_data / "opencua/agentnetbench"):
        if isinstance(stream, Stream) and stream.metadata["task_id"] == task:
            with StreamSource(stream) as source:
                return stream_view(stream), extract_anchors(stream, source, ["gui"]), stream
    raise AssertionError(task)


OVERLEAF_META = {
    "applications": ["Overleaf", "ChatGPT"],
    "websites": [],
    "system": "Darwin",
    "complexity": {"multi_application_or_website": True, "complexity_score": 4},
    "domain": "Office",
}


def test_meta_info_makes_a_trajectory_multi_event_and_names_fragment_apps(
    shared_data: Path, tmp_path: Path
) -> None:
    """The Overleaf trajectory with meta_info in AgentNet's shape: without it two goals and a marker
    fire; with it the context switch (Overleaf -> ChatGPT -> Overleaf, from the low-level instructions)
    fires too, and each fragment names its application."""
    folder = agentnet_copy(shared_data, tmp_path, OVERLEAF, OVERLEAF_META)
    view_, anchors, _ = _trajectory(folder)
    (cand,) = GuiTasks().mine(view_, anchors)
    assert "context_switches" in cand.payload["signals"]
    assert cand.payload["declared_contexts"] == ["Overleaf", "ChatGPT"]
    assert "ChatGPT" in cand.payload["contexts"] and "2 declared (Overleaf, ChatGPT)" in cand.why
    assert {f["app"] for f in cand.payload["subtasks"]} <= {"Overleaf", "ChatGPT"}
    assert any(f["app"] for f in cand.payload["subtasks"])
    (off,) = GuiTasks(use_meta_info=False).mine(view_, anchors)
    assert "context_switches" not in off.payload["signals"]
    assert off.id != cand.id, "use_meta_info changes the output, so it is part of the candidate id"
    again = agentnet_copy(shared_data, tmp_path / "plain", OVERLEAF, None)
    (plain,) = GuiTasks().mine(*_trajectory(again)[:2])
    assert "context_switches" not in plain.payload["signals"] and plain.payload["declared_contexts"] == []


# ------------------------------------------------------------------------------------------------
# distractors: one format, a larger pool, other trajectories first

TIME_OR_INDEX = re.compile(r"\[\d+\]|\d+\.\d\d s\b|\(\d\.\d{3}, \d\.\d{3}\)")
LINE = re.compile(r"^(Fragment [A-Z]( \([^)]+\))?:|  - \S.*)$")


def blocks(ctx: dict[str, Any]) -> dict[str, list[str]]:
    """Fragment label -> its rendered lines."""
    out: dict[str, list[str]] = {}
    for line in ctx["fragment_lines"]:
        if line.startswith("Fragment "):
            label = line.split()[1].rstrip(":")
            out[label] = []
        out[label].append(line)
    return out


def form(lines: list[str]) -> tuple[bool, bool, bool]:
    """What a fragment's lines look like: app in the header, an instruction on every step, a quoted
    target on some pointer action."""
    steps = lines[1:]
    pointer = [a for s in steps for a in s[4:].split(" — ")[0].split("; ") if a.split()[0] in POINTER_KINDS]
    return ("(" in lines[0], all(" — " in s for s in steps), any("'" in a for a in pointer))


def one_form(frags: dict[str, list[str]]) -> bool:
    """Every fragment has the same header and step form (targets: see the tests)."""
    return len({form(lines)[:2] for lines in frags.values()}) == 1


def reconstruction_ctx(
    cand: Any, stream: Stream, anchors: list[Anchor], pool: list[dict[str, Any]], seed: int = 0
) -> dict[str, Any]:
    intent = IntentCatalog.builtin().get("gui_task_reconstruction")
    return build_context(
        intent,
        cand.model_dump(mode="json"),
        stream.model_dump(mode="json"),
        [a.model_dump(mode="json") for a in anchors],
        seed=seed,
        distractor_pool=pool,
    )


def test_bundled_distractors_load_whole() -> None:
    """No entry is cut at an unquoted '#' (YAML would read the rest as a comment): every '#' outside the
    comment lines survives in a parsed value; the pool is large and in the fragment structure."""
    raw = DISTRACTORS.read_text(encoding="utf-8")
    data = yaml.safe_load(raw)

    def strings(x: Any) -> list[str]:
        if isinstance(x, dict):
            return [s for v in x.values() for s in strings(v)]
        if isinstance(x, list):
            return [s for v in x for s in strings(v)]
        return [x] if isinstance(x, str) else []

    body = [line for line in raw.splitlines() if not line.lstrip().startswith("#")]
    assert sum(line.count("#") for line in body) == sum(s.count("#") for s in strings(data))
    pool = load_distractors()
    assert "Mute notifications of the #random channel" in {f["description"] for f in pool}
    assert len(pool) >= 20 and all(f["source"] == "bundled" and f["app"] and f["steps"] for f in pool)
    assert all({"app", "notes"} <= fragment_features(f) for f in pool)
    pointing = [f for f in pool if any(a["kind"] in POINTER_KINDS for s in f["steps"] for a in s["actions"])]
    assert all("targets" in fragment_features(f) for f in pointing) and len(pointing) >= 20


def test_distractors_render_exactly_like_genuine_fragments(shared_data: Path, tmp_path: Path) -> None:
    """AgentNet trajectory (apps, low-level instructions, no targets) mixed with a fragment of another
    trajectory of the input set and bundled ones: every fragment has the same form, and no line carries
    a time, an event number or coordinates (they would give the order away)."""
    folder = agentnet_copy(shared_data, tmp_path, OVERLEAF, OVERLEAF_META)
    view_, anchors, stream = _trajectory(folder)
    (cand,) = GuiTasks().mine(view_, anchors)
    other_folder = agentnet_copy(shared_data, tmp_path / "other", SPOTIFY, None)
    _, other_anchors, other_stream = _trajectory(other_folder)
    other = GuiTasks(keep_single=True).mine(stream_view(other_stream), other_anchors)[0]
    sub = {"index": 0, "label": "play a song", "app": "spotify"}
    sub["anchor_ids"] = [a.id for a in action_events(other_anchors)][:6]
    other = other.model_copy(update={"payload": {**other.payload, "subtasks": [sub]}})
    run_pool = run_distractors(
        [other.model_dump(mode="json")], {a.id: a.model_dump(mode="json") for a in other_anchors}
    )
    ctx = reconstruction_ctx(cand, stream, anchors, run_pool + load_distractors())
    frags = blocks(ctx)
    assert len(frags) == len(cand.payload["subtasks"]) + 3
    sources = {f["label"]: f.get("source") for f in ctx["fragments"]}
    assert other_stream.id in sources.values(), "another trajectory of the input set is drawn first"
    assert all(LINE.match(line) for line in ctx["fragment_lines"]), ctx["fragment_lines"]
    assert not any(TIME_OR_INDEX.search(line) for line in ctx["fragment_lines"])
    assert one_form(frags), frags
    assert {form(lines)[:2] for lines in frags.values()} == {(True, True)}  # apps and instructions shown
    assert not any(form(lines)[2] for lines in frags.values()), "AgentNet steps name no targets: none shown"
    genuine = [lines for label, lines in frags.items() if label not in ctx["distractor_labels"]]
    assert any("Click on the ChatGPT application icon" in line for lines in genuine for line in lines)
    # a step's actions on one line, in the order done: type the request, then press enter
    assert any(line.startswith("  - typing text='SPOTIFY'; key enter — ") for line in ctx["fragment_lines"])


def test_recording_fragments_and_distractors_share_a_form(shared_data: Path) -> None:
    """A raw recording (targets, no instructions, window names): bundled distractors drop what the
    genuine fragments lack and keep what they all have."""
    [stream] = [s for s in open_source(shared_data / "opencua/raw_recording") if isinstance(s, Stream)]
    with StreamSource(stream) as source:
        anchors = extract_anchors(stream, source, ["gui"])
    (cand,) = GuiTasks().mine(stream_view(stream), anchors)
    for seed in range(3):
        ctx = reconstruction_ctx(cand, stream, anchors, load_distractors(), seed=seed)
        frags = blocks(ctx)
        assert one_form(frags), frags
        assert not any(" — " in line or TIME_OR_INDEX.search(line) for line in ctx["fragment_lines"])
        shown = {label: form(lines)[2] for label, lines in frags.items()}
        assert all(shown[label] for label in ctx["distractor_labels"]), "targets shown, as recorded"
        assert sum(shown.values()) > len(ctx["distractor_labels"]), "genuine clicks name their targets"


def frag(source: str, notes: bool = True, app: str | None = "Excel") -> dict[str, Any]:
    return {
        "source": source,
        "app": app,
        "description": f"from {source}",
        "steps": [
            {
                "actions": [{"kind": "click", "target": "OK", "keys": "", "text": ""}],
                "instruction": "Click 'OK'." if notes else None,
            }
        ],
    }


def test_distractors_come_from_other_trajectories_first_then_the_bundled_list() -> None:
    genuine = [frag("mine")]
    bundled = [frag("bundled") for _ in range(5)]
    run = [frag("stream:a"), frag("stream:b"), frag("stream:b"), frag("mine")]
    rng = random.Random(0)
    picked = pick_distractors(run + bundled, genuine, 3, rng, "mine")
    assert sorted(p["source"] for p in picked) == ["stream:a", "stream:b", "stream:b"]
    picked = pick_distractors(run[:1] + bundled + run[3:], genuine, 3, rng, "mine")
    assert [p["source"] for p in picked].count("stream:a") == 1
    assert [p["source"] for p in picked].count("bundled") == 2 and "mine" not in {p["source"] for p in picked}
    # a run fragment that lacks what the genuine ones show (instructions) comes after bundled ones
    picked = pick_distractors([frag("stream:c", notes=False), *bundled], genuine, 2, rng, "mine")
    assert [p["source"] for p in picked] == ["bundled", "bundled"]
    picked = pick_distractors([frag("stream:c", notes=False), *bundled[:1]], genuine, 2, rng, "mine")
    assert sorted(p["source"] for p in picked) == ["bundled", "stream:c"]
    assert shown_features(genuine, picked) == {"app", "targets"}  # nobody shows instructions then
