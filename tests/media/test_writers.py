"""Clip, freeze-frame and still writers: decoded back, frames are exact (hash-compared with the source
frames of a real AV1 LeRobot episode), counts are exact, bytes are deterministic, failures leave nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dataclaw.core.errors import ConfigError
from dataclaw.media import MediaError, MediaIssue, VideoReader, frame_hash, load_image
from dataclaw.media.video import decode_all
from dataclaw.media.writers import (
    DEFAULT_CODEC,
    VideoCodec,
    codec_names,
    get_codec,
    register_codec,
    sha256_file,
    write_clip,
    write_freeze,
    write_still,
)

EPISODE = "lerobot_g1/videos/chunk-000/observation.images.cam_high/episode_000001.mp4"


@pytest.fixture(scope="module")
def source_frames(shared_data: Path) -> list[np.ndarray]:
    """12 consecutive real frames (640x480, decoded from AV1) with visible motion."""
    with VideoReader(shared_data / EPISODE) as reader:
        return reader.frames_at(list(range(150, 162)))


def _hashes(frames: list[np.ndarray]) -> list[str]:
    return [frame_hash(f) for f in frames]


@pytest.mark.parametrize("codec", ["h264-rgb-lossless", "ffv1"])
def test_clip_round_trips_frame_exact(tmp_path: Path, source_frames: list[np.ndarray], codec: str) -> None:
    assert len(set(_hashes(source_frames))) == len(source_frames)  # the frames really differ
    path = tmp_path / f"clip{get_codec(codec).suffix}"
    written = write_clip(iter(source_frames), path, 30.0, codec=codec)
    decoded = list(decode_all(path))
    assert written.frames == len(decoded) == len(source_frames)
    assert _hashes(decoded) == _hashes(source_frames)
    assert (written.width, written.height, written.fps, written.lossless) == (640, 480, 30.0, True)
    assert written.sha256 == sha256_file(path) and written.size_bytes == path.stat().st_size
    with VideoReader(path) as reader:  # exact random access into the artifact, as exporters' users do
        assert reader.frame_count == len(source_frames)
        assert reader.fps == 30.0
        assert frame_hash(reader.frame_at(7)) == frame_hash(source_frames[7])


def test_freeze_has_exactly_n_copies_of_the_frame(tmp_path: Path, source_frames: list[np.ndarray]) -> None:
    written = write_freeze(source_frames[4], 17, tmp_path / "freeze.mp4", 30.0)
    decoded = list(decode_all(written.path))
    assert written.frames == len(decoded) == 17
    assert set(_hashes(decoded)) == {frame_hash(source_frames[4])}


def test_same_frames_give_same_bytes(tmp_path: Path, source_frames: list[np.ndarray]) -> None:
    for codec in ("h264-rgb-lossless", "ffv1"):
        suffix = get_codec(codec).suffix
        a = write_clip(source_frames[:5], tmp_path / f"a{suffix}", 30.0, codec=codec)
        b = write_clip(list(source_frames[:5]), tmp_path / f"b{suffix}", 30.0, codec=codec)
        assert a.sha256 == b.sha256
        assert (tmp_path / f"a{suffix}").read_bytes() == (tmp_path / f"b{suffix}").read_bytes()
    one = write_clip(source_frames[:5], tmp_path / "c.mp4", 30.0)
    other = write_clip(source_frames[1:6], tmp_path / "d.mp4", 30.0)
    assert one.sha256 != other.sha256


def test_still_is_lossless_png(tmp_path: Path, source_frames: list[np.ndarray]) -> None:
    written = write_still(source_frames[2], tmp_path / "still.png")
    assert written.media_type == "image" and written.frames == 1 and written.fps is None
    assert frame_hash(load_image(written.path)) == frame_hash(source_frames[2])
    again = write_still(source_frames[2], tmp_path / "again.png")
    assert again.sha256 == written.sha256


def test_yuv_h264_is_not_exact_which_is_why_it_is_not_the_default(
    tmp_path: Path, source_frames: list[np.ndarray]
) -> None:
    written = write_clip(source_frames[:3], tmp_path / "lossy.mp4", 30.0, codec="h264")
    decoded = list(decode_all(written.path))
    assert len(decoded) == 3 and not written.lossless
    assert _hashes(decoded) != _hashes(source_frames[:3])
    assert get_codec(DEFAULT_CODEC).lossless


def test_odd_sizes_and_fractional_fps(tmp_path: Path, source_frames: list[np.ndarray]) -> None:
    odd = np.ascontiguousarray(source_frames[0][:101, :77])
    written = write_clip([odd, source_frames[1][:101, :77]], tmp_path / "odd.mp4", 29.97)
    decoded = list(decode_all(written.path))
    assert _hashes(decoded) == [
        frame_hash(odd),
        frame_hash(np.ascontiguousarray(source_frames[1][:101, :77])),
    ]
    with VideoReader(written.path) as reader:
        assert abs(reader.fps - 29.97) < 1e-6
    padded = write_clip([odd], tmp_path / "odd_lossy.mp4", 25.0, codec="h264")
    assert (padded.width, padded.height) == (78, 102)  # yuv420p needs even sizes: edge-padded


def test_bad_inputs_fail_clearly_and_leave_no_file(tmp_path: Path, source_frames: list[np.ndarray]) -> None:
    with pytest.raises(MediaError) as empty:
        write_clip([], tmp_path / "empty.mp4", 30.0)
    assert empty.value.reason is MediaIssue.EMPTY
    with pytest.raises(ValueError, match="frame 2 is"):
        write_clip([source_frames[0], source_frames[1], source_frames[2][:100]], tmp_path / "mixed.mp4", 30.0)
    with pytest.raises(ValueError, match="RGB uint8"):
        write_clip([source_frames[0].astype(np.float32)], tmp_path / "float.mp4", 30.0)
    with pytest.raises(ConfigError, match=r"writes \.mp4"):
        write_clip(source_frames[:1], tmp_path / "clip.avi", 30.0)
    with pytest.raises(ValueError, match="fps"):
        write_clip(source_frames[:1], tmp_path / "nofps.mp4", 0.0)
    with pytest.raises(ValueError, match="repeat count"):
        write_freeze(source_frames[0], 0, tmp_path / "zero.mp4", 30.0)
    with pytest.raises(ConfigError, match="unknown video codec"):
        write_clip(source_frames[:1], tmp_path / "x.mp4", 30.0, codec="nope")
    assert list(tmp_path.iterdir()) == []


def test_a_crash_mid_clip_leaves_neither_the_file_nor_a_temp(
    tmp_path: Path, source_frames: list[np.ndarray]
) -> None:
    target = tmp_path / "clip.mp4"
    write_clip(source_frames[:2], target, 30.0)
    before = target.read_bytes()

    def frames() -> Iterator[np.ndarray]:
        yield from source_frames[:3]
        raise RuntimeError("decoder died")

    with pytest.raises(RuntimeError, match="decoder died"):
        write_clip(frames(), target, 30.0)
    assert target.read_bytes() == before  # the old file is untouched, no temp file remains
    assert [p.name for p in tmp_path.iterdir()] == ["clip.mp4"]


def test_codec_registry_refuses_a_duplicate_name() -> None:
    assert {"h264-rgb-lossless", "ffv1", "h264"} <= set(codec_names())
    with pytest.raises(ConfigError, match="already registered"):
        register_codec(
            VideoCodec(name="ffv1", encoder="ffv1", pix_fmt="gray", container="avi", suffix=".avi")
        )


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    codec=st.sampled_from(["h264-rgb-lossless", "ffv1"]),
    height=st.integers(1, 24),
    width=st.integers(1, 24),
    count=st.integers(1, 6),
    seed=st.integers(0, 2**32 - 1),
)
def test_lossless_codecs_round_trip_random_noise(
    tmp_path: Path, codec: str, height: int, width: int, count: int, seed: int
) -> None:
    """Random noise (the hardest content) of any size the codec accepts round-trips bit-exactly."""
    assume(width >= get_codec(codec).min_width)
    rng = np.random.default_rng(seed)
    frames = [rng.integers(0, 256, (height, width, 3), dtype=np.uint8) for _ in range(count)]
    path = tmp_path / f"noise-{seed}{get_codec(codec).suffix}"
    written = write_clip(frames, path, 24.0, codec=codec)
    assert written.frames == count
    assert _hashes(list(decode_all(path))) == _hashes(frames)


def test_frames_narrower_than_the_codec_accepts_are_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(MediaError, match="at least 2 pixels wide"):
        write_clip([np.zeros((4, 1, 3), np.uint8)], tmp_path / "thin.mkv", 10.0, codec="ffv1")
    assert not list(tmp_path.iterdir())  # nothing half-written is left behind
