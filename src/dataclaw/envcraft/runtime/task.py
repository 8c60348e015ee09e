"""The tool task (EnvCraft §4.2): one row of ``tasks.jsonl``, typed, with its one reader and writer.

Every command that reads or writes tool tasks — synthesis, the importers, audit, calibration, rollouts,
exports, ``env serve``, the viewer — goes through :class:`ToolTask` (:meth:`ToolTask.from_row`,
:meth:`ToolTask.to_row`, :func:`read_task_rows`, :func:`read_tool_tasks`, :func:`write_tool_tasks`)
instead of reading raw keys, so the row's shape is written down once, here.

A ``tasks.jsonl`` may also hold claw workspace tasks (``"kind": "claw_workspace"``, the four-file protocol
of C.5): those are not tool tasks; :func:`read_task_rows` hands their rows over for
:class:`~dataclaw.envcraft.tasks.claw.workspace.WorkspaceTask` to read, and :meth:`ToolTask.from_row`
refuses them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from dataclaw.core.errors import ConfigError

CLAW_KIND = "claw_workspace"
"""The ``kind`` of a claw workspace task row (not a tool task)."""
REQUIRED = ("id", "env", "scenario_id", "initial_state", "verifier")
"""The keys without which a row is no tool task (named, in this order, by the error)."""


class TaskRowError(ConfigError):
    """A row that is not a tool task: the message names the row (file and line, when read from one), the
    task id and the problem."""


class ToolTask(BaseModel):
    """One tool task: what the user says, the environment session it starts from, the verifier of the end
    state and the gold chain that solves it.

    ``env``/``env_module`` name the environment (an archetype name, and the import name or package folder
    it was loaded from); a cross-environment task (``env`` = ``"a+b"``) also has ``envs`` (in chain order)
    and ``env_modules``, runs in an :class:`~dataclaw.envcraft.tasks.tool.composite.EnvGroup`, and its
    state, tools and verifier paths are prefixed by the environment. ``verifier`` is the JSON verifier of
    :mod:`dataclaw.envcraft.tasks.tool.verifier` (its assertions are checked where it is audited, not
    here: a malformed verifier is an audit finding, not an unreadable row). ``gold_chain`` is
    ``[{"tool", "params"}, ...]``.

    Rows on disk stay as they were written: keys a row does not have are not added on writing (a row
    without ``persona`` is written back without one), and **unknown keys are kept** — read into the model
    as extra fields and written back after the known ones — so a row from another tool or a newer version
    round-trips unchanged. The model is frozen: :meth:`with_verifier` gives a changed copy.
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    id: str
    env: str
    env_module: str | None = None
    envs: list[str] | None = None
    env_modules: dict[str, str] | None = None
    scenario_id: str
    persona: dict[str, Any] | None = None
    instruction: str | None = None
    user_turns: list[str] = []
    initial_state: dict[str, Any]
    verifier: dict[str, Any]
    gold_chain: list[dict[str, Any]] = []
    metadata: dict[str, Any] = {}

    @classmethod
    def from_row(cls, row: Any, where: str | None = None) -> ToolTask:
        """The task of one ``tasks.jsonl`` row (a dict); :class:`TaskRowError` naming ``where`` (e.g.
        ``tasks.jsonl:3``), the task and the problem when the row is not a tool task."""
        at = f"{where}: " if where else ""
        if not isinstance(row, Mapping):
            raise TaskRowError(f"{at}a task must be a JSON object")
        tid = row.get("id")
        if row.get("kind") == CLAW_KIND:
            raise TaskRowError(f"{at}task {tid!r} is a claw workspace task, not a tool task")
        missing = [k for k in REQUIRED if k not in row]
        if missing:
            raise TaskRowError(f"{at}task {tid!r} lacks {', '.join(missing)}")
        try:
            return cls.model_validate(row)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3]
            )
            raise TaskRowError(f"{at}task {tid!r} is malformed ({problems})") from None

    @classmethod
    def of(cls, task: ToolTask | Mapping[str, Any]) -> ToolTask:
        """``task`` itself, or the task of a row (what functions taking either call first)."""
        return task if isinstance(task, ToolTask) else cls.from_row(task)

    def to_row(self) -> dict[str, Any]:
        """The ``tasks.jsonl`` row: the keys the task was made with, known ones first, then unknown ones."""
        return self.model_dump(exclude_unset=True)

    def with_verifier(self, verifier: dict[str, Any]) -> ToolTask:
        """A copy of this task with another verifier (a repaired one)."""
        return self.model_copy(update={"verifier": verifier})

    @property
    def task_id(self) -> str:
        """The task's id (the name a claw :class:`WorkspaceTask` has for it too)."""
        return self.id

    @property
    def member_envs(self) -> list[str]:
        """The environments the task runs in: ``envs`` for a cross-environment task, else ``[env]``."""
        return list(self.envs) if self.envs and len(self.envs) > 1 else [self.env]

    @property
    def group(self) -> str:
        """The environment group the task runs in (``env``, ``a+b`` for a cross-environment task)."""
        return "+".join(self.member_envs)

    def module_of(self, env: str) -> str | None:
        """Where environment ``env`` of this task was loaded from (``env_modules``/``env_module``)."""
        modules = self.env_modules or {}
        return modules.get(env) or (self.env_module if env == self.env else None)

    def turns(self) -> list[str]:
        """What the simulated user says, in order (the instruction when the task has no turns)."""
        return [str(t) for t in self.user_turns or [self.instruction or ""]]

    def opening(self) -> str:
        """The one request a trainer's tool loop shows: the composite instruction (every turn in one
        message, since no simulated user says the later turns), else the first turn; "" when neither."""
        return self.instruction or next(iter(self.user_turns), "")


def read_task_rows(path: str | Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, row)`` of every non-blank line of a ``tasks.jsonl`` (``where`` is ``file:line``), tool and
    claw tasks alike; :class:`TaskRowError` at the first line that is not a JSON object."""
    src = Path(path)
    with src.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{src}:{n}"
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise TaskRowError(f"{where}: not JSON ({exc})") from None
            if not isinstance(row, dict):
                raise TaskRowError(f"{where}: a task must be a JSON object")
            yield where, row


def read_tool_tasks(path: str | Path) -> list[ToolTask]:
    """Every tool task of a ``tasks.jsonl`` (:class:`TaskRowError` naming the first row that is not one)."""
    return [ToolTask.from_row(row, where) for where, row in read_task_rows(path)]


def write_tool_tasks(path: str | Path, tasks: Iterable[ToolTask | Mapping[str, Any]]) -> None:
    """Write ``tasks`` as a ``tasks.jsonl`` (one row per line, UTF-8 kept as is)."""
    with open(path, "w", encoding="utf-8") as fh:
        for task in tasks:
            fh.write(json.dumps(ToolTask.of(task).to_row(), ensure_ascii=False) + "\n")
