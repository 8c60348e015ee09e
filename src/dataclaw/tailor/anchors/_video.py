"""Which pixels the perception extractors look at: a stream's main video, or its screenshots.

Shared by :mod:`.shots`, :mod:`.motion` and :mod:`.ocr`; private (not an extractor module).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dataclaw.media.video import sample_indices

if TYPE_CHECKING:
    from dataclaw.tailor.streams.base import Camera, Stream
    from dataclaw.tailor.streams.source import StreamSource

# Continuous single-camera robot episodes have no shots worth cutting; everything else with a video does.
VIDEO_MODALITIES = frozenset({"video", "gui", "lecture"})
SCREEN_MODALITIES = frozenset({"gui", "images", "trajectory"})


@dataclass(frozen=True)
class VideoRange:
    """The stream is frames ``[frame_start, frame_end)`` / seconds ``[time_start, time_end)`` of a file."""

    camera: str
    path: Path
    frame_start: int
    frame_end: int
    time_start: float
    time_end: float


def main_video(stream: Stream, modalities: frozenset[str] = VIDEO_MODALITIES) -> VideoRange | None:
    """The stream's main camera when it is a video file and the modality has shots/motion worth finding."""
    if str(stream.modality) not in modalities:
        return None
    name = stream.main_camera
    cam = stream.cameras.get(name) if name else None
    if cam is None or cam.kind != "video" or not cam.path:
        return None
    end_t = cam.time_end if cam.time_end > cam.time_start else float("inf")
    return VideoRange(name or "", Path(cam.path), cam.frame_start, cam.frame_end, cam.time_start, end_t)


def _screens(stream: Stream) -> tuple[str, Camera] | None:
    for name, cam in stream.cameras.items():
        if cam.kind == "images" and cam.images:
            return name, cam
    return None


def ocr_targets_apply(stream: Stream) -> bool:
    """Whether a stream has screen pixels to read: screenshots, or a GUI screen recording."""
    if str(stream.modality) not in SCREEN_MODALITIES:
        return False
    return _screens(stream) is not None or main_video(stream, frozenset({"gui"})) is not None


def ocr_targets(
    stream: Stream, source: StreamSource, max_images: int, every_s: float
) -> Iterator[tuple[float, np.ndarray, dict[str, Any]]]:
    """``(t, rgb image, where)`` for the screens OCR should read, at most ``max_images`` of them.

    Screenshots are read from their files, at the time of the event that names them (else their
    camera clock). A screen recording is read at its event times (the screen the user acted on), else
    every ``every_s`` seconds.
    """
    screens = _screens(stream)
    if screens is not None:
        name, cam = screens
        for i in sample_indices(cam.frame_count, max_images):
            where = {"camera": name, "image": Path(cam.images[cam.frame_start + i]).name, "frame": i}
            yield _image_time(stream, source, name, i), source.frame(i, name), where
        return
    video = main_video(stream, frozenset({"gui"}))
    if video is None:
        return
    duration = stream.duration
    rounded = {round(float(ev["t"]), 3) for ev in stream.events}
    times = sorted(t for t in rounded if 0 <= t <= duration)  # rounding may not push past the end
    if not times:
        step = max(every_s, 1e-3)
        times = [round(k * step, 3) for k in range(int(duration / step) + 1)]
    times = [times[i] for i in sample_indices(len(times), max_images)]
    indices = [source.index_at_time(t, video.camera) for t in times]
    for t, idx, frame in zip(times, indices, source.frames(indices, video.camera), strict=True):
        yield t, frame, {"camera": video.camera, "frame": idx}


def _image_time(stream: Stream, source: StreamSource, camera: str, i: int) -> float:
    """Time of screenshot ``i``: the event that names it when there is one, else the camera clock."""
    cam = stream.cameras[camera]
    name = Path(cam.images[cam.frame_start + i]).name
    for ev in stream.events:
        img = ev.get("image") or ev.get("screenshot")
        if isinstance(img, str) and Path(img).name == name:
            return float(ev["t"])
    return float(source.time_of(i, camera))
