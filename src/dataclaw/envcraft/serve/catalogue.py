"""What ``dataclaw env serve`` serves: the episodes of one environment, each a task the trainer can
``reset`` into (its S0, its tools, its verifier), independent of the OpenEnv library.

* With ``--tasks``: the tool tasks of a ``tasks.jsonl`` (or a run directory holding one) whose ``env``
  is the served environment — S0 is the task's ``initial_state``, the reward its verifier (binary, D.3).
* Without: the environment's own scenarios — S0 is the scenario, the reward the environment's evaluator
  (``overall_score`` in [0, 1]).

Built-in archetypes (and tasks made from them) run in-process. Any other environment is given as its
package folder and runs in a sandboxed worker per episode (:mod:`.sandboxed`): the server never imports
it. An import name that is not a built-in is refused (a folder is what can be copied into the sandbox).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError
from dataclaw.envcraft.rollout.claw_tools import ToolResult
from dataclaw.envcraft.rollout.errors import SetupError, VerifierError
from dataclaw.envcraft.rollout.harness import (
    TOOL_SYSTEM_PROMPT,
    Harness,
    Score,
    ToolTaskHarness,
    envelope_result,
)
from dataclaw.envcraft.runtime.resolve import EnvKind, EnvRef, UnknownEnvError, resolve_env
from dataclaw.envcraft.runtime.task import ToolTask
from dataclaw.sandbox import SandboxPolicy

FINISH_TOOL = "finish"
FINISH_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": FINISH_TOOL,
        "description": "Call this once the user's request is complete: it ends the episode and the final "
        "state is checked.",
        "parameters": {
            "type": "object",
            "properties": {"summary": {"type": "string", "description": "What was done, in one line."}},
            "additionalProperties": False,
        },
    },
}
SERVE_SYSTEM_PROMPT = (
    TOOL_SYSTEM_PROMPT.removesuffix(
        "When the request is complete, reply to the user in plain text without calling a tool."
    )
    + f"When the request is complete, call {FINISH_TOOL}."
)


class ScenarioHarness(Harness):
    """One scenario of a built-in environment: a fresh session from the scenario, the environment's
    tools, the environment's evaluator as the reward."""

    kind = "scenario"

    def __init__(self, env_cls: Any, scenario_id: str) -> None:
        super().__init__(f"{env_cls.name}:{scenario_id}")
        self.env_cls = env_cls
        self.scenario_id = scenario_id
        self._tmp: str | None = None
        self.env: Any = None
        self.session_id = ""

    def setup(self) -> None:
        try:
            self._tmp = tempfile.mkdtemp(prefix="dataclaw-serve-")
            self.env = self.env_cls(Path(self._tmp))
            self.session_id = self.env.create_session(self.scenario_id)
        except Exception as exc:
            raise SetupError(f"creating a session of scenario {self.scenario_id!r}", exc) from exc

    def tools(self) -> list[dict[str, Any]]:
        return self.env_cls.tools.openai_schemas()

    def system_prompt(self) -> str:
        return TOOL_SYSTEM_PROMPT

    def user_turns(self) -> list[str]:
        return [self.env_cls.scenario(self.scenario_id).task_prompt]

    def execute(self, name: str, args: dict[str, Any]) -> ToolResult:
        return envelope_result(self.env.call(self.session_id, name, **args))

    def score(self) -> Score:
        try:
            result = self.env.evaluate_session(self.session_id)
        except Exception as exc:
            raise VerifierError("evaluating the scenario", exc) from exc
        return Score(float(result["overall_score"]), {"evaluation": result})

    def cleanup(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


@dataclass
class Catalogue:
    """The served environment's episodes, in a fixed order (``reset(seed=s)`` picks ``s mod n``)."""

    env: str
    kind: str
    """``tasks`` (a task file) or ``scenarios`` (the environment's own)."""
    ids: list[str]
    records: dict[str, Any] = field(default_factory=dict)
    """Episode id → its :class:`ToolTask` (``tasks``) or scenario id (``scenarios``)."""
    env_cls: Any = None
    skipped: dict[str, int] = field(default_factory=dict)
    """Tasks of the file that are not this environment's, counted by what they are."""
    package: Path | None = None
    """A package folder served through the sandbox (None: a built-in, in-process)."""
    described: dict[str, Any] = field(default_factory=dict)
    """The sandboxed package's name, scenarios and tools, as read in the sandbox."""
    policy: SandboxPolicy | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def pick(self, task_id: str | None, seed: int | None, index: int | None) -> str:
        """The episode ``reset`` asked for; ValueError with an agent-safe line when there is none."""
        if task_id is not None:
            if task_id not in self.records:
                shown = ", ".join(self.ids[:5]) + (" …" if len(self.ids) > 5 else "")
                raise ValueError(f"unknown task_id {task_id!r}; this server has {len(self)} tasks ({shown})")
            return task_id
        if index is not None:
            if not 0 <= index < len(self):
                raise ValueError(f"task index {index} is out of range (0..{len(self) - 1})")
            return self.ids[index]
        return self.ids[(seed or 0) % len(self)]

    def harness(self, task_id: str) -> Harness:
        if self.package is not None:
            from dataclaw.envcraft.serve.sandboxed import SandboxedHarness

            rec = self.records[task_id]
            task = rec if self.kind == "tasks" else None
            sid = task.scenario_id if task else rec
            prompt = self.described["scenarios"].get(sid, "")
            tools = self.described["tools"]
            return SandboxedHarness(
                self.package, scenario_id=sid, prompt=prompt, tools=tools, task=task, policy=self.policy
            )
        if self.kind == "scenarios":
            return ScenarioHarness(self.env_cls, self.records[task_id])
        return ToolTaskHarness(self.records[task_id])

    def spec(self, task_id: str) -> dict[str, Any]:
        """What the OpenEnv Task API lists for one episode (no verifier, no S0: nothing to copy)."""
        rec = self.records[task_id]
        if self.kind == "scenarios":
            prompt = (
                self.described["scenarios"][rec] if self.package else self.env_cls.scenario(rec).task_prompt
            )
            return {"id": task_id, "index": self.ids.index(task_id), "env": self.env, "prompt": prompt}
        return {"id": task_id, "index": self.ids.index(task_id), "env": self.env, "prompt": rec.turns()[0]}


def _served(part: str) -> EnvRef | None:
    """What ``part`` of an ``env serve`` argument names when it may be served: a built-in archetype or a
    package folder (None for an import name or nothing: those are refused; a folder that is not a package
    is its own error)."""
    try:
        ref = resolve_env(part)
    except UnknownEnvError:
        if Path(part).is_dir():
            raise
        return None
    return None if ref.kind is EnvKind.MODULE else ref


def _refuse_unsandboxed(env: str) -> ConfigError:
    from dataclaw.envcraft import archetypes

    return ConfigError(
        f"{env!r} is not a built-in archetype ({', '.join(archetypes.names())}); any other environment "
        "runs in the sandbox and is given as its package folder (a path), never imported by name"
    )


def load_catalogue(
    env: str, tasks: Path | None = None, limit: int | None = None, *, policy: SandboxPolicy | None = None
) -> Catalogue:
    """The episodes of ``env``: an archetype name (``a+b`` for cross-environment tasks), or the folder
    of any other environment package (served through the sandbox under ``policy``)."""
    from dataclaw.envcraft import archetypes

    refs = [_served(p) for p in env.split("+")]
    if len(refs) == 1 and refs[0] is not None and refs[0].kind is EnvKind.FOLDER:
        return _sandboxed_catalogue(refs[0].folder, tasks, limit, policy)
    parts = [r.archetype for r in refs if r is not None and r.archetype]
    if len(parts) != len(refs):
        raise _refuse_unsandboxed(env)
    env = "+".join(parts)
    for part in parts:
        if FINISH_TOOL in archetypes.get(part).env_cls.tools:
            raise ConfigError(f"{part!r} has its own tool named {FINISH_TOOL!r}, which env serve reserves")
    if tasks is None:
        if len(parts) > 1:
            raise ConfigError(f"{env!r} is a group of environments: serve it with --tasks (its tasks.jsonl)")
        env_cls = archetypes.get(env).env_cls
        ids = sorted(env_cls.scenarios())
        return Catalogue(env, "scenarios", ids, dict(zip(ids, ids, strict=True)), env_cls)
    records, others = _tasks_of(env, tasks)
    ids = list(records)[:limit]
    return Catalogue(env, "tasks", ids, {i: records[i] for i in ids}, skipped=others)


def _tasks_of(env: str, tasks: Path) -> tuple[dict[str, ToolTask], dict[str, int]]:
    """The tool tasks of ``env`` in a task file, and the others counted by what they are."""
    from dataclaw.envcraft.quality.runs import load_task_source

    records: dict[str, ToolTask] = {}
    others: dict[str, int] = {}
    for rec in load_task_source(tasks, None).tasks:
        if not isinstance(rec, ToolTask):
            others["claw workspace tasks"] = others.get("claw workspace tasks", 0) + 1
        elif rec.env != env:
            key = f"env {rec.env!r}"
            others[key] = others.get(key, 0) + 1
        else:
            records.setdefault(rec.id, rec)
    if not records:
        seen = ", ".join(f"{n} of {k}" for k, n in sorted(others.items())) or "none"
        raise ConfigError(f"{tasks}: no task of environment {env!r} (tasks found: {seen})")
    return records, others


def _sandboxed_catalogue(
    folder: Path, tasks: Path | None, limit: int | None, policy: SandboxPolicy | None
) -> Catalogue:
    """A package folder: what it holds is read in the sandbox, its episodes run there."""
    from dataclaw.envcraft.serve.sandboxed import describe_package

    folder = folder.resolve()
    if not (folder / "__init__.py").is_file():
        raise ConfigError(f"{folder} is not an environment package (no __init__.py)")
    try:
        described = describe_package(folder, policy)
    except SetupError as exc:
        why = f"environment package {folder.name!r} does not load in the sandbox ({exc})"
        raise ConfigError(why) from None
    if any(t["function"]["name"] == FINISH_TOOL for t in described["tools"]):
        raise ConfigError(f"{folder.name!r} has its own tool named {FINISH_TOOL!r}, which env serve reserves")
    name = str(described["name"])
    if tasks is None:
        ids = sorted(described["scenarios"])[:limit]
        return Catalogue(name, "scenarios", ids, {i: i for i in ids}, package=folder, described=described,
                         policy=policy)  # fmt: skip
    records, others = _tasks_of(name, tasks)
    ids = list(records)[:limit]
    return Catalogue(name, "tasks", ids, {i: records[i] for i in ids}, skipped=others, package=folder,
                     described=described, policy=policy)  # fmt: skip
