"""MaterializeStage on a real LeRobot G1 episode (AV1): the approach_stall construction of paper A.3.1
decoded back frame by frame (hash-compared with the source frames), artifact records, media binding,
rejects with reasons, resume and determinism across reruns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.core.ids import child_id
from dataclaw.core.store import RunStore
from dataclaw.media import VideoReader, frame_hash, load_image
from dataclaw.media.video import decode_all
from dataclaw.media.writers import sha256_file
from dataclaw.pipeline import run_stage
from dataclaw.tailor.materialize import (
    ARTIFACTS,
    SAMPLES,
    STAGE,
    MaterializeIssue,
    Materializer,
    MaterializeStage,
    get_materializer,
    make_item,
    materialize,
    materializer_names,
    publish,
    register_materializer,
    source_frames,
)
from dataclaw.tailor.mining.base import get_miner
from dataclaw.tailor.mining.stage import stream_view
from dataclaw.tailor.records import Artifact, Candidate, Route, Sample, Turn
from dataclaw.tailor.streams import Stream, open_source

CAM = "observation.images.cam_high"


@pytest.fixture(scope="module")
def stream(shared_data: Path) -> Stream:
    streams = [s for s in open_source(shared_data / "lerobot_g1") if isinstance(s, Stream)]
    return next(s for s in streams if s.metadata["episode_index"] == 1)


@pytest.fixture(scope="module")
def candidate(stream: Stream) -> Candidate:
    """The 50% fault window mined by the real fault_window miner."""
    cands = get_miner("fault_window").mine(stream_view(stream), [])
    return next(c for c in cands if c.payload["anchor_fraction"] == 0.5)


@pytest.fixture(scope="module")
def source_hashes(stream: Stream) -> list[str]:
    with VideoReader(stream.cameras[CAM].path) as reader:
        return [frame_hash(f) for f in reader.frames_at(list(range(stream.frame_count)))]


def _stall_output(cand: Candidate, **over: Any) -> dict[str, Any]:
    obs, fut = cand.observation, cand.future
    assert obs is not None and fut is not None
    out = {
        "fault_type": "approach_stall",
        "input_video": {"start": obs.end - 20, "end": obs.end},
        "freeze_frame": obs.end - 6,
        "repeat_count": 15,
        "output_video": {"start": fut.start, "end": fut.start + 11},
        "output_image": fut.start + 5,
        "question": "The robot stopped moving. What went wrong and how should it recover?",
        "answer": "It stalled while approaching the bottle; it should continue the reach. <video_gen>",
        "reasoning": "The arm halts short of the bottle.",
    }
    out.update(over)
    return out


def _sample(cand: Candidate, output: dict[str, Any], key: str = "s") -> Sample:
    return Sample(
        id=child_id(cand.id, "sample", key),
        intent="approach_stall",
        domain="embodied",
        stream_id=cand.stream_id,
        candidate_id=cand.id,
        output=output,
        conversation=[
            Turn(role="user", content=output["question"]),
            Turn(role="assistant", content=output["answer"]),
        ],
        route=Route(model="replay:test", router="omni"),
    )


def _by_role(rec: dict[str, Any]) -> dict[str, Artifact]:
    return {a["source"]["role"]: Artifact.model_validate(a) for a in rec["artifacts"]}


def test_approach_stall_media_are_frame_exact(
    tmp_path: Path, stream: Stream, candidate: Candidate, source_hashes: list[str]
) -> None:
    output = _stall_output(candidate)
    sample = _sample(candidate, output)
    result = MaterializeStage(tmp_path, codec="lossless").process(
        make_item(sample, stream, candidate, ["fault_recovery"])
    )
    assert isinstance(result, list) and len(result) == 1
    rec = result[0]
    arts = _by_role(rec)
    assert set(arts) == {"observation", "recall", "recovery"}

    # stalled input video: input_video.start..freeze_frame, then the freeze frame 15 more times (A.3.1)
    start, freeze = output["input_video"]["start"], output["freeze_frame"]
    stall = arts["observation"]
    expected = source_hashes[start : freeze + 1] + [source_hashes[freeze]] * 15
    decoded = [frame_hash(f) for f in decode_all(tmp_path / stall.path)]
    assert stall.kind == "freeze" and stall.frames == len(decoded) == len(expected) == 15 + freeze - start + 1
    assert decoded == expected
    assert source_frames(stall) == list(range(start, freeze + 1)) + [freeze] * 15

    # recovery clip cut from the future range; recall still
    rs, re_ = output["output_video"]["start"], output["output_video"]["end"]
    recovery = arts["recovery"]
    assert [frame_hash(f) for f in decode_all(tmp_path / recovery.path)] == source_hashes[rs : re_ + 1]
    assert recovery.kind == "clip" and recovery.frames == re_ - rs + 1 and recovery.fps == 30.0
    recall = arts["recall"]
    assert recall.kind == "still" and recall.media_type == "image" and recall.path.endswith(".png")
    assert frame_hash(load_image(tmp_path / recall.path)) == source_hashes[output["output_image"]]

    for art in arts.values():
        assert art.sha256 == sha256_file(tmp_path / art.path)
        assert art.sample_id == sample.id and art.id.startswith(sample.id + "/")
        assert (art.width, art.height) == (640, 480) and art.source["stream_id"] == stream.id
        assert art.source["camera"] == CAM and art.source["encoding"]["lossless"]
        assert art.path.startswith("media/") and not Path(art.path).is_absolute()


def test_sample_references_artifacts_and_tokens_match(
    tmp_path: Path, stream: Stream, candidate: Candidate
) -> None:
    sample = _sample(candidate, _stall_output(candidate))
    rec = MaterializeStage(tmp_path, codec="lossless").process(
        make_item(sample, stream, candidate, ["fault_recovery"])
    )[0]
    out = Sample.model_validate(rec["sample"])
    arts = {a["id"]: a for a in rec["artifacts"]}
    assert [m.artifact_id for m in out.media] == [a["id"] for a in rec["artifacts"]]
    assert [(m.kind, m.role, m.placeholder) for m in out.media] == [
        ("video", "observation", None),
        ("image", "recall", "<image_recall>"),
        ("video", "recovery", "<video_gen>"),
    ]
    assert all(m.artifact_id in arts for m in out.media)
    user, assistant = out.conversation
    assert user.content == "<video>" + sample.conversation[0].content  # one input video, one token
    assert assistant.content.count("<video_gen>") == 1  # already in the answer: not added again
    assert assistant.content.endswith("\n<image_recall>")  # missing placeholder appended
    assert out.provenance["materialized"]["placeholders_added"] == ["<image_recall>"]
    assert "<image>" not in user.content + assistant.content
    assert len(json.dumps(rec["sample"])) < 4000  # samples stay lightweight: ids, not pixels

    again = MaterializeStage(tmp_path, codec="lossless").process(
        make_item(out, stream, candidate, ["fault_recovery"])
    )[0]
    assert again["sample"]["conversation"] == rec["sample"]["conversation"]  # rerunning adds nothing
    assert [a["sha256"] for a in again["artifacts"]] == [a["sha256"] for a in rec["artifacts"]]


def test_primitive_materialisers_and_keyframes(
    tmp_path: Path, stream: Stream, candidate: Candidate, source_hashes: list[str]
) -> None:
    output = {
        "freeze_frame": 100,
        "hold": 4,
        "frames": [3, 50, 392],
        "clip": [10, 14],
        "question": "q",
        "answer": "a",
    }
    sample = _sample(candidate, output, "prims")
    mats = [
        {"name": "freeze", "frame_field": "freeze_frame", "repeat_field": "hold"},
        {"name": "keyframes", "field": "frames"},
        {"name": "clip", "field": "clip", "key": "clip", "role": "target", "placeholder": "<video_gen>"},
    ]
    rec = MaterializeStage(tmp_path, codec="ffv1").process(make_item(sample, stream, candidate, mats))[0]
    arts = {Path(a["path"]).stem: Artifact.model_validate(a) for a in rec["artifacts"]}
    assert set(arts) == {"freeze", "keyframe-00", "keyframe-01", "keyframe-02", "clip"}
    assert arts["freeze"].path.endswith(".mkv")
    assert [frame_hash(f) for f in decode_all(tmp_path / arts["freeze"].path)] == [source_hashes[100]] * 4
    for key, frame in zip(["keyframe-00", "keyframe-01", "keyframe-02"], [3, 50, 392], strict=True):
        assert frame_hash(load_image(tmp_path / arts[key].path)) == source_hashes[frame]
    assert [frame_hash(f) for f in decode_all(tmp_path / arts["clip"].path)] == source_hashes[10:15]
    out = Sample.model_validate(rec["sample"])
    assert out.conversation[0].content.startswith("<image><image><image><video>")


def test_keyframes_default_to_the_candidates_frames(tmp_path: Path, stream: Stream) -> None:
    cand = get_miner("keyframes", k=3).mine(stream_view(stream), [])[0]
    sample = _sample(cand, {"question": "q", "answer": "a"}, "kf")
    rec = MaterializeStage(tmp_path, codec="lossless").process(
        make_item(sample, stream, cand, ["keyframes"])
    )[0]
    assert [source_frames(a) for a in rec["artifacts"]] == [[f] for f in cand.frames]


@pytest.mark.parametrize(
    ("over", "reason", "text"),
    [
        ({"freeze_frame": "late"}, MaterializeIssue.BAD_OUTPUT, "'freeze_frame' must be a frame index"),
        ({"output_video": {"begin": 1}}, MaterializeIssue.BAD_OUTPUT, "needs 'start' and 'end'"),
        ({"repeat_count": 0}, MaterializeIssue.BAD_OUTPUT, "between 1 and"),
        ({"output_image": 393}, MaterializeIssue.OUT_OF_RANGE, "outside the stream's 0..392"),
        ({"output_video": [200, 150]}, MaterializeIssue.OUT_OF_RANGE, "before it starts"),
        ({"freeze_frame": 10}, MaterializeIssue.OUT_OF_RANGE, "outside 'input_video'"),
    ],
)
def test_bad_outputs_are_rejected_with_a_reason_and_leave_no_media(
    tmp_path: Path, stream: Stream, candidate: Candidate, over: dict[str, Any], reason: str, text: str
) -> None:
    sample = _sample(candidate, _stall_output(candidate, **over))
    result = MaterializeStage(tmp_path, codec="lossless").process(
        make_item(sample, stream, candidate, ["fault_recovery"])
    )
    assert not isinstance(result, list)
    assert result.reason == reason and text in result.message and result.stage == STAGE
    assert not (tmp_path / "media").exists() or not any((tmp_path / "media").rglob("*.*"))


def test_a_failure_after_some_artifacts_removes_them(
    tmp_path: Path, stream: Stream, candidate: Candidate
) -> None:
    # three artifacts of the main camera are written, then the fourth (a second camera whose file is
    # gone) fails to decode: the sample is rejected and none of its files stay behind
    broken = stream.model_copy(deep=True)
    lost = broken.cameras[CAM].model_copy(update={"name": "wrist", "path": str(tmp_path / "gone.mp4")})
    broken.cameras["wrist"] = lost
    sample = _sample(candidate, _stall_output(candidate))
    extra = {"name": "clip", "field": "output_video", "key": "wrist", "camera": "wrist"}
    item = make_item(sample, broken, candidate, ["fault_recovery", extra])
    result = MaterializeStage(tmp_path, codec="lossless").process(item)
    assert not isinstance(result, list) and result.reason == MaterializeIssue.MEDIA_ERROR
    assert "gone.mp4" in result.message
    assert (tmp_path / "media").is_dir() and not any(p.is_file() for p in (tmp_path / "media").rglob("*"))
    unknown_cam = make_item(sample, stream, candidate, [{"name": "clip", "camera": "missing"}])
    result = MaterializeStage(tmp_path, codec="lossless").process(unknown_cam)
    assert not isinstance(result, list) and result.reason == MaterializeIssue.BAD_CONFIG
    assert "no camera 'missing'" in result.message


def test_token_mismatch_and_bad_items(tmp_path: Path, stream: Stream, candidate: Candidate) -> None:
    output = _stall_output(candidate, question="<video><video> two clips?")
    sample = _sample(candidate, output)
    result = MaterializeStage(tmp_path, codec="lossless").process(
        make_item(sample, stream, candidate, ["fault_recovery"])
    )
    assert not isinstance(result, list) and result.reason == MaterializeIssue.TOKEN_MISMATCH
    assert "2 <video> tokens for 1 input videos" in result.message
    stage = MaterializeStage(tmp_path)
    bad = stage.process({"id": "x", "sample": {"id": "x"}, "stream": stream.model_dump(mode="json")})
    assert not isinstance(bad, list) and bad.reason == MaterializeIssue.BAD_ITEM
    unknown = stage.process(make_item(sample, stream, candidate, ["teleport"]))
    assert not isinstance(unknown, list) and unknown.reason == MaterializeIssue.BAD_CONFIG
    assert "unknown materialiser 'teleport'" in unknown.message


def test_sample_without_materialisers_passes_through(
    tmp_path: Path, stream: Stream, candidate: Candidate
) -> None:
    sample = _sample(candidate, {"question": "q", "answer": "a"}, "text")
    rec = MaterializeStage(tmp_path, codec="lossless").process(make_item(sample, stream, candidate, []))[0]
    assert rec["artifacts"] == [] and rec["sample"]["media"] == []
    assert rec["sample"]["conversation"] == [t.model_dump() for t in sample.conversation]


def test_run_publishes_samples_and_artifacts_resumes_and_is_deterministic(
    tmp_path: Path, stream: Stream, candidate: Candidate
) -> None:
    good = _sample(candidate, _stall_output(candidate), "good")
    bad = _sample(candidate, _stall_output(candidate, output_image=10_000), "bad")
    items = [make_item(s, stream, candidate, ["fault_recovery"]) for s in (good, bad)]
    run = tmp_path / "run"
    stats = materialize(items, run, executor=None, codec="lossless")
    assert (stats.outputs, stats.rejects) == (1, 1)
    samples = [json.loads(x) for x in (run / f"{SAMPLES}.jsonl").read_text().splitlines()]
    artifacts = [json.loads(x) for x in (run / f"{ARTIFACTS}.jsonl").read_text().splitlines()]
    assert [s["id"] for s in samples] == [good.id] and len(artifacts) == 3
    assert {m["artifact_id"] for m in samples[0]["media"]} == {a["id"] for a in artifacts}
    rejects = RunStore(run).rejects(STAGE)
    assert [(r["record_id"], r["reason"]) for r in rejects] == [(bad.id, "out_of_range")]
    first = {a["path"]: a["sha256"] for a in artifacts}

    again = materialize(
        items, run, codec="lossless"
    )  # resume: the finished sample is skipped, nothing is duplicated
    assert again.skipped == 2 and again.processed == 0  # rejects are final too (a reason, not a crash)
    with RunStore(run) as store:
        assert publish(store) == (0, 0)
    assert len((run / f"{ARTIFACTS}.jsonl").read_text().splitlines()) == 3

    fresh = tmp_path / "fresh"  # a rerun from scratch writes the same bytes (stable hashes)
    with RunStore(fresh) as store:
        run_stage(MaterializeStage(fresh, codec="lossless"), items[:1], store)
        publish(store)
    rerun = [json.loads(x) for x in (fresh / f"{ARTIFACTS}.jsonl").read_text().splitlines()]
    assert {a["path"]: a["sha256"] for a in rerun} == first


def test_materialiser_registry() -> None:
    assert {"clip", "freeze", "still", "keyframes", "stall_video", "fault_recovery"} <= set(
        materializer_names()
    )
    with pytest.raises(ConfigError, match="already registered"):

        @register_materializer
        class Again(Materializer):  # pragma: no cover - refused before use
            name = "clip"

            def plan(self, output, candidate, source):  # type: ignore[no-untyped-def]
                return []

    with pytest.raises(ConfigError, match="bad parameters"):
        get_materializer({"name": "clip", "fps": 3})


def test_the_plan_synthesis_renders_from_the_intent_catalogue(
    tmp_path: Path, stream: Stream, candidate: Candidate, source_hashes: list[str]
) -> None:
    """robot_fault_recovery as shipped: build_sample leaves a resolved plan (freeze with a start, clip,
    still) in provenance; the stage follows it without being told the materialisers."""
    from dataclaw.tailor.intents import IntentCatalog
    from dataclaw.tailor.records import build_sample

    output = _stall_output(candidate, answer="Continue the reach. <video_gen> <image_recall>")
    response = {
        "id": "response-1",
        "context": {"stream": {"camera": candidate.camera}},
        "output": output,
        "stream_id": stream.id,
        "candidate_id": candidate.id,
        "model": "replay:test",
        "router": "omni",
        "request_hash": "h",
    }
    sample = build_sample(response, IntentCatalog.builtin().get("robot_fault_recovery"), [])
    assert [step["materialiser"] for step in sample.provenance["materialize"]] == ["freeze", "clip", "still"]
    rec = MaterializeStage(tmp_path, codec="lossless").process(make_item(sample, stream, candidate))[0]
    arts = _by_role(rec)
    start, freeze = output["input_video"]["start"], output["freeze_frame"]
    stall = [frame_hash(f) for f in decode_all(tmp_path / arts["observation"].path)]
    assert stall == source_hashes[start : freeze + 1] + [source_hashes[freeze]] * 15
    rs, re_ = output["output_video"]["start"], output["output_video"]["end"]
    assert [frame_hash(f) for f in decode_all(tmp_path / arts["recovery"].path)] == source_hashes[
        rs : re_ + 1
    ]
    out = Sample.model_validate(rec["sample"])
    assert [t.content for t in out.conversation] == [t.content for t in sample.conversation]  # tokens matched
    assert out.provenance["materialized"]["tokens_added"] == 0
    assert out.provenance["materialize"] == sample.provenance["materialize"]  # the plan is kept
    assert out.provenance["response_id"] == "response-1"  # synthesis provenance is kept

    elsewhere = sample.model_copy(deep=True)
    elsewhere.provenance["materialize"][0]["stream_id"] = "stream:other-00000000"
    result = MaterializeStage(tmp_path, codec="lossless").process(make_item(elsewhere, stream, candidate))
    assert not isinstance(result, list) and result.reason == MaterializeIssue.BAD_CONFIG


def test_still_lists_number_placeholders_and_keys_stay_unique(
    tmp_path: Path, stream: Stream, candidate: Candidate
) -> None:
    sample = _sample(candidate, {"question": "q", "answer": "a"}, "numbered")
    steps = [
        {"name": "still", "role": "step", "frames": [4, 8], "placeholder": "<image_N>"},
        {"name": "still", "role": "step", "frame": 12},
        {"name": "clip", "role": "step", "start": 0, "end": 2},
    ]
    rec = MaterializeStage(tmp_path, codec="lossless").process(make_item(sample, stream, candidate, steps))[0]
    names = sorted(Path(a["path"]).name for a in rec["artifacts"])
    assert names == ["step-00.png", "step-01.png", "step-2.mp4", "step.png"]
    out = Sample.model_validate(rec["sample"])
    assert [m.placeholder for m in out.media if m.placeholder] == ["<image_1>", "<image_2>"]
    assert out.conversation[-1].content == "a\n<image_1>\n<image_2>"
    assert out.conversation[0].content.startswith("<image><video>q")


@pytest.mark.slow  # worker start-up (forkserver + imports) dominates
def test_stage_runs_in_a_process_pool(tmp_path: Path, stream: Stream, candidate: Candidate) -> None:
    from dataclaw.pipeline.executors import LocalExecutor

    base = _stall_output(candidate)
    short = {"start": base["freeze_frame"] - 3, "end": base["freeze_frame"]}
    recovery = {"start": base["output_video"]["start"], "end": base["output_video"]["start"] + 2}
    outputs = [
        _stall_output(candidate, input_video=short, output_video=recovery, repeat_count=5 + i) for i in (0, 1)
    ]
    items = [
        make_item(_sample(candidate, o, f"pool{i}"), stream, candidate, ["fault_recovery"])
        for i, o in enumerate(outputs)
    ]
    stats = materialize(items, tmp_path, executor=LocalExecutor(workers=2))
    assert (stats.outputs, stats.rejects, stats.errors) == (2, 0, 0)
    artifacts = [json.loads(x) for x in (tmp_path / f"{ARTIFACTS}.jsonl").read_text().splitlines()]
    assert sorted(a["frames"] for a in artifacts if a["kind"] == "freeze") == [4 + 5, 4 + 6]
    assert all((tmp_path / a["path"]).is_file() for a in artifacts) and len(artifacts) == 6


def test_gui_screenshot_streams_give_exact_stills_and_clips(tmp_path: Path, shared_data: Path) -> None:
    """Image-sequence streams (OpenCUA step screenshots) work the same way as videos."""
    gui = next(s for s in open_source(shared_data / "opencua/cot_example") if isinstance(s, Stream))
    cam = gui.cameras[gui.main_camera or ""]
    sample = Sample(
        id=child_id(gui.id, "sample", "gui"),
        intent="gui_action_extraction",
        domain="gui",
        stream_id=gui.id,
        candidate_id=child_id(gui.id, "cand", "gui"),
        output={},
        conversation=[
            Turn(role="user", content="List the actions."),
            Turn(role="assistant", content="1. click"),
        ],
        route=Route(model="replay:test", router="omni"),
    )
    steps = [
        {"name": "still", "role": "screenshot", "frames": [0, 5, 14]},
        {"name": "clip", "start": 2, "end": 4},
    ]
    rec = MaterializeStage(tmp_path, codec="lossless").process(make_item(sample, gui, None, steps))[0]
    stills = [a for a in rec["artifacts"] if a["kind"] == "still"]
    assert [frame_hash(load_image(tmp_path / a["path"])) for a in stills] == [
        frame_hash(load_image(cam.images[i])) for i in (0, 5, 14)
    ]
    clip = next(a for a in rec["artifacts"] if a["kind"] == "clip")
    assert clip["fps"] == cam.fps and (clip["width"], clip["height"]) == (cam.width, cam.height)
    decoded = [frame_hash(f) for f in decode_all(tmp_path / clip["path"])]
    assert decoded == [frame_hash(load_image(cam.images[i])) for i in (2, 3, 4)]
    assert rec["sample"]["conversation"][0]["content"].startswith("<image><image><image><video>")


@pytest.mark.parametrize("codec", ["lossless", "ffv1", "h264"])
def test_each_codec_keeps_frame_counts_and_durations(
    tmp_path: Path, stream: Stream, candidate: Candidate, codec: str
) -> None:
    """PyAV reads every clip back with the planned frames at the stream's rate; h264 is yuv420p (browsers
    play it), the lossless ones keep RGB; the default is h264."""
    import av

    output = _stall_output(candidate)
    item = make_item(_sample(candidate, output), stream, candidate, ["fault_recovery"])
    stage = MaterializeStage(tmp_path, codec=codec)
    rec = stage.process(item)[0]
    videos = [a for a in rec["artifacts"] if a["media_type"] == "video"]
    assert len(videos) == 2
    for art in videos:
        with av.open(str(tmp_path / art["path"])) as c:
            vs = c.streams.video[0]
            decoded = sum(1 for _ in c.decode(vs))
            fmt = vs.codec_context.pix_fmt
            duration = float(vs.frames / vs.average_rate) if vs.frames else decoded / float(vs.average_rate)
        assert decoded == art["frames"] == len(source_frames(art))
        assert duration == pytest.approx(art["frames"] / 30.0, abs=1e-6)
        assert (fmt == "yuv420p") is (codec == "h264")
        assert art["source"]["encoding"]["lossless"] is (codec != "h264")
    assert MaterializeStage(tmp_path).codec == "h264"


def test_size_budget_is_checked_before_writing_and_sizes_are_reported(
    tmp_path: Path, stream: Stream, candidate: Candidate
) -> None:
    from dataclaw.tailor.materialize import MediaBudgetExceeded, estimate_media, media_summary

    items = [make_item(_sample(candidate, _stall_output(candidate)), stream, candidate, ["fault_recovery"])]
    small, big = estimate_media(items, "h264"), estimate_media(items, "lossless")
    assert small.videos == 2 and small.frames == big.frames == (15 + 15) + 12  # stall video + recovery clip
    assert 0 < small.bytes < big.bytes
    run = tmp_path / "run"
    with pytest.raises(MediaBudgetExceeded, match="over --max-media-gb"):
        materialize(items, run, codec="lossless", max_media_gb=big.bytes / 2e9)
    assert not (run / "media").exists(), "nothing is written when the budget would be exceeded"
    stats = materialize(items, run, codec="h264", crf=23, max_media_gb=1.0)
    assert stats.outputs == 1
    (row,) = media_summary(run).values()
    assert row["videos"] == 2 and row["seconds"] == pytest.approx(42 / 30.0)
    assert row["bytes_per_second"] == round(row["bytes"] / row["seconds"])
    assert list(media_summary(run)) == ["h264-crf23"]
