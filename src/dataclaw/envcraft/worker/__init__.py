"""The env worker: environment packages dataclaw did not write run in one warm sandbox per package.

``open_environment(ref)`` is the single entry point: built-in archetypes in-process (the fast path),
everything else through a sandboxed worker spoken to over a small JSON protocol on a Unix socket, the
package imported only there. See ``docs/envcraft.md`` ("Env worker").
"""

from dataclaw.envcraft.worker.client import EnvWorker, Incident, WorkerError, WorkerOptions
from dataclaw.envcraft.worker.handle import (
    EnvHandle,
    EnvSession,
    configure_workers,
    env_class,
    is_builtin,
    locate_package,
    open_environment,
    persistent_env,
)
from dataclaw.envcraft.worker.remote import RemoteEnvironment

__all__ = [
    "EnvHandle",
    "EnvSession",
    "EnvWorker",
    "Incident",
    "RemoteEnvironment",
    "WorkerError",
    "WorkerOptions",
    "configure_workers",
    "env_class",
    "is_builtin",
    "locate_package",
    "open_environment",
    "persistent_env",
]
