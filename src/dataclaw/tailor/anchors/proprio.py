"""Proprioception parser anchors from LeRobot state, or action when no state is logged (exact:
computed from logged joint values).

- ``hand_close`` / ``hand_open``: a hand's finger joints (names with ``Hand`` or ``gripper``) move by at
  least ``min_delta`` (in joint units) towards closed (lower) or open (higher). Found as the legs of a
  zig-zag over the mean finger value, so small jitter never makes events; ``t``..``t_end`` covers the move.
- ``stall``: the arm joints' speed stays below a threshold for at least ``min_stall_s`` seconds.
- ``segment``: a motion segment between stalls (its ends are the episode's segment boundaries).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from dataclaw.tailor.anchors.base import Anchor, AnchorExtractor, make_anchor, register_extractor
from dataclaw.tailor.streams.base import Modality, Stream
from dataclaw.tailor.streams.source import StreamSource

_HAND_WORDS = ("hand", "gripper", "finger")
_SIDES = {"left": ("left", "l_"), "right": ("right", "r_")}


def hand_groups(names: list[str]) -> dict[str, list[int]]:
    """Column indices of each hand's finger joints (thumb rotation excluded), by side."""
    groups: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        low = name.lower()
        if not any(w in low for w in _HAND_WORDS) or "rotation" in low:
            continue
        side = next((s for s, keys in _SIDES.items() if any(k in low for k in keys)), "hand")
        groups.setdefault(side, []).append(i)
    return groups


def zigzag(signal: np.ndarray, min_delta: float) -> list[int]:
    """Pivot indices of the signal's moves of at least ``min_delta`` (alternating highs and lows).

    Consecutive pivots are the ends of one monotone leg; jitter smaller than ``min_delta`` never
    creates a pivot. A signal that never moves that much has a single pivot (no legs).
    """
    lo = hi = 0
    direction, extreme = 0, 0
    pivots: list[int] = []
    for i in range(1, len(signal)):
        if direction == 0:
            lo = i if signal[i] < signal[lo] else lo
            hi = i if signal[i] > signal[hi] else hi
            if signal[i] - signal[lo] >= min_delta:
                pivots, direction, extreme = [lo], 1, i
            elif signal[hi] - signal[i] >= min_delta:
                pivots, direction, extreme = [hi], -1, i
        elif (signal[i] - signal[extreme]) * direction > 0:
            extreme = i
        elif (signal[extreme] - signal[i]) * direction >= min_delta:
            pivots.append(extreme)
            direction, extreme = -direction, i
    if direction != 0:
        pivots.append(extreme)
    return pivots or [0]


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) index pairs (end exclusive) of True runs."""
    edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist(), strict=True))


@register_extractor
class ProprioAnchors(AnchorExtractor):
    """Hand open/close, stall and motion-segment anchors from ``observation.state``."""

    name = "proprio"

    def __init__(self, min_delta: float = 0.15, stall_speed: float = 0.06, min_stall_s: float = 0.4) -> None:
        self.min_delta = min_delta
        self.stall_speed = stall_speed
        self.min_stall_s = min_stall_s

    def applies_to(self, stream: Stream) -> bool:
        meta = stream.metadata
        return stream.modality == Modality.ROBOT and bool(meta.get("has_state") or meta.get("has_action"))

    def extract(self, stream: Stream, source: StreamSource) -> list[Anchor]:
        # measured joint positions when logged, else the commanded ones
        column = "observation.state" if stream.metadata.get("has_state") else "action"
        table = source.table()
        state = np.asarray(table[column], dtype=np.float64)
        times = np.asarray(table["timestamp"], dtype=np.float64)
        times = times - times[0]
        names = stream.metadata.get("joint_names", {}).get(column) or []
        if len(names) != state.shape[1]:
            names = [f"joint_{i}" for i in range(state.shape[1])]
        hands = hand_groups(names)
        anchors = self._hands(stream, state, times, names, hands)
        hand_cols = {i for cols in hands.values() for i in cols}
        arm = [i for i in range(state.shape[1]) if i not in hand_cols and "rotation" not in names[i].lower()]
        anchors += self._stalls(stream, state[:, arm], times)
        return sorted(anchors, key=lambda a: a.t)

    def _hands(
        self,
        stream: Stream,
        state: np.ndarray,
        times: np.ndarray,
        names: list[str],
        hands: dict[str, list[int]],
    ) -> list[Anchor]:
        anchors = []
        for side, cols in hands.items():
            signal = state[:, cols].mean(axis=1)
            pivots = zigzag(signal, self.min_delta)
            for a, b in itertools.pairwise(pivots):
                start, end = self._move_span(signal, a, b)
                kind = "hand_close" if signal[b] < signal[a] else "hand_open"
                payload: dict[str, Any] = {
                    "hand": side,
                    "joints": [names[c] for c in cols],
                    "from_value": round(float(signal[a]), 4),
                    "to_value": round(float(signal[b]), 4),
                    "frame": int(start),
                    "frame_end": int(end),
                }
                anchors.append(
                    make_anchor(stream.id, times[start], kind, self.name, payload, t_end=times[end])
                )
        return anchors

    @staticmethod
    def _move_span(signal: np.ndarray, a: int, b: int) -> tuple[int, int]:
        """Frames where the move from pivot ``a`` to pivot ``b`` leaves 10% and reaches 90% of its size."""
        lo, hi = signal[a], signal[b]
        progress = (signal[a : b + 1] - lo) / (hi - lo)
        start = a + int(np.argmax(progress > 0.1))
        end = a + int(np.argmax(progress >= 0.9))
        return start, max(end, start)

    def _stalls(self, stream: Stream, arm: np.ndarray, times: np.ndarray) -> list[Anchor]:
        if len(arm) < 3 or arm.shape[1] == 0:
            return []
        dt = np.diff(times)
        dt[dt <= 0] = np.median(dt[dt > 0]) if np.any(dt > 0) else 1.0
        speed = np.linalg.norm(np.diff(arm, axis=0), axis=1) / dt
        speed = np.convolve(speed, np.ones(5) / 5, mode="same")
        still = np.concatenate([[speed[0] < self.stall_speed], speed < self.stall_speed])
        anchors: list[Anchor] = []
        moving_from = 0
        last = len(times) - 1
        for start, end in _runs(still):
            if times[end - 1] - times[start] < self.min_stall_s:
                continue
            payload = {
                "frame": start,
                "frame_end": end - 1,
                "max_speed": round(float(speed[max(start - 1, 0)]), 4),
            }
            payload["at_boundary"] = start == 0 or end - 1 == last
            anchors.append(
                make_anchor(stream.id, times[start], "stall", self.name, payload, t_end=times[end - 1])
            )
            if start > moving_from:
                anchors.append(self._segment(stream, times, moving_from, start))
            moving_from = end - 1
        if moving_from < last:
            anchors.append(self._segment(stream, times, moving_from, last))
        return anchors

    def _segment(self, stream: Stream, times: np.ndarray, start: int, end: int) -> Anchor:
        payload = {"frame": int(start), "frame_end": int(end)}
        return make_anchor(stream.id, times[start], "segment", self.name, payload, t_end=times[end])
