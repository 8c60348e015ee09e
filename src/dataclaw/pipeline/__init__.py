"""Stages (records in → records out) and the executors that run them, resumably."""

from dataclaw.core.moved import keep_old_paths
from dataclaw.pipeline.runner import StageStats, run_stage
from dataclaw.pipeline.stage import Resources, Result, Stage

keep_old_paths({"dataclaw.pipeline.ray_executor": "dataclaw.pipeline.executors.ray"})

__all__ = ["Resources", "Result", "Stage", "StageStats", "run_stage"]
