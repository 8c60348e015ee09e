"""Value types of the sandbox: limits, policy, outcome, status codes and the ``Runtime`` contract.

Plain dataclasses on purpose: this module is imported by every caller of the sandbox and must stay light.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError, DataclawError

#: The command-line flag that maps to ``SandboxPolicy(unsafe=True)``; CLIs should spell it exactly so.
UNSAFE_FLAG = "--unsafe-no-sandbox"


class Status(StrEnum):
    """How a sandboxed run ended. ``violation`` means the program tried something the sandbox blocks."""

    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    RESOURCE_LIMIT = "resource_limit"
    VIOLATION = "violation"


class SandboxError(DataclawError):
    """The sandbox itself could not run (missing bubblewrap, bad policy, setup failure) — not the program."""


class SandboxUnavailable(SandboxError):
    """Bubblewrap is missing or unusable and the caller did not opt into unsafe mode."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run. Sizes in MB (2**20 bytes); ``wall_s`` kills the whole process tree."""

    cpu_s: float = 30.0
    """CPU seconds (RLIMIT_CPU); the program gets SIGXCPU, then SIGKILL one second later."""
    memory_mb: int = 2048
    """Address space per process (RLIMIT_AS)."""
    file_size_mb: int = 256
    """Largest file the program may write (RLIMIT_FSIZE)."""
    open_files: int = 256
    """Open file descriptors per process (RLIMIT_NOFILE)."""
    processes: int = 64
    """Processes and threads of the sandbox user (RLIMIT_NPROC, counted per sandbox)."""
    wall_s: float = 60.0
    """Wall-clock timeout for the whole run."""
    output_bytes: int = 1_000_000
    """Bytes kept of stdout and of stderr each; the rest is dropped and ``Outcome.truncated`` is set."""
    tmp_mb: int = 256
    """Size of each private, memory-backed dir (/tmp and /dev/shm)."""
    disk_mb: int = 256
    """Disk quota of the workspace: how much it may grow during one run (or one warm-worker job). The
    supervisor measures the workspace while the program runs; past the quota the process tree is killed
    and the outcome is ``resource_limit`` (resource ``disk``)."""
    stdlib_only: bool = False
    """Run Python programs with the base interpreter, isolated (``-I -S``): the standard library only —
    no virtualenv, no site-packages, no dataclaw on the path or mounted. For untrusted task code that
    promises to use the standard library only (EnvCraft C.6): a third-party import fails with
    ``ModuleNotFoundError`` (``Outcome.module`` names it)."""

    def __post_init__(self) -> None:
        for name in (
            "cpu_s",
            "memory_mb",
            "file_size_mb",
            "open_files",
            "processes",
            "wall_s",
            "output_bytes",
            "tmp_mb",
            "disk_mb",
        ):
            if getattr(self, name) <= 0:
                raise ConfigError(f"sandbox Limits.{name} must be positive, got {getattr(self, name)!r}")


@dataclass(frozen=True)
class SandboxPolicy:
    """What a sandboxed program may see besides its workspace (system dirs and Python: always, read-only)."""

    ro_paths: tuple[Path, ...] = ()
    """Extra host paths mounted read-only at the same path."""
    rw_paths: tuple[Path, ...] = ()
    """Extra host paths mounted writable at the same path (use sparingly)."""
    workspace_mount: str = "/workspace"
    """Where the workspace appears inside the sandbox (a fixed path keeps outputs free of host paths)."""
    python: Path | None = None
    """Interpreter for Python sources; default: the running interpreter (its venv and prefix are mounted)."""
    uid: int | None = None
    """Host uid the program runs as when the caller is root; default: a fresh unprivileged uid per run."""
    unsafe: bool = False
    """Run without bubblewrap (rlimits and timeout only). Never for untrusted code; logged loudly."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "ro_paths", tuple(Path(p) for p in self.ro_paths))
        object.__setattr__(self, "rw_paths", tuple(Path(p) for p in self.rw_paths))
        for p in (*self.ro_paths, *self.rw_paths):
            if not p.is_absolute():
                raise ConfigError(f"sandbox granted path {str(p)!r} must be absolute")
        if not self.workspace_mount.startswith("/") or self.workspace_mount in ("/", "/tmp"):
            raise ConfigError(f"sandbox workspace_mount {self.workspace_mount!r} must be an absolute subdir")
        if self.uid is not None and not 0 < self.uid < 2**32 - 1:
            raise ConfigError(f"sandbox uid {self.uid!r} must be a non-root uid")


@dataclass
class Outcome:
    """The result of one sandboxed run. ``message`` is short and agent-safe (no paths, no tracebacks)."""

    status: Status
    exit_code: int | None
    stdout: str
    stderr: str
    duration_s: float
    message: str
    truncated: bool = False
    resource: str | None = None
    """For ``resource_limit``/``violation``: which one (``memory``, ``cpu``, ``network``, ``filesystem``…)."""
    sandboxed: bool = True
    """False only in explicit unsafe mode."""
    result: Any = None
    """For warm-worker ``call`` jobs: the JSON value the function returned."""
    module: str | None = None
    """When the program died of an uncaught ``ImportError``: the module it could not import."""

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": str(self.status),
            "exit_code": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "duration_s": self.duration_s,
            "message": self.message,
            "truncated": self.truncated,
            "resource": self.resource,
            "sandboxed": self.sandboxed,
            "result": self.result,
            "module": self.module,
        }


class Runtime(abc.ABC):
    """Something that runs untrusted programs and holds resources until ``cleanup()`` (idempotent)."""

    @abc.abstractmethod
    def run(
        self,
        program: str | list[str],
        *,
        args: Sequence[str] = (),
        timeout: float | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        limits: Limits | None = None,
    ) -> Outcome:
        """Run one program (Python source, or an argv list where supported) and classify how it ended."""

    @abc.abstractmethod
    def cleanup(self) -> None:
        """Release every process and file this runtime holds; safe to call more than once."""

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()
