"""``open_environment(ref)``: the one way dataclaw opens an environment package.

A built-in archetype (dataclaw's own code) runs in-process, the fast path. Every other package —
synthesised, imported, a user's folder, an importable module that is not ours — runs in a sandboxed env
worker (:mod:`.client`), one per package folder, shared by every caller in the process and stopped at exit;
the package is never imported here. Either way the caller gets an :class:`EnvHandle` whose ``env_cls``
has the surface of an ``Environment`` class, so code written for one works with both.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dataclaw.envcraft.worker.client import EnvWorker, WorkerError, WorkerOptions
from dataclaw.envcraft.worker.protocol import Op
from dataclaw.envcraft.worker.remote import RemoteEnvironment, remote_env_class

if TYPE_CHECKING:
    from dataclaw.envcraft.runtime.resolve import EnvRef


@dataclass
class EnvSession:
    """One session of an opened environment: tool calls, state, evaluation."""

    env: Any
    id: str

    def call(self, tool: str, /, **params: Any) -> dict[str, Any]:
        return dict(self.env.call(self.id, tool, **params))

    def state(self) -> dict[str, Any]:
        return dict(self.env.get_session_state(self.id))

    def restore(self, state: dict[str, Any]) -> None:
        self.env.session_id = self.id
        self.env.restore_env_state(state)

    def reset(self) -> None:
        self.env.reset_session(self.id)

    def evaluate(self) -> dict[str, Any]:
        return dict(self.env.evaluate_session(self.id))

    def close(self) -> None:
        self.env.delete_session(self.id)


@dataclass
class EnvHandle:
    """An opened environment package: ``env_cls`` (the class, or its worker stand-in), where it came from,
    and whether it runs in-process (``builtin``) or in a sandboxed worker."""

    name: str
    env_cls: Any
    ref: str
    """What reloads it: the archetype's import name, or the package folder."""
    folder: Path
    builtin: bool
    worker: EnvWorker | None = None

    @property
    def module(self) -> str:
        return self.ref

    def tools(self, fmt: str = "unified") -> list[dict[str, Any]]:
        """Tool schemas (EnvCraft C.3 unified, with ``side_effect``/``state_fields_affected``, or openai)."""
        return (
            self.env_cls.tools.unified_schemas() if fmt == "unified" else self.env_cls.tools.openai_schemas()
        )

    def side_effects(self) -> dict[str, str]:
        return {s.name: s.side_effect for s in self.env_cls.tools}

    def scenarios(self) -> dict[str, Any]:
        return dict(self.env_cls.scenarios())

    def layout_problems(self) -> list[str]:
        if self.builtin:
            from dataclaw.envcraft.runtime import load_env_package

            return load_env_package(self.env_cls).layout_problems()
        return list(self.env_cls.layout)

    def session(
        self,
        scenario_id: str,
        *,
        session_id: str | None = None,
        state_root: str | Path | None = None,
        long_context: bool = False,
        initial_state: dict[str, Any] | None = None,
    ) -> EnvSession:
        """A new session from a scenario (restored to ``initial_state`` when given: a task's S0)."""
        env = self.env_cls(state_root) if state_root is not None or not self.builtin else self.env_cls()
        sid = env.create_session(scenario_id, session_id, long_context=long_context)
        session = EnvSession(env, sid)
        if initial_state is not None:
            session.restore(initial_state)
        return session

    def close(self) -> None:
        """Stop the worker (a no-op in-process); later calls on it fail."""
        if self.worker is not None:
            _REGISTRY.close(self.worker.folder)


@contextlib.contextmanager
def persistent_env(env_cls: Any, root: Path) -> Iterator[Any]:
    """An environment instance whose sessions live in the host folder ``root`` across runs. In-process
    that is ``env_cls(root)``; for a worker's package the folder is copied into the worker's workspace
    first and back at the end (the sandbox can write nowhere else)."""
    if not getattr(env_cls, "remote", False):
        yield env_cls(root)
        return
    key = hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:20]
    env_cls.worker.import_state(key, root)
    try:
        yield env_cls(root, key=key)
    finally:
        env_cls.worker.export_state(key, root)


class _Registry:
    """One env worker per package folder (and content), shared by every caller; all closed at exit."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.workers: dict[Path, tuple[str, EnvWorker, type[RemoteEnvironment]]] = {}
        self.default: WorkerOptions | None = None
        atexit.register(self.close_all)

    def get(self, folder: Path, options: WorkerOptions | None) -> tuple[EnvWorker, type[RemoteEnvironment]]:
        stamp = _fingerprint(folder)
        with self.lock:
            found = self.workers.get(folder)
            if found is not None and found[0] == stamp and not found[1]._closed:
                return found[1], found[2]
            if found is not None:  # the folder changed since: its old worker serves an old package
                found[1].close()
            worker = EnvWorker(folder, options or self.default)
            try:
                desc = worker.request(Op.DESCRIBE)
            except BaseException:
                worker.close()
                raise
            cls = remote_env_class(worker, desc)
            worker.description = desc
            self.workers[folder] = (stamp, worker, cls)
            return worker, cls

    def close(self, folder: Path) -> None:
        with self.lock:
            found = self.workers.pop(folder, None)
        if found is not None:
            found[1].close()

    def close_all(self) -> None:
        with self.lock:
            found, self.workers = list(self.workers.values()), {}
        for _, worker, _ in found:
            worker.close()


_REGISTRY = _Registry()


def _fingerprint(folder: Path) -> str:
    """Cheap content stamp of a package folder: file count, total size and newest mtime."""
    n = size = newest = 0
    for p in folder.rglob("*"):
        if "__pycache__" in p.parts or not p.is_file():
            continue
        st = p.stat()
        n, size, newest = n + 1, size + st.st_size, max(newest, st.st_mtime_ns)
    return f"{n}:{size}:{newest}"


def locate_package(ref: str | Path) -> Path:
    """The folder of a package given as a folder or an import name, found WITHOUT importing anything
    (importing it, or a parent package, would run its code here)."""
    from dataclaw.envcraft.runtime.resolve import resolve_env

    return resolve_env(ref).folder


def is_builtin(ref: str | Path) -> bool:
    """Whether ``ref`` names a built-in archetype (dataclaw's own code: the in-process fast path)."""
    from dataclaw.envcraft.runtime.resolve import archetype_name

    return archetype_name(ref) is not None


def configure_workers(options: WorkerOptions | None) -> WorkerOptions | None:
    """Limits for env workers started from now on by callers that pass none (a CLI's ``--timeout``);
    returns the previous setting. ``None`` goes back to the defaults."""
    previous, _REGISTRY.default = _REGISTRY.default, options
    return previous


def open_environment(ref: str | Path | EnvRef, options: WorkerOptions | None = None) -> EnvHandle:
    """Open an environment: archetype name or import name, or a package folder (or what
    :func:`~dataclaw.envcraft.runtime.resolve.resolve_env` made of one). Built-in archetypes run
    in-process; any other package runs in its sandboxed env worker (started on first use, shared)."""
    from dataclaw.envcraft.runtime.resolve import EnvRef, resolve_env

    env = ref if isinstance(ref, EnvRef) else resolve_env(ref)
    if env.archetype is not None:
        from dataclaw.envcraft import archetypes

        pkg = archetypes.get(env.archetype)
        return EnvHandle(pkg.name, pkg.env_cls, pkg.module, pkg.path, True)
    worker, cls = _REGISTRY.get(env.folder, options)
    return EnvHandle(cls.name, cls, str(env.folder), env.folder, False, worker)


def env_class(ref: str | Path | EnvRef, options: WorkerOptions | None = None) -> Any:
    """``open_environment(ref).env_cls``: what code that takes an environment class wants."""
    return open_environment(ref, options).env_cls


__all__ = [
    "EnvHandle",
    "EnvSession",
    "WorkerError",
    "configure_workers",
    "env_class",
    "is_builtin",
    "locate_package",
    "open_environment",
    "persistent_env",
]
