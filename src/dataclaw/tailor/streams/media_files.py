"""Plain media sources: video files or folders of videos (one stream each), and image folders."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from dataclaw.core.errors import Reject
from dataclaw.media.errors import MediaError
from dataclaw.media.image import IMAGE_SUFFIXES, image_size
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

VIDEO_SUFFIXES = frozenset({".mp4", ".mkv", ".webm", ".mov", ".avi", ".m4v"})


def _natural_key(path: Path) -> list[object]:
    """``img2.png`` before ``img10.png``."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", path.name)]


def _listed(folder: Path, suffixes: frozenset[str]) -> list[Path]:
    """Top-level files of ``folder`` with one of ``suffixes``, in natural name order."""
    return sorted(
        (p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in suffixes), key=_natural_key
    )


@register_reader
class VideoFileReader(StreamReader):
    """A video file, or a folder whose top level holds video files: one VIDEO stream per file."""

    name = "video"
    modality = Modality.VIDEO
    description = "a video file (.mp4/.mkv/.webm/.mov/.avi) or a folder of them"
    priority = 90

    def detect(self, path: Path) -> bool:
        if path.is_file():
            return path.suffix.lower() in VIDEO_SUFFIXES
        return path.is_dir() and any(
            p.suffix.lower() in VIDEO_SUFFIXES for p in path.iterdir() if p.is_file()
        )

    def read(self, path: Path) -> Iterator[Stream | Reject]:
        for file in [path] if path.is_file() else _listed(path, VIDEO_SUFFIXES):
            yield self.read_file(file)

    def read_file(self, file: Path) -> Stream | Reject:
        """One video file as a stream, or a reject saying why it cannot be decoded."""
        uid = stream_id(file.stem, [self.name, file.name, file.stat().st_size if file.exists() else 0])
        try:
            with VideoReader(file) as reader:
                info = reader.info
        except MediaError as exc:
            return media_reject(uid, exc)
        camera = Camera(
            name="video",
            path=str(file),
            frame_end=info.frame_count,
            time_end=info.duration,
            fps=info.fps,
            width=info.width,
            height=info.height,
            codec=info.codec,
        )
        return Stream(
            id=uid,
            reader=self.name,
            modality=Modality.VIDEO,
            source=str(file),
            fps=info.fps,
            frame_count=info.frame_count,
            duration=info.duration,
            cameras={"video": camera},
            metadata={"video": info.to_dict(), "frame_count_source": info.frame_count_source},
        )


@register_reader
class ImageFolderReader(StreamReader):
    """A folder of images (PNG/JPEG/WEBP/BMP) in natural name order: one IMAGES stream, no clock."""

    name = "images"
    modality = Modality.IMAGES
    description = "a folder of images"
    priority = 95

    def detect(self, path: Path) -> bool:
        return path.is_dir() and any(
            p.suffix.lower() in IMAGE_SUFFIXES for p in path.iterdir() if p.is_file()
        )

    def read(self, path: Path) -> Iterator[Stream | Reject]:
        files = _listed(path, IMAGE_SUFFIXES)
        uid = stream_id(path.name, [self.name, path.name, [f.name for f in files]])
        sizes = set()
        for file in files:
            try:
                sizes.add(image_size(file))
            except MediaError as exc:
                yield reject(uid, IngestIssue.CORRUPT_IMAGE, str(exc), file=file.name)
                return
        width, height = next(iter(sizes)) if len(sizes) == 1 else (None, None)
        camera = Camera(
            name="images",
            kind="images",
            images=[str(f) for f in files],
            frame_end=len(files),
            width=width,
            height=height,
        )
        yield Stream(
            id=uid,
            reader=self.name,
            modality=Modality.IMAGES,
            source=str(path),
            frame_count=len(files),
            cameras={"images": camera},
            metadata={"files": [f.name for f in files], "sizes": sorted(sizes)},
        )
