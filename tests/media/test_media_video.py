"""VideoReader: exact metadata, frame-exact seeking (hash-compared with a full decode), bad files."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import av
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataclaw.media import MediaError, MediaIssue, VideoReader, frame_hash, probe, sample_indices
from dataclaw.media.video import decode_all


def _full_hashes(path: Path) -> list[str]:
    return [frame_hash(f) for f in decode_all(path)]


@pytest.mark.parametrize(
    "rel",
    [
        "videos/dj_video1.mp4",  # H.264 with B-frames, 3 keyframes
        "lerobot_g1/videos/chunk-000/observation.images.cam_high/episode_000002.mp4",  # AV1
    ],
)
def test_seek_is_frame_exact_against_full_decode(shared_data: Path, rel: str) -> None:
    path = shared_data / rel
    full = _full_hashes(path)
    with VideoReader(path) as reader:
        assert reader.frame_count == len(full)
        rng = random.Random(7)
        shuffled = rng.sample(range(len(full)), 40)
        assert [frame_hash(f) for f in reader.frames_at(shuffled)] == [full[i] for i in shuffled]
        for i in sorted(rng.sample(range(len(full)), 12)):  # ascending single requests reuse the decoder
            assert frame_hash(reader.frame_at(i)) == full[i]
        for i in (len(full) - 1, 0, len(full) // 2):  # backwards jumps seek again
            assert frame_hash(reader.frame_at(i)) == full[i]
        plan = sample_indices(reader.frame_count, 8)
        assert [frame_hash(f) for f in reader.frames_at(plan)] == [full[i] for i in plan]


def test_metadata_is_exact(shared_data: Path) -> None:
    info = probe(shared_data / "opencua/raw_recording/recording.mp4")
    assert (info.codec, info.width, info.height, info.fps) == ("h264", 1276, 718, 30.0)
    assert info.frame_count == 3678 and info.frame_count_source == "container"
    assert info.duration == pytest.approx(122.6667, abs=1e-3)
    av1 = probe(shared_data / "lerobot_g1/videos/chunk-000/observation.images.cam_high/episode_000001.mp4")
    assert av1.frame_count == 393 and av1.fps == 30.0


def test_time_and_index_agree(shared_data: Path) -> None:
    with VideoReader(shared_data / "videos/dj_video1.mp4") as reader:
        assert reader.time_of(24) == pytest.approx(1.0)
        assert reader.index_at_time(1.0) == 24
        assert reader.index_at_time(1.04) == 24
        assert reader.index_at_time(1.0 + 1 / 24) == 25
        assert reader.index_at_time(reader.info.duration) == reader.frame_count - 1
        frame = reader.frame_at_time(2.0)
        assert frame.shape == (360, 640, 3) and frame.dtype.name == "uint8"
        with pytest.raises(MediaError) as err:
            reader.frame_at(reader.frame_count)
        assert err.value.reason is MediaIssue.OUT_OF_RANGE
        with pytest.raises(MediaError):
            reader.index_at_time(-0.1)


def test_sample_indices_are_uniform_and_distinct() -> None:
    assert sample_indices(100, 4) == [12, 37, 62, 87]
    assert sample_indices(3, 10) == [0, 1, 2]
    assert sample_indices(0, 5) == []
    for n, k in [(3678, 24), (7, 7), (1000, 999)]:
        plan = sample_indices(n, k)
        assert len(plan) == k and plan == sorted(set(plan)) and plan[-1] < n


def _faststart_copy(src: Path, dst: Path) -> None:
    """Remux with the index (moov) at the front, so a truncated copy still opens."""
    with av.open(str(src)) as inp, av.open(str(dst), "w", options={"movflags": "faststart"}) as out:
        stream = inp.streams.video[0]
        ostream = out.add_stream_from_template(stream)
        for packet in inp.demux(stream):
            if packet.dts is None:
                continue
            packet.stream = ostream
            out.mux(packet)


def test_bad_videos_fail_with_a_reason(shared_data: Path, tmp_path: Path) -> None:
    data = (shared_data / "videos/dj_video1.mp4").read_bytes()
    cases: dict[str, MediaIssue] = {}

    (tmp_path / "empty.mp4").write_bytes(b"")
    cases["empty.mp4"] = MediaIssue.EMPTY
    (tmp_path / "garbage.mp4").write_bytes(b"not a video at all " * 200)
    cases["garbage.mp4"] = MediaIssue.CORRUPT
    (tmp_path / "cut.mp4").write_bytes(data[: len(data) // 2])  # index at the end: lost
    cases["cut.mp4"] = MediaIssue.CORRUPT
    _faststart_copy(shared_data / "videos/dj_video1.mp4", tmp_path / "fs.mp4")
    fs = (tmp_path / "fs.mp4").read_bytes()
    (tmp_path / "truncated.mp4").write_bytes(fs[: len(fs) // 2])  # index kept, half the frames gone
    cases["truncated.mp4"] = MediaIssue.TRUNCATED
    stsd = data.find(b"avc1", data.find(b"moov"))
    (tmp_path / "codec.mp4").write_bytes(data[:stsd] + b"zzz9" + data[stsd + 4 :])
    cases["codec.mp4"] = MediaIssue.UNSUPPORTED_CODEC
    cases["missing.mp4"] = MediaIssue.NOT_FOUND

    for name, reason in cases.items():
        with pytest.raises(MediaError) as err:
            VideoReader(tmp_path / name)
        assert err.value.reason is reason, (name, err.value)
        assert name in str(err.value)
    shutil.copy(tmp_path / "fs.mp4", tmp_path / "ok.mp4")
    assert probe(tmp_path / "ok.mp4").frame_count == 282


def _hashes_by_full_decode(path: Path, wanted: set[int]) -> dict[int, str]:
    with av.open(str(path)) as container:
        return {
            i: frame_hash(frame.to_ndarray(format="rgb24"))
            for i, frame in enumerate(container.decode(video=0))
            if i in wanted
        }


@pytest.mark.slow
def test_b_frame_skipping_on_x264_recording_is_frame_exact(shared_data: Path) -> None:
    """The OpenCUA recording is x264 ref=1 with B-pyramids: far-away B-frames are skipped outright."""
    path = shared_data / "opencua/raw_recording/recording.mp4"
    rng = random.Random(11)
    with VideoReader(path) as reader:
        assert reader._b_window is not None  # the fast path is the one under test
        n = reader.frame_count
        plan = sample_indices(n, 24)
        picks = rng.sample(range(n), 30)
        ascending = sorted(rng.sample(range(n), 10))
        singles = rng.sample(range(n), 40)  # one at a time, in random order: seeks and continuations
        edges = [0, 1, n - 2, n - 1, 39, 40, 38]  # around the first keyframes and the end
        expected = _hashes_by_full_decode(path, set(plan + picks + ascending + singles + edges))
        assert [frame_hash(f) for f in reader.frames_at(plan)] == [expected[i] for i in plan]
        assert [frame_hash(f) for f in reader.frames_at(picks)] == [expected[i] for i in picks]
        for i in ascending + singles + edges:  # single requests: continue forward or seek back
            assert frame_hash(reader.frame_at(i)) == expected[i], i


def test_x264_options_parsing() -> None:
    from dataclaw.media.video import x264_options

    sei = b"\x00\x05x264 - core 164 r3106 - H.264/MPEG-4 AVC codec - options: cabac=1 ref=1 bframes=3"
    sei += b" b_pyramid=2\x00"
    assert x264_options(sei) == {"cabac": "1", "ref": "1", "bframes": "3", "b_pyramid": "2"}
    assert x264_options(b"no encoder info here") == {}


def test_frame_count_from_packets_when_the_container_says_nothing(shared_data: Path, tmp_path: Path) -> None:
    """Matroska stores no frame count: the count comes from the packets and still matches a full decode."""
    mkv = tmp_path / "clip.mkv"
    with av.open(str(shared_data / "videos/lf_demo4.mp4")) as inp, av.open(str(mkv), "w") as out:
        stream = inp.streams.video[0]
        ostream = out.add_stream_from_template(stream)
        for packet in inp.demux(stream):
            if packet.dts is not None:
                packet.stream = ostream
                out.mux(packet)
    info = probe(mkv)
    assert info.container_frame_count == 0 and info.frame_count_source == "packets"
    assert info.frame_count == len(_full_hashes(mkv)) == 150
    with VideoReader(mkv) as reader:
        assert frame_hash(reader.frame_at(149)) == _full_hashes(mkv)[149]


@settings(max_examples=200, deadline=None)
@given(n=st.integers(min_value=0, max_value=100_000), k=st.integers(min_value=0, max_value=500))
def test_sample_indices_properties(n: int, k: int) -> None:
    plan = sample_indices(n, k)
    assert len(plan) == min(n, k)
    assert plan == sorted(set(plan)) and all(0 <= i < n for i in plan)


@pytest.mark.slow
def test_frame_threading_stays_frame_exact(shared_data: Path) -> None:
    path = shared_data / "videos/dj_video3.mp4"
    full = _full_hashes(path)
    picks = random.Random(5).sample(range(len(full)), 25)
    with VideoReader(path, threads=True) as reader:
        assert [frame_hash(reader.frame_at(i)) for i in picks] == [full[i] for i in picks]
        assert [frame_hash(f) for f in reader.frames_at(picks)] == [full[i] for i in picks]


def _synthetic_x264(path: Path, options: dict[str, str], frames: int = 240) -> Path:
    """Moving gradients + a bouncing block + fades (weighted prediction), encoded by libx264."""
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:96, 0:160]
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=30)
        stream.width, stream.height, stream.pix_fmt = 160, 96, "yuv420p"
        stream.options = options
        for i in range(frames):
            img = np.stack([(xx + 3 * i) % 256, (yy * 2 + i) % 256, (xx + yy + 5 * i) % 256], axis=-1)
            img = (img * (0.5 + 0.5 * abs(np.sin(i / 25)))).astype(np.uint8)  # fades
            x, y = (7 * i) % 140, int(40 + 30 * np.sin(i / 9))
            img[y : y + 16, x : x + 20] = rng.integers(0, 255, size=(16, 20, 3), dtype=np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


@pytest.mark.parametrize(
    ("x264_params", "fast_path"),
    [
        ("ref=1:bframes=3:b-pyramid=normal:weightb=1:keyint=90:b-adapt=2", True),
        ("ref=1:bframes=2:b-pyramid=none:weightp=2:keyint=60", True),
        ("ref=1:bframes=5:b-pyramid=normal:direct=temporal:keyint=120", True),
        ("ref=1:bframes=4:b-pyramid=strict:weightb=1:keyint=100", True),
        ("ref=1:bframes=16:b-pyramid=normal:b-adapt=0:keyint=200", True),
        ("ref=3:bframes=3:b-pyramid=normal:keyint=90", False),
    ],
)
def test_random_access_on_x264_variants_is_frame_exact(
    tmp_path: Path, x264_params: str, fast_path: bool
) -> None:
    path = _synthetic_x264(tmp_path / "synthetic.mp4", {"x264-params": x264_params, "crf": "28"})
    full = _full_hashes(path)
    rng = random.Random(1)
    with VideoReader(path) as reader:
        assert (reader._b_window is not None) is fast_path
        assert reader.frame_count == len(full) == 240
        singles = rng.sample(range(len(full)), 60)
        assert [frame_hash(reader.frame_at(i)) for i in singles] == [full[i] for i in singles]
        plan = sample_indices(len(full), 24)
        assert [frame_hash(f) for f in reader.frames_at(plan)] == [full[i] for i in plan]
