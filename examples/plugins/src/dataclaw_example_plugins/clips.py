"""A stream reader: a clip list (``*.clips.json``) → one VIDEO stream per listed range of a video.

A clip list names a video file (relative to the list) and the ranges worth working on, each with a caption
that becomes the stream's task::

    {"video": "../../videos/dj_video1.mp4",
     "clips": [{"name": "walk-in", "start": 0.0, "end": 6.0, "caption": "A person walks into the room"}]}

Every clip is a stream on its own clock (its first frame is 0 s), so the video anchors, miners and intents
apply to it as to a whole video. A clip outside the video, or a list whose video is missing, is a reject
with its reason, not an error: the other clips go on.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from dataclaw.core.errors import Reject
from dataclaw.media.errors import MediaError
from dataclaw.media.video import VideoReader
from dataclaw.tailor.streams.base import (
    Camera,
    IngestIssue,
    Modality,
    Stream,
    StreamReader,
    media_reject,
    reject,
    stream_id,
)

SUFFIX = ".clips.json"


class ClipListReader(StreamReader):
    """Registered by the entry point ``clips = dataclaw_example_plugins.clips:ClipListReader`` in the
    ``dataclaw.readers`` group: the entry point's name is the reader's name."""

    name = "clips"
    modality = Modality.VIDEO
    description = "a clip list (*.clips.json): ranges of a video, each with a caption"
    priority = 40  # before the generic readers

    def detect(self, path: Path) -> bool:
        return path.is_file() and path.name.endswith(SUFFIX)

    def read(self, path: Path) -> Iterator[Stream | Reject]:
        uid = stream_id(path.name.removesuffix(SUFFIX), [self.name, path.name])
        try:
            spec = json.loads(path.read_text(encoding="utf-8"))
            video = (path.parent / spec["video"]).resolve()
            clips = list(spec["clips"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            yield reject(uid, IngestIssue.BAD_METADATA, f"{path}: not a clip list ({exc})")
            return
        try:
            with VideoReader(video) as decoder:
                info = decoder.info
        except MediaError as exc:
            yield media_reject(uid, exc, clip_list=str(path))
            return
        for n, clip in enumerate(clips):
            name = str(clip.get("name") or f"clip{n}")
            cid = stream_id(name, [self.name, path.name, video.name, clip.get("start"), clip.get("end")])
            start, end = float(clip.get("start", 0.0)), float(clip.get("end", info.duration))
            if not 0.0 <= start < end <= info.duration + 1e-6:
                why = f"clip {name!r}: {start}-{end} s is outside the video's 0-{info.duration} s"
                yield reject(cid, IngestIssue.LENGTH_MISMATCH, why, clip=name)
                continue
            first, last = round(start * info.fps), min(round(end * info.fps), info.frame_count)
            camera = Camera(
                name="video",
                path=str(video),
                frame_start=first,
                frame_end=last,
                time_start=round(first / info.fps, 6),
                time_end=round(last / info.fps, 6),
                fps=info.fps,
                width=info.width,
                height=info.height,
                codec=info.codec,
            )
            yield Stream(
                id=cid,
                reader=self.name,
                modality=Modality.VIDEO,
                source=str(path),
                fps=info.fps,
                frame_count=last - first,
                duration=round((last - first) / info.fps, 6),
                cameras={"video": camera},
                metadata={"task": clip.get("caption"), "clip": name, "video": str(video)},
            )
