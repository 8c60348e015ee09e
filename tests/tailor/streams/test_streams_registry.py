"""Reader registry, detection, plain video/image/lecture readers, and bad input as rejects."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dataclaw.core.errors import ConfigError, Reject
from dataclaw.media import frame_hash
from dataclaw.tailor.streams import (
    IngestIssue,
    Modality,
    Stream,
    StreamReader,
    StreamSource,
    detect_reader,
    open_source,
    read_streams,
    reader_names,
    register_reader,
)
from dataclaw.tailor.streams.lecture import merge_cues, parse_srt


def test_builtin_readers_are_registered() -> None:
    assert set(reader_names()) >= {
        "lerobot_v2",
        "lerobot_v3",
        "opencua_raw",
        "opencua_traj",
        "agentnet",
        "video",
        "images",
        "lecture",
    }


def test_registry_refuses_a_duplicate_name() -> None:
    class Impostor(StreamReader):
        name = "video"
        modality = Modality.VIDEO

        def detect(self, path: Path) -> bool:
            return False

        def read(self, path: Path):  # type: ignore[override]
            return iter(())

    with pytest.raises(ConfigError, match="already registered"):
        register_reader(Impostor)


@pytest.mark.parametrize(
    ("rel", "reader"),
    [
        ("lerobot_g1", "lerobot_v2"),
        ("opencua/raw_recording", "opencua_raw"),
        ("opencua/agentnetbench", "agentnet"),
        ("opencua/cot_example", "opencua_traj"),
        ("opencua/cot_example/images", "images"),
        ("videos", "video"),
        ("videos/lf_demo4.mp4", "video"),
        ("lectures", "lecture"),
        ("lectures/cryptocurrency.pdf", "lecture"),
    ],
)
def test_detection_picks_the_right_reader(shared_data: Path, rel: str, reader: str) -> None:
    assert detect_reader(shared_data / rel).name == reader


def test_a_directory_that_is_not_a_dataset_errors_clearly(shared_data: Path) -> None:
    with pytest.raises(ConfigError) as err:
        open_source(shared_data / "tau2")
    message = str(err.value)
    assert message.startswith(f"{shared_data / 'tau2'} is not a dataset dataclaw can read: expected one of")
    assert "lerobot_v2" in message and "opencua_raw" in message
    with pytest.raises(ConfigError, match="does not exist"):
        open_source(shared_data / "nowhere")


def test_read_streams_turns_unreadable_paths_into_rejects_and_goes_on(shared_data: Path) -> None:
    items = list(read_streams([shared_data / "tau2", shared_data / "videos/lf_demo4.mp4"]))
    assert isinstance(items[0], Reject) and items[0].reason == IngestIssue.NOT_A_DATASET
    assert isinstance(items[1], Stream) and items[1].frame_count == 150


def test_video_folder_with_bad_files_rejects_them_and_reads_the_rest(
    shared_data: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "clips"
    folder.mkdir()
    good = (shared_data / "videos/dj_video1.mp4").read_bytes()
    (folder / "a_good.mp4").write_bytes(good)
    (folder / "b_empty.mp4").write_bytes(b"")
    (folder / "c_cut.mp4").write_bytes(good[: len(good) // 3])
    stsd = good.find(b"avc1", good.find(b"moov"))
    (folder / "d_codec.mp4").write_bytes(good[:stsd] + b"zzz9" + good[stsd + 4 :])
    shutil.copy(shared_data / "videos/lf_demo4.mp4", folder / "e_good.mp4")
    items = list(open_source(folder))
    assert [type(i).__name__ for i in items] == ["Stream", "Reject", "Reject", "Reject", "Stream"]
    assert [i.reason for i in items if isinstance(i, Reject)] == [
        IngestIssue.EMPTY_VIDEO,
        IngestIssue.CORRUPT_VIDEO,
        IngestIssue.UNSUPPORTED_CODEC,
    ]
    assert "b_empty.mp4" in items[1].message


def test_plain_video_stream(shared_data: Path) -> None:
    [stream] = list(open_source(shared_data / "videos/dj_video2.mp4"))
    assert isinstance(stream, Stream) and stream.modality is Modality.VIDEO
    assert stream.frame_count == 556 and stream.fps == 24.0
    assert stream.metadata["frame_count_source"] == "container"
    with StreamSource(stream) as source:
        assert source.frame_at_time(10.0).shape == (640, 480, 3)
        assert source.index_at_time(10.0) == 240
        with pytest.raises(ConfigError, match="no camera"):
            source.frame(0, camera="wrist")


def test_image_folder_stream(shared_data: Path, tmp_path: Path) -> None:
    [stream] = list(open_source(shared_data / "opencua/cot_example/images"))
    assert isinstance(stream, Stream) and stream.modality is Modality.IMAGES
    assert stream.metadata["files"][:3] == ["0.png", "1.png", "2.png"]  # natural order: 2 before 10
    assert stream.metadata["files"][-1] == "14.png"
    folder = tmp_path / "imgs"
    folder.mkdir()
    shutil.copy(shared_data / "opencua/cot_example/images/0.png", folder / "0.png")
    (folder / "1.png").write_bytes(b"\x89PNG broken")
    [item] = list(open_source(folder))
    assert isinstance(item, Reject) and item.reason == IngestIssue.CORRUPT_IMAGE


def test_lecture_stream(shared_data: Path) -> None:
    [stream] = list(open_source(shared_data / "lectures"))
    assert isinstance(stream, Stream) and stream.modality is Modality.LECTURE
    assert stream.frame_count == stream.metadata["page_count"] > 10
    transcript = [e for e in stream.events if e["type"] == "transcript"]
    slides = [e for e in stream.events if e["type"] == "slide"]
    assert transcript[0]["text"] == "The following content is provided under a Creative Commons license."
    assert transcript[0]["t"] == pytest.approx(0.82) and transcript[0]["t_end"] == pytest.approx(4.24)
    assert (slides[0]["t"], slides[0]["slide"]) == (pytest.approx(25.23), 0)
    assert [e["t"] for e in slides] == sorted(e["t"] for e in slides)
    assert stream.duration == pytest.approx(3623.51)
    with StreamSource(stream) as source:
        assert source.index_at_time(30.0) == 1  # slide 2 from 29.81 s
        assert frame_hash(source.frame_at_time(30.0)) == frame_hash(source.frame(1))
        assert source.frame(0).shape[2] == 3


def test_srt_parsing_both_styles() -> None:
    numbered = (
        "1\n00:00:01,000 --> 00:00:02,500\nHello there.\n\n2\n00:00:03,000 --> 00:00:04,000\nSecond\nline\n"
    )
    assert parse_srt(numbered) == [
        {"t": 1.0, "t_end": 2.5, "text": "Hello there."},
        {"t": 3.0, "t_end": 4.0, "text": "Second line"},
    ]
    words = (
        "[00:00:00.500 --> 00:00:00.900] Hi\n"
        "[00:00:00.900 --> 00:00:01.200] you.\n"
        "[00:00:05.000 --> 00:00:05.400] Next"
    )
    assert merge_cues(parse_srt(words)) == [
        {"t": 0.5, "t_end": 1.2, "text": "Hi you."},
        {"t": 5.0, "t_end": 5.4, "text": "Next"},
    ]


def test_malformed_transcript_is_a_reject(shared_data: Path, tmp_path: Path) -> None:
    shutil.copy(shared_data / "lectures/cryptocurrency.pdf", tmp_path / "talk.pdf")
    (tmp_path / "talk.srt").write_text("this is not a subtitle file\n")
    [item] = list(open_source(tmp_path / "talk.pdf"))
    assert isinstance(item, Reject) and item.reason == IngestIssue.MALFORMED_EVENTS
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 garbage")
    [item] = list(open_source(tmp_path / "broken.pdf"))
    assert isinstance(item, Reject) and item.reason == IngestIssue.CORRUPT_DOCUMENT
