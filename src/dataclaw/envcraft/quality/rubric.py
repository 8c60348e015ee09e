"""The LLM quality inspector of EnvCraft §4.3 / D.6 (Table 18 rubric, Listing 1 output, Eq. 5 gate).

The inspector sees the environment code, the initial state, the user intent sequence and the validation
protocol, and scores three dimensions 0–3 with a short evidence-based analysis each. The model's own
``is_qualified`` is recorded but not trusted: the gate is computed here, s_sol = 3, s_val = 3, s_con ≥ 2
and s_sol + s_val + s_con ≥ 8.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dataclaw.envcraft.quality.common import task_id
from dataclaw.envcraft.runtime.task import ToolTask

DIMENSIONS = ("task_solvability", "validation_integrity", "data_consistency")

RUBRIC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reasoning_steps": {
            "type": "object",
            "properties": {
                "dimension_1_analysis": {"type": "string", "maxLength": 1200},
                "dimension_2_analysis": {"type": "string", "maxLength": 1200},
                "dimension_3_analysis": {"type": "string", "maxLength": 1200},
            },
            "required": ["dimension_1_analysis", "dimension_2_analysis", "dimension_3_analysis"],
            "additionalProperties": False,
        },
        "scores": {
            "type": "object",
            "properties": {d: {"type": "integer", "minimum": 0, "maximum": 3} for d in DIMENSIONS},
            "required": list(DIMENSIONS),
            "additionalProperties": False,
        },
        "is_qualified": {"type": "boolean"},
    },
    "required": ["reasoning_steps", "scores", "is_qualified"],
    "additionalProperties": False,
}

RUBRIC = """Score the candidate task on three dimensions, each an integer 0-3.

Dimension 1 - Task Solvability & Logic
3: logically valid, non-trivial, fully solvable under the initial state and environment rules; completing it
   requires meaningful interaction, with no state conflicts.
2: theoretically solvable but trivial, requires no meaningful interaction, or has minor parameter mismatches
   a robust agent may bypass.
1: unsolvable: the requested actions or target state contradict the initial state, environment constants or
   transition rules.
0: substantially hallucinates entities, tools, APIs or states absent from the environment.

Dimension 2 - Validation-Protocol Integrity
3: executable and completely checks the intended success conditions, without evident false-positive or
   false-negative paths.
2: executable, but assertions are incomplete or weak (e.g. checks that an action occurred, not the
   final state).
1: syntax or runtime errors, undefined variables or APIs, or expected to fail during execution.
0: missing, or evaluates conditions unrelated to the user task.

Dimension 3 - Data Consistency & Syntactic Cleanliness
3: entity names, identifiers, value types and schemas fully consistent across environment state, user task and
   validation protocol.
2: semantically consistent with minor type or formatting mismatches that do not alter the task objective.
1: critical fields missing, or explicit contradictions between the user-facing description and the
   environment.
0: malformed JSON, severely corrupted text or otherwise unusable structured data.

Return only the JSON object: an evidence-based analysis per dimension, the three scores, and is_qualified."""

RUBRIC_MAX_TOKENS = 1536
"""Tokens for the inspector's answer: three analyses of up to 1200 characters, the scores and the JSON."""

_MAX_CODE_CHARS = 40_000
_MAX_STATE_CHARS = 12_000


def gate(scores: dict[str, int]) -> bool:
    """Eq. 5: s_sol = 3, s_val = 3, s_con ≥ 2, sum ≥ 8."""
    sol, val, con = (int(scores[d]) for d in DIMENSIONS)
    return sol == 3 and val == 3 and con >= 2 and sol + val + con >= 8


@dataclass
class RubricVerdict:
    """The inspector's scores and analyses, and the gate's decision."""

    task_id: str
    scores: dict[str, int]
    analyses: dict[str, str]
    model_says_qualified: bool
    qualified: bool
    model: str = ""
    notes: list[str] = field(default_factory=list)

    def to_record(self) -> dict[str, Any]:
        return {
            "id": self.task_id,
            "scores": self.scores,
            "sum": sum(self.scores.values()),
            "analyses": self.analyses,
            "model_says_qualified": self.model_says_qualified,
            "qualified": self.qualified,
            "model": self.model,
            "notes": self.notes,
        }


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n... [{len(text) - limit} more characters]"


def _env_source(task: ToolTask) -> str:
    """The environment package's Python source (domain modules first; each member's in turn for a
    cross-environment task), clipped."""
    from dataclaw.envcraft.archetypes import compiler_file
    from dataclaw.envcraft.tasks.tool.stages import record_env

    env_cls = record_env(task)
    members = getattr(env_cls, "members", None) or {env_cls.name: env_cls}
    infra = {"__init__.py", "__main__.py", "env.py", "evaluator.py", "state.py"}
    parts = []
    for name, cls in members.items():
        # an archetype's mechanic.py is synthesis's code, not the environment's
        code = (p for p in Path(cls.package_dir()).glob("*.py") if not compiler_file(p))
        files = sorted(code, key=lambda p: (p.name in infra, p.name))
        prefix = f"{name}/" if len(members) > 1 else ""
        parts += [f"# {prefix}{p.name}\n{p.read_text(encoding='utf-8')}" for p in files]
    return _clip("\n\n".join(parts), _MAX_CODE_CHARS)


def task_material(task: Any) -> dict[str, str]:
    """The four inputs of D.6: environment code, initial state, user intent sequence, validation protocol."""
    from dataclaw.envcraft.tasks.claw.workspace import WorkspaceTask

    if isinstance(task, WorkspaceTask):
        return {
            "environment_code": _clip(
                f"# env_builder.py (builds the workspace)\n{task.builder}", _MAX_CODE_CHARS
            ),
            "initial_state": "The workspace files written by env_builder.py above.",
            "user_intents": task.prompt,
            "validation_protocol": _clip(f"# verify_workplace.py\n{task.verifier}", _MAX_CODE_CHARS),
        }
    task = ToolTask.of(task)
    return {
        "environment_code": _env_source(task),
        "initial_state": _clip(json.dumps(task.initial_state, ensure_ascii=False), _MAX_STATE_CHARS),
        "user_intents": "\n".join(f"{i + 1}. {t}" for i, t in enumerate(task.user_turns)),
        "validation_protocol": json.dumps(task.verifier, ensure_ascii=False, indent=1),
    }


def rubric_prompt(material: dict[str, str]) -> str:
    sections = "\n\n".join(f"## {k.replace('_', ' ').title()}\n{v}" for k, v in material.items())
    return f"You are a data-quality inspector for agent RL tasks.\n\n{RUBRIC}\n\n{sections}"


async def inspect_task(model: Any, task: Any, **params: Any) -> RubricVerdict:
    """Ask ``model`` for the rubric scores of ``task`` (deterministic decoding by default, and room for the
    longest answer the schema allows: a backend's default ``max_tokens`` may cut it off mid-analysis)."""
    params.setdefault("temperature", 0)
    params.setdefault("max_tokens", RUBRIC_MAX_TOKENS)
    done = await model.complete(rubric_prompt(task_material(task)), schema=RUBRIC_SCHEMA, **params)
    parsed = done.parsed
    scores = {d: int(parsed["scores"][d]) for d in DIMENSIONS}
    steps = parsed["reasoning_steps"]
    analyses = {d: steps[f"dimension_{i + 1}_analysis"] for i, d in enumerate(DIMENSIONS)}
    qualified = gate(scores)
    notes = []
    if bool(parsed["is_qualified"]) != qualified:
        notes.append(f"model said is_qualified={parsed['is_qualified']}, the Eq. 5 gate says {qualified}")
    return RubricVerdict(
        task_id=task_id(task),
        scores=scores,
        analyses=analyses,
        model_says_qualified=bool(parsed["is_qualified"]),
        qualified=qualified,
        model=done.model,
        notes=notes,
    )
