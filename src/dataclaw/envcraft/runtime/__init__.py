"""The environment contract every EnvCraft environment obeys, written once (EnvCraft C.1, C.3, C.4).

An environment package supplies domain logic only — ``@tool`` functions over a session dict, a
``DEFAULT_STATE``, an :class:`Evaluator` and scenarios; this package supplies sessions, storage, locks,
the deterministic clock, the action log, agent-safe errors, the CLI and the contract test-suite.
See README.md beside this file.
"""

from dataclaw.envcraft.runtime.environment import Environment, Scenario
from dataclaw.envcraft.runtime.errors import (
    EnvError,
    ErrorCategory,
    echo,
    invalid_argument,
    invalid_reference,
    invalid_transition,
    missing_field,
    permission_denied,
    stale_warning,
)
from dataclaw.envcraft.runtime.evaluation import Evaluator, failed_actions, penalty_score, warned_actions
from dataclaw.envcraft.runtime.loader import EnvPackage, load_env_package
from dataclaw.envcraft.runtime.state import jsoncopy, now, state_hash
from dataclaw.envcraft.runtime.store import SessionStore
from dataclaw.envcraft.runtime.tools import ToolSet, ToolSpec, tool

__all__ = [
    "EnvError",
    "EnvPackage",
    "Environment",
    "ErrorCategory",
    "Evaluator",
    "Scenario",
    "SessionStore",
    "ToolSet",
    "ToolSpec",
    "echo",
    "failed_actions",
    "invalid_argument",
    "invalid_reference",
    "invalid_transition",
    "jsoncopy",
    "load_env_package",
    "missing_field",
    "now",
    "penalty_score",
    "permission_denied",
    "stale_warning",
    "state_hash",
    "tool",
    "warned_actions",
]
