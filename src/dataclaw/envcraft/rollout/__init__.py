"""Rollouts (EnvCraft D.3/D.4): an agent loop over any OpenAI-compatible tool-calling model, task harnesses
(tool tasks: environment tools + JSON verifier; claw tasks: sandboxed workspace tools + verify_workplace.py),
named boundary errors, trajectories as JSONL, and a simulated user (an LLM playing the task's user)."""

from dataclaw.envcraft.rollout.claw_tools import CLAW_TOOL_NAMES, ClawErrorKind, ClawTools, ToolResult
from dataclaw.envcraft.rollout.errors import (
    Boundary,
    ModelCallError,
    RolloutError,
    RolloutTimeout,
    SetupError,
    ToolInfraError,
    VerifierError,
    boundary,
)
from dataclaw.envcraft.rollout.harness import ClawTaskHarness, Harness, Score, ToolTaskHarness, harness_for
from dataclaw.envcraft.rollout.loop import (
    DEFAULT_MAX_TOKENS,
    METRIC_KEYS,
    STOP_CONTEXT_OVERFLOW,
    ContextOverflow,
    RolloutConfig,
    Step,
    Trajectory,
    run_rollout,
    run_rollouts,
)
from dataclaw.envcraft.rollout.user_sim import SimulatedUser, UserConfig, UserScenario, scenario_of

__all__ = [
    "CLAW_TOOL_NAMES",
    "DEFAULT_MAX_TOKENS",
    "METRIC_KEYS",
    "STOP_CONTEXT_OVERFLOW",
    "Boundary",
    "ClawErrorKind",
    "ClawTaskHarness",
    "ClawTools",
    "ContextOverflow",
    "Harness",
    "ModelCallError",
    "RolloutConfig",
    "RolloutError",
    "RolloutTimeout",
    "Score",
    "SetupError",
    "SimulatedUser",
    "Step",
    "ToolInfraError",
    "ToolResult",
    "ToolTaskHarness",
    "Trajectory",
    "UserConfig",
    "UserScenario",
    "VerifierError",
    "boundary",
    "harness_for",
    "run_rollout",
    "run_rollouts",
    "scenario_of",
]
