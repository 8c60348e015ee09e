"""Candidate mining (paper A.3 step 1): the miner registry and base in :mod:`.base`, one module per family
of miners (robot, video, gui, lecture), and the mine stage in :mod:`.stage`."""

from dataclaw.tailor.mining.base import (
    MINERS,
    Miner,
    StreamView,
    anchors_between,
    get_miner,
    has_video,
    mine_stream,
    miner_names,
    register_miner,
    spread,
)
from dataclaw.tailor.mining.robot import GRASP_KINDS, ROBOT, FaultWindows, Keyframes
from dataclaw.tailor.mining.video import DynamicSegments
from dataclaw.tailor.records import Candidate, CandidateKind, FrameRange

__all__ = [
    "GRASP_KINDS",
    "MINERS",
    "ROBOT",
    "Candidate",
    "CandidateKind",
    "DynamicSegments",
    "FaultWindows",
    "FrameRange",
    "Keyframes",
    "Miner",
    "StreamView",
    "anchors_between",
    "get_miner",
    "has_video",
    "mine_stream",
    "miner_names",
    "register_miner",
    "spread",
]
