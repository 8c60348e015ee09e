"""OpenCUA GUI sources: raw recordings (screen video + input events) and step trajectories.

Raw recording folder (OpenCUA ``datasets/raw/<session>``): ``*.mp4`` screen video, ``events.jsonl`` (low
level input: move/click/scroll/press/release with ``time_stamp``), ``reduced_events_complete.jsonl``
(high-level actions with targets), ``metadata.json`` (``video_start_timestamp`` puts event times on the
video clock, screen size), ``task_name.json``, optionally ``top_window.jsonl``. Event times become
``t = time_stamp - video_start_timestamp`` seconds; coordinates are also given normalised to 0-1.

Trajectories (AgentNetBench ``*.json`` with ``steps``, OpenCUA CoT ``*.jsonl`` with ``traj``): one
screenshot per step; the stream clock counts steps (step i at t = i s, fps 1). AgentNet's per-step
low-level instruction stays on the step event (``instruction``) and its trajectory ``meta_info``
(applications, websites, complexity) in the stream metadata.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dataclaw.core.errors import Reject
from dataclaw.media.errors import MediaError
from dataclaw.media.image import image_size
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
from dataclaw.tailor.streams.gui_common import ActionParseError, parse_actions

_VIDEO_SUFFIXES = (".mp4", ".mkv", ".webm", ".mov")
_DROP_KEYS = {"axtree", "pre_move", "children", "drag_trace", "drag_time_trace", "time_trace", "trace"}


class MalformedEvents(ValueError):
    """An events file line that is not a JSON object with the needed fields."""


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise MalformedEvents(f"{path.name}:{lineno}: not JSON ({exc.args[0][:60]})") from exc
        if not isinstance(row, dict):
            raise MalformedEvents(f"{path.name}:{lineno}: expected a JSON object")
        rows.append(row)
    return rows


def _low_level(row: dict[str, Any], t0: float, size: tuple[int, int], where: str) -> dict[str, Any] | None:
    """One events.jsonl row on the video clock; mouse moves are summarised, not kept."""
    action = row.get("action")
    stamp = row.get("time_stamp")
    if not isinstance(action, str) or not isinstance(stamp, int | float):
        raise MalformedEvents(f"{where}: event {row.get('event_idx')} lacks 'action' or numeric 'time_stamp'")
    if action == "move":
        return None
    event: dict[str, Any] = {"type": action, "t": round(stamp - t0, 6), "event_idx": row.get("event_idx")}
    for key in ("button", "pressed", "dx", "dy", "name", "pynput_key"):
        if key in row:
            event[key] = row[key]
    if isinstance(row.get("x"), int | float) and isinstance(row.get("y"), int | float):
        event.update(x=row["x"], y=row["y"], nx=round(row["x"] / size[0], 4), ny=round(row["y"] / size[1], 4))
    return event


def _high_level(row: dict[str, Any], t0: float, size: tuple[int, int], where: str) -> dict[str, Any]:
    """One reduced_events_complete.jsonl action on the video clock, without the accessibility tree."""
    start, end = row.get("start_time"), row.get("end_time")
    if not isinstance(row.get("action"), str) or not isinstance(start, int | float):
        raise MalformedEvents(f"{where}: action {row.get('id')} lacks 'action' or numeric 'start_time'")
    event = {k: v for k, v in row.items() if k not in _DROP_KEYS and k not in ("start_time", "end_time")}
    event.update(type="action", action=row["action"], t=round(start - t0, 6))
    event["t_end"] = round(end - t0, 6) if isinstance(end, int | float) else event["t"]
    event["has_axtree"] = bool(row.get("axtree"))
    coord = row.get("coordinate")
    if isinstance(coord, dict) and {"x", "y"} <= coord.keys():
        event["nx"], event["ny"] = round(coord["x"] / size[0], 4), round(coord["y"] / size[1], 4)
    return event


@register_reader
class OpenCUARecordingReader(StreamReader):
    """A raw OpenCUA/AgentNet recording folder -> one GUI stream with input events and actions."""

    name = "opencua_raw"
    modality = Modality.GUI
    description = "OpenCUA raw recording folder (video + events.jsonl + metadata.json)"

    def detect(self, path: Path) -> bool:
        return path.is_dir() and (path / "events.jsonl").is_file() and (path / "metadata.json").is_file()

    def read(self, path: Path) -> Iterator[Stream | Reject]:
        uid = stream_id(path.name, [self.name, path.name])
        videos = sorted(p for p in path.iterdir() if p.suffix.lower() in _VIDEO_SUFFIXES)
        if not videos:
            yield reject(uid, IngestIssue.MISSING_FILE, f"{path}: no screen video (*.mp4) in the recording")
            return
        try:
            meta = json.loads((path / "metadata.json").read_text())
            t0 = float(meta["video_start_timestamp"])
            size = (int(meta.get("screen_width") or 0), int(meta.get("screen_height") or 0))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            yield reject(
                uid, IngestIssue.BAD_METADATA, f"{path}/metadata.json: needs video_start_timestamp ({exc})"
            )
            return
        try:
            with VideoReader(videos[0]) as reader:
                vinfo = reader.info
        except MediaError as exc:
            yield media_reject(uid, exc)
            return
        if not all(size):
            size = (vinfo.width, vinfo.height)
        try:
            events = self._events(path, t0, size)
        except (MalformedEvents, OSError) as exc:
            yield reject(uid, IngestIssue.MALFORMED_EVENTS, f"{path}: {exc}")
            return
        inside = [e for e in events if 0.0 <= e["t"] <= vinfo.duration]
        task = _task_text(path / "task_name.json")
        yield Stream(
            id=uid,
            reader=self.name,
            modality=Modality.GUI,
            source=str(path),
            fps=vinfo.fps,
            frame_count=vinfo.frame_count,
            duration=vinfo.duration,
            cameras={
                "screen": Camera(
                    name="screen",
                    path=str(videos[0]),
                    frame_end=vinfo.frame_count,
                    time_end=vinfo.duration,
                    fps=vinfo.fps,
                    width=vinfo.width,
                    height=vinfo.height,
                    codec=vinfo.codec,
                )
            },
            events=inside,
            metadata={
                "task": task,
                "screen": {"width": size[0], "height": size[1]},
                "os": " ".join(str(meta.get(k, "")) for k in ("system", "release")).strip(),
                "video_start_timestamp": t0,
                "events_outside_video": len(events) - len(inside),
                "high_level_actions": sum(1 for e in inside if e["type"] == "action"),
            },
        )

    def _events(self, path: Path, t0: float, size: tuple[int, int]) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        for row in _read_jsonl(path / "events.jsonl"):
            event = _low_level(row, t0, size, "events.jsonl")
            if event is not None:
                events.append(event)
        reduced = path / "reduced_events_complete.jsonl"
        if reduced.is_file():
            events.extend(_high_level(row, t0, size, reduced.name) for row in _read_jsonl(reduced))
        windows = path / "top_window.jsonl"
        if windows.is_file():
            for row in _read_jsonl(windows):
                if isinstance(row.get("time_stamp"), int | float):
                    name = row.get("top_window_name")
                    events.append({"type": "window", "t": round(row["time_stamp"] - t0, 6), "window": name})
        return events


def _task_text(path: Path) -> str | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except ValueError:
        return None
    return data.get("task_name") if isinstance(data, dict) else None


def _steps_stream(
    reader: StreamReader,
    source: Path,
    task_id: str,
    task: str | None,
    steps: list[dict[str, Any]],
    extra: dict,
) -> Stream | Reject:
    """A trajectory stream from ``steps`` = [{image: Path, code: str, ...}] (one screenshot per step)."""
    uid = stream_id(task_id, [reader.name, source.name, task_id])
    events: list[dict[str, Any]] = []
    for i, step in enumerate(steps):
        image: Path = step["image"]
        if not image.is_file():
            return reject(
                uid, IngestIssue.MISSING_FILE, f"{task_id}: step {i} screenshot {image.name} is missing"
            )
        try:
            actions = parse_actions(step["code"])
        except ActionParseError as exc:
            return reject(uid, IngestIssue.MALFORMED_EVENTS, f"{task_id}: step {i}: {exc}")
        fields = {k: v for k, v in step.items() if k not in ("image", "code")}
        events.append(
            {"type": "step", "t": float(i), "step": i, "code": step["code"], "actions": actions, **fields}
        )
    if not steps:
        return reject(uid, IngestIssue.EMPTY_SOURCE, f"{task_id}: the trajectory has no steps")
    try:
        size = image_size(steps[0]["image"])
    except MediaError as exc:
        return reject(uid, IngestIssue.CORRUPT_IMAGE, str(exc))
    camera = Camera(
        name="screenshots",
        kind="images",
        images=[str(s["image"]) for s in steps],
        frame_end=len(steps),
        time_end=float(len(steps)),
        fps=1.0,
        width=size[0],
        height=size[1],
    )
    return Stream(
        id=uid,
        reader=reader.name,
        modality=Modality.TRAJECTORY,
        source=str(source),
        fps=1.0,
        frame_count=len(steps),
        duration=float(len(steps)),
        cameras={"screenshots": camera},
        events=events,
        metadata={"task": task, "task_id": task_id, "clock": "steps", "coordinates": "normalized", **extra},
    )


@register_reader
class AgentNetTrajectoryReader(StreamReader):
    """AgentNetBench trajectories: a folder of ``<task>.json`` with ``steps`` and an ``images/`` folder."""

    name = "agentnet"
    modality = Modality.TRAJECTORY
    description = "AgentNet trajectory folder (*.json with steps + images/)"

    def detect(self, path: Path) -> bool:
        if not path.is_dir() or not (path / "images").is_dir():
            return False
        return any(_has_key(p, '"steps"') for p in path.glob("*.json"))

    def read(self, path: Path) -> Iterator[Stream | Reject]:
        for file in sorted(path.glob("*.json")):
            try:
                data = json.loads(file.read_text())
                raw_steps = data["steps"]
                steps = [
                    {
                        "image": path / "images" / s["image"],
                        "code": s["action"],
                        "step_num": s.get("step_num"),
                        "milestone": s.get("milestone"),
                        "instruction": (s.get("inner_monologue") or {}).get("low_level_instruction"),
                        "ground_truth": s.get("ground_truth_actions"),
                    }
                    for s in raw_steps
                ]
            except (OSError, ValueError, KeyError, TypeError) as exc:
                uid = stream_id(file.stem, [self.name, path.name, file.stem])
                yield reject(uid, IngestIssue.MALFORMED_EVENTS, f"{file}: not an AgentNet trajectory ({exc})")
                continue
            task = data.get("user_task_description") or data.get("high_level_task_description")
            extra = {"high_level_task": data.get("high_level_task_description")}
            if isinstance(data.get("meta_info"), dict):
                extra["meta_info"] = data["meta_info"]  # applications, websites, complexity flags, domain
            yield _steps_stream(self, path, str(data.get("task_id") or file.stem), task, steps, extra)


@register_reader
class OpenCUATrajectoryReader(StreamReader):
    """OpenCUA CoT examples: ``*.jsonl`` lines ``{task_id, instruction, traj: [{image, value: {code}}]}``."""

    name = "opencua_traj"
    modality = Modality.TRAJECTORY
    description = "OpenCUA trajectory folder (*.jsonl with traj + images/)"

    def detect(self, path: Path) -> bool:
        if not path.is_dir() or not (path / "images").is_dir():
            return False
        return any(_has_key(p, '"traj"') for p in path.glob("*.jsonl"))

    def read(self, path: Path) -> Iterator[Stream | Reject]:
        for file in sorted(path.glob("*.jsonl")):
            for lineno, line in enumerate(file.read_text().splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    data = json.loads(line)
                    steps = [
                        {
                            "image": path / "images" / s["image"],
                            "code": s["value"]["code"],
                            "index": s.get("index"),
                        }
                        for s in data["traj"]
                    ]
                except (ValueError, KeyError, TypeError) as exc:
                    uid = stream_id(f"{file.stem}-{lineno}", [self.name, path.name, file.name, lineno])
                    yield reject(
                        uid, IngestIssue.MALFORMED_EVENTS, f"{file.name}:{lineno}: not a trajectory ({exc})"
                    )
                    continue
                task_id = str(data.get("task_id") or f"{file.stem}-{lineno}")
                yield _steps_stream(self, path, task_id, data.get("instruction"), steps, {})


def _has_key(path: Path, key: str) -> bool:
    try:
        with path.open(encoding="utf-8", errors="replace") as fh:
            return key in fh.read(65536)
    except OSError:
        return False
