"""Stages (records in → records out) and the executors that run them, resumably."""

from dataclaw.pipeline.runner import StageStats, run_stage
from dataclaw.pipeline.stage import Resources, Result, Stage

__all__ = ["Resources", "Result", "Stage", "StageStats", "run_stage"]
