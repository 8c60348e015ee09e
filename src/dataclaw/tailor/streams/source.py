"""Frame and table access for a `Stream` record: by camera, by index and by time, decoders kept open.

Indices and times are stream-local: frame 0 / 0 s is the stream's first frame even when the stream is
one episode inside a longer file (LeRobot v3 stores many episodes in one mp4). Tables are the stream's
tabular data (LeRobot state/action) as numpy arrays read with pyarrow.
"""

from __future__ import annotations

import bisect
import math
from pathlib import Path
from typing import Any

import numpy as np

from dataclaw.core.errors import ConfigError, require
from dataclaw.media.errors import MediaError, MediaIssue
from dataclaw.media.image import load_image
from dataclaw.media.video import VideoReader
from dataclaw.tailor.streams.base import Camera, Stream


class StreamSource:
    """Open media of one stream. Use as a context manager; readers stay open until :meth:`close`."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self._videos: dict[str, VideoReader] = {}
        self._pdfs: dict[str, Any] = {}
        self._table: dict[str, np.ndarray] | None = None

    # -- cameras -----------------------------------------------------------------------------------------

    def camera(self, name: str | None = None) -> Camera:
        """The named camera, or the stream's main camera."""
        name = name or self.stream.main_camera
        if name is None or name not in self.stream.cameras:
            known = ", ".join(self.stream.cameras) or "none"
            raise ConfigError(f"stream {self.stream.id} has no camera '{name}' (cameras: {known})")
        return self.stream.cameras[name]

    def frame_count(self, camera: str | None = None) -> int:
        """Frames of the stream in ``camera``."""
        return self.camera(camera).frame_count

    def frame(self, index: int, camera: str | None = None) -> np.ndarray:
        """Stream-local frame ``index`` of ``camera`` as RGB uint8 (H, W, 3)."""
        return self.frames([index], camera)[0]

    def frames(self, indices: list[int], camera: str | None = None) -> list[np.ndarray]:
        """Several frames, in the order asked (decoded in ascending order, one seek per keyframe gap)."""
        cam = self.camera(camera)
        for i in indices:
            if not 0 <= i < cam.frame_count:
                raise MediaError(
                    MediaIssue.OUT_OF_RANGE,
                    f"stream {self.stream.id} {cam.name}: frame {i} is outside 0..{cam.frame_count - 1}",
                )
        if cam.kind == "video":
            return self._video(cam).frames_at([cam.frame_start + i for i in indices])
        if cam.kind == "images":
            return [load_image(cam.images[cam.frame_start + i]) for i in indices]
        return [self._render_page(cam, cam.frame_start + i) for i in indices]

    def index_at_time(self, t: float, camera: str | None = None) -> int:
        """Stream-local index of the frame on screen at ``t`` seconds of the stream's clock."""
        cam = self.camera(camera)
        if not 0.0 <= t <= self.stream.duration + 1e-6:
            raise MediaError(
                MediaIssue.OUT_OF_RANGE,
                f"stream {self.stream.id}: {t} s is outside 0..{self.stream.duration} s",
            )
        if cam.kind == "video":
            index = self._video(cam).index_at_time(cam.time_start + t) - cam.frame_start
        elif cam.kind == "pdf":
            index = self._slide_at(t)
        elif cam.fps:
            index = math.floor(t * cam.fps + 1e-6)
        else:
            raise ConfigError(f"stream {self.stream.id} camera {cam.name} has no clock: use frame indices")
        return min(max(index, 0), cam.frame_count - 1)

    def frame_at_time(self, t: float, camera: str | None = None) -> np.ndarray:
        """The frame on screen at ``t`` seconds of the stream's clock."""
        return self.frame(self.index_at_time(t, camera), camera)

    def time_of(self, index: int, camera: str | None = None) -> float:
        """Seconds on the stream's clock of stream-local frame ``index``."""
        cam = self.camera(camera)
        if cam.kind == "video":
            return self._video(cam).time_of(cam.frame_start + index) - cam.time_start
        if cam.kind == "pdf":
            times = self.stream.metadata.get("slide_times") or []
            starts = [t for t, slide in times if slide == index]
            return float(starts[0]) if starts else 0.0
        return index / cam.fps if cam.fps else float(index)

    def _video(self, cam: Camera) -> VideoReader:
        assert cam.path is not None
        if cam.path not in self._videos:
            self._videos[cam.path] = VideoReader(cam.path)
        return self._videos[cam.path]

    def _render_page(self, cam: Camera, page: int, scale: float = 1.5) -> np.ndarray:
        pdfium = require("pypdfium2", "slide rendering", "media")
        assert cam.path is not None
        if cam.path not in self._pdfs:
            self._pdfs[cam.path] = pdfium.PdfDocument(cam.path)
        bitmap = self._pdfs[cam.path][page].render(scale=scale)
        return np.asarray(bitmap.to_pil().convert("RGB"), dtype=np.uint8)

    def _slide_at(self, t: float) -> int:
        times = self.stream.metadata.get("slide_times")
        if not times:
            raise ConfigError(f"stream {self.stream.id} has no slide/time alignment: use slide indices")
        starts = [float(start) for start, _ in times]
        pos = bisect.bisect_right(starts, t) - 1
        return int(times[max(pos, 0)][1])

    # -- tables ------------------------------------------------------------------------------------------

    def table(self) -> dict[str, np.ndarray]:
        """The stream's tabular data, one numpy array per column (vectors stacked to (T, D))."""
        if self._table is None:
            spec = self.stream.metadata.get("table")
            if not spec:
                raise ConfigError(f"stream {self.stream.id} has no tabular data")
            self._table = read_table(Path(spec["path"]), spec.get("episode_index"), spec.get("columns"))
        return self._table

    def column(self, name: str) -> np.ndarray:
        """One column of :meth:`table` (e.g. ``observation.state``: float32 (T, 26))."""
        table = self.table()
        if name not in table:
            raise ConfigError(f"stream {self.stream.id} has no column '{name}' (columns: {', '.join(table)})")
        return table[name]

    # -- lifetime ----------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close every open decoder and document."""
        for reader in self._videos.values():
            reader.close()
        for doc in self._pdfs.values():
            doc.close()
        self._videos.clear()
        self._pdfs.clear()

    def __enter__(self) -> StreamSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_table(
    path: Path, episode_index: int | None = None, columns: list[str] | None = None
) -> dict[str, Any]:
    """Columns of a parquet file as numpy arrays, rows of one episode when ``episode_index`` is given."""
    pq = require("pyarrow.parquet", "tabular data", "media")
    pc = require("pyarrow.compute", "tabular data", "media")
    table = pq.read_table(path, columns=columns)
    if episode_index is not None and "episode_index" in table.column_names:
        table = table.filter(pc.equal(table["episode_index"], episode_index))
    out: dict[str, Any] = {}
    for name in table.column_names:
        column = table[name].combine_chunks()
        size = getattr(column.type, "list_size", None)
        if size is not None and column.null_count == 0:  # fixed-size vectors: one reshape, no copy per row
            out[name] = column.flatten().to_numpy(zero_copy_only=False).reshape(len(column), size)
        elif str(column.type).startswith(("list", "large_list", "fixed_size_list")):
            out[name] = np.asarray(column.to_pylist(), dtype=np.float32)
        else:
            out[name] = column.to_numpy(zero_copy_only=False)
    return out
