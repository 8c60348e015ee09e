"""Clip, freeze-frame and still writers (PyAV): frame-exact, deterministic media for training samples.

Why this encoding. A training sample built from frames ``a..b`` must hold exactly those frames, so the
default video codec is **lossless RGB H.264** (``libx264rgb``, ``qp=0``, 4:4:4 in the GBR colour space)
in an MP4: decoded back to RGB it gives the source pixels bit for bit (tests compare frame hashes), and
every FFmpeg-based loader that trainers use (PyAV in LLaMA-Factory, torchvision, decord, torchcodec in
``datasets``) decodes it. Ordinary H.264 (``libx264`` in yuv420p/yuv444p) is *not* exact: RGB → YUV →
RGB rounds by up to ±2 per channel even at ``qp=0``. FFV1 in Matroska (``ffv1``) is also exact, ~35%
smaller and faster to encode; pick it with ``codec="ffv1"`` when the consumer accepts .mkv. ``h264`` is
visually lossless yuv420p H.264 at CRF 18 (x264's "visually lossless" point): many times smaller than
the lossless profiles and playable in browsers (they cannot play 4:4:4), but never frame-exact; it is what
``tailor run`` writes unless asked for ``lossless`` (alias of ``h264-rgb-lossless``) or ``ffv1``.

Determinism: same frames → same bytes, so artifact hashes are stable across reruns. The encoder runs
single-threaded (x264's output depends on its thread count), the muxer in bit-exact mode (no
creation time, no library version string), and timestamps are frame numbers. Bytes may differ between
FFmpeg/x264 builds; hashes are a rerun check on one installation, not a cross-version fingerprint.

Files are written to a temporary name beside the target and renamed into place, so a crash never leaves
a half-written artifact under the final name.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from dataclaw.core.errors import ConfigError, require
from dataclaw.core.registry import Registry
from dataclaw.media.errors import MediaError, MediaIssue
from dataclaw.media.image import encode_image


def _av() -> Any:
    return require("av", "video writing", "media")


@dataclass(frozen=True)
class VideoCodec:
    """One way of encoding a video: encoder, pixel format, container and encoder options."""

    name: str
    encoder: str
    pix_fmt: str
    container: str
    suffix: str
    options: dict[str, str] = field(default_factory=dict)
    lossless: bool = True
    even_size: bool = False
    """The pixel format needs even width and height (4:2:0): odd frames are padded by edge replication."""
    min_width: int = 1
    """Narrowest frame the encoder accepts (FFV1 refuses 1-pixel-wide frames taller than one row)."""
    description: str = ""


CODECS: Registry[VideoCodec] = Registry("video codec profile")
register_codec = CODECS.add
"""Register a codec profile under its name; a duplicate name is an error."""


def codec_names() -> list[str]:
    """Names of the registered codec profiles."""
    return CODECS.names()


CODEC_ALIASES = {"lossless": "h264-rgb-lossless"}
"""Short names users type (``--codec lossless``) for registered profiles."""


def get_codec(name: str | VideoCodec, crf: int | None = None) -> VideoCodec:
    """The codec profile ``name`` (an alias of :data:`CODEC_ALIASES`; a profile passes through).
    ``crf``: another constant rate factor for a lossy profile (0-51, lower is better and bigger)."""
    spec = name if isinstance(name, VideoCodec) else CODECS.get(CODEC_ALIASES.get(name, name))
    if crf is None or spec.options.get("crf") == str(crf):
        return spec
    if spec.lossless or "crf" not in spec.options:
        raise ConfigError(f"codec profile '{spec.name}' is lossless: it takes no CRF")
    if not 0 <= crf <= 51:
        raise ConfigError(f"CRF must be between 0 and 51, got {crf}")
    return replace(spec, name=f"{spec.name}-crf{crf}", options={**spec.options, "crf": str(crf)})


H264_RGB_LOSSLESS = register_codec(
    VideoCodec(
        name="h264-rgb-lossless",
        encoder="libx264rgb",
        pix_fmt="rgb24",
        container="mp4",
        suffix=".mp4",
        # ultrafast: ~2.6x faster than veryfast for ~14% more bytes (640x480: 33 vs 87 ms, 236 vs 207 KB
        # per frame), no B-frames; lossless either way
        options={"qp": "0", "preset": "ultrafast"},
        description="lossless RGB H.264 in MP4: exact RGB frames, decodable by any FFmpeg-based loader",
    )
)
register_codec(
    VideoCodec(
        name="ffv1",
        encoder="ffv1",
        pix_fmt="bgr0",
        container="matroska",
        suffix=".mkv",
        min_width=2,
        description="lossless FFV1 in Matroska: exact RGB frames, smaller and faster than lossless H.264",
    )
)
register_codec(
    VideoCodec(
        name="h264",
        encoder="libx264",
        pix_fmt="yuv420p",
        container="mp4",
        suffix=".mp4",
        options={"crf": "18", "preset": "veryfast"},
        lossless=False,
        even_size=True,
        description="visually lossless yuv420p H.264 (CRF 18; plays in browsers); NOT frame-exact",
    )
)
DEFAULT_CODEC = H264_RGB_LOSSLESS.name


def codec_for(name: str) -> VideoCodec | None:
    """The profile an artifact's recorded codec name stands for (``h264``, ``lossless``, ``h264-crf23`` as
    :func:`get_codec` names a CRF variant), or None for a name no profile makes (an image format)."""
    base, _, crf = name.rpartition("-crf")
    try:
        if base and crf.isdigit():
            return get_codec(base, int(crf))
        return get_codec(name)
    except ConfigError:
        return None


def describe_codec(spec: VideoCodec) -> str:
    """What a profile really writes, in one line for people (dataset cards, summaries): encoder, pixel
    format, container, options, and whether decoded frames equal the source frames."""
    options = ", ".join(f"{k} {v}" for k, v in spec.options.items())
    exact = (
        "lossless: decoded RGB frames equal the source frames bit for bit"
        if spec.lossless
        else "lossy: decoded pixels differ from the source frames (not frame-exact)"
    )
    settings = ", ".join(x for x in (spec.encoder, spec.pix_fmt, spec.container, options) if x)
    return f"{settings}; {exact}"


@dataclass(frozen=True)
class Written:
    """What a writer produced: the file, its sha256 and what it holds."""

    path: Path
    media_type: str
    """``video`` or ``image``."""
    frames: int
    width: int
    height: int
    fps: float | None
    codec: str
    lossless: bool
    sha256: str
    size_bytes: int


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check_frame(frame: np.ndarray, shape: tuple[int, ...] | None, path: Path, index: int) -> np.ndarray:
    if not isinstance(frame, np.ndarray) or frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
        what = f"{frame.dtype} {frame.shape}" if isinstance(frame, np.ndarray) else type(frame).__name__
        raise ValueError(f"{path}: frame {index} must be an RGB uint8 array (H, W, 3), got {what}")
    if shape is not None and frame.shape != shape:
        raise ValueError(f"{path}: frame {index} is {frame.shape}, the clip's frames are {shape}")
    return np.ascontiguousarray(frame)


def _rate(fps: float) -> Fraction:
    if not (fps > 0 and np.isfinite(fps)):
        raise ValueError(f"fps must be a positive number, got {fps}")
    return Fraction(str(round(float(fps), 6))).limit_denominator(100_000)


def _pad_even(frame: np.ndarray) -> np.ndarray:
    h, w = frame.shape[:2]
    if h % 2 == 0 and w % 2 == 0:
        return frame
    return np.pad(frame, ((0, h % 2), (0, w % 2), (0, 0)), mode="edge")


def _temp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def _replace(tmp: Path, path: Path) -> tuple[str, int]:
    digest = sha256_file(tmp)
    size = tmp.stat().st_size
    os.replace(tmp, path)
    return digest, size


def write_clip(
    frames: Iterable[np.ndarray],
    path: str | os.PathLike[str],
    fps: float,
    *,
    codec: str | VideoCodec = DEFAULT_CODEC,
) -> Written:
    """Encode RGB frames (any iterable, consumed once, never held in memory together) as a video.

    ``path`` must end with the codec's suffix (``.mp4`` for the default). Raises ``ValueError`` for bad
    frames or fps and :class:`MediaError` when the encoder fails or no frame was given.
    """
    spec = get_codec(codec)
    path = Path(path)
    if path.suffix.lower() != spec.suffix:
        raise ConfigError(f"{path}: codec profile '{spec.name}' writes {spec.suffix} files")
    rate = _rate(fps)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_path(path)
    try:
        count, shape = _encode(frames, tmp, path, rate, spec)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    digest, size = _replace(tmp, path)
    return Written(
        path, "video", count, shape[1], shape[0], float(rate), spec.name, spec.lossless, digest, size
    )


def _encode(
    frames: Iterable[np.ndarray], tmp: Path, path: Path, rate: Fraction, spec: VideoCodec
) -> tuple[int, tuple[int, ...]]:
    av = _av()
    it = iter(frames)
    first = next(it, None)
    if first is None:
        raise MediaError(MediaIssue.EMPTY, f"{path}: a clip needs at least one frame")
    shape = _check_frame(first, None, path, 0).shape
    if shape[1] < spec.min_width:
        raise MediaError(
            MediaIssue.UNSUPPORTED_CODEC,
            f"{path}: codec profile '{spec.name}' needs frames at least {spec.min_width} pixels wide,"
            f" got {shape[1]}",
        )
    count = 0
    try:
        with av.open(str(tmp), mode="w", format=spec.container, options={"fflags": "+bitexact"}) as out:
            stream = out.add_stream(spec.encoder, rate=rate, options=dict(spec.options))
            enc_h, enc_w = (_pad_even(first) if spec.even_size else first).shape[:2]
            stream.width, stream.height, stream.pix_fmt = enc_w, enc_h, spec.pix_fmt
            stream.codec_context.thread_count = 1
            stream.codec_context.flags |= av.codec.context.Flags.bitexact
            for i, frame in enumerate(itertools.chain([first], it)):
                frame = _check_frame(frame, shape, path, i)
                vf = av.VideoFrame.from_ndarray(_pad_even(frame) if spec.even_size else frame, format="rgb24")
                vf.pts = i  # frame numbers on the codec clock (time_base = 1/fps)
                vf.time_base = 1 / rate
                for packet in stream.encode(vf):
                    out.mux(packet)
                count += 1
            for packet in stream.encode(None):
                out.mux(packet)
    except av.error.FFmpegError as exc:
        raise MediaError(MediaIssue.CORRUPT, f"{path}: encoding with {spec.encoder} failed ({exc})") from exc
    return count, (enc_h, enc_w)


def write_freeze(
    frame: np.ndarray,
    n: int,
    path: str | os.PathLike[str],
    fps: float,
    *,
    codec: str | VideoCodec = DEFAULT_CODEC,
) -> Written:
    """A freeze-frame video: ``frame`` repeated ``n`` times (a simulated stall, paper A.3.1)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{path}: a freeze-frame video needs a repeat count >= 1, got {n!r}")
    return write_clip(itertools.repeat(frame, n), path, fps, codec=codec)


def write_still(frame: np.ndarray, path: str | os.PathLike[str]) -> Written:
    """One frame as an image; PNG (the default suffix to use) is lossless and byte-deterministic."""
    path = Path(path)
    frame = _check_frame(frame, None, path, 0)
    fmt = path.suffix.lower().lstrip(".")
    data = encode_image(frame, fmt or "png")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_path(path)
    try:
        tmp.write_bytes(data)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    digest, size = _replace(tmp, path)
    h, w = frame.shape[:2]
    return Written(path, "image", 1, w, h, None, fmt.upper(), fmt == "png", digest, size)
