"""Motion-energy anchors: how much the picture moves, per time window.

Motion energy is the mean absolute difference between consecutive sampled frames, downscaled to a small
grey image (so sensor noise and compression artefacts average out) and scaled to [0, 1]. It is cheap,
deterministic and good enough to tell a static shot from a dynamic one, which is what dynamic-segment
mining for AIGC/world-model intents needs (paper A.3: "lightweight scripts identify candidate temporal
windows"). Each window's anchor carries a confidence that grows with the number of frame pairs behind it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from dataclaw.core.errors import ConfigError, require
from dataclaw.media.errors import MediaError, MediaIssue
from dataclaw.tailor.anchors._video import main_video
from dataclaw.tailor.anchors.base import Anchor, AnchorExtractor, make_anchor, register_extractor

if TYPE_CHECKING:
    from dataclaw.tailor.streams import Stream, StreamSource


@dataclass(frozen=True)
class MotionParams:
    """``sample_fps``: frames per second compared; ``size``: (width, height) of the grey thumbnails;
    ``window_s``: seconds per motion anchor; ``full_pairs``: pairs per window for confidence 1."""

    sample_fps: float = 4.0
    size: tuple[int, int] = (64, 36)
    window_s: float = 1.0
    full_pairs: int = 4

    def __post_init__(self) -> None:
        if self.sample_fps <= 0 or self.window_s <= 0:
            raise ConfigError("motion sample_fps and window_s must be > 0")
        if min(self.size) < 2:
            raise ConfigError(f"motion thumbnail size must be at least 2x2, got {self.size}")


def to_gray_thumb(frame: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """An ``(h, w)`` float32 grey thumbnail in [0, 1] of an ``(H, W)`` or ``(H, W, 3)`` uint8 frame
    (``size`` = ``(w, h)``, capped at the frame's own size).

    Block-averages (area resampling) with numpy so results do not depend on an image library.
    """
    arr = np.asarray(frame)
    if arr.ndim == 3:
        arr = arr[..., :3].astype(np.float32) @ np.array([0.299, 0.587, 0.114], dtype=np.float32)
    else:
        arr = arr.astype(np.float32)
    # never upsample: a thumbnail is at most the frame's size, so every block holds >= 1 pixel
    w, h = min(size[0], arr.shape[1]), min(size[1], arr.shape[0])
    rows = np.linspace(0, arr.shape[0], h + 1).astype(int)
    cols = np.linspace(0, arr.shape[1], w + 1).astype(int)
    summed = np.add.reduceat(np.add.reduceat(arr, rows[:-1], axis=0), cols[:-1], axis=1)
    counts = np.outer(np.diff(rows), np.diff(cols)).astype(np.float32)
    return summed / counts / 255.0


def motion_energy(thumbs: Iterable[np.ndarray]) -> np.ndarray:
    """Per-pair motion energy: mean |frame[i+1] - frame[i]| of consecutive thumbnails (length n-1)."""
    out: list[float] = []
    prev: np.ndarray | None = None
    for thumb in thumbs:
        if prev is not None:
            if thumb.shape != prev.shape:
                raise ValueError(f"thumbnail shapes differ: {prev.shape} vs {thumb.shape}")
            out.append(float(np.mean(np.abs(thumb - prev))))
        prev = thumb
    return np.asarray(out, dtype=np.float64)


def sample_gray_thumbs(
    path: str | Path,
    sample_fps: float,
    size: tuple[int, int],
    start_s: float = 0.0,
    end_s: float | None = None,
) -> Iterator[tuple[float, np.ndarray]]:
    """``(t_seconds, thumbnail)`` for frames of ``path`` about ``1/sample_fps`` apart (PyAV decode).

    Only ``[start_s, end_s)`` of the file is read; times are relative to ``start_s``.

    Every frame must be decoded anyway (inter-frame codecs); only the picked ones are scaled by
    libswscale straight to a small grey image.
    Raises :class:`~dataclaw.media.errors.MediaError` for unreadable files.
    """
    av = require("av", "motion anchors", "media")
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        raise MediaError(MediaIssue.EMPTY, f"{path.name}: video file is missing or empty")
    try:
        container = av.open(str(path))
    except Exception as exc:  # noqa: BLE001 - PyAV and scenedetect raise many types for one cause
        raise MediaError(
            MediaIssue.CORRUPT, f"{path.name}: cannot open video ({type(exc).__name__}: {exc})"
        ) from None
    with container:
        if not container.streams.video:
            raise MediaError(MediaIssue.NO_VIDEO, f"{path.name}: has no video stream")
        vstream = container.streams.video[0]
        vstream.thread_type = "AUTO"
        # Non-reference frames (most B-frames) are never needed at a few samples per second and nothing
        # depends on them: not decoding them saves about a third of the decode time.
        vstream.codec_context.skip_frame = "NONREF"
        step = 1.0 / sample_fps
        next_t = start_s
        stop = float("inf") if end_s is None else end_s
        try:
            if start_s > 0:
                container.seek(int(start_s / vstream.time_base), stream=vstream, backward=True)
            for frame in container.decode(vstream):
                if frame.time is None:
                    continue
                t = float(frame.time)
                if t >= stop:
                    break
                if t + 1e-6 < next_t:
                    continue
                small = frame.reformat(width=size[0], height=size[1], format="gray")
                yield round(t - start_s, 6), small.to_ndarray().astype(np.float32) / 255.0
                next_t = t + step
        except Exception as exc:  # noqa: BLE001 - PyAV and scenedetect raise many types for one cause
            raise MediaError(
                MediaIssue.CORRUPT, f"{path.name}: video cannot be decoded ({type(exc).__name__}: {exc})"
            ) from None


@dataclass(frozen=True)
class MotionWindow:
    """Motion energy of ``[start_s, end_s)``: mean and peak over ``pairs`` frame pairs."""

    start_s: float
    end_s: float
    energy: float
    peak: float
    pairs: int


def window_energy(
    times: list[float], energies: np.ndarray, window_s: float, duration: float | None = None
) -> list[MotionWindow]:
    """Group per-pair energies (pair i ends at ``times[i+1]``) into fixed windows of ``window_s``."""
    if len(times) < 2:
        return []
    end_all = duration if duration is not None else times[-1]
    n_windows = max(1, int(np.ceil(end_all / window_s - 1e-9)))
    pair_t = np.asarray(times[1:], dtype=np.float64)
    idx = np.minimum((pair_t / window_s).astype(int), n_windows - 1)
    out: list[MotionWindow] = []
    for w in range(n_windows):
        sel = energies[idx == w]
        if sel.size == 0:
            continue
        out.append(
            MotionWindow(
                start_s=round(w * window_s, 6),
                end_s=round(min(end_all, (w + 1) * window_s), 6),
                energy=round(float(sel.mean()), 6),
                peak=round(float(sel.max()), 6),
                pairs=int(sel.size),
            )
        )
    return out


def video_motion(
    path: str | Path, params: MotionParams | None = None, start_s: float = 0.0, end_s: float | None = None
) -> list[MotionWindow]:
    """Motion windows of the video at ``path`` (of ``[start_s, end_s)``, times relative to ``start_s``)."""
    params = params or MotionParams()
    times: list[float] = []
    thumbs: list[np.ndarray] = []
    for t, thumb in sample_gray_thumbs(path, params.sample_fps, params.size, start_s, end_s):
        times.append(t)
        thumbs.append(thumb)
    if not thumbs:
        raise MediaError(MediaIssue.EMPTY, f"{Path(path).name}: video has no decodable frames")
    energies = motion_energy(thumbs)
    return window_energy(times, energies, params.window_s)


def motion_anchors(
    stream_id: str, windows: list[MotionWindow], params: MotionParams, camera: str | None = None
) -> list[Anchor]:
    """One ``motion`` interval anchor per window; confidence = min(1, pairs / full_pairs)."""
    anchors: list[Anchor] = []
    for win in windows:
        payload: dict[str, object] = {"energy": win.energy, "peak": win.peak, "pairs": win.pairs}
        if camera:
            payload["camera"] = camera
        conf = min(1.0, win.pairs / params.full_pairs)
        anchors.append(
            make_anchor(
                stream_id,
                win.start_s,
                "motion",
                MotionEnergy.name,
                payload,
                confidence=round(conf, 4),
                t_end=win.end_s,
            )
        )
    return anchors


@register_extractor
class MotionEnergy(AnchorExtractor):
    """Per-window motion energy of a stream's main video."""

    name: ClassVar[str] = "motion"

    def __init__(
        self, sample_fps: float = 4.0, window_s: float = 1.0, width: int = 64, height: int = 36
    ) -> None:
        self.params = MotionParams(sample_fps=sample_fps, size=(width, height), window_s=window_s)

    def applies_to(self, stream: Stream) -> bool:
        return main_video(stream) is not None

    def extract(self, stream: Stream, source: StreamSource) -> list[Anchor]:
        video = main_video(stream)
        if video is None:
            return []
        windows = video_motion(video.path, self.params, video.time_start, video.time_end)
        return motion_anchors(stream.id, windows, self.params, video.camera)
