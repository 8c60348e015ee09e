"""The model layer's demonstration: the question it asks and what it refuses."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.models.demo import TASK_SCHEMA, describe_robot_task, task_prompt


def test_the_prompt_quotes_the_task_and_the_schema_accepts_a_full_answer():
    assert '"Pick up the bottle."' in task_prompt("Pick up the bottle.")
    answer = {"task": "t", "action": "pick up", "object": "o", "location": "l", "steps": ["a", "b"]}
    jsonschema.validate(answer, TASK_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**answer, "action": "fly"}, TASK_SCHEMA)


def test_a_missing_example_is_a_config_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="is missing"):
        describe_robot_task(tmp_path / "tasks.jsonl", "local:smollm2-135m", tmp_path / "out")
