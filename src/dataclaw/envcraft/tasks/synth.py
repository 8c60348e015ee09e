"""Chain → task text (EnvCraft §4.2): reverse-engineered instruction and persona-conditioned user turns
(the initial state and verifier are :mod:`.initial`'s).

Parameters are classified from the grounded run's data flow (a value picked from an earlier step's
output is *tool-derived*, anything the user could name is *user-specified*). The model writes only the
natural language, under a JSON schema, and the text is checked: every user-specified value must appear,
no tool-derived value may leak (information hiding). Text that fails is a reject with a reason, never
patched or faked.
"""

from __future__ import annotations

import json
import random
from enum import StrEnum
from typing import Any

from dataclaw.envcraft.tasks.execute import TOOL, USER

_OUTPUT_CHARS = 700
MIN_TEXT, MAX_TEXT = 20, 2000


class SynthReason(StrEnum):
    """Why a grounded chain did not become a task."""

    VERIFIER_EMPTY = "verifier_empty"
    VERIFIER_GOLD_FAILS = "verifier_gold_fails"
    VERIFIER_TRIVIAL = "verifier_initial_passes"
    NO_DISTRACTORS = "no_distractors"
    MODEL_ERROR = "model_error"
    MISSING_USER_VALUE = "missing_user_value"
    LEAKED_TOOL_VALUE = "leaked_tool_value"
    BAD_TEXT = "bad_text"
    BAD_TURNS = "bad_turns"


class SynthError(Exception):
    def __init__(self, reason: SynthReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


INSTRUCTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    # no string length bounds: llama.cpp turns them into grammars too large to compile; checked in code
    "properties": {"instruction": {"type": "string"}},
    "required": ["instruction"],
    "additionalProperties": False,
}


def turns_schema(max_turns: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "turns": {
                "type": "array",
                "minItems": 1,
                "maxItems": max_turns,
                "items": {"type": "string"},
            }
        },
        "required": ["turns"],
        "additionalProperties": False,
    }


# ---- parameters and values -------------------------------------------------------------------------


def _leaves(value: Any) -> list[str]:
    """The surface forms a value must show in text: strings and numbers, recursively; booleans and
    nulls have no canonical wording and are not checked."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, int):
        return [str(value)]
    if isinstance(value, float):
        return [str(int(value))] if value.is_integer() else [repr(value)]
    if isinstance(value, list):
        return [s for v in value for s in _leaves(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _leaves(v)]
    return []


def classify(steps: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(user-specified, tool-derived) parameter records ``{step, tool, param, value}``."""
    user, derived = [], []
    for i, st in enumerate(steps):
        for name, source in st["sources"].items():
            rec = {"step": i, "tool": st["tool"], "param": name, "value": st["params"][name]}
            (user if source == USER else derived if source == TOOL else []).append(rec)
    return user, derived


def check_text(
    texts: list[str], user: list[dict[str, Any]], derived: list[dict[str, Any]]
) -> tuple[list[str], list[str]]:
    """(user-specified values missing from ``texts``, tool-derived values leaked into them)."""
    blob = "\n".join(texts).lower()
    user_forms = {s for r in user for s in _leaves(r["value"])}
    missing = sorted(s for s in user_forms if s.lower() not in blob)
    secret = {s for r in derived for s in _leaves(r["value"]) if len(s) >= 3} - user_forms
    leaked = sorted(s for s in secret if s.lower() in blob)
    return missing, leaked


# ---- prompts --------------------------------------------------------------------------------------


def _step_view(i: int, st: dict[str, Any]) -> dict[str, Any]:
    params = {}
    for name, value in st["params"].items():
        if st["sources"].get(name) == TOOL:
            params[name] = f"<tool-derived from step {st['derived_from'].get(name, 0) + 1}: do not reveal>"
        else:
            params[name] = value
    output = json.dumps(st["output"], ensure_ascii=False)
    return {
        "step": i + 1,
        "tool": st["tool"],
        "side_effect": st["side_effect"],
        "params": params,
        "output_excerpt": output[:_OUTPUT_CHARS],
    }


def instruction_prompt(env_doc: str, grounded: dict[str, Any], user: list[dict[str, Any]]) -> str:
    steps = [_step_view(i, st) for i, st in enumerate(grounded["steps"])]
    values = sorted({s for r in user for s in _leaves(r["value"])})
    return (
        "You write the request a real user gives an AI agent that works in this environment:\n"
        f"{env_doc[:1200]}\n\n"
        "The agent will solve it by calling these tools in order (the executed, correct solution):\n"
        f"{json.dumps(steps, ensure_ascii=False, indent=1)}\n\n"
        "Write ONE natural instruction that asks for the overall outcome. State these user-specified "
        f"values exactly as written: {json.dumps(values, ensure_ascii=False)}. Parameters marked "
        "tool-derived must NOT be stated: describe them only by what they are or how to find them "
        "(e.g. 'the open ticket about the VPN'), so the agent must look them up. Do not name the tools. "
        'Answer as JSON {"instruction": "..."}.'
    )


def turns_prompt(instruction: str, persona: str, n_steps: int, user: list[dict[str, Any]]) -> str:
    values = sorted({s for r in user for s in _leaves(r["value"])})
    return (
        f"You are this user: {persona}\n\n"
        f"Your overall request to an AI agent is:\n{instruction}\n\n"
        f"Real users reveal information step by step. Split the request into 1 to {n_steps} messages "
        "you would send one after another (each after the agent has acted), in your own voice. Together "
        "the messages must contain every one of these exact values: "
        f"{json.dumps(values, ensure_ascii=False)}. "
        "Never add identifiers or values that are not in the request. "
        'Answer as JSON {"turns": ["first message", ...]}.'
    )


def pick_persona(matcher: Any, env_doc: str, seed_key: str) -> dict[str, str]:
    """One of the top-five personas for the environment, chosen reproducibly from ``seed_key``."""
    top = matcher.top(env_doc)
    persona, score = random.Random(seed_key).choice(top)
    return {"id": persona.id, "description": persona.description, "similarity": round(score, 4)}


async def write_text(
    model: Any, env_doc: str, grounded: dict[str, Any], persona: dict[str, str]
) -> dict[str, Any]:
    """Composite instruction + multi-turn decomposition, both validated; raises :class:`SynthError`."""
    from dataclaw.models.errors import ModelError

    user, derived = classify(grounded["steps"])
    try:
        done = await model.complete(
            [{"role": "user", "content": instruction_prompt(env_doc, grounded, user)}],
            schema=INSTRUCTION_SCHEMA,
            temperature=0.0,
        )
    except ModelError as exc:
        raise SynthError(SynthReason.MODEL_ERROR, f"instruction: {exc}") from None
    instruction = done.parsed["instruction"].strip()
    if not MIN_TEXT <= len(instruction) <= MAX_TEXT:
        raise SynthError(SynthReason.BAD_TEXT, f"instruction has {len(instruction)} characters")
    _validate([instruction], user, derived, "instruction")
    n = len(grounded["steps"])
    try:
        done = await model.complete(
            [{"role": "user", "content": turns_prompt(instruction, persona["description"], n, user)}],
            schema=turns_schema(n),
            temperature=0.0,
        )
    except ModelError as exc:
        raise SynthError(SynthReason.MODEL_ERROR, f"turns: {exc}") from None
    turns = [t.strip() for t in done.parsed["turns"] if t.strip()]
    if not turns or any(len(t) > MAX_TEXT for t in turns):
        raise SynthError(SynthReason.BAD_TURNS, "the decomposition has no usable turns")
    _validate(turns, user, derived, "user turns")
    return {"instruction": instruction, "user_turns": turns, "user": user, "derived": derived}


def _validate(texts: list[str], user: list[dict[str, Any]], derived: list[dict[str, Any]], what: str) -> None:
    missing, leaked = check_text(texts, user, derived)
    if missing:
        raise SynthError(SynthReason.MISSING_USER_VALUE, f"{what} omit user-specified {missing[:3]}")
    if leaked:
        raise SynthError(SynthReason.LEAKED_TOOL_VALUE, f"{what} reveal tool-derived {leaked[:3]}")
