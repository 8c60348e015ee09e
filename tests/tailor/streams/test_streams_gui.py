"""OpenCUA raw recording and AgentNet / OpenCUA trajectory readers on the real samples."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dataclaw.core.errors import Reject
from dataclaw.media import frame_hash, load_image
from dataclaw.tailor.streams import IngestIssue, Modality, Stream, StreamSource, open_source
from dataclaw.tailor.streams.gui_common import ActionParseError, parse_actions


@pytest.fixture(scope="module")
def recording(shared_data: Path) -> Stream:
    items = list(open_source(shared_data / "opencua/raw_recording"))
    assert len(items) == 1 and isinstance(items[0], Stream), items
    return items[0]


def test_recording_metadata(recording: Stream) -> None:
    assert recording.reader == "opencua_raw" and recording.modality is Modality.GUI
    assert recording.frame_count == 3678 and recording.duration == pytest.approx(122.667, abs=1e-3)
    assert recording.metadata["screen"] == {"width": 1366, "height": 768}
    assert recording.task.startswith("Open the system display settings")
    assert recording.metadata["events_outside_video"] == 0


def test_fourteen_high_level_actions_each_on_a_frame_inside_the_video(
    recording: Stream, shared_data: Path
) -> None:
    actions = [e for e in recording.events if e["type"] == "action"]
    assert len(actions) == 14
    raw = [
        json.loads(line)
        for line in (shared_data / "opencua/raw_recording/reduced_events_complete.jsonl").open()
    ]
    t0 = 30673.6036902
    assert [a["t"] for a in actions] == pytest.approx([r["start_time"] - t0 for r in raw], abs=1e-5)
    with StreamSource(recording) as source:
        for action in actions:
            assert 0.0 <= action["t"] <= action["t_end"] <= recording.duration
            index = source.index_at_time(action["t"])
            assert 0 <= index < recording.frame_count
            assert abs(source.time_of(index) - action["t"]) < 1 / recording.fps
        first = actions[0]
        assert first["action"] == "click" and first["target"]["title"].startswith("Action Centre")
        assert (first["nx"], first["ny"]) == (round(1328 / 1366, 4), round(745 / 768, 4))
        assert "axtree" not in first and first["has_axtree"]
        frame = source.frame_at_time(first["t"])
        assert frame.shape == (718, 1276, 3)


def test_low_level_events_on_the_video_clock(recording: Stream) -> None:
    kinds = [e["type"] for e in recording.events]
    assert kinds.count("click") == 42 and kinds.count("scroll") == 19
    assert kinds.count("press") == 3 and kinds.count("window") == 4
    assert "move" not in kinds
    last = [e for e in recording.events if e["type"] == "release"][-1]
    assert last["t"] == pytest.approx(30795.9939583 - 30673.6036902, abs=1e-5)
    assert recording.events == sorted(recording.events, key=lambda e: e["t"])


def _recording_copy(shared_data: Path, dst: Path) -> Path:
    src = shared_data / "opencua/raw_recording"
    dst.mkdir()
    for item in src.iterdir():
        if item.suffix == ".mp4":
            os.symlink(item, dst / item.name)
        else:
            (dst / item.name).write_bytes(item.read_bytes())
    return dst


def test_malformed_events_jsonl_is_a_reject(shared_data: Path, tmp_path: Path) -> None:
    rec = _recording_copy(shared_data, tmp_path / "rec")
    lines = (rec / "events.jsonl").read_text().splitlines()
    lines[10] = lines[10][:25]  # a torn line
    (rec / "events.jsonl").write_text("\n".join(lines) + "\n")
    [item] = list(open_source(rec))
    assert isinstance(item, Reject) and item.reason == IngestIssue.MALFORMED_EVENTS
    assert "events.jsonl:11" in item.message


def test_recording_without_video_start_is_a_reject(shared_data: Path, tmp_path: Path) -> None:
    rec = _recording_copy(shared_data, tmp_path / "rec")
    meta = json.loads((rec / "metadata.json").read_text())
    del meta["video_start_timestamp"]
    (rec / "metadata.json").write_text(json.dumps(meta))
    [item] = list(open_source(rec))
    assert isinstance(item, Reject) and item.reason == IngestIssue.BAD_METADATA
    assert "video_start_timestamp" in item.message


def test_agentnet_trajectories(shared_data: Path) -> None:
    streams = list(open_source(shared_data / "opencua/agentnetbench"))
    assert all(isinstance(s, Stream) for s in streams) and len(streams) == 2
    overleaf = next(s for s in streams if s.metadata["task_id"] == "s_5473959e0f6e21f7")
    assert overleaf.modality is Modality.TRAJECTORY and overleaf.frame_count == 10
    first = overleaf.events[0]
    assert first["actions"] == [
        {"action": "move", "call": "moveTo", "x": 0.328, "y": 0.4697},
        {"action": "drag", "call": "dragTo", "x": 0.5025, "y": 0.6039, "button": "left"},
    ]
    assert overleaf.events[1]["actions"][0]["keys"] == ["ctrl", "c"]
    assert (
        overleaf.events[2]["instruction"] == "Click on the ChatGPT application icon in the dock to open it."
    )
    assert "meta_info" not in overleaf.metadata  # the publisher's sample has none for this trajectory
    spotify = next(s for s in streams if s.metadata["task_id"] == "s_7f27a11115e596eb")
    meta = spotify.metadata["meta_info"]  # kept as AgentNet publishes it
    assert meta["websites"] == ["spotify", "google"] and meta["applications"] == []
    assert meta["complexity"]["multi_application_or_website"] is True
    with StreamSource(overleaf) as source:
        shot = source.frame(3)
        expected = load_image(shared_data / "opencua/agentnetbench/images/s_5473959e0f6e21f7_5.png")
        assert frame_hash(shot) == frame_hash(expected)
        assert source.index_at_time(3.5) == 3


def test_opencua_cot_trajectory(shared_data: Path) -> None:
    [stream] = list(open_source(shared_data / "opencua/cot_example"))
    assert isinstance(stream, Stream) and stream.reader == "opencua_traj"
    assert stream.frame_count == 15 and stream.task.startswith("Open the system display settings")
    assert stream.events[5]["actions"][1] == {"action": "scroll", "call": "scroll", "clicks": -3}
    assert stream.events[-1]["actions"][0]["action"] == "terminate"


def test_trajectory_with_missing_screenshot_is_a_reject(shared_data: Path, tmp_path: Path) -> None:
    folder = tmp_path / "cot"
    (folder / "images").mkdir(parents=True)
    src = shared_data / "opencua/cot_example"
    (folder / "raw_example.jsonl").write_text((src / "raw_example.jsonl").read_text())
    for i in range(14):  # 14.png is missing
        (folder / "images" / f"{i}.png").write_bytes((src / "images" / f"{i}.png").read_bytes())
    [item] = list(open_source(folder))
    assert isinstance(item, Reject) and item.reason == IngestIssue.MISSING_FILE and "14.png" in item.message


def test_parse_actions_refuses_code_that_is_not_literal_calls() -> None:
    assert parse_actions("pyautogui.write(message='hi')\npyautogui.press(keys='enter')") == [
        {"action": "type", "call": "write", "message": "hi"},
        {"action": "key", "call": "press", "keys": ["enter"]},
    ]
    for bad in ("import os", "pyautogui.click(x=os.getcwd())", "pyautogui.click(("):
        with pytest.raises(ActionParseError):
            parse_actions(bad)
