"""Ingest stages: streams → anchors → candidates with rejects for bad input, resumable per record."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.core.store import RunStore
from dataclaw.tailor.anchors.stage import AnchorIssue, AnchorStage
from dataclaw.tailor.mining.stage import MineIssue, MineStage
from dataclaw.tailor.pipeline import IngestConfig, discover_inputs, ingest

av = pytest.importorskip("av")

FAST = IngestConfig(extractors=["shots", "motion", "proprio", "gui"], workers=1)


def write_video(path: Path, seconds: int = 3, fps: int = 12) -> Path:
    """Two shots (a hard cut in the middle), the second with a moving square."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = 96, 64, "yuv420p"
        n = seconds * fps
        for i in range(n):
            img = np.full((64, 96, 3), 240 if i < n // 2 else 20, dtype=np.uint8)
            x = (i * 5) % 70
            img[20:40, x : x + 20] = (200, 40, 40)
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


@pytest.fixture
def inputs(tmp_path: Path, shared_data: Path) -> list[Path]:
    """Good and bad inputs side by side."""
    good = write_video(tmp_path / "good.mp4")
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    corrupt = tmp_path / "corrupt.mp4"
    corrupt.write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"garbage" * 300)
    broken = tmp_path / "broken_recording"
    shutil.copytree(shared_data / "opencua" / "raw_recording", broken)
    (broken / "events.jsonl").write_text('{"action": "click", "time_stamp": 1.0}\n{not json\n')
    return [good, empty, corrupt, broken, tmp_path / "does-not-exist", shared_data / "lerobot_g1"]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.slow
def test_bad_inputs_are_rejected_and_the_rest_completes(tmp_path: Path, inputs: list[Path]) -> None:
    run = tmp_path / "run"
    summary = ingest(inputs, run, FAST)
    reasons = summary.rejects
    assert reasons["ingest:empty_video"] == 1
    assert reasons["ingest:corrupt_video"] == 1
    assert reasons["ingest:malformed_events"] == 1
    assert reasons["ingest:not_a_dataset"] == 1
    assert reasons["ingest:missing_file"] == 97  # LeRobot episodes listed in meta/ but absent
    rejects = {r["record_id"]: r for r in RunStore(run).rejects()}
    assert any("empty.mp4" in r["message"] for r in rejects.values())
    # the good video and the three robot episodes went all the way through
    assert summary.streams == 4
    assert summary.candidates == {
        "dynamic_segment": 2,
        "fault_window": 4,
        "keyframes": 3,
    }  # 4 grasps; both shots move
    assert summary.anchors["shot"] == 2 and summary.anchors["shot_boundary"] == 1
    streams = {s["id"] for s in _lines(run / "streams.jsonl")}
    for cand in _lines(run / "candidates.jsonl"):
        assert cand["stream_id"] in streams and cand["why"] and cand["id"].startswith(cand["stream_id"] + "/")
    anchor_ids = {a["id"] for a in _lines(run / "anchors.jsonl")}
    assert all(set(c["anchor_ids"]) <= anchor_ids for c in _lines(run / "candidates.jsonl"))
    frames = {s["id"]: s["frame_count"] for s in _lines(run / "streams.jsonl")}
    for c in _lines(run / "candidates.jsonl"):
        if c["kind"] == "fault_window":  # real LeRobot episodes: every range inside its episode
            n = frames[c["stream_id"]]
            obs, fut = c["observation"], c["future"]
            assert 0 <= obs["start"] <= obs["end"] < fut["start"] <= fut["end"] < n
            assert len(c["observation_frames"]) == 8 and len(c["future_frames"]) == 4
            assert any("/anchor-" in a for a in c["anchor_ids"])  # proprio anchors ground the window
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["counts"]["candidates"] == 9 and manifest["command"] == "tailor ingest"


@pytest.mark.slow
def test_rerun_resumes_without_duplicates(tmp_path: Path, inputs: list[Path]) -> None:
    run = tmp_path / "run"
    first = ingest(inputs, run, FAST)
    sizes = {p.name: p.read_bytes() for p in run.glob("*.jsonl")}
    # a crash after the anchors of one stream were written but before it was marked done
    progress = run / "_progress" / "anchors.jsonl"
    lines = progress.read_text().splitlines()
    progress.write_text("\n".join(lines[:-1]) + "\n")
    (run / "_progress" / "candidates.jsonl").write_text("")
    second = ingest(inputs, run, FAST)
    assert second.stages["anchors"]["processed"] == 1 and second.stages["anchors"]["skipped"] == 3
    assert second.stages["candidates"]["processed"] == 4
    assert {p.name: p.read_bytes() for p in run.glob("*.jsonl")} == sizes  # nothing duplicated or lost
    assert second.candidates == first.candidates and second.rejects == first.rejects
    third = ingest(inputs, run, FAST)
    assert third.stages["anchors"]["processed"] == 0 and third.stages["candidates"]["processed"] == 0


def test_anchor_stage_rejects_bad_records_and_missing_media(tmp_path: Path) -> None:
    stage = AnchorStage(["shots", "motion"])
    bad = stage.process({"id": "stream:x-1", "modality": "nonsense"})
    assert not isinstance(bad, list) and bad.reason == AnchorIssue.BAD_RECORD
    assert "does not validate" in bad.message
    video = write_video(tmp_path / "v.mp4", seconds=1)
    record = {
        "id": "stream:v-1", "reader": "video", "modality": "video", "source": str(video), "fps": 12.0,
        "frame_count": 12, "duration": 1.0,
        "cameras": {"video": {"name": "video", "kind": "video", "path": str(video), "frame_end": 12,
                              "time_end": 1.0, "fps": 12.0}},
    }  # fmt: skip
    assert isinstance(stage.process(record), list)
    video.unlink()  # the file went away between ingestion and anchors
    gone = stage.process(record)
    assert not isinstance(gone, list) and gone.reason == AnchorIssue.MISSING_MEDIA
    assert "v.mp4" in gone.message and gone.detail["extractor"] == "shots"


def test_mine_stage_explains_empty_results() -> None:
    stream = {"id": "stream:i-1", "reader": "images", "modality": "images", "source": "/x", "frame_count": 3}
    out = MineStage().process({"id": "stream:i-1", "stream": stream, "anchors": []})
    assert not isinstance(out, list) and out.reason == MineIssue.NO_CANDIDATES
    assert "no miner applies to a images stream" in out.message
    bad = MineStage().process({"id": "stream:i-1", "stream": {"id": "stream:i-1"}, "anchors": []})
    assert not isinstance(bad, list) and bad.reason == MineIssue.BAD_RECORD


def test_config_is_checked() -> None:
    with pytest.raises(ConfigError, match="unknown anchor extractor 'nope'"):
        IngestConfig(extractors=["nope"])
    with pytest.raises(ConfigError, match="unknown miner 'nope'"):
        IngestConfig(miner_config={"nope": {}})
    with pytest.raises(ConfigError, match="no inputs"):
        ingest([], "/tmp/never-used")


def test_bad_settings_fail_before_any_work(tmp_path: Path, shared_data: Path) -> None:
    """Extractor and miner settings are built up front: one clear error, no half-made run directory."""
    video = shared_data / "videos" / "lf_demo4.mp4"
    bad = [
        ({"ocr": {"backend": "nope"}}, {}, "unknown OCR backend 'nope'"),
        ({"shots": {"threshold": 0}}, {}, "shot threshold must be > 0"),
        ({}, {"fault_window": {"fractions": [1.5]}}, "fractions must lie strictly between 0 and 1"),
        ({"motion": {"bogus": 1}}, {}, "anchor extractor 'motion': bad settings"),
    ]
    for extractor_config, miner_config, message in bad:
        config = IngestConfig(extractor_config=extractor_config, miner_config=miner_config, workers=1)
        with pytest.raises(ConfigError, match=message):
            ingest([video], tmp_path / "run", config)
        assert not (tmp_path / "run").exists()


def test_process_pool_gives_the_same_records(tmp_path: Path) -> None:
    """Stages are pickled to worker processes; the output must not depend on the executor."""
    videos = [write_video(tmp_path / f"v{i}.mp4", seconds=2) for i in range(2)]
    config = IngestConfig(extractors=["shots", "motion"], workers=1)
    one = ingest(videos, tmp_path / "one", config)
    two = ingest(videos, tmp_path / "two", IngestConfig(extractors=["shots", "motion"], workers=2))
    assert one.anchors == two.anchors and one.candidates == two.candidates
    ids = lambda run: sorted(a["id"] for a in _lines(run / "anchors.jsonl"))  # noqa: E731
    assert ids(tmp_path / "one") == ids(tmp_path / "two")


def test_discover_inputs(shared_data: Path) -> None:
    found = {p.name for p in discover_inputs(shared_data)}
    assert {"lerobot_g1", "raw_recording", "cot_example", "agentnetbench", "videos", "lectures"} <= found
    assert "tau2" not in found


@pytest.mark.slow
def test_corrupt_screenshot_is_a_per_stream_anchor_reject(tmp_path: Path, shared_data: Path) -> None:
    """A trajectory whose later screenshot is damaged passes the reader (it checks the first image) and
    is rejected by the OCR extractor with a reason naming the file; the other trajectory completes."""
    broken = tmp_path / "cot_broken"
    shutil.copytree(shared_data / "opencua" / "cot_example", broken)
    (broken / "images" / "5.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)  # step 5 is OCR'd
    run = tmp_path / "run"
    config = IngestConfig(extractors=["gui", "ocr"], extractor_config={"ocr": {"max_images": 4}}, workers=1)
    summary = ingest([broken, shared_data / "opencua" / "cot_example"], run, config)
    (rej,) = RunStore(run).rejects("anchors")
    assert rej["reason"] == AnchorIssue.CORRUPT_MEDIA and "5.png" in rej["message"]
    assert summary.streams == 2 and summary.candidates == {"gui_task": 1}


def test_robot_candidates_point_into_the_head_camera() -> None:
    from dataclaw.tailor.mining.stage import stream_view
    from dataclaw.tailor.streams import Camera, Stream

    cams = {
        name: Camera(name=name, kind="video", path=f"/x/{name}.mp4", frame_end=90, time_end=3.0, fps=30.0)
        for name in ("observation.images.cam_left_wrist", "observation.images.cam_high")
    }
    robot = Stream(
        id="stream:r-1", reader="lerobot_v21", modality="robot", source="/x", fps=30.0, frame_count=90,
        duration=3.0, cameras=cams,
    )  # fmt: skip
    assert robot.main_camera == "observation.images.cam_left_wrist"
    view = stream_view(robot)
    assert view.camera == "observation.images.cam_high" and view.frame_count == 90


def test_changed_extractor_settings_redo_the_stage_and_supersede_the_old_records(tmp_path: Path) -> None:
    video = write_video(tmp_path / "v.mp4", seconds=4)
    run = tmp_path / "run"
    base = IngestConfig(extractors=["shots", "motion"], workers=1)
    ingest([video], run, base)
    spelled = IngestConfig(
        extractors=["shots", "motion"], extractor_config={"shots": {"threshold": 27.0}}, workers=1
    )
    again = ingest([video], run, spelled)
    assert again.stages["anchors"]["skipped"] == 1, "a default spelled out is the same producer"
    before = _lines(run / "anchors.jsonl")
    coarse = IngestConfig(extractors=["shots"], extractor_config={"shots": {"threshold": 99.0}}, workers=1)
    third = ingest([video], run, coarse)
    assert third.stages["anchors"]["processed"] == 1 and third.stages["candidates"]["processed"] == 1
    assert "motion" not in third.anchors and third.anchors.get("shot_boundary", 0) == 0, "only the new ones"
    lines = _lines(run / "anchors.jsonl")
    assert lines[: len(before)] == before, "the superseded anchors stay in the file"
    producers = json.loads((run / "manifest.json").read_text())["producers"]
    assert producers["anchors"]["of"]["extractors"]["shots"]["threshold"] == 99.0
    current = [a for a in lines if a["producer"] == producers["anchors"]["hash"]]
    assert RunStore(run).stage("anchors").ids() == {a["id"] for a in current}
    store = RunStore(run)
    assert len(store.stage("candidates")) == len(list(store.records("candidates")))
    assert all(c["producer"] == producers["candidates"]["hash"] for c in store.records("candidates"))
    assert all(r["producer"] == producers["candidates"]["hash"] for r in store.rejects("candidates"))


def test_cli_settings_change_anchor_and_candidate_ids(tmp_path: Path) -> None:
    """`tailor ingest` with another detector or mining threshold: new shot anchors and candidates (new
    ids), the old ones superseded; a miss says which threshold and what value."""
    from typer.testing import CliRunner

    from dataclaw.cli.tailor import app

    video = Path(__file__).resolve().parents[2] / "examples" / "videos" / "dj_video1.mp4"
    run = tmp_path / "run"
    base = ["ingest", str(video), "-o", str(run), "--extractors", "shots,motion", "--workers", "1"]

    def current(stage: str) -> set[str]:
        return {r["id"] for r in RunStore(run).records(stage)}

    first = CliRunner().invoke(app, base, env={"COLUMNS": "200"})
    assert first.exit_code == 0 and "tailor ingest" in first.output  # the table says which command
    shots, cands = current("anchors"), current("candidates")
    assert CliRunner().invoke(app, [*base, "--shot-detector", "adaptive", "--json"]).exit_code == 0
    assert current("anchors").isdisjoint(a for a in shots if "/anchor-shot" in a)
    result = CliRunner().invoke(app, [*base, "--set", "dynamic_segment.min_energy=0.9", "--json"])
    assert result.exit_code == 0 and current("candidates").isdisjoint(cands)
    (miss,) = RunStore(run).rejects("candidates")
    assert miss["reason"] == "no_candidates" and "< min_energy 0.9" in miss["message"]
    bad = CliRunner().invoke(app, [*base, "--shot-detector", "histogram"])
    assert bad.exit_code != 0 and "content, adaptive, threshold" in str(bad.exception)
