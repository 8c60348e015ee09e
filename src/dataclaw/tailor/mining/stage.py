"""The mine stage (paper A.3 step 1): each stream and its anchors → ``candidates.jsonl``.

:class:`MineStage` runs the candidate miners over a stream's :class:`~.base.StreamView` and its anchors; a
stream that yields nothing is a ``no_candidates`` reject that says why (the miners' notes).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import ValidationError

from dataclaw.core.errors import DataclawError
from dataclaw.pipeline import Resources, Stage
from dataclaw.pipeline.stage import Record, Result
from dataclaw.tailor.anchors.base import Anchor
from dataclaw.tailor.mining.base import Miner, StreamView, get_miner, miner_names
from dataclaw.tailor.records import first_error
from dataclaw.tailor.streams.base import Stream

CANDIDATES = "candidates"


class MineIssue(StrEnum):
    """Why a stream yielded no candidates."""

    BAD_RECORD = "bad_record"
    NO_CANDIDATES = "no_candidates"
    """No miner applies, or every miner filtered the stream out (the message says why)."""
    MINER_FAILED = "miner_failed"


HEAD_CAMERA = re.compile(r"high|head|top", re.IGNORECASE)


def mining_camera(stream: Stream) -> str | None:
    """The camera candidates point into: for robots the head camera when there is one (A.3.1 mines the
    ``cam_high`` stream), else the stream's main camera."""
    if stream.modality == "robot":
        for name, cam in stream.cameras.items():
            if cam.kind == "video" and HEAD_CAMERA.search(name):
                return name
    return stream.main_camera


def stream_view(stream: Stream) -> StreamView:
    """What miners see of a stream."""
    camera = mining_camera(stream)
    cam = stream.cameras.get(camera) if camera else None
    has_video = cam is not None and cam.kind == "video"
    return StreamView(
        id=stream.id,
        modality=str(stream.modality),
        fps=stream.fps if has_video else None,
        frame_count=stream.frame_count if has_video else None,
        duration=stream.duration,
        camera=camera,
        instruction=stream.task or stream.metadata.get("instruction"),
        document=next((c.path for c in stream.cameras.values() if c.kind == "pdf" and c.path), None),
        metadata=stream.metadata,
    )


class MineStage(Stage):
    """``{"id": stream id, "stream": …, "anchors": […]}`` → candidate records (``candidates.jsonl``)."""

    name: ClassVar[str] = CANDIDATES
    resources: ClassVar[Resources] = Resources.CPU

    def __init__(self, names: Sequence[str] | None = None, config: dict[str, dict[str, Any]] | None = None):
        self.names = list(names) if names is not None else None
        self.config = dict(config or {})
        self._miners: list[Miner] | None = None

    def setup(self) -> None:
        names = self.names if self.names is not None else miner_names()
        self._miners = [get_miner(n, **self.config.get(n, {})) for n in names]

    def process(self, item: Record) -> Result:
        if self._miners is None:
            self.setup()
        assert self._miners is not None
        try:
            stream = Stream.model_validate(item["stream"])
            anchors = [Anchor.model_validate(a) for a in item.get("anchors", [])]
        except (ValidationError, KeyError, TypeError) as exc:
            detail = first_error(exc) if isinstance(exc, ValidationError) else repr(exc)
            return self.reject(item, MineIssue.BAD_RECORD, f"stream or anchors do not validate: {detail}")
        view = stream_view(stream)
        out: list[Record] = []
        applied: list[str] = []
        notes: list[str] = []
        for miner in self._miners:
            if not miner.applies_to(view):
                continue
            applied.append(miner.name)
            miner.take_notes()
            try:
                out.extend(c.model_dump(mode="json") for c in miner.mine(view, anchors))
            except DataclawError as exc:
                return self.reject(item, MineIssue.MINER_FAILED, f"{miner.name}: {exc}", miner=miner.name)
            notes += [f"{miner.name}: {n}" for n in miner.take_notes()]
        if not out:
            why = (
                f"miners {', '.join(applied)} found nothing worth mining in {len(anchors)} anchors"
                + (f" ({'; '.join(notes)})" if notes else "")
                if applied
                else f"no miner applies to a {view.modality} stream" + ("" if view.fps else " without video")
            )
            return self.reject(item, MineIssue.NO_CANDIDATES, why, miners=applied, notes=notes)
        return out
