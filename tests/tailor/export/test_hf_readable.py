"""The HF export reads in dataclaw's own venv (``datasets`` without ``torchcodec``): video columns come back
as ``{"path", "bytes"}`` without any cast, and the bytes are the real clip; the dataset card states the
codec the run really used (read back from the clip's own x264 settings), not a blanket "lossless"."""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path

import av
import datasets
import pytest

from dataclaw.core.ids import child_id
from dataclaw.media import VideoReader
from dataclaw.media.video import x264_options
from dataclaw.tailor.export import export as run_export
from dataclaw.tailor.materialize import make_item, materialize
from dataclaw.tailor.records import Route, Sample, Turn
from dataclaw.tailor.streams import Stream, open_source

VIDEO = "videos/lf_demo4.mp4"  # 224x224, 150 frames, H.264


@pytest.fixture(scope="module")
def stream(shared_data: Path) -> Stream:
    return next(s for s in open_source(shared_data / VIDEO) if isinstance(s, Stream))


def _clip_run(root: Path, stream: Stream, codec: str, crf: int | None = None) -> Path:
    """A run with one sample holding a 10-frame clip of the real video, encoded with ``codec``."""
    cand = child_id(stream.id, "cand", "clip", label="clip")
    sample = Sample(
        id=child_id(cand, "sample", "clip", label="clip"),
        intent="keyframe_qa",
        domain="embodied",
        stream_id=stream.id,
        candidate_id=cand,
        output={"clip": [10, 19]},
        conversation=[Turn(role="user", content="What happens?"), Turn(role="assistant", content="A hand.")],
        route=Route(model="replay:test", router="omni"),
    )
    run = root / f"run-{codec}-{crf}"
    item = make_item(sample, stream, None, [{"name": "clip", "field": "clip"}])
    assert materialize([item], run, codec=codec, crf=crf).outputs == 1
    return run


def _frames(data: bytes) -> int:
    with av.open(io.BytesIO(data)) as container:
        return sum(1 for _ in container.decode(video=0))


def test_video_rows_read_without_torchcodec_and_hold_the_clip(stream: Stream, tmp_path: Path) -> None:
    assert importlib.util.find_spec("torchcodec") is None  # the point: our venv has no video decoder
    out = tmp_path / "hf"
    assert run_export(_clip_run(tmp_path, stream, "h264"), "hf", out).samples == 1
    for loaded in (
        datasets.Dataset.from_parquet(str(out / "data" / "train-00000-of-00001.parquet")),
        # a cache of its own: datasets' cache of a local folder can outlive the files it was made from
        datasets.load_dataset(str(out), split="train", cache_dir=str(tmp_path / "cache")),
    ):
        assert not isinstance(loaded.features["videos"].feature, datasets.Video)
        row = loaded[0]  # no cast: a decoding Video column would need torchcodec here
        (video,) = row["videos"]
        assert set(video) == {"path", "bytes"} and video["path"].endswith(".mp4")
        assert video["bytes"][4:8] == b"ftyp" and _frames(video["bytes"]) == 10
    # decoding on, as the card says, gives the Video feature (torchcodec decodes it where installed)
    cast = loaded.cast_column("videos", datasets.List(datasets.Video()))
    assert isinstance(cast.features["videos"].feature, datasets.Video)
    assert 'cast_column("videos", datasets.List(datasets.Video()))' in (out / "README.md").read_text()


@pytest.mark.parametrize(("codec", "crf", "card"), [("h264", None, "crf 18"), ("h264", 23, "crf 23")])
def test_card_states_the_codec_the_run_used(
    stream: Stream, tmp_path: Path, codec: str, crf: int | None, card: str
) -> None:
    out = tmp_path / "hf"
    run_export(_clip_run(tmp_path, stream, codec, crf), "hf", out)
    text = (out / "README.md").read_text()
    data = datasets.Dataset.from_parquet(str(next((out / "data").glob("*.parquet"))))[0]["videos"][0]["bytes"]
    written = float(x264_options(data)["crf"])  # what the encoder wrote into the clip itself
    assert f"crf {int(written)}" == card
    assert f"libx264, yuv420p, mp4, {card}" in text and "not frame-exact" in text
    assert "lossless" not in text.lower() and "frame-exact;" not in text


def test_card_of_a_lossless_run_says_frames_are_exact(stream: Stream, tmp_path: Path) -> None:
    out = tmp_path / "hf"
    run = _clip_run(tmp_path, stream, "lossless")
    run_export(run, "hf", out)
    text = (out / "README.md").read_text()
    assert "`h264-rgb-lossless` (1 video): libx264rgb, rgb24, mp4, qp 0" in text
    assert "equal the source frames bit for bit" in text
    clip = next((run / "media").rglob("*.mp4"))
    with VideoReader(clip) as reader, VideoReader(stream.cameras["video"].path) as source:
        assert (reader.frame_at(3) == source.frame_at(13)).all()  # what the card claims holds
