"""LeRobot dataset readers: v2.1 (one parquet + one mp4 per episode) and v3.0 (episodes packed into
shared parquet and mp4 files, located through ``meta/episodes/*.parquet``). One stream per episode.

Each episode is checked before it becomes a stream: its files exist, its table has the columns the
metadata promises, the table length equals the episode length, every camera video holds exactly that
many frames (counted from packets), and the table timestamps match the video frame times. A failed
check is a reject for that episode only; the other episodes are read as usual.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dataclaw.core.errors import Reject, require
from dataclaw.media.errors import MediaError
from dataclaw.media.video import VideoReader
from dataclaw.tailor.streams.base import (
    Camera,
    IngestIssue,
    Modality,
    Stream,
    StreamReader,
    media_reject,
    register_reader,
    reject,
    stream_id,
)

_BASE_COLUMNS = ("timestamp", "frame_index", "episode_index")
_TABLE_FEATURES = ("observation.state", "action")


def joint_names(feature: dict[str, Any]) -> list[str]:
    """Flatten a feature's ``names`` (a list, a nested list, or ``{"motors": [...]}``) to one list."""
    names = feature.get("names")
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)

    walk(names)
    return out


@dataclass
class EpisodeSpec:
    """Where one episode lives, whatever the dataset version."""

    index: int
    length: int
    tasks: list[str]
    data_path: Path
    videos: dict[str, tuple[Path, float | None, float | None]] = field(default_factory=dict)
    """camera -> (mp4, from_timestamp, to_timestamp); times None when the file holds only this episode."""


class _OpenFiles:
    """The last few videos and tables read, kept open across episodes: LeRobot v3 packs many episodes
    into one parquet and one mp4, which would otherwise be demuxed and read again for every episode."""

    def __init__(self, keep: int = 8) -> None:
        self.keep = keep
        self._videos: OrderedDict[Path, VideoReader] = OrderedDict()
        self._tables: OrderedDict[Path, tuple[list[str], Any]] = OrderedDict()

    def video(self, path: Path) -> VideoReader:
        """An open reader of ``path`` (raises MediaError when it cannot be opened)."""
        if path not in self._videos:
            self._videos[path] = VideoReader(path)
        self._videos.move_to_end(path)
        while len(self._videos) > self.keep:
            self._videos.popitem(last=False)[1].close()
        return self._videos[path]

    def table(self, path: Path) -> tuple[list[str], Any]:
        """(column names, the timestamp and episode_index columns) of a parquet file."""
        if path not in self._tables:
            pq = require("pyarrow.parquet", "LeRobot reader", "media")
            names = pq.read_schema(path).names
            timing = (
                pq.read_table(path, columns=["timestamp", "episode_index"])
                if all(c in names for c in ("timestamp", "episode_index"))
                else None
            )
            self._tables[path] = (names, timing)
        self._tables.move_to_end(path)
        while len(self._tables) > self.keep:
            self._tables.popitem(last=False)
        return self._tables[path]

    def close(self) -> None:
        for reader in self._videos.values():
            reader.close()
        self._videos.clear()
        self._tables.clear()


class _LeRobotBase(StreamReader):
    """Shared checks and stream building; subclasses list their episodes."""

    modality = Modality.ROBOT
    version_prefix: str = ""

    def detect(self, path: Path) -> bool:
        info = path / "meta" / "info.json"
        if not info.is_file():
            return False
        try:
            version = str(json.loads(info.read_text()).get("codebase_version", ""))
        except (OSError, ValueError):
            return False
        return version.startswith(self.version_prefix)

    def episodes(self, root: Path, info: dict[str, Any]) -> Iterator[EpisodeSpec | Reject]:
        raise NotImplementedError

    def read(self, path: Path) -> Iterator[Stream | Reject]:
        try:
            info = json.loads((path / "meta" / "info.json").read_text())
            fps = float(info["fps"])
            features = dict(info["features"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            yield reject(
                stream_id(path.name, [self.name, path.name]),
                IngestIssue.BAD_METADATA,
                f"{path}/meta/info.json: not a valid LeRobot info file ({exc})",
            )
            return
        files = _OpenFiles()
        try:
            for spec in self.episodes(path, info):
                if isinstance(spec, Reject):
                    yield spec
                else:
                    yield self._episode_stream(path, info, fps, features, spec, files)
        finally:
            files.close()

    def _uid(self, root: Path, episode: int) -> str:
        return stream_id(f"{root.name}-ep{episode:06d}", [self.name, root.name, episode])

    def _episode_stream(
        self,
        root: Path,
        info: dict[str, Any],
        fps: float,
        features: dict[str, Any],
        spec: EpisodeSpec,
        files: _OpenFiles,
    ) -> Stream | Reject:
        uid = self._uid(root, spec.index)
        where = f"{root.name} episode {spec.index}"
        missing = [str(p) for p in [spec.data_path, *(v[0] for v in spec.videos.values())] if not p.is_file()]
        if missing:
            return reject(
                uid, IngestIssue.MISSING_FILE, f"{where}: listed in metadata but missing: {missing[0]}"
            )
        checked = self._check_table(uid, where, spec, features, files)
        if isinstance(checked, Reject):
            return checked
        timestamps, table_columns = checked
        cameras: dict[str, Camera] = {}
        for key, (video, t_from, t_to) in spec.videos.items():
            camera = self._camera(uid, where, key, files, video, t_from, t_to, spec.length, timestamps, fps)
            if isinstance(camera, Reject):
                return camera
            cameras[key] = camera
        names = {f: joint_names(features[f]) for f in _TABLE_FEATURES if f in features}
        return Stream(
            id=uid,
            reader=self.name,
            modality=Modality.ROBOT,
            source=str(root),
            fps=fps,
            frame_count=spec.length,
            duration=round(spec.length / fps, 6),
            cameras=cameras,
            metadata={
                "task": spec.tasks[0] if spec.tasks else None,
                "tasks": spec.tasks,
                "dataset": root.name,
                "episode_index": spec.index,
                "codebase_version": info.get("codebase_version"),
                "robot_type": info.get("robot_type"),
                "joint_names": names,
                "has_state": "observation.state" in table_columns,
                "has_action": "action" in table_columns,
                "table": {"path": str(spec.data_path), "episode_index": spec.index, "columns": None},
            },
        )

    def _check_table(
        self, uid: str, where: str, spec: EpisodeSpec, features: dict[str, Any], files: _OpenFiles
    ) -> tuple[list[float], list[str]] | Reject:
        pa = require("pyarrow", "LeRobot reader", "media")
        pc = require("pyarrow.compute", "LeRobot reader", "media")
        try:
            schema_names, table = files.table(spec.data_path)
        except (OSError, pa.ArrowException) as exc:
            return reject(
                uid, IngestIssue.BAD_TABLE, f"{where}: {spec.data_path} is not a readable parquet ({exc})"
            )
        wanted = [*_BASE_COLUMNS, *(f for f in _TABLE_FEATURES if f in features)]
        absent = [c for c in wanted if c not in schema_names]
        if absent:
            return reject(
                uid,
                IngestIssue.MISSING_COLUMNS,
                f"{where}: {spec.data_path.name} lacks declared column(s) {', '.join(absent)}",
                missing=absent,
            )
        table = table.filter(pc.equal(table["episode_index"], spec.index))
        if table.num_rows != spec.length:
            return reject(
                uid,
                IngestIssue.LENGTH_MISMATCH,
                f"{where}: the table has {table.num_rows} rows, the metadata says {spec.length} frames",
            )
        timestamps = [float(t) for t in table["timestamp"].to_pylist()]
        return timestamps, schema_names

    def _camera(
        self,
        uid: str,
        where: str,
        key: str,
        files: _OpenFiles,
        video: Path,
        t_from: float | None,
        t_to: float | None,
        length: int,
        timestamps: list[float],
        fps: float,
    ) -> Camera | Reject:
        try:
            reader = files.video(video)
            vinfo = reader.info
            start = 0 if t_from is None else reader.index_at_time(t_from)
            end = start + length
            if end > reader.frame_count or (t_from is None and reader.frame_count != length):
                return reject(
                    uid,
                    IngestIssue.LENGTH_MISMATCH,
                    f"{where}: {key} video {video.name} has {reader.frame_count} frames, "
                    f"expected {length}" + ("" if t_from is None else f" from {t_from} s"),
                )
            base = reader.time_of(start)
            drift = max(
                abs((reader.time_of(start + i) - base) - (ts - timestamps[0]))
                for i, ts in enumerate(timestamps)
            )
        except MediaError as exc:
            return media_reject(uid, exc, camera=key)
        if drift > 0.5 / fps:
            return reject(
                uid,
                IngestIssue.LENGTH_MISMATCH,
                f"{where}: {key} frame times drift from the table timestamps by {drift:.3f} s",
            )
        return Camera(
            name=key,
            kind="video",
            path=str(video),
            frame_start=start,
            frame_end=start + length,
            time_start=round(base, 6),
            time_end=round(base + length / fps, 6) if t_to is None else float(t_to),
            fps=vinfo.fps,
            width=vinfo.width,
            height=vinfo.height,
            codec=vinfo.codec,
        )


def _video_keys(info: dict[str, Any]) -> list[str]:
    return [k for k, f in info["features"].items() if isinstance(f, dict) and f.get("dtype") == "video"]


@register_reader
class LeRobotV21Reader(_LeRobotBase):
    """LeRobot v2.x: ``meta/episodes.jsonl`` lists episodes; one parquet and one mp4 per camera each."""

    name = "lerobot_v2"
    description = "LeRobot v2.x folder with meta/info.json and meta/episodes.jsonl"
    version_prefix = "v2"

    def episodes(self, root: Path, info: dict[str, Any]) -> Iterator[EpisodeSpec | Reject]:
        chunk_size = int(info.get("chunks_size", 1000))
        keys = _video_keys(info)
        listing = root / "meta" / "episodes.jsonl"
        if not listing.is_file():
            yield reject(self._uid(root, 0), IngestIssue.BAD_METADATA, f"{listing}: missing episode list")
            return
        for lineno, line in enumerate(listing.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                index, length = int(row["episode_index"]), int(row["length"])
            except (ValueError, KeyError, TypeError) as exc:
                yield reject(
                    stream_id(f"{root.name}-line{lineno}", [self.name, root.name, lineno]),
                    IngestIssue.BAD_METADATA,
                    f"{listing}:{lineno}: not a valid episode entry ({exc})",
                )
                continue
            chunk = index // chunk_size
            fmt = {"episode_chunk": chunk, "episode_index": index}
            yield EpisodeSpec(
                index=index,
                length=length,
                tasks=[str(t) for t in row.get("tasks", [])],
                data_path=root / info["data_path"].format(**fmt),
                videos={k: (root / info["video_path"].format(video_key=k, **fmt), None, None) for k in keys},
            )


@register_reader
class LeRobotV30Reader(_LeRobotBase):
    """LeRobot v3.0: ``meta/episodes/chunk-*/file-*.parquet`` locate each episode inside shared files."""

    name = "lerobot_v3"
    description = "LeRobot v3.0 folder with meta/info.json and meta/episodes/*.parquet"
    version_prefix = "v3"

    def episodes(self, root: Path, info: dict[str, Any]) -> Iterator[EpisodeSpec | Reject]:
        pa = require("pyarrow", "LeRobot reader", "media")
        pq = require("pyarrow.parquet", "LeRobot reader", "media")
        keys = _video_keys(info)
        files = sorted((root / "meta" / "episodes").glob("chunk-*/file-*.parquet"))
        if not files:
            yield reject(
                self._uid(root, 0), IngestIssue.BAD_METADATA, f"{root}/meta/episodes: no episode files"
            )
            return
        for file in files:
            try:
                rows = pq.read_table(file).to_pylist()
            except (OSError, pa.ArrowException) as exc:
                uid = stream_id(f"{root.name}-{file.stem}", [self.name, root.name, str(file)])
                yield reject(uid, IngestIssue.BAD_METADATA, f"{file}: not a readable parquet ({exc})")
                continue
            for row in rows:
                spec = self._spec(root, info, keys, row)
                yield (
                    spec
                    if spec is not None
                    else reject(
                        self._uid(root, int(row.get("episode_index", -1))),
                        IngestIssue.BAD_METADATA,
                        f"{file}: episode row lacks data/video location columns",
                    )
                )

    def _spec(
        self, root: Path, info: dict[str, Any], keys: list[str], row: dict[str, Any]
    ) -> EpisodeSpec | None:
        try:
            data = info["data_path"].format(
                chunk_index=row["data/chunk_index"], file_index=row["data/file_index"]
            )
            videos = {}
            for k in keys:
                video = info["video_path"].format(
                    video_key=k,
                    chunk_index=row[f"videos/{k}/chunk_index"],
                    file_index=row[f"videos/{k}/file_index"],
                )
                span = (float(row[f"videos/{k}/from_timestamp"]), float(row[f"videos/{k}/to_timestamp"]))
                videos[k] = (root / video, *span)
            return EpisodeSpec(
                index=int(row["episode_index"]),
                length=int(row["length"]),
                tasks=[str(t) for t in (row.get("tasks") or [])],
                data_path=root / data,
                videos=videos,
            )
        except (KeyError, TypeError, ValueError):
            return None
