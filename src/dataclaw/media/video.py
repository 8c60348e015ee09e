"""Video metadata, frame-exact random access and sampling with PyAV.

A :class:`VideoReader` demuxes the video stream once (packets only, no decoding: a 2-minute 1080p file
takes tens of milliseconds) to build an exact frame index: frame ``i`` is the packet with the ``i``-th
smallest presentation timestamp. That gives the true frame count even when the container header lies,
exact per-frame times, and the keyframe positions. ``frame_at(i)`` then seeks to the last keyframe at or
before frame ``i`` and decodes forward to it; frames we pass through are decoded with the decoder's
``skip_frame=NONREF`` (non-reference frames, e.g. most B-frames, are not decoded at all, which is safe
because nothing depends on them), and the decoder is kept open so ascending requests continue forward
instead of seeking again. Within one request, a wanted frame whose successor lies past another keyframe
is drained out of the decoder's reorder buffer right after its packet instead of by decoding the frames
that follow it (the decoder is reset for the successor anyway). Frames come back as RGB ``uint8``
arrays of shape ``(H, W, 3)``.
"""

from __future__ import annotations

import bisect
import itertools
import math
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from dataclaw.core.errors import require
from dataclaw.media.errors import MediaError, MediaIssue


def _av() -> Any:
    return require("av", "video decoding", "media")


_B_KEEP_BEFORE_MINI_GOPS = 2  # B-frames kept before a wanted frame, in mini-GOPs (see _b_frame_window)
_X264_INFO = re.compile(rb"x264 - core \d+[^\x00]*? options: ([ -~]+)")


def x264_options(data: bytes) -> dict[str, str]:
    """Encoder options from the x264 version SEI that x264 writes into the first keyframe (else {})."""
    match = _X264_INFO.search(data)
    if not match:
        return {}
    pairs = (item.split("=", 1) for item in match.group(1).decode("ascii").split() if "=" in item)
    return {k: v for k, v in pairs}


@dataclass(frozen=True)
class VideoInfo:
    """What a video file holds, measured from its packets (not trusted from the header)."""

    path: str
    codec: str
    width: int
    height: int
    fps: float
    frame_count: int
    duration: float
    """Seconds from the first frame's start to the last frame's end (``frame_count / fps`` for CFR)."""
    container_frame_count: int
    """What the container header says (0 when it says nothing)."""
    keyframe_count: int

    @property
    def frame_count_source(self) -> str:
        """``container`` when the header agrees with the packets, else ``packets``."""
        return "container" if self.container_frame_count == self.frame_count else "packets"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict."""
        return {
            "path": self.path,
            "codec": self.codec,
            "width": self.width,
            "height": self.height,
            "fps": self.fps,
            "frame_count": self.frame_count,
            "duration": self.duration,
            "container_frame_count": self.container_frame_count,
            "keyframe_count": self.keyframe_count,
        }


def sample_indices(n: int, k: int) -> list[int]:
    """``k`` frame indices spread uniformly over ``n`` frames (segment centres, ascending, distinct).

    ``k >= n`` returns every index. Used for frame sampling plans ("8 frames from the observation range").
    """
    if n <= 0 or k <= 0:
        return []
    if k >= n:
        return list(range(n))
    return [min(n - 1, int((j + 0.5) * n / k)) for j in range(k)]


def _open_container(path: Path) -> Any:
    av = _av()
    if not path.is_file():
        raise MediaError(MediaIssue.NOT_FOUND, f"{path}: no such video file")
    if path.stat().st_size == 0:
        raise MediaError(MediaIssue.EMPTY, f"{path}: the file is empty (0 bytes)")
    try:
        return av.open(str(path), mode="r")
    except av.error.FFmpegError as exc:
        raise MediaError(MediaIssue.CORRUPT, f"{path}: not a readable video container ({exc})") from exc


class VideoReader:
    """Frame-exact random access to the first video stream of a file. Use as a context manager.

    Opening demuxes all packets once (exact count and times); decoding happens only for requested
    frames. The decoder stays open between calls, so ascending requests are served by decoding forward.

    ``threads`` turns on FFmpeg frame threading: faster for one reader on an idle machine, but it wastes
    work on every seek; pipelines already decode many streams in parallel, so it is off by default.
    """

    def __init__(self, path: str | os.PathLike[str], *, threads: bool = False) -> None:
        self.path = Path(path)
        self._container = _open_container(self.path)
        self._packets: Iterator[Any] | None = None
        self._pos: int | None = None  # pts of the last frame the decoder output, None = needs a seek
        self._skipped: set[int] = set()  # pts of packets fed with a skip_frame since the last seek
        self._bidir_skipped: list[int] = []  # ... of those, the ones skipped as B-frames (sorted pts)
        self._b_window: tuple[int, int] | None = None  # keep B-frames this far (pts) before/after wanted
        try:
            self._init_stream(threads)
            self._index_packets()
            self._check_decodes()
        except BaseException:
            self._container.close()
            raise

    # -- opening -----------------------------------------------------------------------------------------

    def _error(self, reason: MediaIssue, what: str) -> MediaError:
        return MediaError(reason, f"{self.path}: {what}")

    def _init_stream(self, threads: bool) -> None:
        if not self._container.streams.video:
            raise MediaError(MediaIssue.NO_VIDEO, f"{self.path}: the file has no video stream")
        stream = self._container.streams.video[0]
        if stream.codec_context is None:
            raise self._error(
                MediaIssue.UNSUPPORTED_CODEC, "no decoder for the video codec in this FFmpeg build"
            )
        if threads:
            stream.codec_context.thread_type = "AUTO"
        self._stream = stream
        self._cc = stream.codec_context
        self._tb = Fraction(stream.time_base) if stream.time_base else Fraction(1, 90000)

    def _index_packets(self) -> None:
        """Demux every packet of the video stream once: sorted pts, keyframe pts."""
        av = _av()
        pts: list[int] = []
        keys: list[int] = []
        options: dict[str, str] = {}
        try:
            for packet in self._container.demux(self._stream):
                if packet.size == 0 or packet.pts is None or packet.is_discard:
                    continue
                if not pts and self._cc.name == "h264":
                    options = x264_options(bytes(packet))
                pts.append(packet.pts)
                if packet.is_keyframe:
                    keys.append(packet.pts)
        except av.error.FFmpegError as exc:
            raise self._error(MediaIssue.CORRUPT, f"the video stream cannot be demuxed ({exc})") from exc
        if not pts:
            raise MediaError(MediaIssue.EMPTY, f"{self.path}: the video stream has no frames")
        declared = int(self._stream.frames or 0)
        if declared > len(pts):
            raise self._error(
                MediaIssue.TRUNCATED,
                f"truncated video: the container announces {declared} frames, the file holds {len(pts)}",
            )
        pts.sort()
        keys.sort()
        if not keys or keys[0] > pts[0]:
            keys.insert(0, pts[0])  # decoding from the very start is always possible
        self._pts = pts
        self._keys = keys
        self._declared = declared
        self._b_window = self._b_frame_window(options)

    def _b_frame_window(self, options: dict[str, str]) -> tuple[int, int] | None:
        """How far (pts) before/after a wanted frame B-frames must be decoded, or None to keep all B-refs.

        x264 with ``ref=1`` predicts every P-frame from the previous I/P-frame only (the nearest reference
        by POC; pyramid B-references lie before it), so P-frames decode exactly with every B-frame
        skipped. B-frames near a wanted frame are still decoded: the wanted frame's references, and the
        decoder's reference list and implicit bi-prediction weights (which depend on the references'
        POCs and on how FFmpeg fills frame_num gaps), must be those of a full decode: so the last few
        references before the wanted frame must all be real. How many: the decoder's sliding window
        holds ``num_ref_frames`` references, which x264 sets to max(ref, 1 + reorder depth, 4 with
        B-pyramids, 1 without): 4 with pyramids, whose mini-GOPs (``bframes + 1`` frames) hold two
        references each (the P and the middle B), 2 without, one per mini-GOP. Two whole mini-GOPs of
        real references before the wanted frame therefore push every gap-filled frame out of the window.
        We keep B-frames from two mini-GOPs before it to one mini-GOP after it: one before is
        measurably not enough (``tests/media``: x264 variants with and without pyramids, up to 16
        B-frames); four, the old margin, decoded twice the B-references for the same frames. For any
        other encoder we cannot know what P-frames reference, and only non-reference frames are skipped.
        """
        if options.get("ref") != "1" or not options.get("bframes", "").isdigit() or len(self._pts) < 2:
            return None
        steps = [b - a for a, b in itertools.pairwise(self._pts) if b > a]
        mini_gop = (int(options["bframes"]) + 1) * max(steps)
        return _B_KEEP_BEFORE_MINI_GOPS * mini_gop, mini_gop

    def _check_decodes(self) -> None:
        """Decode the first frame so that a broken bitstream or codec fails at open, not mid-run."""
        self.frame_at(0)

    # -- metadata ----------------------------------------------------------------------------------------

    @property
    def frame_count(self) -> int:
        """Exact number of frames (counted from packets)."""
        return len(self._pts)

    @property
    def fps(self) -> float:
        """Frames per second: the stream's declared average rate, else measured from timestamps."""
        rate = self._stream.average_rate or self._stream.guessed_rate
        if rate:
            return float(rate)
        if len(self._pts) > 1:
            return (len(self._pts) - 1) / float((self._pts[-1] - self._pts[0]) * self._tb)
        return 0.0

    @property
    def info(self) -> VideoInfo:
        """Metadata of this video (exact frame count, duration, size, codec)."""
        fps = self.fps
        last = float((self._pts[-1] - self._pts[0]) * self._tb)
        duration = last + (1.0 / fps if fps > 0 else 0.0)
        return VideoInfo(
            path=str(self.path),
            codec=self._cc.name,
            width=int(self._cc.width),
            height=int(self._cc.height),
            fps=fps,
            frame_count=self.frame_count,
            duration=round(duration, 6),
            container_frame_count=self._declared,
            keyframe_count=len(self._keys),
        )

    def time_of(self, index: int) -> float:
        """Seconds from the first frame to frame ``index`` (its presentation time on the video's clock)."""
        self._check_index(index)
        return float((self._pts[index] - self._pts[0]) * self._tb)

    def index_at_time(self, t: float) -> int:
        """Index of the frame on screen at ``t`` seconds (the last frame starting at or before ``t``)."""
        duration = self.info.duration
        if not (t >= 0.0 and t <= duration + 1e-6) or math.isnan(t):
            raise MediaError(MediaIssue.OUT_OF_RANGE, f"{self.path}: time {t} s is outside 0..{duration} s")
        target = self._pts[0] + t / self._tb + 1e-6 / self._tb
        return max(0, bisect.bisect_right(self._pts, math.floor(target)) - 1)

    # -- frames ------------------------------------------------------------------------------------------

    def frame_at(self, index: int) -> np.ndarray:
        """Frame ``index`` as an RGB uint8 array (H, W, 3)."""
        return self.frames_at([index])[0]

    def frame_at_time(self, t: float) -> np.ndarray:
        """The frame on screen at ``t`` seconds."""
        return self.frame_at(self.index_at_time(t))

    def frames_at(self, indices: Sequence[int]) -> list[np.ndarray]:
        """Frames at ``indices`` (any order, repeats allowed), returned in the order asked."""
        for i in indices:
            self._check_index(i)
        near = sorted({self._pts[i] for i in indices})
        wanted = set(near)
        got: dict[int, np.ndarray] = {}
        for target in near:
            if target not in got:
                self._decode_to(target, wanted, near, got)
        return [got[self._pts[i]] for i in indices]

    def _check_index(self, index: int) -> None:
        if not 0 <= index < len(self._pts):
            raise MediaError(
                MediaIssue.OUT_OF_RANGE, f"{self.path}: frame {index} is outside 0..{len(self._pts) - 1}"
            )

    def _decode_to(self, target: int, wanted: set[int], near: list[int], got: dict[int, np.ndarray]) -> None:
        """Decode forward until the frame with pts ``target`` is out; keep every wanted frame seen
        (``near``: the wanted pts, sorted)."""
        av = _av()
        key = self._keys[bisect.bisect_right(self._keys, target) - 1]
        if self._pos is None or not key <= self._pos < target or not self._can_continue_to(target):
            self._seek(key)
        assert self._packets is not None
        drain = self._next_needs_seek(target, near, got)
        try:
            for packet in self._packets:
                if packet.size == 0 and packet.pts is None:
                    continue  # demuxer end marker: flush below
                self._cc.skip_frame = self._skip_mode(packet.pts, wanted, near)
                if self._take(self._cc.decode(packet), wanted, got, target):
                    break
                if drain and packet.pts == target:
                    # everything the target needs is in the decoder (references precede it in decode
                    # order) and the next request seeks anyway: drain the reorder buffer instead of
                    # decoding the frames that would push the target out
                    self._take(self._cc.decode(None), wanted, got, target)
                    self._pos = None
                    break
            else:
                self._cc.skip_frame = "DEFAULT"
                self._take(self._cc.decode(None), wanted, got, target)
                self._pos = None  # flushed at the end of the stream: the next request must seek
        except av.error.FFmpegError as exc:
            self._pos = None
            raise self._error(MediaIssue.CORRUPT, f"cannot decode the frame at pts {target} ({exc})") from exc
        if target not in got:
            self._pos = None
            raise self._error(MediaIssue.CORRUPT, f"the decoder never produced the frame at pts {target}")

    def _next_needs_seek(self, target: int, near: list[int], got: dict[int, np.ndarray]) -> bool:
        """Whether the next wanted frame of this request lies past another keyframe, so that the decoder
        will be reset for it whatever state it is left in. The last one of a request leaves the decoder
        where a later ascending request can continue (no drain)."""
        i = bisect.bisect_right(near, target)
        while i < len(near) and near[i] in got:
            i += 1
        if i == len(near):
            return False
        return self._keys[bisect.bisect_right(self._keys, near[i]) - 1] > target

    def _skip_mode(self, pts: int, wanted: set[int], near: list[int]) -> str:
        """DEFAULT for wanted frames; BIDIR far from them when safe (see _b_frame_window); else NONREF."""
        if pts in wanted:
            return "DEFAULT"
        self._skipped.add(pts)
        if self._b_window is not None:
            before, after = self._b_window
            i = bisect.bisect_left(near, pts)  # near[i] is the next wanted frame, near[i - 1] the last one
            keep = (i < len(near) and near[i] - pts <= before) or (i > 0 and pts - near[i - 1] <= after)
            if not keep:
                bisect.insort(self._bidir_skipped, pts)
                return "BIDIR"
        return "NONREF"

    def _can_continue_to(self, target: int) -> bool:
        """Whether decoding forward still yields ``target`` exactly: its packet and the B-frames of its
        mini-GOP must not have been skipped already."""
        if target in self._skipped:
            return False
        before, after = self._b_window or (0, 0)
        i = bisect.bisect_left(self._bidir_skipped, target - before)
        return i == len(self._bidir_skipped) or self._bidir_skipped[i] > target + after

    def _take(self, frames: list[Any], wanted: set[int], got: dict[int, np.ndarray], target: int) -> bool:
        for frame in frames:
            if frame.pts is None:
                continue
            self._pos = frame.pts
            if frame.pts in wanted and frame.pts not in got:
                got[frame.pts] = frame.to_ndarray(format="rgb24")
        return self._pos is not None and self._pos >= target

    def _seek(self, key_pts: int) -> None:
        self._container.seek(key_pts, stream=self._stream, backward=True, any_frame=False)
        self._cc.flush_buffers()
        self._packets = self._container.demux(self._stream)
        self._pos = None
        self._skipped.clear()
        self._bidir_skipped.clear()

    # -- lifetime ----------------------------------------------------------------------------------------

    def close(self) -> None:
        """Release the container and decoder."""
        self._container.close()

    def __enter__(self) -> VideoReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def probe(path: str | os.PathLike[str]) -> VideoInfo:
    """Exact metadata of a video file (opens, indexes packets, decodes the first frame, closes)."""
    with VideoReader(path) as reader:
        return reader.info


def decode_all(path: str | os.PathLike[str]) -> Iterator[np.ndarray]:
    """Every frame in presentation order by plain sequential decoding (the reference path for tests)."""
    av = _av()
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.codec_context.thread_type = "AUTO"
        for frame in container.decode(stream):
            yield frame.to_ndarray(format="rgb24")
