"""The model layer's demonstration (``dataclaw quickstart``'s "model" part): a small structured question
about a bundled example, answered as schema-valid JSON by any model string."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError
from dataclaw.models.registry import get_model
from dataclaw.models.structured import ask_json
from dataclaw.models.types import Completion

TASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {"type": "string", "maxLength": 120},
        "action": {"enum": ["pick up", "place", "push", "pull", "open", "close", "pour", "other"]},
        "object": {"type": "string", "maxLength": 40},
        "location": {"type": "string", "maxLength": 40},
        "steps": {
            "type": "array",
            "items": {"type": "string", "maxLength": 60},
            "minItems": 2,
            "maxItems": 4,
        },
    },
    "required": ["task", "action", "object", "location", "steps"],
    "additionalProperties": False,
}
"""What the model answers about a robot task: the task, its action verb, object, location and steps."""


def task_prompt(task: str) -> str:
    """The question about one robot task (a LeRobot ``tasks.jsonl`` line's ``task``)."""
    return (
        f'A humanoid robot dataset has this task: "{task}"\n'
        "Describe the task as JSON: the task, the main action verb, the object, where the object is, "
        "and 2 to 4 short steps the robot performs."
    )


def describe_robot_task(tasks_file: Path, model: str, out: Path) -> Completion:
    """Ask ``model`` to describe the first task of a LeRobot ``tasks.jsonl`` as :data:`TASK_SCHEMA` JSON;
    the record goes to ``out/answer.json``, the response cache to ``out/responses.sqlite`` (a rerun into
    the same ``out`` answers from it)."""
    if not tasks_file.is_file():
        raise ConfigError(f"bundled example {tasks_file} is missing")
    task = json.loads(tasks_file.read_text(encoding="utf-8").splitlines()[0])["task"]
    chat = get_model(model, cache=out / "responses.sqlite")
    return ask_json(
        chat, task_prompt(task), TASK_SCHEMA, out=out / "answer.json", temperature=0, max_tokens=400
    )
