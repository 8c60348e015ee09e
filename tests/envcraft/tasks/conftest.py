"""A scripted stand-in for the LLM (a test double for model servers we don't own) that writes the
task text the way a competent model would: user-specified values verbatim, nothing tool-derived. It keys
on the prompts of :mod:`dataclaw.envcraft.tasks.tool.synth` (the job sentence, the numbered steps)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from support.openai_server import ReceivedRequest, Reply

JOB = "A user wants an AI assistant to "


def task_writer(req: ReceivedRequest) -> Reply:
    prompt = (req.body or {})["messages"][-1]["content"]
    if prompt.startswith(JOB):
        job = prompt[len(JOB) :].split("\n", 1)[0].rstrip(".")
        return Reply.json({"message": f"Hi! Could you please {job}? Thanks a lot."})
    steps = re.findall(r"^\d+\. (.+)$", prompt.split("Its steps:\n", 1)[1], flags=re.M)
    return Reply.json({"messages": [f"Step {i + 1} now, please {s}." for i, s in enumerate(steps)]})


@pytest.fixture(scope="session")
def task_text_writer() -> Callable[[ReceivedRequest], Reply]:
    return task_writer
