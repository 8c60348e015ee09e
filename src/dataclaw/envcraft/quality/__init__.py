"""Task quality (EnvCraft §4.3, D.6): the LLM rubric with the strict gate, difficulty calibration with k
rollouts keeping 0 < p < 1, and verifier repair (verifier failures are data defects, not agent failures)."""

from dataclaw.envcraft.quality.calibrate import (
    MAX_REPAIRS,
    Calibration,
    CalibrationConfig,
    CalibrationVerdict,
    RepairResult,
    audit_verifier,
    calibrate_task,
    judge,
    repair_verifier,
)
from dataclaw.envcraft.quality.rubric import (
    DIMENSIONS,
    RUBRIC_SCHEMA,
    RubricVerdict,
    gate,
    inspect_task,
    task_material,
)

__all__ = [
    "DIMENSIONS",
    "MAX_REPAIRS",
    "RUBRIC_SCHEMA",
    "Calibration",
    "CalibrationConfig",
    "CalibrationVerdict",
    "RepairResult",
    "RubricVerdict",
    "audit_verifier",
    "calibrate_task",
    "gate",
    "inspect_task",
    "judge",
    "repair_verifier",
    "task_material",
]
