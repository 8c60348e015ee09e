"""Trajectory-shape similarity (paper A.4.4 S_traj and B.1 R_anchor).

A trajectory is the sequence of frame indices an output selects (or the ordered GUI fragment labels it
returns). Both sequences are put on one [0, 1] scale, each is resampled by linear interpolation to K = 50
uniformly spaced points, and their mean absolute difference is the shape distance ``d_shape``; the
similarity is ``exp(−d_shape / τ_s)``. Frame indices are scaled by the reference's frame range when the
reference gives one, else by the range of both sequences together (so an offset of the whole selection
costs in proportion to the span the two cover). Labels are placed at their position in the reference
order (first label 0, last 1); a predicted label the reference does not contain (a distractor) has no
position and is left out of the predicted sequence.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

K_POINTS = 50


class TrajectorySpec(BaseModel):
    """Where an intent's trajectory lives in its output (see ``roles.yaml``)."""

    kind: Literal["frames", "labels"] = "frames"
    paths: list[str] = Field(min_length=1)


def values_at(value: Any, path: str) -> list[Any]:
    """Every value at dotted ``path`` (``a[]`` walks list ``a``); missing parts give nothing."""
    out: list[Any] = []
    _walk(value, path.split(".") if path else [], out)
    return out


def _walk(value: Any, parts: list[str], out: list[Any]) -> None:
    if not parts:
        out.append(value)
        return
    head, rest = parts[0], parts[1:]
    many = head.endswith("[]")
    name = head[:-2] if many else head
    if name:
        if not isinstance(value, dict) or name not in value:
            return
        value = value[name]
    if many:
        if isinstance(value, list):
            for item in value:
                _walk(item, rest, out)
        return
    _walk(value, rest, out)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and np.isfinite(v)


def _groups(paths: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Consecutive paths under the same list (``a[].x``, ``a[].y``) grouped, to be read item by item."""
    groups: list[tuple[str, list[str]]] = []
    for path in paths:
        prefix, sep, rest = path.partition("[].")
        if sep and groups and groups[-1][0] == prefix + "[]" and groups[-1][1][0] != "":
            groups[-1][1].append(rest)
        elif sep:
            groups.append((prefix + "[]", [rest]))
        else:
            groups.append((path, [""]))
    return groups


def frame_values(output: Any, paths: Sequence[str]) -> list[float]:
    """The frame indices of ``output`` at ``paths`` in trajectory order (non-numbers skipped)."""
    seq: list[float] = []
    for prefix, rests in _groups(paths):
        if rests == [""]:
            seq.extend(float(v) for v in values_at(output, prefix) if _is_number(v))
            continue
        for item in values_at(output, prefix):
            for rest in rests:
                seq.extend(float(v) for v in values_at(item, rest) if _is_number(v))
    return seq


def label_values(output: Any, paths: Sequence[str]) -> list[str]:
    """The ordered labels of ``output`` at ``paths`` (strings only)."""
    labels: list[str] = []
    for path in paths:
        for v in values_at(output, path):
            items = v if isinstance(v, list) else [v]
            labels.extend(x for x in items if isinstance(x, str))
    return labels


@functools.lru_cache(maxsize=256)
def _grid(n: int) -> np.ndarray:
    return np.linspace(0.0, 1.0, n)


def resample(values: Sequence[float], k: int = K_POINTS) -> np.ndarray:
    """``values`` (taken as evenly spaced over [0, 1]) linearly interpolated at ``k`` even points."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        raise ValueError("cannot resample an empty trajectory")
    if v.size == 1:
        return np.full(k, v[0])
    return np.interp(_grid(k), _grid(v.size), v)


def shape_distance(pred: Sequence[float], ref: Sequence[float], k: int = K_POINTS) -> float:
    """MAE between two [0, 1]-scaled trajectories after resampling both to ``k`` points."""
    return float(np.mean(np.abs(resample(pred, k) - resample(ref, k))))


def normalise_frames(
    pred: Sequence[float], ref: Sequence[float], frame_range: Sequence[float] | None = None
) -> tuple[list[float], list[float]]:
    """Both frame sequences on one [0, 1] scale: the reference's ``frame_range`` or their joint range."""
    if frame_range is not None and len(frame_range) == 2 and frame_range[1] > frame_range[0]:
        lo, hi = float(frame_range[0]), float(frame_range[1])
    else:
        both = [*pred, *ref]
        lo, hi = min(both), max(both)
    span = hi - lo
    if span <= 0:
        return [0.0] * len(pred), [0.0] * len(ref)
    clip = lambda x: min(1.0, max(0.0, (x - lo) / span))  # noqa: E731
    return [clip(x) for x in pred], [clip(x) for x in ref]


def label_positions(pred: Sequence[str], ref: Sequence[str]) -> tuple[list[float], list[float]]:
    """Labels as positions in the reference order; predicted labels unknown to the reference dropped."""
    pos: dict[str, float] = {}
    n = len(ref)
    for i, label in enumerate(ref):
        pos.setdefault(label, i / (n - 1) if n > 1 else 0.0)
    return [pos[x] for x in pred if x in pos], [pos[x] for x in ref]


def trajectories(
    spec: TrajectorySpec, pred: Any, ref: Any, frame_range: Sequence[float] | None = None
) -> tuple[list[float], list[float]]:
    """The predicted and reference trajectories of one pair of outputs, both on [0, 1]."""
    if spec.kind == "labels":
        return label_positions(label_values(pred, spec.paths), label_values(ref, spec.paths))
    p, r = frame_values(pred, spec.paths), frame_values(ref, spec.paths)
    if not p or not r:
        return p, r
    return normalise_frames(p, r, frame_range)


def shape_similarity(
    pred: Sequence[float], ref: Sequence[float], tau: float, k: int = K_POINTS
) -> float | None:
    """``exp(−d_shape/τ)`` of two [0, 1] trajectories; None when the reference has none (not
    applicable), 0 when only the prediction lacks one."""
    if not ref:
        return None
    if not pred:
        return 0.0
    return float(np.exp(-shape_distance(pred, ref, k) / tau))
