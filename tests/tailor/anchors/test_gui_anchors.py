"""GUI parser anchors on the real OpenCUA recording and AgentNet trajectories."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataclaw.tailor.anchors import Anchor, extract_anchors, get_extractor
from dataclaw.tailor.anchors.gui import keyboard_anchors
from dataclaw.tailor.streams import Stream, StreamSource, open_source


def _anchors(path: Path) -> list[tuple[Stream, list[Anchor]]]:
    out = []
    for stream in open_source(path):
        assert isinstance(stream, Stream)
        with StreamSource(stream) as source:
            out.append((stream, extract_anchors(stream, source, ["gui"])))
    return out


def test_recording_anchors_follow_the_high_level_actions(shared_data: Path) -> None:
    [(stream, anchors)] = _anchors(shared_data / "opencua/raw_recording")
    mouse = [a for a in anchors if a.kind in ("click", "right_click", "drag", "scroll")]
    assert len(mouse) == 14  # one per reduced action, not one per low-level click
    assert [a.kind for a in mouse[:4]] == ["click", "right_click", "click", "drag"]
    assert mouse[1].payload["target"]["title"] == "Night light"
    assert mouse[0].payload["nx"] == pytest.approx(1328 / 1366, abs=1e-4)
    assert all(a.exact and a.source == "gui" and a.stream_id == stream.id for a in anchors)
    assert all(0 <= a.t <= stream.duration for a in anchors)
    windows = [a.payload["window"] for a in anchors if a.kind == "window_change"]
    assert windows == ["agentnet-annotator", "explorer", "ShellExperienceHost", "ApplicationFrameHost"]
    [shortcut] = [a for a in anchors if a.kind == "shortcut"]
    assert shortcut.payload["combo"] == "alt+ctrl+t"
    assert shortcut.t == pytest.approx(30795.8842823 - 30673.6036902, abs=1e-5)


def test_anchor_ids_are_deterministic_and_unique(shared_data: Path) -> None:
    [(_, first)] = _anchors(shared_data / "opencua/raw_recording")
    [(_, second)] = _anchors(shared_data / "opencua/raw_recording")
    assert [a.id for a in first] == [a.id for a in second]
    assert len({a.id for a in first}) == len(first)


def test_trajectory_anchors_per_step(shared_data: Path) -> None:
    results = dict((s.metadata["task_id"], a) for s, a in _anchors(shared_data / "opencua/agentnetbench"))
    spotify = results["s_7f27a11115e596eb"]
    typing = [a for a in spotify if a.kind == "typing"]
    assert [a.payload["text"] for a in typing] == ["SPOTIFY", "VAMPIRE WEEKEND"]
    click = spotify[0]
    assert (click.kind, click.t, click.payload["nx"], click.payload["ny"]) == ("click", 0.0, 0.3395, 0.6307)
    scroll = next(a for a in spotify if a.kind == "scroll")
    assert scroll.payload["clicks"] == -54
    overleaf = results["s_5473959e0f6e21f7"]
    assert [a.payload["keys"] for a in overleaf if a.kind == "shortcut"][:2] == [["ctrl", "c"], ["ctrl", "v"]]
    # every action of a step carries the step's low-level instruction (AgentNet inner_monologue)
    typed = sorted((a for a in spotify if a.payload["step"] == 1), key=lambda a: a.payload["index_in_step"])
    assert [a.kind for a in typed] == ["typing", "key"]
    assert {a.payload["instruction"] for a in typed} == {
        "Type 'SPOTIFY' in the search bar and press 'Enter' to perform the search."
    }


def test_keyboard_reconstruction() -> None:
    def press(t: float, name: str) -> dict:
        return {"type": "press", "t": t, "name": name}

    events = [press(0.0, "h"), press(0.2, "i"), press(0.3, "space"), press(0.5, "x"), press(0.7, "enter")]
    events += [press(5.0, "ctrl_l"), press(5.1, "s"), {"type": "release", "t": 5.2, "name": "ctrl_l"}]
    events += [press(6.0, "shift"), press(6.1, "A"), press(9.0, "b")]
    anchors = keyboard_anchors("stream:x-1", events, "gui")
    summary = [
        (a.kind, a.payload.get("text") or a.payload.get("combo") or a.payload.get("key")) for a in anchors
    ]
    assert summary == [
        ("typing", "hi x"),
        ("key", "enter"),
        ("shortcut", "ctrl+s"),
        ("typing", "A"),
        ("typing", "b"),
    ]
    assert anchors[0].t_end == 0.5


def test_gui_extractor_ignores_other_streams(shared_data: Path) -> None:
    [video] = list(open_source(shared_data / "videos/lf_demo4.mp4"))
    assert not get_extractor("gui").applies_to(video)
