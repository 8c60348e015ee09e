"""LeRobot readers on the real G1 v2.1 subset, and on a real v3.0 dataset built here from it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataclaw.core.errors import Reject
from dataclaw.media import VideoReader, frame_hash
from dataclaw.media.video import decode_all
from dataclaw.tailor.streams import IngestIssue, Modality, Stream, StreamSource, detect_reader, open_source

CAM = "observation.images.cam_high"
G1_JOINTS = 26


def _split(items: list[Stream | Reject]) -> tuple[list[Stream], list[Reject]]:
    return [s for s in items if isinstance(s, Stream)], [r for r in items if isinstance(r, Reject)]


@pytest.fixture(scope="module")
def g1(shared_data: Path) -> tuple[list[Stream], list[Reject]]:
    return _split(list(open_source(shared_data / "lerobot_g1")))


def test_v21_episodes_present_are_streams_and_missing_ones_rejects(
    g1: tuple[list[Stream], list[Reject]],
) -> None:
    streams, rejects = g1
    assert sorted(s.metadata["episode_index"] for s in streams) == [1, 2, 4]
    assert len(rejects) == 97
    assert {r.reason for r in rejects} == {IngestIssue.MISSING_FILE}
    assert all("listed in metadata but missing" in r.message for r in rejects)
    assert len({r.id for r in rejects}) == 97


def test_v21_frame_count_equals_episode_length(
    shared_data: Path, g1: tuple[list[Stream], list[Reject]]
) -> None:
    lengths = {}
    for line in (shared_data / "lerobot_g1/meta/episodes.jsonl").read_text().splitlines():
        row = json.loads(line)
        lengths[row["episode_index"]] = row["length"]
    for stream in g1[0]:
        length = lengths[stream.metadata["episode_index"]]
        assert stream.frame_count == length
        assert stream.modality is Modality.ROBOT and stream.fps == 30.0
        cam = stream.cameras[CAM]
        assert cam.codec == "libdav1d" and (cam.width, cam.height) == (640, 480)
        with VideoReader(cam.path) as reader:  # independent count from the AV1 file itself
            assert reader.frame_count == length


def test_v21_timestamps_align_with_video_frames(g1: tuple[list[Stream], list[Reject]]) -> None:
    stream = g1[0][0]
    with StreamSource(stream) as source:
        ts = source.column("timestamp")
        assert len(ts) == stream.frame_count
        video_times = np.array([source.time_of(i) for i in range(stream.frame_count)])
        assert np.max(np.abs(video_times - ts)) < 0.5 / stream.fps
        assert source.index_at_time(float(ts[100])) == 100
        assert frame_hash(source.frame_at_time(float(ts[100]))) == frame_hash(source.frame(100))


def test_v21_joint_names_from_nested_list(g1: tuple[list[Stream], list[Reject]]) -> None:
    stream = g1[0][0]
    names = stream.metadata["joint_names"]
    assert len(names["observation.state"]) == G1_JOINTS == len(names["action"])
    assert names["observation.state"][0] == "kLeftShoulderPitch"
    assert names["observation.state"][-1] == "kRightHandThumbRotation"
    assert stream.metadata["has_state"] and stream.metadata["has_action"]
    assert stream.task == "Pick up the yellow bottle on the table."
    with StreamSource(stream) as source:
        state = source.column("observation.state")
        assert state.shape == (stream.frame_count, G1_JOINTS) and state.dtype == np.float32
        assert source.column("action").shape == (stream.frame_count, G1_JOINTS)


def test_ids_are_deterministic(shared_data: Path, g1: tuple[list[Stream], list[Reject]]) -> None:
    again, _ = _split(list(open_source(shared_data / "lerobot_g1")))
    assert [s.id for s in again] == [s.id for s in g1[0]]
    assert g1[0][0].id.startswith("stream:lerobot_g1-ep000001-")


def _copy_dataset(shared_data: Path, dst: Path) -> Path:
    root = dst / "g1"
    shutil.copytree(shared_data / "lerobot_g1", root)
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


def test_v21_per_episode_rejects_for_bad_files(shared_data: Path, tmp_path: Path) -> None:
    root = _copy_dataset(shared_data, tmp_path)
    data = root / "data/chunk-000"
    table = pq.read_table(data / "episode_000002.parquet")
    pq.write_table(table.drop_columns(["action"]), data / "episode_000002.parquet")
    video = root / f"videos/chunk-000/{CAM}/episode_000004.mp4"
    video.write_bytes(video.read_bytes()[:5000])
    streams, rejects = _split(list(open_source(root)))
    assert [s.metadata["episode_index"] for s in streams] == [1]
    by_episode = {r.id: r for r in rejects}
    missing_cols = [r for r in by_episode.values() if r.reason == IngestIssue.MISSING_COLUMNS]
    assert len(missing_cols) == 1 and "action" in missing_cols[0].message
    assert missing_cols[0].detail["missing"] == ["action"]
    broken = [r for r in rejects if r.reason in (IngestIssue.CORRUPT_VIDEO, IngestIssue.TRUNCATED_VIDEO)]
    assert len(broken) == 1 and "episode_000004.mp4" in broken[0].message


def _build_v3(shared_data: Path, root: Path, per_episode: int = 45) -> list[int]:
    """A real LeRobot v3.0 dataset: two G1 episodes (first ``per_episode`` frames each) packed into one
    parquet and one H.264 mp4, episode metadata in meta/episodes/chunk-000/file-000.parquet."""
    src = shared_data / "lerobot_g1"
    info = json.loads((src / "meta/info.json").read_text())
    episodes = [1, 2]
    tables, rows = [], []
    (root / "meta/episodes/chunk-000").mkdir(parents=True)
    (root / "data/chunk-000").mkdir(parents=True)
    (root / f"videos/{CAM}/chunk-000").mkdir(parents=True)
    out = av.open(str(root / f"videos/{CAM}/chunk-000/file-000.mp4"), "w")
    stream = out.add_stream("libx264", rate=30)
    stream.width, stream.height, stream.pix_fmt = 320, 240, "yuv420p"
    stream.options = {"g": "30", "bf": "2", "crf": "30"}
    written = 0
    for ep in episodes:
        table = pq.read_table(src / f"data/chunk-000/episode_{ep:06d}.parquet").slice(0, per_episode)
        index = pa.array(np.arange(written, written + per_episode, dtype=np.int64))
        tables.append(table.set_column(table.schema.get_field_index("index"), "index", index))
        with VideoReader(src / f"videos/chunk-000/{CAM}/episode_{ep:06d}.mp4") as reader:
            for rgb in reader.frames_at(list(range(per_episode))):
                frame = av.VideoFrame.from_ndarray(rgb, format="rgb24").reformat(320, 240, "yuv420p")
                out.mux(stream.encode(frame))
        rows.append(
            {
                "episode_index": ep,
                "tasks": ["Pick up the yellow bottle on the table."],
                "length": per_episode,
                "data/chunk_index": 0,
                "data/file_index": 0,
                "dataset_from_index": written,
                "dataset_to_index": written + per_episode,
                f"videos/{CAM}/chunk_index": 0,
                f"videos/{CAM}/file_index": 0,
                f"videos/{CAM}/from_timestamp": written / 30,
                f"videos/{CAM}/to_timestamp": (written + per_episode) / 30,
            }
        )
        written += per_episode
    out.mux(stream.encode(None))
    out.close()
    pq.write_table(pa.concat_tables(tables), root / "data/chunk-000/file-000.parquet")
    pq.write_table(pa.Table.from_pylist(rows), root / "meta/episodes/chunk-000/file-000.parquet")
    info.update(
        codebase_version="v3.0",
        total_episodes=len(episodes),
        total_frames=written,
        data_path="data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
        video_path="videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
    )
    info["features"][CAM]["info"]["video.codec"] = "h264"
    (root / "meta/info.json").write_text(json.dumps(info, indent=1))
    return episodes


@pytest.mark.slow
def test_v30_episodes_share_one_mp4_located_by_timestamps(shared_data: Path, tmp_path: Path) -> None:
    root = tmp_path / "g1_v3"
    episodes = _build_v3(shared_data, root)
    assert detect_reader(root).name == "lerobot_v3"
    streams, rejects = _split(list(open_source(root)))
    assert rejects == []
    assert [s.metadata["episode_index"] for s in streams] == episodes
    first, second = streams
    assert (first.cameras[CAM].frame_start, first.cameras[CAM].frame_end) == (0, 45)
    assert (second.cameras[CAM].frame_start, second.cameras[CAM].frame_end) == (45, 90)
    assert second.cameras[CAM].time_start == pytest.approx(1.5)
    assert len(second.metadata["joint_names"]["observation.state"]) == G1_JOINTS
    full = [frame_hash(f) for f in decode_all(root / f"videos/{CAM}/chunk-000/file-000.mp4")]
    assert len(full) == 90
    with StreamSource(second) as source:
        assert source.frame_count() == 45
        assert frame_hash(source.frame(0)) == full[45]
        assert frame_hash(source.frame_at_time(1.0)) == full[45 + 30]
        assert source.time_of(30) == pytest.approx(1.0)
        state = source.column("observation.state")
        assert state.shape == (45, G1_JOINTS)
        ts = source.column("timestamp")
        assert ts[0] == 0.0 and ts[-1] == pytest.approx(44 / 30, abs=1e-5)
        original = pq.read_table(shared_data / "lerobot_g1/data/chunk-000/episode_000002.parquet")
        expected = np.asarray(original["observation.state"].to_pylist()[:45], dtype=np.float32)
        assert np.array_equal(state, expected)


@pytest.mark.slow
def test_v30_episode_pointing_past_the_video_is_rejected(shared_data: Path, tmp_path: Path) -> None:
    root = tmp_path / "g1_v3"
    _build_v3(shared_data, root, per_episode=20)
    meta = root / "meta/episodes/chunk-000/file-000.parquet"
    rows = pq.read_table(meta).to_pylist()
    rows[1][f"videos/{CAM}/from_timestamp"] = 1.0  # 20 frames from 1.0 s: the file ends at 40 frames
    pq.write_table(pa.Table.from_pylist(rows), meta)
    streams, rejects = _split(list(open_source(root)))
    assert len(streams) == 1 and len(rejects) == 1
    assert rejects[0].reason == IngestIssue.LENGTH_MISMATCH


def test_v21_unreadable_parquet_is_a_bad_table_reject(shared_data: Path, tmp_path: Path) -> None:
    root = _copy_dataset(shared_data, tmp_path)
    (root / "data/chunk-000/episode_000001.parquet").write_bytes(b"PAR1 not really parquet")
    streams, rejects = _split(list(open_source(root)))
    assert sorted(s.metadata["episode_index"] for s in streams) == [2, 4]
    [bad] = [r for r in rejects if r.reason == IngestIssue.BAD_TABLE]
    assert "episode 1" in bad.message and "episode_000001.parquet" in bad.message
