"""GUI parser anchors (exact: read from recorded input events and action code, not perceived).

Raw recordings: mouse actions come from the high-level (reduced) actions when the recording has them
(they carry the clicked control as ``target``), else from the low-level clicks and scrolls; keyboard
input is rebuilt from press events into ``typing`` (text runs), ``shortcut`` (modifier + key) and
``key`` (enter, tab, ...) anchors; ``window_change`` comes from the top-window log. Trajectories: each
step's parsed pyautogui actions, at ``t`` = step index, with the step's low-level instruction (AgentNet
``inner_monologue.low_level_instruction``) as ``instruction`` when it has one. Coordinates are
normalised to 0-1 (nx, ny).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dataclaw.tailor.anchors.base import Anchor, AnchorExtractor, make_anchor, register_extractor
from dataclaw.tailor.streams.base import Modality, Stream
from dataclaw.tailor.streams.source import StreamSource

_MODIFIERS = {"ctrl", "ctrl_l", "ctrl_r", "alt", "alt_l", "alt_r", "alt_gr", "shift", "shift_l", "shift_r"}
_MODIFIERS |= {"cmd", "cmd_l", "cmd_r", "win"}
_MOUSE_ACTIONS = {"click", "drag", "scroll", "double_click", "right_click", "move"}
_TYPING_GAP_S = 1.5
_MODIFIER_TIMEOUT_S = 2.0
TARGET_KEYS = ("target", "target_title", "title", "element", "name")
""":func:`target_of` reads the first of these payload keys an action has."""
INSTRUCTION_KEY = "instruction"
"""Anchor payload key of a trajectory step's low-level instruction (AgentNet ``inner_monologue``)."""


def target_of(payload: Mapping[str, Any]) -> str:
    """The control an action acted on (a recording's accessibility target title, else a name)."""
    for key in TARGET_KEYS:
        value = payload.get(key)
        if isinstance(value, dict):
            value = value.get("title") or value.get("name")
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _modifier(name: str) -> str:
    return name.split("_")[0].lower()


def keyboard_anchors(stream_id: str, events: list[dict[str, Any]], source: str) -> list[Anchor]:
    """typing / shortcut / key anchors from low-level press and release events (sorted by t)."""
    anchors: list[Anchor] = []
    held: dict[str, float] = {}
    text, text_start, text_last = "", 0.0, -1e9

    def flush() -> None:
        nonlocal text
        if text:
            payload = {"text": text}
            anchors.append(make_anchor(stream_id, text_start, "typing", source, payload, t_end=text_last))
            text = ""

    for event in events:
        name = str(event.get("name") or "")
        t = float(event["t"])
        held = {k: v for k, v in held.items() if t - v <= _MODIFIER_TIMEOUT_S}
        if event["type"] == "release":
            if name.lower() in _MODIFIERS:
                held.pop(_modifier(name), None)
            continue
        if event["type"] != "press":
            continue
        low = name.lower()
        if low in _MODIFIERS:
            held[_modifier(low)] = t
            continue
        combo = sorted(m for m in held if m != "shift")
        if combo:
            flush()
            keys = [*combo, low]
            anchors.append(
                make_anchor(stream_id, t, "shortcut", source, {"keys": keys, "combo": "+".join(keys)})
            )
        elif len(name) == 1 or low == "space":
            if t - text_last > _TYPING_GAP_S:
                flush()
                text_start = t
            text += " " if low == "space" else name
            text_last = t
        else:
            flush()
            anchors.append(make_anchor(stream_id, t, "key", source, {"key": low}))
    flush()
    return anchors


def _mouse_payload(event: dict[str, Any]) -> dict[str, Any]:
    keys = ("button", "nx", "ny", "description", "target", "dx", "dy", "x", "y", "id")
    return {k: event[k] for k in keys if k in event and event[k] is not None}


@register_extractor
class GuiEventAnchors(AnchorExtractor):
    """Clicks, drags, scrolls, typing, shortcuts, keys and window changes of GUI streams."""

    name = "gui"

    def applies_to(self, stream: Stream) -> bool:
        return stream.modality in (Modality.GUI, Modality.TRAJECTORY)

    def extract(self, stream: Stream, source: StreamSource) -> list[Anchor]:
        if stream.modality == Modality.TRAJECTORY:
            return self._trajectory(stream)
        events = stream.events
        high = [e for e in events if e["type"] == "action"]
        anchors: list[Anchor] = []
        for event in high:
            kind = event["action"]
            if kind == "click" and event.get("button") in ("right", "middle"):
                kind = f"{event['button']}_click"
            anchors.append(
                make_anchor(
                    stream.id, event["t"], kind, self.name, _mouse_payload(event), t_end=event.get("t_end")
                )
            )
        if not any(e["action"] in _MOUSE_ACTIONS for e in high):
            anchors += self._low_level_mouse(stream)
        if not any(e["action"] not in _MOUSE_ACTIONS for e in high):
            anchors += keyboard_anchors(
                stream.id, [e for e in events if e["type"] in ("press", "release")], self.name
            )
        for event in events:
            if event["type"] == "window":
                payload = {"window": event.get("window")}
                anchors.append(make_anchor(stream.id, event["t"], "window_change", self.name, payload))
        return sorted(anchors, key=lambda a: a.t)

    def _low_level_mouse(self, stream: Stream) -> list[Anchor]:
        anchors: list[Anchor] = []
        scroll: dict[str, Any] | None = None
        for event in stream.events:
            if event["type"] == "click" and event.get("pressed"):
                kind = "click" if event.get("button", "left") == "left" else f"{event['button']}_click"
                anchors.append(make_anchor(stream.id, event["t"], kind, self.name, _mouse_payload(event)))
            elif event["type"] == "scroll":
                if scroll is not None and event["t"] - scroll["t_end"] <= 0.5:
                    scroll["t_end"] = event["t"]
                    scroll["payload"]["dy"] += event.get("dy", 0)
                    scroll["payload"]["dx"] += event.get("dx", 0)
                    continue
                if scroll is not None:
                    anchors.append(self._scroll(stream, scroll))
                payload = {**_mouse_payload(event), "dx": event.get("dx", 0), "dy": event.get("dy", 0)}
                scroll = {"t": event["t"], "t_end": event["t"], "payload": payload}
        if scroll is not None:
            anchors.append(self._scroll(stream, scroll))
        return anchors

    def _scroll(self, stream: Stream, scroll: dict[str, Any]) -> Anchor:
        return make_anchor(
            stream.id, scroll["t"], "scroll", self.name, scroll["payload"], t_end=scroll["t_end"]
        )

    def _trajectory(self, stream: Stream) -> list[Anchor]:
        anchors: list[Anchor] = []
        for event in stream.events:
            if event["type"] != "step":
                continue
            for j, action in enumerate(event.get("actions", [])):
                kind = {"type": "typing", "hotkey": "shortcut"}.get(action["action"], action["action"])
                payload = {k: v for k, v in action.items() if k not in ("action", "call", "x", "y")}
                if isinstance(action.get("x"), int | float) and isinstance(action.get("y"), int | float):
                    payload.update(nx=action["x"], ny=action["y"])
                payload.update(step=event["step"], index_in_step=j)
                if isinstance(event.get("instruction"), str) and event["instruction"].strip():
                    payload["instruction"] = event["instruction"].strip()  # the step's low-level instruction
                if kind == "typing" and "message" in payload:
                    payload["text"] = payload.pop("message")
                anchors.append(make_anchor(stream.id, event["t"], kind, self.name, payload))
        return anchors
