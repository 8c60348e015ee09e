"""Shot-boundary anchors: data-juicer's expected scene counts, synthetic cuts, confidences, bad files."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.media.errors import MediaError, MediaIssue
from dataclaw.tailor.anchors import get_extractor
from dataclaw.tailor.anchors.shots import (
    DETECTORS,
    ShotParams,
    boundary_confidence,
    detect_shots,
    make_detector,
)
from dataclaw.tailor.streams.base import Camera, Modality, Stream

av = pytest.importorskip("av")
pytest.importorskip("scenedetect")

# Far apart in hue, saturation and value, so every cut scores well above the threshold.
COLOURS = [(250, 250, 250), (10, 10, 120), (240, 200, 0)]


def write_video(path: Path, colours: list[tuple[int, int, int]], frames_each: int, fps: int = 30) -> Path:
    """An H.264 video of solid colour blocks (with a moving bar so shots are not frozen)."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = 160, 96, "yuv420p"
        for colour in colours:
            for i in range(frames_each):
                img = np.empty((96, 160, 3), dtype=np.uint8)
                img[:] = colour
                img[40:56, (i * 3) % 150 : (i * 3) % 150 + 10] = 255 - np.array(colour, dtype=np.uint8)
                for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                    out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "scenes"), [("dj_video1.mp4", 3), ("dj_video2.mp4", 1), ("dj_video3.mp4", 2)]
)
def test_data_juicer_scene_counts(name: str, scenes: int, shared_data: Path) -> None:
    """data-juicer's parameters (ContentDetector threshold 27, min scene length 15) give its counts."""
    shots = detect_shots(shared_data / "videos" / name, ShotParams(threshold=27.0, min_scene_len=15))
    assert len(shots) == scenes
    assert shots[0].start_frame == 0 and shots[0].boundary_score is None
    for prev, cur in itertools.pairwise(shots):
        assert cur.start_frame == prev.end_frame  # contiguous
        assert cur.boundary_score is not None and cur.boundary_score >= 27.0
        assert 0.5 <= cur.boundary_confidence <= 1.0


def test_parameters_change_the_result(shared_data: Path) -> None:
    """A threshold above every cut's score leaves one shot: the parameters reach the detector."""
    video = shared_data / "videos" / "dj_video1.mp4"
    cuts = detect_shots(video)
    assert len(cuts) == 3
    above = max(s.boundary_score or 0 for s in cuts) + 1
    assert len(detect_shots(video, ShotParams(threshold=above))) == 1


def test_synthetic_cuts_are_found_at_their_frames(tmp_path: Path) -> None:
    video = write_video(tmp_path / "cuts.mp4", COLOURS, frames_each=30)
    shots = detect_shots(video)
    assert [s.start_frame for s in shots] == [0, 30, 60]
    assert 88 <= shots[-1].end_frame <= 90  # scenedetect's PyAV backend may miss the last frame or two
    assert detect_shots(video, frame_count=90)[-1].end_frame == 90
    assert [round(s.start_s, 3) for s in shots] == [0.0, 1.0, 2.0]
    assert all(s.boundary_confidence > 0.75 for s in shots[1:])  # hard colour cuts: far above threshold


def test_detection_on_part_of_a_file_is_rebased(tmp_path: Path) -> None:
    """A stream that is a range of a larger file gets shots relative to its own start."""
    video = write_video(tmp_path / "cuts.mp4", COLOURS, frames_each=30)
    shots = detect_shots(video, start_s=1.0)
    assert [s.start_frame for s in shots] == [0, 30]
    assert shots[0].start_s == 0.0 and shots[1].start_s == pytest.approx(1.0)


def test_boundary_confidence_is_monotone_and_half_at_threshold() -> None:
    assert boundary_confidence(27.0, 27.0) == pytest.approx(0.5)
    values = [boundary_confidence(s, 27.0) for s in (10, 27, 40, 80, 200)]
    assert values == sorted(values)
    assert 0.0 <= values[0] < 0.5 < values[-1] < 1.0
    assert boundary_confidence(0.0, 27.0) == 0.0


EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _reference_starts(path: Path, params: ShotParams) -> list[int]:
    """Scene starts from PySceneDetect's own ``detect()`` with the same detector and parameters."""
    import scenedetect

    scenes = scenedetect.detect(str(path), make_detector(scenedetect, params), start_in_scene=True)
    return [start.get_frames() for start, _end in scenes]


@pytest.mark.parametrize("detector", DETECTORS)
def test_each_detector_reproduces_pyscenedetects_own_detect(detector: str) -> None:
    """The bundled video, each detector with its defaults: our shots start where detect()'s scenes do."""
    video = EXAMPLES / "videos" / "dj_video1.mp4"
    params = ShotParams(detector=detector)
    shots = detect_shots(video, params)
    assert [s.start_frame for s in shots] == _reference_starts(video, params)
    if detector != "threshold":  # a video without fades to black has one "scene" for the fade detector
        assert len(shots) == 3  # data-juicer's expectation for this video holds for both change detectors


@pytest.mark.slow
def test_adaptive_and_threshold_detectors_with_their_parameters(tmp_path: Path, shared_data: Path) -> None:
    """Non-default parameters reach each detector; fades to black are what the threshold detector cuts."""
    video = shared_data / "videos" / "dj_video3.mp4"
    adaptive = ShotParams(detector="adaptive", adaptive_threshold=2.5, window_width=3, min_content_val=10.0)
    shots = detect_shots(video, adaptive)
    assert [s.start_frame for s in shots] == _reference_starts(video, adaptive) and len(shots) > 2
    assert all(0.5 <= s.boundary_confidence <= 1.0 for s in shots[1:])  # its cut score is the ratio
    fades = write_video(tmp_path / "fade.mp4", [COLOURS[0], (0, 0, 0), COLOURS[2]], frames_each=30)
    for params in (ShotParams(detector="threshold"), ShotParams(detector="threshold", fade_bias=1.0)):
        shots = detect_shots(fades, params)
        assert [s.start_frame for s in shots] == _reference_starts(fades, params) and len(shots) > 1
        assert all(s.boundary_confidence == 0.5 for s in shots[1:])  # no per-cut score to go on


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ConfigError, match="detector must be one of content, adaptive, threshold"):
        ShotParams(detector="histogram")
    with pytest.raises(ConfigError, match="window_width"):
        ShotParams(detector="adaptive", window_width=0)
    with pytest.raises(ConfigError, match="fade_threshold"):
        ShotParams(detector="threshold", fade_threshold=300)
    with pytest.raises(ConfigError, match="threshold"):
        ShotParams(threshold=0)
    with pytest.raises(ConfigError, match="min_scene_len"):
        ShotParams(min_scene_len=0)


def test_empty_and_corrupt_files_raise_media_errors(tmp_path: Path) -> None:
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    with pytest.raises(MediaError) as err:
        detect_shots(empty)
    assert err.value.reason is MediaIssue.EMPTY and "empty.mp4" in str(err.value)
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"\x00\x01 this is not a video" * 100)
    with pytest.raises(MediaError) as err:
        detect_shots(junk)
    assert err.value.reason is MediaIssue.CORRUPT
    with pytest.raises(MediaError) as err:
        detect_shots(tmp_path / "missing.mp4")
    assert err.value.reason is MediaIssue.NOT_FOUND


def _video_stream(
    path: Path, modality: Modality = Modality.VIDEO, frames: int = 90, fps: float = 30.0
) -> Stream:
    cam = Camera(name="video", kind="video", path=str(path), frame_end=frames, time_end=frames / fps, fps=fps)
    return Stream(
        id="stream:test-00000000",
        reader="test",
        modality=modality,
        source=str(path),
        fps=fps,
        frame_count=frames,
        duration=frames / fps,
        cameras={"video": cam},
    )


def test_extractor_emits_shot_and_boundary_anchors(tmp_path: Path) -> None:
    video = write_video(tmp_path / "cuts.mp4", COLOURS[:2], frames_each=30)
    stream = _video_stream(video, frames=60)
    ext = get_extractor("shots", threshold=27.0, min_scene_len=15)
    assert ext.applies_to(stream)
    assert not ext.applies_to(_video_stream(video, Modality.ROBOT, frames=60))
    anchors = ext.extract(stream, source=None)  # type: ignore[arg-type] - shots read the file directly
    kinds = sorted(a.kind for a in anchors)
    assert kinds == ["shot", "shot", "shot_boundary"]
    boundary = next(a for a in anchors if a.kind == "shot_boundary")
    assert boundary.t == pytest.approx(1.0) and boundary.payload["frame"] == 30
    assert 0.5 < boundary.confidence < 1.0 and not boundary.exact
    shots = sorted((a for a in anchors if a.kind == "shot"), key=lambda a: a.t)
    assert shots[0].t_end == pytest.approx(1.0) and shots[1].t_end == pytest.approx(2.0)
    assert all(a.id.startswith(stream.id + "/anchor-") for a in anchors)
    assert [a.id for a in ext.extract(stream, source=None)] == [a.id for a in anchors]  # type: ignore[arg-type]
    assert shots[0].payload["detector"] == {
        "detector": "content", "min_scene_len": 15, "threshold": 27.0, "luma_only": False,
    }  # fmt: skip
    other = get_extractor("shots", detector="adaptive").extract(stream, source=None)  # type: ignore[arg-type]
    assert {a.id for a in other}.isdisjoint(a.id for a in anchors), "other settings, other anchor ids"
    assert next(a for a in other if a.kind == "shot_boundary").payload["detector"] == "adaptive"
