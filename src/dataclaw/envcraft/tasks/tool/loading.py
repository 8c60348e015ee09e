"""The Environment class a chain, a grounded record or a task runs in: an archetype's own class in-process,
any other package's stand-in whose code runs in its sandboxed env worker, or a group of several
(:mod:`.composite`). Kept apart from the stages so the quality checks can load a task's environment without
importing the pipeline that made it."""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft.runtime.task import ToolTask
from dataclaw.envcraft.tasks.tool.composite import env_group
from dataclaw.pipeline.stage import Record


def load_env(env: str, module: str | None = None) -> Any:
    """The Environment class of an archetype name, an import name or a package folder: the archetype's own
    class in-process, any other package's stand-in whose code runs in its sandboxed env worker."""
    from dataclaw.envcraft import archetypes
    from dataclaw.envcraft.runtime.resolve import resolve_env
    from dataclaw.envcraft.worker import env_class

    ref = resolve_env(env, module)
    return archetypes.get(ref.archetype).env_cls if ref.archetype else env_class(ref)


def task_env(envs: list[str], modules: dict[str, str] | None = None) -> Any:
    """The Environment class a chain or task runs in: one environment, or a group of several."""
    modules = modules or {}
    if len(envs) == 1:
        return load_env(envs[0], modules.get(envs[0]))
    return env_group(tuple((e, load_env(e, modules.get(e))) for e in envs))


def record_env(record: Record | ToolTask) -> Any:
    """:func:`task_env` of a grounded chain record or a task (``env``/``env_module`` or ``envs``)."""
    if isinstance(record, ToolTask):
        if len(record.member_envs) > 1:
            return task_env(record.member_envs, record.env_modules)
        return load_env(record.env, record.env_module)
    if record.get("envs") and len(record["envs"]) > 1:
        return task_env(list(record["envs"]), record.get("env_modules"))
    return load_env(record["env"], record.get("env_module"))
