"""The OpenEnv server of ``dataclaw env serve``: one OpenEnv ``Environment`` per client session, MCP tools.

Each WebSocket session (OpenEnv's ``EnvClient`` / ``MCPToolClient``) gets its own
:class:`DataclawEnvironment`. ``reset(task_id=…)`` (or ``seed=`` — verifiers' OpenEnv contract — or
``index=``) loads the task's S0 into a fresh session; ``ListToolsAction`` lists the task's tools plus
``finish``; ``CallToolAction`` runs one tool. ``finish`` (or the step budget) ends the episode: the
verifier scores the final state and the observation carries ``done=True`` and the reward. The same tools
answer MCP JSON-RPC on ``/mcp`` (``tools/list``, ``tools/call``). ``/{env}/tasks`` is OpenEnv's Task API.

What the agent sees is agent-safe: the environment's own structured errors (Table 16), and for calls the
server refuses (unknown tool, no episode, episode over) one line that says what to do — never a
traceback, a path or a class name.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import uuid
from typing import Any

from openenv.core.env_server import (
    CallToolAction,
    CallToolObservation,
    ConcurrencyConfig,
    Environment,
    ListToolsAction,
    ListToolsObservation,
    Observation,
    State,
    Tool,
    ToolError,
    ToolErrorType,
    create_app,
)

from dataclaw.envcraft.rollout.errors import RolloutError
from dataclaw.envcraft.rollout.harness import Harness
from dataclaw.envcraft.serve.catalogue import FINISH_SCHEMA, FINISH_TOOL, SERVE_SYSTEM_PROMPT, Catalogue
from dataclaw.envcraft.serve.startup import SPLIT

log = logging.getLogger(__name__)


class EpisodeObservation(Observation):
    """What ``reset`` returns: the task and how to talk to it."""

    task_id: str
    prompt: str
    """The first user turn."""
    user_turns: list[str]
    """All user turns of a decomposed task, in order (the trainer says each when the agent stops)."""
    messages: list[dict[str, str]]
    """System prompt and first user turn, ready for a chat template."""
    tool_names: list[str]


class EpisodeState(State):
    """The trainer's view of a session (``/state``, ``state`` on the WebSocket)."""

    task_id: str | None = None
    done: bool = False
    reward: float | None = None
    stop_reason: str | None = None
    """``finished`` (the agent called finish) or ``max_steps``."""
    tool_errors: int = 0


def _text_result(text: str, data: Any, is_error: bool) -> dict[str, Any]:
    """A tool result in MCP's ``CallToolResult`` shape: the text the agent reads, and ``data`` (the
    decoded envelope), which OpenEnv's client unwraps. No ``structured_content`` copy: every step's
    payload would carry the envelope a third time."""
    return {"content": [{"type": "text", "text": text}], "data": data, "is_error": is_error}


def _tool(schema: dict[str, Any]) -> Tool:
    fn = schema["function"]
    params = fn.get("parameters") or {"type": "object", "properties": {}}
    return Tool(name=fn["name"], description=fn.get("description") or "", input_schema=params)


class DataclawEnvironment(Environment):
    """One client session: at most one episode (a task instantiated in its harness) at a time."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, catalogue: Catalogue, max_steps: int = 64) -> None:
        super().__init__()
        self.catalogue = catalogue
        self.max_steps = max_steps
        self._harness: Harness | None = None
        self._schemas: list[dict[str, Any]] | None = None
        self._names: set[str] = set()
        self._state = EpisodeState()

    # ---- episode lifecycle ------------------------------------------------------------------------

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        split: str | None = None,
        index: int | None = None,
        **kwargs: Any,
    ) -> EpisodeObservation:
        """Start an episode of ``task_id`` (else task ``index``, else task ``seed mod n``) from its S0."""
        if kwargs:
            raise ValueError(
                f"reset() does not take {', '.join(sorted(kwargs))}; it takes task_id, index, seed, split"
            )
        if split not in (None, SPLIT):
            raise ValueError(f"unknown split {split!r}; this server has one split, {SPLIT!r}")
        tid = self.catalogue.pick(task_id, seed, index)
        self._release()
        harness = self.catalogue.harness(tid)
        try:
            harness.setup()
            schemas = [*harness.tools(), FINISH_SCHEMA]
            turns = harness.user_turns()
        except RolloutError as exc:
            harness.cleanup()
            log.warning("task %s could not be instantiated: %s", tid, exc)
            raise ValueError(f"task {tid!r} could not be instantiated (a defect of the task data)") from None
        self._harness, self._schemas = harness, schemas
        self._names = {s["function"]["name"] for s in schemas}
        self._state = EpisodeState(episode_id=episode_id or uuid.uuid4().hex, task_id=tid)
        return EpisodeObservation(
            task_id=tid,
            prompt=turns[0],
            user_turns=turns,
            messages=[
                {"role": "system", "content": SERVE_SYSTEM_PROMPT},
                {"role": "user", "content": turns[0]},
            ],
            tool_names=sorted(self._names),
        )

    def _release(self) -> None:
        if self._harness is not None:
            try:
                self._harness.cleanup()
            except OSError as exc:
                log.warning("cleanup of %s failed: %s", self._state.task_id, exc)
            self._harness = None

    def close(self) -> None:
        self._release()

    @property
    def state(self) -> EpisodeState:
        return self._state

    # ---- steps ------------------------------------------------------------------------------------

    async def step_async(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        """In-process archetypes step on the server's event loop: their calls take well under a
        millisecond, less than the hop to a thread and back (``benchmarks/bench_env_serve.py``). A
        sandboxed package's calls are worker round trips (milliseconds): they step in a thread, so one
        session never stalls the others."""
        if self.catalogue.package is not None:
            return await asyncio.to_thread(self.step, action, timeout_s, **kwargs)
        return self.step(action, timeout_s, **kwargs)

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        if isinstance(action, ListToolsAction):
            return ListToolsObservation(tools=[_tool(s) for s in self._tool_schemas()])
        if isinstance(action, CallToolAction):
            return self._call(action.tool_name, action.arguments)
        return CallToolObservation(
            tool_name="", error=ToolError(error_type=ToolErrorType.INVALID_ARGS, message="unknown action")
        )

    def _tool_schemas(self) -> list[dict[str, Any]]:
        """The current episode's tools; before the first reset, those of the first task."""
        if self._schemas is None:
            probe = self.catalogue.harness(self.catalogue.ids[0])
            try:
                probe.setup()
                self._schemas = [*probe.tools(), FINISH_SCHEMA]
            finally:
                probe.cleanup()
        return self._schemas

    def _refuse(self, name: str, kind: ToolErrorType, message: str) -> CallToolObservation:
        st = self._state
        return CallToolObservation(
            tool_name=name, error=ToolError(error_type=kind, message=message), done=st.done, reward=st.reward
        )

    def _call(self, name: str, arguments: dict[str, Any]) -> CallToolObservation:
        st = self._state
        if self._harness is None or st.task_id is None:
            return self._refuse(
                name, ToolErrorType.EXECUTION_ERROR, "no episode is running: call reset() first"
            )
        if st.done:
            return self._refuse(
                name,
                ToolErrorType.EXECUTION_ERROR,
                f"the episode has ended ({st.stop_reason}, reward {st.reward}); call reset() for another",
            )
        if name not in self._names:
            shown = ", ".join(sorted(self._names))
            return self._refuse(
                name, ToolErrorType.TOOL_NOT_FOUND, f"unknown tool {name!r}; available: {shown}"
            )
        st.step_count += 1
        if name == FINISH_TOOL:
            return self._finish(name, "finished")
        try:
            result = self._harness.execute(name, arguments)
        except Exception:
            log.exception("tool %s of task %s failed", name, st.task_id)
            st.tool_errors += 1
            return self._refuse(name, ToolErrorType.EXECUTION_ERROR, f"the environment failed on {name}")
        if not result.ok:
            st.tool_errors += 1
        try:
            data: Any = json.loads(result.content)
        except ValueError:
            data = result.content
        obs = CallToolObservation(tool_name=name, result=_text_result(result.content, data, not result.ok))
        if st.step_count >= self.max_steps:
            final = self._finish(name, "max_steps")
            obs.done, obs.reward, obs.metadata = True, final.reward, final.metadata
        return obs

    def _finish(self, name: str, why: str) -> CallToolObservation:
        """Score the final state and end the episode (a verifier failure is reward 0, a data defect)."""
        st = self._state
        assert self._harness is not None
        meta: dict[str, Any] = {"stop_reason": why}
        try:
            score = self._harness.score()
            reward, meta["score"] = float(score.reward), score.detail
        except RolloutError as exc:
            log.warning("verifier of task %s failed: %s", st.task_id, exc)
            reward, meta["defect"] = 0.0, "the task's verifier failed (a defect of the task, not the agent)"
        st.done, st.reward, st.stop_reason = True, reward, why
        text = f"episode finished ({why}); reward {reward}"
        return CallToolObservation(
            tool_name=name, result=_text_result(text, {"reward": reward}, False), done=True, reward=reward,
            metadata=meta,
        )  # fmt: skip

    # ---- OpenEnv Task API (read-only discovery) ---------------------------------------------------

    def list_splits(self) -> list[str]:
        return [SPLIT]

    def _split(self, split: str) -> None:
        if split != SPLIT:
            raise ValueError(f"unknown split {split!r}; this server has one split, {SPLIT!r}")

    def num_tasks(self, split: str) -> int:
        self._split(split)
        return len(self.catalogue)

    def list_tasks(self, split: str) -> list[dict[str, Any]]:
        self._split(split)
        return [self.catalogue.spec(t) for t in self.catalogue.ids]

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        self._split(split)
        if not 0 <= index < len(self.catalogue):
            raise IndexError(f"task index {index} is out of range (0..{len(self.catalogue) - 1})")
        return self.catalogue.spec(self.catalogue.ids[index])

    def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[Any]:
        self._split(split)
        return [self.catalogue.spec(t) for t in self.catalogue.ids[start:stop]]


def build_app(
    catalogue: Catalogue, *, max_sessions: int = 64, max_steps: int = 64, idle_timeout_s: float | None = 600.0
) -> Any:
    """The FastAPI app OpenEnv builds around our environment (``/ws``, ``/mcp``, ``/reset``, …). A session
    idle for ``idle_timeout_s`` is reaped (a client that died without closing must not hold a slot and
    its episode's files forever)."""
    factory = functools.partial(DataclawEnvironment, catalogue, max_steps)
    sessions = ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_timeout_s)
    return create_app(
        factory,
        CallToolAction,
        CallToolObservation,
        env_name=catalogue.env,
        concurrency_config=sessions,
        state_cls=EpisodeState,
        reset_observation_cls=EpisodeObservation,
    )
