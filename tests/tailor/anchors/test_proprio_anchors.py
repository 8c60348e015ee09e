"""Proprioception anchors on the real G1 episodes and on constructed signals."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from dataclaw.tailor.anchors import Anchor, get_extractor
from dataclaw.tailor.anchors.proprio import hand_groups, zigzag
from dataclaw.tailor.streams import Stream, StreamSource, open_source


@pytest.fixture(scope="module")
def episodes(shared_data: Path) -> dict[int, tuple[Stream, list[Anchor]]]:
    extractor = get_extractor("proprio")
    out = {}
    for stream in open_source(shared_data / "lerobot_g1"):
        if isinstance(stream, Stream):
            assert extractor.applies_to(stream)
            with StreamSource(stream) as source:
                out[stream.metadata["episode_index"]] = (stream, extractor.extract(stream, source))
    return out


def test_grasp_is_a_right_hand_open_close_open(episodes: dict[int, tuple[Stream, list[Anchor]]]) -> None:
    stream, anchors = episodes[1]
    hands = [a for a in anchors if a.kind.startswith("hand_")]
    assert [(a.kind, a.payload["hand"]) for a in hands] == [
        ("hand_open", "right"),
        ("hand_close", "right"),
        ("hand_open", "right"),
    ]
    close = hands[1]
    assert close.payload["from_value"] > close.payload["to_value"] + 0.3
    assert 0 < close.t < close.t_end < stream.duration
    assert (
        close.payload["joints"][0] == "kRightHandPinky"
        and "kRightHandThumbRotation" not in close.payload["joints"]
    )
    with StreamSource(stream) as source:  # the state really is lower (more closed) after the close anchor
        right = source.column("observation.state")[:, 20:24].mean(axis=1)
        assert right[close.payload["frame_end"]] < right[close.payload["frame"]] - 0.25
    assert all(a.exact and a.source == "proprio" for a in anchors)


def test_every_episode_closes_the_right_hand_and_never_the_left(
    episodes: dict[int, tuple[Stream, list[Anchor]]],
) -> None:
    for _, anchors in episodes.values():
        kinds = [(a.kind, a.payload.get("hand")) for a in anchors]
        assert ("hand_close", "right") in kinds
        assert all(hand != "left" for _, hand in kinds)


def test_stalls_and_segments_tile_the_episode(episodes: dict[int, tuple[Stream, list[Anchor]]]) -> None:
    for stream, anchors in episodes.values():
        spans = sorted(
            (a.payload["frame"], a.payload["frame_end"]) for a in anchors if a.kind in ("stall", "segment")
        )
        assert spans[0][0] == 0 and spans[-1][1] == stream.frame_count - 1
        assert all(b[0] == a[1] or b[0] == a[1] + 1 for a, b in itertools.pairwise(spans))
        for stall in (a for a in anchors if a.kind == "stall"):
            assert stall.t_end - stall.t >= 0.4 - 1e-6


def test_zigzag_ignores_jitter() -> None:
    t = np.linspace(0, 1, 200)
    flat = 0.5 + 0.02 * np.sin(t * 60)
    assert zigzag(flat, 0.15) == [0]
    step = np.concatenate(
        [np.full(50, 0.9), np.linspace(0.9, 0.2, 20), np.full(50, 0.2), np.linspace(0.2, 0.8, 20)]
    )
    pivots = zigzag(step + 0.01 * np.sin(np.arange(len(step))), 0.15)
    assert len(pivots) == 3 and step[pivots[1]] == pytest.approx(0.2, abs=0.02)


def test_hand_groups_by_side() -> None:
    names = ["l_shoulder", "kLeftHandIndex", "kLeftHandThumbRotation", "kRightHandIndex", "gripper"]
    assert hand_groups(names) == {"left": [1], "right": [3], "hand": [4]}


def test_action_is_used_when_no_state_is_logged(episodes: dict[int, tuple[Stream, list[Anchor]]]) -> None:
    stream, _ = episodes[1]
    action_only = stream.model_copy(update={"metadata": {**stream.metadata, "has_state": False}})
    extractor = get_extractor("proprio")
    assert extractor.applies_to(action_only)
    with StreamSource(action_only) as source:
        anchors = extractor.extract(action_only, source)
    assert ("hand_close", "right") in [(a.kind, a.payload.get("hand")) for a in anchors]
    none = stream.model_copy(
        update={"metadata": {**stream.metadata, "has_state": False, "has_action": False}}
    )
    assert not extractor.applies_to(none)
