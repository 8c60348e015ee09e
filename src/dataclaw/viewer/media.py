"""Media for the viewer: paths checked against the run, browser-playable previews, frame thumbnails.

A path a record names is served only when it resolves (symlinks followed) to a file inside the run
directory: ``../`` and links that point out are refused, whatever the record says. Clips whose codec a
browser cannot play (the lossless RGB H.264 and FFV1 that training wants) get a lossy yuv420p H.264
preview, made once with PyAV and cached by the clip's path, size and mtime.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from dataclaw.core.errors import DataclawError

# (codec, pixel format) pairs Chromium/Firefox decode in <video>; everything else gets a preview
PLAYABLE = {
    ("h264", "yuv420p"),
    ("h264", "yuvj420p"),
    ("vp8", "yuv420p"),
    ("vp9", "yuv420p"),
    ("av1", "yuv420p"),
}
VIDEO_SUFFIXES = {".mp4", ".mkv", ".webm", ".mov", ".avi"}
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".gif"}


class OutsideRun(DataclawError):
    """A record names a path that is not inside its run directory."""


def contained(root: Path, rel: str) -> Path:
    """``root/rel`` resolved, or :class:`OutsideRun` when it leaves ``root`` (``..``, absolute paths,
    symlinks pointing out) — checked after resolving, so no spelling gets around it."""
    root = root.resolve()
    if not rel or "\x00" in rel:
        raise OutsideRun(f"{rel!r} is not a path inside the run")
    target = (root / rel).resolve()
    if target != root and root not in target.parents:
        raise OutsideRun(f"{rel} points outside the run directory; it is not served")
    return target


@dataclass(frozen=True)
class Playability:
    codec: str
    pix_fmt: str
    playable: bool


def probe_playable(path: Path) -> Playability:
    """The clip's codec and pixel format and whether a browser plays it as it is."""
    import av

    with av.open(str(path)) as container:
        if not container.streams.video:
            return Playability("none", "", False)
        ctx = container.streams.video[0].codec_context
        codec, pix = ctx.name, ctx.pix_fmt or ""
    suffix_ok = path.suffix.lower() in {".mp4", ".webm", ".mov"}
    return Playability(codec, pix, suffix_ok and (codec, pix) in PLAYABLE)


class MediaCache:
    """Previews and thumbnails, written under ``cache_dir`` (never under a run)."""

    def __init__(self, cache_dir: Path) -> None:
        self.dir = cache_dir
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._probes: dict[tuple[str, int, int], Playability] = {}

    def _lock(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    @staticmethod
    def _key(path: Path, extra: str = "") -> str:
        st = path.stat()
        return hashlib.sha256(f"{path}|{st.st_size}|{st.st_mtime_ns}|{extra}".encode()).hexdigest()[:24]

    def playability(self, path: Path) -> Playability:
        st = path.stat()
        key = (str(path), st.st_size, st.st_mtime_ns)
        if key not in self._probes:
            self._probes[key] = probe_playable(path)
        return self._probes[key]

    def preview(self, path: Path) -> Path:
        """A browser-playable H.264 (yuv420p) copy of the clip at ``path``, made once."""
        from dataclaw.media.video import decode_all, probe
        from dataclaw.media.writers import write_clip

        out = self.dir / "previews" / f"{self._key(path)}.mp4"
        with self._lock(str(out)):
            if not out.is_file():
                out.parent.mkdir(parents=True, exist_ok=True)
                fps = probe(path).fps or 30.0
                write_clip(decode_all(path), out, fps, codec="h264")
        return out

    def thumbnail(self, video: Path, frame: int, width: int = 192) -> Path:
        """A small JPEG of frame ``frame`` of ``video``, made once."""
        from dataclaw.media.image import encode_image
        from dataclaw.media.video import VideoReader

        out = self.dir / "thumbs" / f"{self._key(video, f'{frame}-{width}')}.jpg"
        with self._lock(str(out)):
            if not out.is_file():
                out.parent.mkdir(parents=True, exist_ok=True)
                with VideoReader(video) as reader:
                    img = reader.frame_at(frame)
                w = img.shape[1]
                step = max(1, w // width)
                tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
                tmp.write_bytes(encode_image(img[::step, ::step], "JPEG", 80))
                os.replace(tmp, out)
        return out


def content_type(path: Path) -> str:
    return {
        ".mp4": "video/mp4",
        ".webm": "video/webm",
        ".mkv": "video/x-matroska",
        ".mov": "video/quicktime",
        ".png": "image/png",
        ".jpg": "image/jpeg",
        ".jpeg": "image/jpeg",
        ".webp": "image/webp",
        ".gif": "image/gif",
        ".json": "application/json",
        ".jsonl": "application/x-ndjson",
        ".css": "text/css",
        ".js": "text/javascript",
        ".svg": "image/svg+xml",
        ".html": "text/html; charset=utf-8",
    }.get(path.suffix.lower(), "application/octet-stream")
