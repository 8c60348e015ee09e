"""Run untrusted code: bubblewrap, rlimits, timeouts, classified outcomes.

``run(program, workspace, limits, timeout, env=…) -> Outcome`` runs Python source or an argv list with no
network, a read-only system, a private /tmp and only the workspace (plus granted paths) writable.
``WarmWorker`` keeps one sandboxed Python process alive to serve many short jobs. Without bubblewrap every
run is refused unless the caller sets ``SandboxPolicy(unsafe=True)`` (the CLI's ``--unsafe-no-sandbox``).
"""

from dataclaw.sandbox import bwrap
from dataclaw.sandbox.bwrap import REFUSAL, Availability, sandbox_available
from dataclaw.sandbox.runner import OneShotRuntime, run
from dataclaw.sandbox.types import (
    UNSAFE_FLAG,
    Limits,
    Outcome,
    Runtime,
    SandboxError,
    SandboxPolicy,
    SandboxUnavailable,
    Status,
)
from dataclaw.sandbox.worker import WarmWorker

__all__ = [
    "REFUSAL",
    "UNSAFE_FLAG",
    "Availability",
    "Limits",
    "OneShotRuntime",
    "Outcome",
    "Runtime",
    "SandboxError",
    "SandboxPolicy",
    "SandboxUnavailable",
    "Status",
    "WarmWorker",
    "bwrap",
    "run",
    "sandbox_available",
]
