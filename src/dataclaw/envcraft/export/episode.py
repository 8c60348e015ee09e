"""What an exported trainer module runs: the export's tasks, one episode of one task, its reward.

The files a trainer loads (a TRL environment class, VERL tool adapters, a ``compute_score``) are thin
generated code; the work is here, in dataclaw's light core (base install, no extras, no trainer import):

* :class:`TaskSet` — an export folder: ``manifest.json`` (environment group, where each environment's code
  lives, reward mode, agent tool names) and ``tasks.jsonl`` (read by byte offset, so a process holding
  many environments keeps one index, not every task's state).
* :class:`Episode` — one task instantiated: a fresh session restored to the task's S0, tool calls that
  never raise for the agent's mistakes (:meth:`Episode.envelope`) or raise :class:`ToolCallError` with the
  agent-safe message (:meth:`Episode.call`, TRL's convention), and the verifier's reward on the final state.
* :class:`Sessions` — episodes by key (VERL's rollout request id), bounded, oldest evicted first.

Reward (EnvCraft D.3): ``binary`` gives 1.0 only when every assertion of the verifier holds (EnvCraft-Tool);
``fraction`` gives the fraction that holds (partial credit). A verifier that cannot run scores 0.0.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import tempfile
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError
from dataclaw.envcraft.runtime.task import ToolTask

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
TASKS_FILE = "tasks.jsonl"
REWARD_MODES = ("binary", "fraction")
SESSION_ID = "episode"


class ExportedTaskError(ConfigError):
    """The export cannot serve a request: an unknown task id, a task of another group, a broken export."""


class EpisodeStateError(RuntimeError):
    """A trainer used an episode out of order: a tool call before ``reset`` or after the episode ended."""


class ToolCallError(ValueError):
    """A tool call the environment refused (agent-safe message: no traceback, path or internals)."""

    def __init__(self, tool: str, category: str, message: str) -> None:
        super().__init__(f"{category}: {message}")
        self.tool = tool
        self.category = category


class _Omitted:
    """The type of :data:`OMITTED` (one instance; its repr is its name, as the generated code spells it)."""

    _one: _Omitted | None = None

    def __new__(cls) -> _Omitted:
        if cls._one is None:
            cls._one = super().__new__(cls)
        return cls._one

    def __repr__(self) -> str:
        return "OMITTED"


OMITTED: Any = _Omitted()
"""The default of every optional parameter of a generated trainer method: an argument the caller did not
give is left out of the tool call, so the tool's own default applies (a ``None`` stand-in would override
it, e.g. BFCL's ``tags=[]``). The method's signature keeps its type hint, so the trainer's schema does too."""


def opening_message(task: ToolTask) -> str:
    """The user's first message (:meth:`ToolTask.opening`); an error when the task has none."""
    text = task.opening()
    if not text.strip():
        raise ExportedTaskError(f"task {task.id!r} has no instruction and no user turn")
    return text


def reward_of(result: dict[str, Any], mode: str) -> float:
    """The reward of a verifier result (:func:`dataclaw.envcraft.tasks.tool.verifier.evaluate`)."""
    if "error" in result:
        return 0.0
    return float(result["score"]) if mode == "fraction" else (1.0 if result["passed"] else 0.0)


class TaskSet:
    """The tasks and environment code of one export folder."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()
        path = self.root / MANIFEST
        try:
            self.manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ExportedTaskError(f"{path} is not a dataclaw export manifest: {exc}") from exc
        self.group: str = self.manifest["group"]
        self.reward_mode: str = self.manifest.get("reward", "binary")
        if self.reward_mode not in REWARD_MODES:
            raise ExportedTaskError(f"{path}: reward must be one of {', '.join(REWARD_MODES)}")
        # agent-facing tool name (a Python identifier) -> the environment's tool name
        self.tool_names: dict[str, str] = dict(self.manifest["tools"])
        self._offsets: dict[str, int] | None = None
        self._env_cls: Any = None
        self._lock = threading.Lock()

    # ---- tasks -----------------------------------------------------------------------------------

    def _index(self) -> dict[str, int]:
        with self._lock:
            if self._offsets is None:
                offsets: dict[str, int] = {}
                with open(self.root / TASKS_FILE, "rb") as fh:
                    pos = 0
                    for line in fh:
                        if line.strip():
                            offsets[json.loads(line)["id"]] = pos
                        pos += len(line)
                self._offsets = offsets
            return self._offsets

    def ids(self) -> list[str]:
        return list(self._index())

    def task(self, task_id: Any) -> ToolTask:
        """The task ``task_id`` (read afresh from its line of ``tasks.jsonl``)."""
        offsets = self._index()
        if not isinstance(task_id, str) or task_id not in offsets:
            raise ExportedTaskError(
                f"unknown task id {task_id!r}: this export holds {len(offsets)} tasks of the environment "
                f"group {self.group!r} (the dataset's task_id column names them)"
            )
        with open(self.root / TASKS_FILE, "rb") as fh:
            fh.seek(offsets[task_id])
            return ToolTask.from_row(json.loads(fh.readline()), f"{self.root / TASKS_FILE}")

    # ---- environment -----------------------------------------------------------------------------

    def env_cls(self) -> Any:
        """The Environment class (or environment group) every task of this export runs in."""
        with self._lock:
            if self._env_cls is None:
                self._env_cls = self._load_env()
            return self._env_cls

    def _load_env(self) -> Any:
        from dataclaw.envcraft import archetypes
        from dataclaw.envcraft.runtime import load_env_package

        classes = []
        for env in self.manifest["envs"]:
            source = self.manifest["sources"][env]
            if "archetype" in source:
                classes.append((env, archetypes.get(source["archetype"]).env_cls))
            else:
                classes.append((env, load_env_package(self.root / source["path"]).env_cls))
        if len(classes) == 1:
            return classes[0][1]
        from dataclaw.envcraft.tasks.tool.composite import env_group

        return env_group(tuple(classes))

    def env_tool(self, name: str) -> str:
        """The environment's name of agent tool ``name`` (unchanged when it is already one)."""
        return self.tool_names.get(name, name)

    # ---- scoring ---------------------------------------------------------------------------------

    def evaluate(self, verifier: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
        from dataclaw.envcraft.tasks.tool.verifier import evaluate

        try:
            return evaluate(verifier, state)
        except Exception as exc:  # noqa: BLE001 - a verifier failure scores 0.0 (D.3), never crashes training
            log.warning("verifier failed: %s", exc)
            return {"score": 0.0, "passed": False, "results": [], "error": str(exc)}

    def replay_rewards(self, completions: list[Any], task_ids: list[Any]) -> list[float]:
        """The reward of each completion's tool calls replayed from its task's S0 (TRL reward-function
        signature's data: conversational completions, the dataset's task_id column)."""
        out = []
        episode = Episode(self)
        try:
            for completion, task_id in zip(completions, task_ids, strict=True):
                episode.reset(task_id)
                for name, args in tool_calls(completion):
                    episode.envelope(name, args)
                out.append(episode.reward())
        finally:
            episode.close()
        return out

    def compute_score(
        self, data_source: str, ground_truth: Any, extra_info: dict[str, Any] | None
    ) -> dict[str, float]:
        """VERL's ``compute_score``: the verifier (``ground_truth``, else the task's) on the final state the
        tools left in ``extra_info["dataclaw_state"]``, or on the task's S0 when no tool ran."""
        extra = dict(extra_info or {})
        expected = f"dataclaw/{self.group}"
        if data_source != expected:
            raise ExportedTaskError(f"data_source {data_source!r} is not this export's ({expected!r})")
        task = self.task(extra.get("task_id"))
        touched = extra.get("dataclaw_task_id")
        if touched is not None and touched != task.id:
            raise ExportedTaskError(f"the tools ran task {touched!r} but the sample is task {task.id!r}")
        verifier = json.loads(ground_truth) if isinstance(ground_truth, str) and ground_truth else None
        raw = extra.get("dataclaw_state")
        state = json.loads(raw) if isinstance(raw, str) else task.initial_state
        result = self.evaluate(verifier or task.verifier, state)
        return {
            "score": reward_of(result, self.reward_mode),
            "fraction": float(result["score"]),
            "passed": 1.0 if result["passed"] else 0.0,
        }


def tool_calls(completion: Any) -> Iterable[tuple[str, Any]]:
    """``(name, arguments)`` of every assistant tool call in a conversational completion, in order."""
    messages = completion if isinstance(completion, list) else [completion]
    for msg in messages:
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        for call in msg.get("tool_calls") or []:
            fn = call.get("function", call) if isinstance(call, dict) else {}
            args = fn.get("arguments", {})
            if isinstance(args, str):
                try:
                    args = json.loads(args) if args.strip() else {}
                except ValueError:
                    pass  # left as text: the episode answers with an invalid-arguments error
            yield str(fn.get("name", "")), args


class Episode:
    """One task at a time in a private state root: reset → tool calls → reward."""

    def __init__(self, tasks: TaskSet) -> None:
        self.tasks = tasks
        self.task: ToolTask | None = None
        self.ended = False
        self.calls = 0
        self.errors = 0
        self._env: Any = None
        self._root = tempfile.mkdtemp(prefix=f"dataclaw-episode-{tasks.group[:40]}-")
        self._finalizer = weakref.finalize(self, shutil.rmtree, self._root, ignore_errors=True)

    def reset(self, task_id: Any) -> str:
        """Load task ``task_id``'s S0 into a fresh session; return the opening user message."""
        task = self.tasks.task(task_id)
        if self._env is None:
            self._env = self.tasks.env_cls()(self._root)
        self.task = None
        with contextlib.suppress(Exception):  # the previous episode's session, if one is left
            self._env.delete_session(SESSION_ID)
        self._env.create_session(task.scenario_id, session_id=SESSION_ID)
        self._env.restore_env_state(task.initial_state)
        self.task, self.ended, self.calls, self.errors = task, False, 0, 0
        return opening_message(task)

    def _live(self, what: str) -> ToolTask:
        if self.task is None:
            raise EpisodeStateError(f"{what} before reset(): no task is loaded (reset(task_id=...) first)")
        if self.ended:
            raise EpisodeStateError(
                f"{what} after the episode of task {self.task.id!r} ended (its reward was taken); "
                "reset(task_id=...) starts the next one"
            )
        return self.task

    def envelope(self, tool: str, params: Any) -> dict[str, Any]:
        """Run one tool call; the environment's result envelope (``status`` ok or error), never raises for
        what the agent sent (unknown tool, bad arguments)."""
        self._live(f"calling {tool!r}")
        self.calls += 1
        name = self.tasks.env_tool(tool)
        if name not in self._env.tools:
            self.errors += 1
            known = ", ".join(self.tasks.tool_names)
            return _error("unknown_tool", f"There is no tool {tool!r}. Available tools: {known}.")
        if not isinstance(params, dict):
            self.errors += 1
            return _error("invalid_argument", f"{tool}: the arguments must be a JSON object.")
        result = self._env.call(SESSION_ID, name, **params)
        if result.get("status") != "ok":
            self.errors += 1
        return result

    def call(self, tool: str, /, **params: Any) -> str:
        """Run one tool call (parameters left at :data:`OMITTED` are not sent) and return its data as JSON
        text; a refused call raises :class:`ToolCallError` with the environment's agent-safe message (the
        trainer shows it to the agent as the tool's error and counts it as a failed call)."""
        given = {k: v for k, v in params.items() if v is not OMITTED}
        result = self.envelope(tool, given)
        if result.get("status") != "ok":
            err = result.get("error") or {}
            raise ToolCallError(tool, str(err.get("category", "error")), str(err.get("message", "failed")))
        payload = {"data": result.get("data")}
        if result.get("warnings"):
            payload["warnings"] = result["warnings"]
        return json.dumps(payload, ensure_ascii=False, default=str)

    def state(self) -> dict[str, Any]:
        """The session state now (a copy)."""
        if self.task is None:
            raise EpisodeStateError("reading the state before reset(): no task is loaded")
        return self._env.get_session_state(SESSION_ID)

    def result(self) -> dict[str, Any]:
        """The verifier's verdict on the state now (``score``, ``passed``, ``results``)."""
        task = self._live("scoring")
        return self.tasks.evaluate(task.verifier, self.state())

    def reward(self) -> float:
        """The episode's reward (binary or fraction, as exported); ends the episode."""
        value = reward_of(self.result(), self.tasks.reward_mode)
        self.ended = True
        return value

    def close(self) -> None:
        self._finalizer()


def _error(category: str, message: str) -> dict[str, Any]:
    return {"status": "error", "error": {"category": category, "message": message}}


class Sessions:
    """Episodes by key (a rollout's request id), at most ``limit`` alive; the oldest is closed first."""

    def __init__(self, tasks: TaskSet, limit: int = 1024) -> None:
        self.tasks = tasks
        self.limit = limit
        self._episodes: OrderedDict[str, Episode] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, task_id: str) -> Episode:
        """The episode of ``key``, started on ``task_id``'s S0 at first use."""
        with self._lock:
            episode = self._episodes.get(key)
            if episode is not None:
                self._episodes.move_to_end(key)
                assert episode.task is not None
                if episode.task.id != task_id:
                    raise ExportedTaskError(f"rollout {key!r} runs task {episode.task.id!r}, not {task_id!r}")
                return episode
            episode = Episode(self.tasks)
            episode.reset(task_id)
            self._episodes[key] = episode
            while len(self._episodes) > self.limit:
                _, old = self._episodes.popitem(last=False)
                old.close()
            return episode

    def drop(self, key: str) -> None:
        with self._lock:
            episode = self._episodes.pop(key, None)
        if episode is not None:
            episode.close()

    def __len__(self) -> int:
        return len(self._episodes)
