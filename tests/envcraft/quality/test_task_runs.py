"""The rollout and calibration runs' bookkeeping: configs from command-line values, unloadable tasks,
and what a calibration counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.core.store import RunStore
from dataclaw.envcraft.quality.runs import LoadedTasks
from dataclaw.envcraft.quality.task_runs import (
    CalibrationRun,
    calibration_config,
    require_loaded,
    rollout_config,
)
from dataclaw.envcraft.tasks.claw.workspace import LayoutError, LayoutProblem


def test_bad_config_values_are_one_line_config_errors():
    assert rollout_config(4, 10.0, 64, True, seed=2).strict_tool_calls
    with pytest.raises(ConfigError, match="max_turns"):
        rollout_config(0)
    with pytest.raises(ConfigError, match="top_p"):
        rollout_config(top_p=2.0)
    assert calibration_config(4, 0.5).success_threshold == 0.5
    with pytest.raises(ConfigError, match="k must be at least 1"):
        calibration_config(0)


def test_unloadable_tasks_are_rejects_and_a_run_over_nothing_fails(tmp_path: Path):
    broken = LayoutError("t1", LayoutProblem.MISSING_FILE, "no builder", ["tasks/t1.yaml"])
    seen: list[list[dict]] = []
    with RunStore(tmp_path / "run") as store:
        with pytest.raises(ConfigError, match=r"no task could be loaded from SRC \(missing_file=1"):
            require_loaded(LoadedTasks([], [broken]), store, "rollouts", Path("SRC"), seen.append)
        assert [r["record_id"] for r in store.rejects("rollouts")] == ["t1"]
    assert seen == [[{"id": "t1", "reason": "missing_file", "message": "no builder"}]]


def test_a_calibration_counts_kept_verdicts_unloadable_and_repaired():
    rows = [
        {"verdict": "keep"},
        {"verdict": "too_easy"},
        {"verdict": "defect", "repair": {"ok": True}},
    ]
    done = CalibrationRun(rows, [{"id": "b", "reason": "missing_file", "message": ""}], {})
    assert done.stage_count == (
        "calibration", 4, 1,
        {"too_easy": 1, "defect": 1, "unloadable: missing_file": 1, "repaired (see repaired_tasks.jsonl)": 1},
    )  # fmt: skip
