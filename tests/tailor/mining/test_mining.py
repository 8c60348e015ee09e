"""Candidate mining: robot fault windows and keyframes (defaults of paper A.3.1), dynamic segments."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataclaw.core.errors import ConfigError
from dataclaw.tailor.anchors.base import make_anchor
from dataclaw.tailor.mining.base import (
    MINERS,
    Miner,
    StreamView,
    get_miner,
    mine_stream,
    miner_names,
    register_miner,
    spread,
)
from dataclaw.tailor.mining.robot import FaultWindows, Keyframes
from dataclaw.tailor.mining.video import DynamicSegments
from dataclaw.tailor.records import CandidateKind

SID = "stream:ep-00000000"


def robot(n: int = 393, fps: float = 30.0) -> StreamView:
    return StreamView(id=SID, modality="robot", fps=fps, frame_count=n, duration=n / fps, camera="cam_high")


def test_fault_window_defaults_match_the_paper() -> None:
    miner = get_miner("fault_window")
    assert isinstance(miner, FaultWindows)
    assert miner.fractions == (0.35, 0.5, 0.65)
    assert (miner.observation_frames, miner.future_frames) == (8, 4)
    assert get_miner("keyframes").k == 20  # type: ignore[attr-defined]


def test_fault_windows_lie_inside_the_stream() -> None:
    stream = robot()
    cands = FaultWindows().mine(stream, [])
    assert [c.payload["anchor_fraction"] for c in cands] == [0.35, 0.5, 0.65]
    for c in cands:
        assert c.kind is CandidateKind.FAULT_WINDOW and c.stream_id == SID
        obs, fut = c.observation, c.future
        assert obs is not None and fut is not None
        a = c.payload["anchor_frame"]
        assert a == round(c.payload["anchor_fraction"] * 392)
        assert 0 <= obs.start <= obs.end == a < fut.start == a + 1 <= fut.end <= 392
        assert obs.length == 90 and fut.length == 90  # 3 s each at 30 fps
        assert len(c.observation_frames) == 8 and len(c.future_frames) == 4
        assert all(obs.contains(f) for f in c.observation_frames)
        assert all(fut.contains(f) for f in c.future_frames)
        assert c.observation_frames == sorted(set(c.observation_frames))
        assert obs.t_start == pytest.approx(obs.start / 30) and fut.t_end == pytest.approx(fut.end / 30)
        assert c.why.startswith(f"anchor at {c.payload['anchor_fraction']:.0%}")


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=5000),
    fps=st.sampled_from([1.0, 10.0, 15.0, 29.97, 30.0, 60.0]),
    fractions=st.lists(st.floats(0.01, 0.99), min_size=1, max_size=5),
    obs_s=st.floats(0.1, 10.0),
    fut_s=st.floats(0.1, 10.0),
)
def test_fault_windows_never_leave_the_stream(
    n: int, fps: float, fractions: list[float], obs_s: float, fut_s: float
) -> None:
    miner = FaultWindows(fractions=fractions, observation_s=obs_s, future_s=fut_s)
    for c in miner.mine(robot(n, fps), []):
        assert c.observation is not None and c.future is not None
        assert 0 <= c.observation.start <= c.observation.end < c.future.start <= c.future.end <= n - 1
        assert len(c.observation_frames) == 8 and len(c.future_frames) == 4
        frames = c.observation_frames + c.future_frames
        assert all(0 <= f < n for f in frames) and frames == sorted(set(frames))


def test_too_short_episode_gives_no_windows() -> None:
    assert FaultWindows().mine(robot(n=10), []) == []


def test_windows_record_the_anchors_inside_them() -> None:
    stream = robot()
    inside = make_anchor(SID, 6.0, "hand_close", "proprio", {"frame": 180})
    outside = make_anchor(SID, 12.5, "hand_open", "proprio", {"frame": 375})
    (c50,) = [
        c
        for c in FaultWindows(use_grasps=False).mine(stream, [inside, outside])
        if c.payload["anchor_fraction"] == 0.5
    ]
    assert c50.anchor_ids == [inside.id]
    assert "1 hand_close in the window" in c50.why


def test_keyframes_uniform() -> None:
    (c,) = Keyframes().mine(robot(), [])
    assert c.kind is CandidateKind.KEYFRAMES and len(c.frames) == 20
    assert c.frames == sorted(set(c.frames)) and 0 <= c.frames[0] and c.frames[-1] <= 392
    gaps = {b - a for a, b in zip(c.frames, c.frames[1:], strict=False)}
    assert max(gaps) - min(gaps) <= 1
    (short,) = Keyframes(k=20).mine(robot(n=7), [])
    assert short.frames == list(range(7))


def test_spread() -> None:
    assert spread(0, 9, 5) == [1, 3, 5, 7, 9]
    assert spread(5, 7, 10) == [5, 6, 7]
    assert spread(3, 2, 4) == []


def test_ids_are_deterministic_and_lineage() -> None:
    a = FaultWindows().mine(robot(), [])
    b = FaultWindows().mine(robot(), [])
    assert [c.id for c in a] == [c.id for c in b]
    assert len({c.id for c in a}) == 3 and all(c.id.startswith(SID + "/cand-fault-") for c in a)


def test_bad_config_and_registry() -> None:
    with pytest.raises(ConfigError, match="fractions"):
        FaultWindows(fractions=(0.0, 1.2))
    with pytest.raises(ConfigError, match="unknown miner"):
        get_miner("nope")
    assert {"fault_window", "keyframes", "gui_task", "dynamic_segment", "lecture_segment"} <= set(
        miner_names()
    )

    class Dup(Miner):
        name = "keyframes"
        kind = CandidateKind.KEYFRAMES

        def applies_to(self, stream: StreamView) -> bool:
            return False

        def mine(self, stream: StreamView, anchors: list) -> list:
            return []

    with pytest.raises(ConfigError, match="already registered"):
        register_miner(Dup)


def _video(n: int = 240, fps: float = 24.0) -> StreamView:
    return StreamView(id="stream:v-00000000", modality="video", fps=fps, frame_count=n, duration=n / fps)


def _motion(t: float, energy: float) -> object:
    return make_anchor(
        "stream:v-00000000", t, "motion", "motion", {"energy": energy, "peak": energy}, t_end=t + 1
    )


def test_dynamic_segments_keep_moving_shots() -> None:
    vid = _video()
    shots = [
        make_anchor(vid.id, 0.0, "shot", "shots", {"index": 0}, confidence=0.9, t_end=4.0),
        make_anchor(vid.id, 4.0, "shot", "shots", {"index": 1}, confidence=0.8, t_end=10.0),
    ]
    motion = [_motion(t, 0.001 if t < 4 else 0.05) for t in range(10)]
    cands = DynamicSegments().mine(vid, [*shots, *motion])
    assert len(cands) == 1
    (c,) = cands
    assert c.kind is CandidateKind.DYNAMIC_SEGMENT and c.span is not None
    assert c.span.start == 96 and c.span.end == 239 and c.t_start == pytest.approx(4.0)
    assert shots[1].id in c.anchor_ids and shots[0].id not in c.anchor_ids
    assert c.payload["motion_energy"] == pytest.approx(0.05) and len(c.frames) == 8
    assert all(c.span.contains(f) for f in c.frames)
    assert "shot 1" in c.why


def test_dynamic_segments_split_long_shots_and_need_motion() -> None:
    vid = _video(n=24 * 25)
    motion = [_motion(t, 0.03) for t in range(25)]
    cands = DynamicSegments(max_s=10.0).mine(vid, motion)  # no shot anchors: the whole video is one shot
    assert len(cands) == 3 and all(c.t_end - c.t_start <= 10.0 + 1e-6 for c in cands)  # type: ignore[operator]
    assert DynamicSegments().mine(vid, []) == []  # no motion anchors, nothing to judge by


def test_mine_stream_runs_what_applies() -> None:
    kinds = sorted(c.kind for c in mine_stream(robot(), []))
    assert kinds == ["fault_window"] * 3 + ["keyframes"]
    assert mine_stream(StreamView(id="stream:x-0", modality="images"), []) == []


@pytest.mark.parametrize("root", ["examples", "shared"])
def test_fault_windows_land_on_the_approach_before_each_grasp(root: str, shared_data: Path) -> None:
    """Real G1 episodes with their proprioception anchors: every window's observation range ends
    before the hand starts to close, and its future range holds the grasp."""
    from dataclaw.tailor.anchors import get_extractor
    from dataclaw.tailor.mining.stage import stream_view
    from dataclaw.tailor.streams import Stream, StreamSource, open_source

    folder = Path(__file__).resolve().parents[3] / "examples" if root == "examples" else shared_data
    streams = [s for s in open_source(folder / "lerobot_g1") if isinstance(s, Stream)]
    assert streams
    miner = get_miner("fault_window")
    for stream in streams:
        with StreamSource(stream) as source:
            anchors = get_extractor("proprio").extract(stream, source)
        grasps = sorted(a.payload["frame"] for a in anchors if a.kind == "hand_close")
        assert grasps, "the G1 episodes all grasp the bottle"
        cands = miner.mine(stream_view(stream), anchors)
        assert len(cands) == len(miner.grasps(stream_view(stream), anchors)) >= 1
        for c in cands:
            g = c.payload["grasp_frame"]
            assert c.payload["anchor"] == "grasp" and g in grasps
            assert c.observation.end < g <= c.future.end, (c.observation, g, c.future)
            assert c.observation.start >= c.payload["approach_start"] or c.observation.length < 90
            assert all(f < g for f in c.observation_frames) and "approach before grasp" in c.why
        # without proprioception the paper's fixed fractions are the fallback
        fallback = miner.mine(stream_view(stream), [])
        assert [c.payload["anchor_fraction"] for c in fallback] == [0.35, 0.5, 0.65]


def test_miner_settings_are_part_of_candidate_ids_and_misses_are_explained() -> None:
    view = StreamView(id="stream:v-1", modality="robot", fps=30.0, frame_count=300, duration=10.0)
    a = get_miner("fault_window").mine(view, [])
    b = get_miner("fault_window", observation_s=2.0).mine(view, [])
    assert {c.id for c in a}.isdisjoint(c.id for c in b)
    assert [c.id for c in a] == [c.id for c in get_miner("fault_window").mine(view, [])]
    short = StreamView(id="stream:v-2", modality="robot", fps=30.0, frame_count=5, duration=0.2)
    miner = get_miner("fault_window")
    assert miner.mine(short, []) == []
    assert miner.take_notes() == ["5 frames < observation_frames + future_frames = 12"]
    assert miner.take_notes() == []


UNLISTED = """
from dataclaw.tailor.mining.base import Miner, register_miner
from dataclaw.tailor.records import CandidateKind


@register_miner
class Unlisted(Miner):
    name = "unlisted"
    kind = CandidateKind.KEYFRAMES

    def applies_to(self, stream):
        return False

    def mine(self, stream, anchors):
        return []
"""


def test_a_miner_in_a_new_module_of_the_package_is_found_without_being_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """The built-ins are the public modules of dataclaw.tailor.mining, imported on the registry's first
    lookup: a new module there (here in a folder added to the package's path) is a new miner, and no
    other file names it; a private module (``_name``) is not imported."""
    import dataclaw.tailor.mining as package

    (tmp_path / "unlisted.py").write_text(UNLISTED, encoding="utf-8")
    (tmp_path / "_helpers.py").write_text("raise RuntimeError('imported')\n", encoding="utf-8")
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path)])
    monkeypatch.setattr(MINERS, "_items", dict(MINERS._items))  # its registration ends with the test
    monkeypatch.setattr(MINERS, "_loaded", False)  # the next lookup loads, as in a new process
    request.addfinalizer(lambda: sys.modules.pop("dataclaw.tailor.mining.unlisted", None))
    assert "unlisted" in miner_names()
    assert get_miner("unlisted").kind is CandidateKind.KEYFRAMES
