"""A scripted stand-in for the LLM (a test double for model servers we don't own) that writes the
task text the way a competent model would: user-specified values verbatim, nothing tool-derived."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from support.openai_server import ReceivedRequest, Reply


def _values_after(text: str, marker: str) -> list[str]:
    i = text.index(marker) + len(marker)
    values, _ = json.JSONDecoder().raw_decode(text[i:])
    return values


def task_writer(req: ReceivedRequest) -> Reply:
    prompt = (req.body or {})["messages"][-1]["content"]
    if "State these user-specified values exactly as written: " in prompt:
        values = _values_after(prompt, "State these user-specified values exactly as written: ")
        listed = "; ".join(values) if values else "the settings you find appropriate"
        return Reply.json(
            {
                "instruction": f"Please sort this out for me using these details: {listed}. "
                "Look up whatever else you need in the system yourself."
            }
        )
    values = _values_after(prompt, "must contain every one of these exact values: ")
    n = int(re.search(r"into 1 to (\d+) messages", prompt).group(1))
    chunks = [values[i::n] for i in range(n)] if values else [[]]
    turns = [
        "Hi, I need your help with something. " + "; ".join(c) if c else "Could you finish it off, please?"
        for c in chunks
        if c or not values
    ]
    return Reply.json({"turns": turns})


@pytest.fixture(scope="session")
def task_text_writer() -> Callable[[ReceivedRequest], Reply]:
    return task_writer
