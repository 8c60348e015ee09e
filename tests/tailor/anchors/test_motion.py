"""Motion energy: numpy thumbnails and differences, windows, and a synthetic static→moving video."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dataclaw.media.errors import MediaError, MediaIssue
from dataclaw.tailor.anchors import get_extractor
from dataclaw.tailor.anchors.motion import (
    MotionParams,
    motion_anchors,
    motion_energy,
    to_gray_thumb,
    video_motion,
    window_energy,
)
from dataclaw.tailor.streams.base import Camera, Modality, Stream

av = pytest.importorskip("av")


def write_static_then_moving(path: Path, fps: int = 20, seconds: int = 4) -> Path:
    """First half: a still picture. Second half: a bright square sweeping across a dark frame."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = 128, 72, "yuv420p"
        half = fps * seconds // 2
        for i in range(fps * seconds):
            img = np.full((72, 128, 3), 30, dtype=np.uint8)
            x = 10 if i < half else (10 + (i - half) * 7) % 100
            img[20:50, x : x + 24] = 230
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def test_thumbnail_block_average() -> None:
    frame = np.zeros((4, 4, 3), dtype=np.uint8)
    frame[:2, :2] = 255  # top-left quarter white
    thumb = to_gray_thumb(frame, (2, 2))
    assert thumb.shape == (2, 2)
    assert thumb[0, 0] == pytest.approx(1.0, abs=1e-3)
    assert thumb[1, 1] == pytest.approx(0.0)
    assert to_gray_thumb(frame, (1, 1))[0, 0] == pytest.approx(0.25, abs=1e-3)


def test_energy_of_known_differences() -> None:
    a = np.zeros((8, 8), dtype=np.float32)
    b = np.ones((8, 8), dtype=np.float32)
    c = b.copy()
    c[:4] = 0.5
    assert motion_energy([a, a, a]).tolist() == [0.0, 0.0]
    assert motion_energy([a, b, c]).tolist() == pytest.approx([1.0, 0.25])
    with pytest.raises(ValueError, match="shapes differ"):
        motion_energy([a, np.zeros((4, 4), dtype=np.float32)])


@settings(max_examples=40, deadline=None)
@given(arrays(np.uint8, st.tuples(st.integers(2, 40), st.integers(2, 40), st.just(3))), st.integers(1, 16))
def test_energy_is_bounded_and_symmetric(frame: np.ndarray, size: int) -> None:
    inverted = 255 - frame
    t1, t2 = to_gray_thumb(frame, (size, size)), to_gray_thumb(inverted, (size, size))
    e = motion_energy([t1, t2])[0]
    assert 0.0 <= e <= 1.0 + 1e-6
    assert e == pytest.approx(motion_energy([t2, t1])[0])


def test_window_grouping() -> None:
    times = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5]
    energies = np.array([0.1, 0.1, 0.1, 0.1, 0.5, 0.5])  # pair i ends at times[i+1]
    wins = window_energy(times, energies, window_s=1.0)
    assert [(w.start_s, w.end_s, w.pairs) for w in wins] == [(0.0, 1.0, 3), (1.0, 1.5, 3)]
    assert wins[0].energy == pytest.approx(0.1) and wins[1].energy == pytest.approx((0.1 + 0.5 + 0.5) / 3)
    assert window_energy([0.0], np.array([]), 1.0) == []


def test_static_then_moving_video(tmp_path: Path) -> None:
    video = write_static_then_moving(tmp_path / "motion.mp4")
    wins = video_motion(video, MotionParams(sample_fps=5.0, window_s=1.0))
    assert [w.start_s for w in wins] == [0.0, 1.0, 2.0, 3.0]
    still, moving = [w.energy for w in wins[:2]], [w.energy for w in wins[2:]]
    assert max(still) < 0.005  # compression noise only
    assert min(moving) > 0.02
    anchors = motion_anchors("stream:x-00000000", wins, MotionParams(sample_fps=5.0))
    assert [a.kind for a in anchors] == ["motion"] * 4
    assert all(0 < a.confidence <= 1 and a.t_end is not None for a in anchors)


def test_part_of_a_file(tmp_path: Path) -> None:
    video = write_static_then_moving(tmp_path / "motion.mp4")
    wins = video_motion(video, MotionParams(sample_fps=5.0), start_s=2.0, end_s=4.0)
    assert [w.start_s for w in wins] == [0.0, 1.0]
    assert min(w.energy for w in wins) > 0.02


def test_bad_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    with pytest.raises(MediaError) as err:
        video_motion(empty)
    assert err.value.reason is MediaIssue.EMPTY
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"garbage" * 500)
    with pytest.raises(MediaError) as err:
        video_motion(junk)
    assert err.value.reason is MediaIssue.CORRUPT


def test_extractor_on_a_stream(tmp_path: Path) -> None:
    video = write_static_then_moving(tmp_path / "motion.mp4")
    cam = Camera(name="video", kind="video", path=str(video), frame_end=80, time_end=4.0, fps=20.0)
    stream = Stream(
        id="stream:m-00000000",
        reader="test",
        modality=Modality.VIDEO,
        source=str(video),
        fps=20.0,
        frame_count=80,
        duration=4.0,
        cameras={"video": cam},
    )
    ext = get_extractor("motion", sample_fps=5.0, window_s=2.0)
    assert ext.applies_to(stream)
    anchors = ext.extract(stream, source=None)  # type: ignore[arg-type] - motion reads the file directly
    assert [a.t for a in anchors] == [0.0, 2.0]
    assert anchors[0].payload["energy"] < anchors[1].payload["energy"]
    assert anchors[0].payload["camera"] == "video"
