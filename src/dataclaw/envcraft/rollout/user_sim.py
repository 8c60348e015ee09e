"""The simulated user (τ²-bench's user simulator): an LLM plays the user from a task's instructions and
talks to the agent over many turns.

Who the user is comes from the task (:func:`scenario_of`, a registry keyed by the task's source):

* a τ²-bench task (``metadata.source == "tau2"``): its ``user_scenario`` — the instructions (a string, or
  τ²'s structured ``reason_for_call`` / ``known_info`` / ``unknown_info`` / ``task_instructions``) and
  the persona;
* one of our tool tasks: its persona, its composite request, the decomposed user turns as the order to
  ask in, and the user-specified values (``metadata.user_specified``) as what the user knows. The values
  the agent must look up (``metadata.tool_derived``) are never shown to the user.

The user model sees its system prompt (rules, persona, scenario), then the conversation with the roles
flipped: the agent's plain-text answers as ``user`` messages, its own earlier messages as ``assistant``
ones. It never sees tool calls or tool results (as in τ²-bench, where those go to the environment). The
conversation opens with the agent's greeting (:data:`GREETING`, shown to the user model only, not part of
the agent's messages), to which the user answers with the request.

Endings (the trajectory's ``stop_reason``): a user message holding ``###STOP###`` (``user_stop``),
``###TRANSFER###`` (``user_transfer``) or ``###OUT-OF-SCOPE###`` (``user_out_of_scope``) ends the episode
after it is appended to the transcript (the agent does not answer it); a user who would speak more than
``user_max_turns`` times is cut there (``user_max_turns``, ``user.cut``). The agent's ``max_turns`` and the
wall-clock budget hold as for scripted users (the user's model time counts against the budget).

Gaming guard (information hiding): the *hidden values* of a task are the scalar values of its gold chain
(and our tasks' tool-derived values) that look specific (a digit or one of ``_@#/:.-``: ids, amounts,
dates, emails — not plain words a user may say anyway) and that its user instructions do not contain:
what only the agent can find out. A user message that states one verbatim before the agent said it in a
message to the user is a leak: that message is not delivered; the user model is asked again once
(another seed); a second leak ends the episode with ``user_leak`` before the agent sees it, so no agent
success rests on a leaked value. The discarded messages and the leaked values are kept in
``user.discarded``. An empty user message is treated the same way (``user_silent`` after the retry).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from dataclaw.envcraft.rollout.errors import ModelCallError, boundary
from dataclaw.models.errors import ContextLengthError

STOP = "###STOP###"
TRANSFER = "###TRANSFER###"
OUT_OF_SCOPE = "###OUT-OF-SCOPE###"
STOP_TOKENS = {STOP: "user_stop", TRANSFER: "user_transfer", OUT_OF_SCOPE: "user_out_of_scope"}
"""τ²-bench's stop protocol: token in a user message → the episode's stop reason."""
STOP_USER_TURNS = "user_max_turns"
STOP_LEAK = "user_leak"
STOP_SILENT = "user_silent"
STOP_USER_OVERFLOW = "user_context_overflow"
STOP_AGENT = "agent_stopped"
GREETING = "Hi! How can I help you today?"
DEFAULT_USER_MAX_TURNS = 10
USER_MAX_TOKENS = 512
RETRY_SEED_STEP = 100_003
"""Seed offset of the one re-ask after a leaked or empty user message (a new request, a new cache entry)."""
MIN_HIDDEN_CHARS = 3
"""Shorter gold values (``1``, ``no``) are too common to call a leak."""
SPECIFIC = re.compile(r"[\d_@#/:.-]")
"""A hidden value must look specific (an id, number, date, email, path): a plain word such as ``completed``
or ``cancel`` is something a user may well say without having been told it."""

USER_RULES = f"""You are playing a user who talks to an AI agent. The agent can act on a software system for
you; you cannot. Follow the scenario below and stay in character.

Rules:
- Write only the user's next message, in plain text, short and natural. Never write the agent's part.
- Give information from the scenario only when the agent needs it or asks for it. Never invent
  information the scenario does not give you; if asked for something you do not know, say so.
- Ask for one thing at a time, in the order the scenario gives.
- When everything you wanted is done, or the agent says it cannot be done, reply with {STOP} alone.
- If the agent transfers you to someone else, reply with {TRANSFER} alone.
- If the scenario does not tell you how to go on, reply with {OUT_OF_SCOPE} alone."""


@dataclass(frozen=True)
class UserScenario:
    """What the simulated user is told and what it must not say: its instructions, persona, the hidden
    values of the leak guard and where the instructions came from (``tau2`` or ``task``)."""

    instructions: str
    persona: str | None = None
    hidden: tuple[str, ...] = ()
    source: str = "task"

    def system_prompt(self) -> str:
        """The user model's system prompt: the rules, the persona, the scenario."""
        persona = f"\n\n<persona>\n{self.persona}\n</persona>" if self.persona else ""
        return f"{USER_RULES}{persona}\n\n<scenario>\n{self.instructions}\n</scenario>"


# ---- scenarios from tasks ------------------------------------------------------------------------------

ScenarioBuilder = Callable[[Any], "UserScenario | None"]
SCENARIOS: dict[str, ScenarioBuilder] = {}
"""Builders by task source (``metadata.source``); tasks of any other source use ``task``'s."""


def scenario_builder(source: str) -> Callable[[ScenarioBuilder], ScenarioBuilder]:
    """Register the builder of the user scenarios of tasks from ``source`` (a duplicate is refused)."""

    def add(fn: ScenarioBuilder) -> ScenarioBuilder:
        if source in SCENARIOS:
            raise ValueError(f"a user scenario builder for {source!r} is already registered")
        SCENARIOS[source] = fn
        return fn

    return add


def scenario_of(task: Any) -> UserScenario | None:
    """The simulated user of a tool task (None: the task has nothing to tell a user)."""
    meta = getattr(task, "metadata", None) or {}
    return SCENARIOS.get(str(meta.get("source") or ""), SCENARIOS["task"])(task)


def _scalars(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v)]
    if isinstance(value, list):
        return [s for v in value for s in _scalars(v)]
    if isinstance(value, bool) or value is None:
        return []
    return [str(value)]


def hidden_values(task: Any, instructions: str, extra: list[Any] = ()) -> tuple[str, ...]:
    """Gold-chain values (and ``extra``) the instructions do not contain: only the agent can find them."""
    known = instructions.casefold()
    values = [s for step in getattr(task, "gold_chain", []) for s in _scalars(step.get("params"))]
    values += [str(v) for v in extra if v is not None and not isinstance(v, bool)]
    out = {v.strip() for v in values if len(v.strip()) >= MIN_HIDDEN_CHARS and SPECIFIC.search(v)}
    return tuple(sorted(v for v in out if v.casefold() not in known))


@scenario_builder("task")
def _task_scenario(task: Any) -> UserScenario | None:
    """Our tool task: persona, request, its turns as the order to ask in, the values the user knows."""
    turns = [t for t in task.turns() if t.strip()]
    if not turns:
        return None
    meta = task.metadata or {}
    lines = [f"Your request: {task.instruction or turns[0]}"]
    if len(turns) > 1:
        lines.append("Ask for it step by step, one message per step, in this order:")
        lines += [t if re.match(r"\d+[.)] ", t) else f"{i}. {t}" for i, t in enumerate(turns, 1)]
    known = [v for v in meta.get("user_specified") or [] if isinstance(v, dict) and "value" in v]
    if known:
        lines.append("What you know (state it exactly when it is needed):")
        lines += [f"- {v.get('param', 'value')}: {v['value']}" for v in known]
    lines.append("You do not know ids or other values the system holds; the agent has to look them up.")
    text = "\n".join(lines)
    derived = [v.get("value") for v in meta.get("tool_derived") or [] if isinstance(v, dict)]
    persona = (task.persona or {}).get("description") if isinstance(task.persona, dict) else None
    return UserScenario(text, persona, hidden_values(task, text, derived), "task")


TAU2_FIELDS = (
    ("domain", "Domain"),
    ("reason_for_call", "Reason for call"),
    ("known_info", "Known info"),
    ("unknown_info", "Unknown info"),
    ("task_instructions", "Task instructions"),
)


@scenario_builder("tau2")
def _tau2_scenario(task: Any) -> UserScenario | None:
    """A τ²-bench task: its ``user_scenario`` (instructions as τ² gives them, persona)."""
    scenario = (task.metadata or {}).get("user_scenario")
    if not isinstance(scenario, dict):
        return _task_scenario(task)
    ins = scenario.get("instructions")
    if isinstance(ins, dict):
        text = "\n".join(f"{label}:\n{ins[k]}" for k, label in TAU2_FIELDS if ins.get(k))
    else:
        text = str(ins or "").strip()
    if not text:
        return _task_scenario(task)
    persona = scenario.get("persona")
    persona = json.dumps(persona, ensure_ascii=False) if isinstance(persona, dict) else persona
    return UserScenario(text, persona or None, hidden_values(task, text), "tau2")


# ---- the users the agent loop talks to ---------------------------------------------------------------


@dataclass
class UserReply:
    """What the user says next (``text``, None when nothing) and whether the episode ends with it
    (``stop``: the stop reason)."""

    text: str | None
    stop: str | None = None


class Conversation(Protocol):
    """What a user needs of the running episode (the loop's run state)."""

    messages: list[dict[str, Any]]

    def remaining(self) -> float: ...


class User(Protocol):
    """The agent's counterpart: opens the conversation, answers each of the agent's plain-text turns."""

    async def open(self, run: Conversation) -> UserReply: ...

    async def reply(self, run: Conversation) -> UserReply: ...

    def record(self) -> dict[str, Any] | None: ...


class ScriptedUser:
    """The task's decomposed turns, said in order (the default): the next one whenever the agent stops
    calling tools; after the last, the agent's stop ends the episode."""

    def __init__(self, turns: list[str]) -> None:
        self.turns = turns
        self.said = 0

    async def open(self, run: Conversation) -> UserReply:
        return await self.reply(run)

    async def reply(self, run: Conversation) -> UserReply:
        if self.said >= len(self.turns):
            return UserReply(None, STOP_AGENT)
        self.said += 1
        return UserReply(self.turns[self.said - 1])

    def record(self) -> dict[str, Any] | None:
        return None


@dataclass
class UserConfig:
    """Sampling and limits of the simulated user."""

    max_turns: int = DEFAULT_USER_MAX_TURNS
    temperature: float | None = None
    max_tokens: int = USER_MAX_TOKENS

    def __post_init__(self) -> None:
        if self.max_turns < 1:
            raise ValueError(f"user_max_turns must be at least 1, got {self.max_turns}")
        if self.max_tokens < 1:
            raise ValueError(f"user max_tokens must be at least 1, got {self.max_tokens}")
        if self.temperature is not None and self.temperature < 0:
            raise ValueError(f"user temperature must not be negative, got {self.temperature}")


@dataclass
class SimulatedUser:
    """An LLM user (any model of dataclaw's model layer: cache, retries, usage) playing ``scenario``."""

    model: Any
    scenario: UserScenario
    config: UserConfig = field(default_factory=UserConfig)
    seed: int | None = None
    turns: list[dict[str, Any]] = field(default_factory=list)
    discarded: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0})
    model_s: float = 0.0
    stop: str | None = None

    async def open(self, run: Conversation) -> UserReply:
        return await self.reply(run)

    async def reply(self, run: Conversation) -> UserReply:
        """The user's next message from the conversation so far (its view of it), checked."""
        if len(self.turns) >= self.config.max_turns:
            self.stop = STOP_USER_TURNS
            return UserReply(None, STOP_USER_TURNS)
        view = self.view(run.messages)
        said_by_agent = " ".join(m["content"] for m in view if m["role"] == "user")
        for attempt in range(2):
            seed = None if self.seed is None else self.seed + attempt * RETRY_SEED_STEP
            try:
                done = await self._ask(run, view, seed)
            except ModelCallError as exc:
                if not isinstance(exc.__cause__, ContextLengthError):
                    raise
                self.stop = STOP_USER_OVERFLOW
                return UserReply(None, STOP_USER_OVERFLOW)
            text = (done.text or "").strip()
            problem = self.problem(text, said_by_agent)
            if problem is None:
                break
            self.discarded.append({"turn": len(self.turns) + 1, "content": text, **problem})
        else:
            self.stop = STOP_LEAK if problem["problem"] == "leak" else STOP_SILENT
            return UserReply(None, self.stop)
        self.turns.append({"turn": len(self.turns) + 1, "content": text, **_usage_of(done)})
        stop = next((reason for token, reason in STOP_TOKENS.items() if token in text), None)
        self.stop = stop
        return UserReply(text, stop)

    async def _ask(self, run: Conversation, view: list[dict[str, Any]], seed: int | None) -> Any:
        params: dict[str, Any] = {"max_tokens": self.config.max_tokens}
        if self.config.temperature is not None:
            params["temperature"] = self.config.temperature
        if seed is not None:
            params["seed"] = seed
        messages = [{"role": "system", "content": self.scenario.system_prompt()}, *view]
        left = run.remaining()
        t = asyncio.get_running_loop().time()
        try:  # a timeout comes out as ModelCallError from TimeoutError: the loop ends the episode there
            with boundary(ModelCallError, f"user model call at user turn {len(self.turns) + 1}"):
                done = await asyncio.wait_for(self.model.complete(messages, **params), timeout=left)
        finally:
            self.model_s += asyncio.get_running_loop().time() - t
        self.usage["prompt_tokens"] += done.usage.prompt_tokens
        self.usage["completion_tokens"] += done.usage.completion_tokens
        return done

    def view(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The conversation as the user sees it, roles flipped: the greeting and the agent's plain-text
        answers as ``user``, its own messages as ``assistant``; no tool calls, no tool results."""
        out = [{"role": "user", "content": GREETING}]
        for m in messages:
            if m.get("role") == "user":
                out.append({"role": "assistant", "content": str(m.get("content") or "")})
            elif m.get("role") == "assistant" and not m.get("tool_calls") and m.get("content"):
                out.append({"role": "user", "content": str(m["content"])})
        return out

    def problem(self, text: str, said_by_agent: str) -> dict[str, Any] | None:
        """Why this user message cannot be delivered: empty, or a hidden value the agent has not said."""
        if not text:
            return {"problem": "empty"}
        leaked = [v for v in self.scenario.hidden if _mentions(text, v) and not _mentions(said_by_agent, v)]
        return {"problem": "leak", "values": leaked} if leaked else None

    def record(self) -> dict[str, Any]:
        """The user's part of the rollout record: model, source, instructions, turns, usage, ending."""
        return {
            "model": self.model.model_id,
            "source": self.scenario.source,
            "persona": self.scenario.persona,
            "instructions": self.scenario.instructions,
            "hidden_values": len(self.scenario.hidden),
            "turns": self.turns,
            "max_turns": self.config.max_turns,
            "stop": self.stop,
            "cut": self.stop == STOP_USER_TURNS,
            "discarded": self.discarded,
            "usage": dict(self.usage),
            "model_s": round(self.model_s, 4),
        }


def _mentions(text: str, value: str) -> bool:
    """``value`` occurs in ``text`` as a whole token (case-insensitive): ``E-105`` is not in ``E-1050``."""
    return re.search(rf"(?<![\w]){re.escape(value)}(?![\w])", text, re.IGNORECASE) is not None


def _usage_of(done: Any) -> dict[str, Any]:
    return {
        "prompt_tokens": done.usage.prompt_tokens,
        "completion_tokens": done.usage.completion_tokens,
        "finish_reason": done.finish_reason,
        "cached": bool(getattr(done, "cached", False)),
        "latency_s": round(float(getattr(done, "latency_s", 0.0)), 4),
    }
