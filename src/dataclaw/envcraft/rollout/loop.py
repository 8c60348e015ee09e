"""The agent loop (EnvCraft D.3/D.4): any OpenAI-compatible tool-calling model against one task harness.

Per turn the model sees the conversation and the tools; each tool call is executed and its observation
appended as a ``tool`` message. Recoverable tool errors (bad ids, invalid transitions, missing files)
stay in the trajectory so a policy can learn to recover. When the model answers without a tool call the
simulated user says the next of the task's decomposed turns; after the last one (or a ``finish`` call)
the episode ends and the verifier assigns the reward: binary for tool tasks, [0, 1] for claw tasks. With a
user model an LLM plays the task's user instead (:mod:`.user_sim`: τ²-bench's user simulator, its stop
tokens, a user turn budget, a leak guard); the user's turns, model and usage go to :attr:`Trajectory.user`.
Limits: ``max_turns`` model turns (default 32) and a wall-clock ``timeout_s`` (default 300 s). The budget
holds: at ``timeout_s`` the model call in flight is cancelled (the request is dropped; the embedded model
stops at its next token), no further tool call starts, the episode ends with stop reason
``budget_exceeded`` and the state reached is scored by the verifier like any other ending; the trajectory
records ``budget_exceeded`` and ``budget_s``. A tool call already running is not interrupted (its
environment is left consistent for the verifier), so the episode ends at most one tool call late.

Fit for RL (issue 14): a tool call whose arguments are not a JSON object is an ``invalid_call``
observation the model can recover from (``""`` for a tool without parameters is taken as ``{}``), counted
in :attr:`Trajectory.metrics`; every sample ``j`` of a task sends its own ``seed`` (``config.seed + j``),
so K samples are K requests and K cache entries, not one answer repeated; a context-length error ends the
episode with stop reason ``context_overflow`` and the state reached is still scored; each model turn's
usage, finish reason, reasoning text and (when asked for) logprobs and token ids are kept in
:attr:`Trajectory.model_turns`.

Failures are classified at their boundary (:mod:`.errors`) and recorded once on the trajectory; a failed
rollout gets reward 0.0, and a verifier failure marks the trajectory as a *data defect* (D.6), which
calibration keeps apart from agent failures.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from dataclaw.core.ids import child_id
from dataclaw.envcraft.rollout.claw_tools import ToolResult
from dataclaw.envcraft.rollout.errors import (
    Boundary,
    ModelCallError,
    RolloutError,
    RolloutTimeout,
    SetupError,
    ToolInfraError,
    VerifierError,
    boundary,
)
from dataclaw.envcraft.rollout.evaluate import evaluate_rollout
from dataclaw.envcraft.rollout.harness import TERMINAL_TOOLS, Harness
from dataclaw.envcraft.rollout.user_sim import ScriptedUser, SimulatedUser, User, UserConfig
from dataclaw.models.errors import ContextLengthError

log = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = 4096
STOP_CONTEXT_OVERFLOW = "context_overflow"
STOP_BUDGET = "budget_exceeded"
METRIC_KEYS = (
    "tool_calls",
    "tool_errors",
    "invalid_calls",
    "malformed_arguments",
    "empty_arguments",
    "unknown_tools",
    "truncated_answers",
)
"""Counters of :attr:`Trajectory.metrics`: calls made, calls that came back as an error (any kind),
invalid calls (unknown tool or arguments that are not a JSON object), of which malformed arguments and
unknown tools; ``""`` arguments taken as ``{}``; answers cut at ``max_tokens`` (finish reason length)."""


@dataclass(frozen=True)
class RolloutConfig:
    """Limits and sampling of one rollout."""

    max_turns: int = 32
    """Model turns (each answer of the model is one turn)."""
    timeout_s: float = 300.0
    """Wall-clock budget of the whole rollout, model time included."""
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = DEFAULT_MAX_TOKENS
    """Tokens per model answer; sized for thinking models, whose reasoning comes out of this budget."""
    seed: int | None = None
    """Base seed: sample ``j`` sends ``seed + j`` (``j`` when None), so samples differ and replay."""
    logprobs: bool = False
    """Ask for per-token log-probabilities (OpenAI ``logprobs``); kept per model turn."""
    top_logprobs: int | None = None
    token_ids: bool = False
    """Ask for prompt and completion token ids (vLLM ``return_token_ids``; other servers may refuse it)."""
    strict_tool_calls: bool = False
    """End the rollout (reward 0) at the first call of an unknown tool or with unparsable arguments,
    as in the paper's training setup; off by default so the error stays a recoverable observation."""

    def __post_init__(self) -> None:
        if self.max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {self.max_turns}")
        if self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {self.timeout_s}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {self.max_tokens}")
        if self.temperature is not None and self.temperature < 0:
            raise ValueError(f"temperature must not be negative, got {self.temperature}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")

    def sample_seed(self, sample: int) -> int:
        """The seed sample ``sample`` sends: base seed plus the sample index."""
        return (self.seed or 0) + sample

    def sampling(self, seed: int | None) -> dict[str, Any]:
        """The request's sampling parameters (they are part of the response-cache key)."""
        out: dict[str, Any] = {}
        for key in ("temperature", "top_p", "max_tokens"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if seed is not None:
            out["seed"] = seed
        if self.logprobs:
            out["logprobs"] = True
            if self.top_logprobs is not None:
                out["top_logprobs"] = self.top_logprobs
        if self.token_ids:
            out["return_token_ids"] = True
        return out


@dataclass
class Step:
    """One executed tool call and what the environment answered."""

    turn: int
    call_id: str
    tool: str
    arguments: Any
    ok: bool
    error_kind: str | None
    observation: str
    env_ms: float


@dataclass
class Trajectory:
    """A finished rollout: OpenAI-format messages, per-step observations, reward and how it ended."""

    id: str
    task_id: str
    kind: str
    model: str
    sample: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    turns: int = 0
    stop_reason: str = ""
    reward: float = 0.0
    score: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None
    defect: bool = False
    """The task data failed (verifier error, setup error): not an agent failure (D.6)."""
    wall_s: float = 0.0
    budget_s: float = 0.0
    """The wall-clock budget the episode ran under (``timeout_s``)."""
    budget_exceeded: bool = False
    """The budget ran out: the episode was stopped there and the state reached was scored."""
    model_s: float = 0.0
    env_s: float = 0.0
    usage: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0})
    seed: int | None = None
    """The seed this sample's requests carried."""
    metrics: dict[str, int] = field(default_factory=lambda: dict.fromkeys(METRIC_KEYS, 0))
    reward_components: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The reward decomposed (:mod:`.evaluate`): ``{name: {"score", "weight", "detail"}}``."""
    model_turns: list[dict[str, Any]] = field(default_factory=list)
    """Per model turn: ``turn``, ``prompt_tokens``, ``completion_tokens``, ``finish_reason``, ``cached``,
    ``latency_s``, and where the server returned them ``reasoning_content``, ``logprobs``, ``token_ids``,
    ``prompt_token_ids`` (what on-policy RL needs)."""
    user: dict[str, Any] | None = None
    """The simulated user's part (:meth:`.user_sim.SimulatedUser.record`: model, instructions, turns,
    usage, how it ended, discarded messages); None for the task's scripted turns."""

    def to_record(self) -> dict[str, Any]:
        return asdict(self)


def rollout_id(
    task_id: str, model_id: str, sample: int, seed: int | None = None, user_model: str | None = None
) -> str:
    """Deterministic: the same task, model, sample index, seed and user model give the same id (resume
    key); a rollout with the task's scripted user keeps the id it had before there were simulated users."""
    key: list[object] = [model_id, sample] if seed is None else [model_id, sample, seed]
    if user_model is not None:
        key.append({"user": user_model})
    return child_id(task_id, "rollout", key, label=f"s{sample}")


class BudgetSpent(RolloutTimeout):
    """The episode's wall-clock budget ran out: the episode ends, the state reached is scored."""


class ContextOverflow(RolloutError):
    """The conversation no longer fits the model's context: the episode ends, the state is scored."""

    boundary = Boundary.MODEL


def _parse_args(raw: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Arguments → dict, or the agent-facing reason they cannot be used. Empty means ``{}``."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None, "the arguments are not valid JSON"
    if not isinstance(value, dict):
        return None, "the arguments must be a JSON object"
    return value, None


def _assistant_message(completion: Any) -> tuple[dict[str, Any], list[Any]]:
    """The assistant turn as stored (with ``reasoning_content``) and sent back (without it), and each
    call's raw arguments. Arguments that are not a JSON object are sent back as ``"{}"`` — servers that
    render tool calls through a chat template decode them and would refuse the whole conversation — and
    kept raw in the step."""
    # "" rather than null: some chat templates (llama.cpp's) concatenate content as a string
    msg: dict[str, Any] = {"role": "assistant", "content": completion.text or ""}
    if getattr(completion, "reasoning", None):
        msg["reasoning_content"] = completion.reasoning
    raws: list[Any] = []
    if completion.tool_calls:
        calls = []
        for i, c in enumerate(completion.tool_calls):
            fn = c.get("function") or {}
            raw = fn.get("arguments")
            args, _ = _parse_args(raw)
            if isinstance(raw, dict):
                sent = json.dumps(raw, ensure_ascii=False)
            else:
                sent = raw if isinstance(raw, str) and args is not None and raw.strip() else "{}"
            name = str(fn.get("name") or "")
            fid = c.get("id") or f"call_{i}"
            calls.append({"id": fid, "type": "function", "function": {"name": name, "arguments": sent}})
            raws.append(raw)
        msg["tool_calls"] = calls
    return msg, raws


def _for_request(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as sent: reasoning text is not sent back (DeepSeek-style APIs refuse it; chat
    templates drop earlier turns' reasoning anyway)."""
    return [
        {k: v for k, v in m.items() if k != "reasoning_content"} if "reasoning_content" in m else m
        for m in messages
    ]


def _turn_record(turn: int, done: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "turn": turn,
        "prompt_tokens": done.usage.prompt_tokens,
        "completion_tokens": done.usage.completion_tokens,
        "finish_reason": done.finish_reason,
        "cached": bool(getattr(done, "cached", False)),
        "latency_s": round(float(getattr(done, "latency_s", 0.0)), 4),
    }
    for key, attr in (
        ("reasoning_content", "reasoning"),
        ("logprobs", "logprobs"),
        ("token_ids", "token_ids"),
        ("prompt_token_ids", "prompt_token_ids"),
    ):
        value = getattr(done, attr, None)
        if value:
            rec[key] = value
    return rec


class _Run:
    """State of one rollout while it runs."""

    def __init__(
        self,
        model: Any,
        harness: Harness,
        config: RolloutConfig,
        sample: int,
        seed: int | None,
        user_model: Any = None,
        user_config: UserConfig | None = None,
    ):
        self.model = model
        self.harness = harness
        self.config = config
        self.user_model = user_model
        self.user_config = user_config or UserConfig()
        self.user: User = ScriptedUser([])
        self.seed = seed if seed is not None else config.sample_seed(sample)
        self.t0 = time.monotonic()
        user_id = user_model.model_id if user_model is not None else None
        self.traj = Trajectory(
            id=rollout_id(harness.task_id, model.model_id, sample, seed, user_id),
            task_id=harness.task_id,
            kind=harness.kind,
            model=model.model_id,
            sample=sample,
            seed=self.seed,
        )

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The episode's messages so far (what a simulated user reads its view from)."""
        return self.traj.messages

    def remaining(self) -> float:
        """Seconds left of the budget; :class:`BudgetSpent` when none are."""
        left = self.config.timeout_s - (time.monotonic() - self.t0)
        if left <= 0:
            raise BudgetSpent(f"turn {self.traj.turns} (budget {self.config.timeout_s:g} s)")
        return left

    async def env(self, fn: Any, *args: Any) -> Any:
        t = time.perf_counter()
        try:
            return await asyncio.to_thread(fn, *args)
        finally:
            self.traj.env_s += time.perf_counter() - t

    def _count_failed(self, exc: ModelCallError) -> None:
        """A failed call still sent its prompt: its tokens (estimated ones apart, as the ledger keeps
        them) go into the trajectory's usage, so an episode's usage agrees with the run's ledger."""
        failed = getattr(exc.__cause__, "usage", None)
        if callable(failed):
            for key, n in failed().items():
                self.traj.usage[key] = self.traj.usage.get(key, 0) + n

    async def ask(self, tools: list[dict[str, Any]]) -> Any:
        left = self.remaining()
        t = time.perf_counter()
        messages = _for_request(self.traj.messages)
        try:
            with boundary(ModelCallError, f"model call at turn {self.traj.turns}"):
                try:
                    done = await asyncio.wait_for(
                        self.model.complete(messages, tools=tools, **self.config.sampling(self.seed)),
                        timeout=left,
                    )
                except ContextLengthError as exc:
                    raise ContextOverflow(f"model call at turn {self.traj.turns}", exc) from exc
        except ModelCallError as exc:
            self._count_failed(exc)
            if isinstance(exc.__cause__, TimeoutError):  # wait_for cancelled the call in flight
                raise BudgetSpent(
                    f"waiting for the model at turn {self.traj.turns} (budget {self.config.timeout_s:g} s)"
                ) from exc
            raise
        finally:
            self.traj.model_s += time.perf_counter() - t
        self.traj.usage["prompt_tokens"] += done.usage.prompt_tokens
        self.traj.usage["completion_tokens"] += done.usage.completion_tokens
        self.traj.model_turns.append(_turn_record(self.traj.turns, done))
        if done.finish_reason == "length":
            self.traj.metrics["truncated_answers"] += 1
        return done

    async def call_tool(self, turn: int, call: dict[str, Any], raw: Any, names: set[str]) -> ToolResult:
        name = call["function"]["name"]
        args, problem = _parse_args(raw)
        counts = self.traj.metrics
        counts["tool_calls"] += 1
        if args == {} and not isinstance(raw, dict) and (raw is None or not str(raw).strip()):
            counts["empty_arguments"] += 1
        t = time.perf_counter()
        if problem is not None or name not in names:
            counts["invalid_calls"] += 1
            if problem is not None:
                counts["malformed_arguments"] += 1
                why = f"{problem}; call {name!r} again with a JSON object of its parameters"
            else:
                counts["unknown_tools"] += 1
                why = f"unknown tool {name!r}; available: {', '.join(sorted(names))}"
            result = ToolResult(f"error (invalid_call): {why}", ok=False, error_kind="invalid_call")
            if self.config.strict_tool_calls:
                self._record(turn, call, args, raw, result, t)
                raise ToolInfraError(f"invalid tool call at turn {turn}: {why}")
        else:
            with boundary(ToolInfraError, f"executing {name} at turn {turn}"):
                result = await self.env(self.harness.execute, name, args)
        self._record(turn, call, args, raw, result, t)
        return result

    def _record(
        self, turn: int, call: dict[str, Any], args: Any, raw: Any, result: ToolResult, t: float
    ) -> None:
        if not result.ok:
            self.traj.metrics["tool_errors"] += 1
        self.traj.messages.append({"role": "tool", "tool_call_id": call["id"], "content": result.content})
        self.traj.steps.append(
            Step(
                turn=turn,
                call_id=call["id"],
                tool=call["function"]["name"],
                arguments=args if args is not None else raw,
                ok=result.ok,
                error_kind=result.error_kind,
                observation=result.content,
                env_ms=round((time.perf_counter() - t) * 1000, 3),
            )
        )

    async def episode(self) -> str:
        """Talk until the agent finishes, the user ends the conversation (no scripted turn left, a stop
        token, its turn budget) or the agent's turn budget is spent."""
        with boundary(SetupError, "reading the task's tools and user turns"):
            tools = await self.env(self.harness.tools)
            self.user = await self._user()
        names = {t["function"]["name"] for t in tools}
        self.traj.messages = [{"role": "system", "content": self.harness.system_prompt()}]
        try:
            first = await self._hear(self.user.open)
            if first.text is not None:
                self.traj.messages.append({"role": "user", "content": first.text})
            if first.stop:
                return first.stop
            return await self._talk(tools, names)
        except BudgetSpent as exc:
            self.traj.budget_exceeded = True
            log.info("%s: %s", self.traj.id, exc)
            return STOP_BUDGET
        finally:
            self.traj.user = self.user.record()

    async def _user(self) -> User:
        """The task's scripted turns, or (with a user model) an LLM playing the task's user."""
        if self.user_model is not None:
            scenario = await self.env(self.harness.user_scenario)
            if scenario is not None:
                return SimulatedUser(self.user_model, scenario, self.user_config, self.seed)
        turns = await self.env(self.harness.user_turns)
        if not turns:
            raise SetupError("the task has no user turn")
        return ScriptedUser(turns)

    async def _hear(self, say: Any) -> Any:
        """The user's next message; the user model's wait counts against the budget like the agent's."""
        try:
            return await say(self)
        except ModelCallError as exc:
            if isinstance(exc.__cause__, TimeoutError):
                raise BudgetSpent(f"waiting for the user model (budget {self.config.timeout_s:g} s)") from exc
            raise

    async def _talk(self, tools: list[dict[str, Any]], names: set[str]) -> str:
        """The turns of :meth:`episode`; raises :class:`BudgetSpent` when the budget runs out."""
        while self.traj.turns < self.config.max_turns:
            self.traj.turns += 1
            try:
                done = await self.ask(tools)
            except ContextOverflow as exc:
                cause = exc.__cause__
                self.traj.model_turns.append(
                    {
                        "turn": self.traj.turns,
                        "error": STOP_CONTEXT_OVERFLOW,
                        "limit": getattr(cause, "limit", None),
                        "requested": getattr(cause, "requested", None),
                    }
                )
                log.info("%s: %s", self.traj.id, exc)
                return STOP_CONTEXT_OVERFLOW
            msg, raws = _assistant_message(done)
            self.traj.messages.append(msg)
            if not msg.get("tool_calls"):
                said = await self._hear(self.user.reply)
                if said.text is not None:
                    self.traj.messages.append({"role": "user", "content": said.text})
                if said.stop:
                    return said.stop
                continue
            finished = False
            for call, raw in zip(msg["tool_calls"], raws, strict=True):
                self.remaining()  # no tool call starts once the budget is spent
                result = await self.call_tool(self.traj.turns, call, raw, names)
                finished = finished or (result.finished and call["function"]["name"] in TERMINAL_TOOLS)
            if finished:
                return "finished"
            self.remaining()
        return "max_turns"


async def run_rollout(
    model: Any,
    harness: Harness,
    config: RolloutConfig | None = None,
    *,
    sample: int = 0,
    seed: int | None = None,
    user_model: Any = None,
    user_config: UserConfig | None = None,
    judge: Any = None,
) -> Trajectory:
    """Run one episode and score it (τ²-style components, ``judge`` grading natural-language assertions).
    Never raises for a bad rollout: the trajectory carries the error.
    With ``user_model`` an LLM plays the task's user (:mod:`.user_sim`), else its scripted turns do."""
    config = config or RolloutConfig()
    run = _Run(model, harness, config, sample, seed, user_model, user_config)
    traj = run.traj
    traj.budget_s = config.timeout_s
    try:
        with boundary(SetupError, "instantiating the task"):
            await run.env(harness.setup)
        traj.stop_reason = await run.episode()
        harness.messages = traj.messages  # claw graders may read the transcript (run_verifier's stdin)
        with boundary(VerifierError, "scoring the final state"):
            scored = await run.env(harness.score)
        traj.reward, traj.score = float(scored.reward), scored.detail
        await evaluate_rollout(harness, traj, judge)  # the reward as the task's basis composes it
    except RolloutError as exc:
        traj.error = exc.to_dict()
        traj.reward = 0.0
        traj.stop_reason = traj.stop_reason or "error"
        if exc.boundary is Boundary.TIMEOUT:
            traj.stop_reason = "timeout"
        traj.defect = exc.boundary in (Boundary.VERIFIER, Boundary.SETUP)
    finally:
        try:
            await asyncio.to_thread(harness.cleanup)
        except OSError as exc:  # a leftover temp dir must not turn a finished rollout into a crash
            log.warning("cleanup of %s failed: %s", harness.task_id, exc)
        traj.wall_s = round(time.monotonic() - run.t0, 4)
        traj.env_s = round(traj.env_s, 4)
        traj.model_s = round(traj.model_s, 4)
    return traj


async def run_rollouts(
    model: Any,
    harnesses: list[Harness],
    config: RolloutConfig | None = None,
    *,
    concurrency: int = 8,
    seeds: list[int | None] | None = None,
    judge: Any = None,
) -> list[Trajectory]:
    """Many rollouts at once (bounded; rollout i is sample i); one failing never cancels the others."""
    sem = asyncio.Semaphore(max(1, concurrency))

    async def one(i: int, h: Harness) -> Trajectory:
        async with sem:
            return await run_rollout(
                model, h, config, sample=i, seed=seeds[i] if seeds else None, judge=judge
            )

    return list(await asyncio.gather(*(one(i, h) for i, h in enumerate(harnesses))))
