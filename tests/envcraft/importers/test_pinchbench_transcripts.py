"""PinchBench graders in ``tasks audit`` and ``tasks rollout`` read a real OpenClaw transcript: a chat-only
task without workspace files (the shape of PinchBench's ``task_sanity``) passes the audit and scores only
when the agent answered; graders that credit the do-nothing episode or crash on a real transcript entry
still fail (with ``transcript=[]`` both slipped through)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dataclaw.cli.app import _run
from dataclaw.envcraft.quality.task_audit import verdict
from dataclaw.envcraft.rollout.harness import openclaw_transcript
from dataclaw.sandbox import sandbox_available
from support.openai_server import OpenAIServer, ReceivedRequest, Reply

needs_sandbox = pytest.mark.skipif(not sandbox_available(), reason="needs the sandbox")

TASK = """---
id: {id}
name: {id}
category: basic
grading_type: automated
timeout_seconds: 60
workspace_files: []
---

## Prompt

Say "Hello, I'm ready!" to confirm you can respond.

## Grading Criteria

- [ ] Agent responded

## Automated Checks

```python
{grade}
```
"""

SANITY = """def grade(transcript: list, workspace_path: str) -> dict:
    answered = False
    for entry in transcript:
        if entry.get("type") in ("model.completed", "trace.artifacts"):
            texts = (entry.get("data") or {}).get("assistantTexts") or []
            answered = answered or any(t.strip() for t in texts)
    return {"agent_responded": 1.0 if answered else 0.0}"""

# credit for any transcript at all: an empty list hid it, the do-nothing episode's request does not
ANY_ENTRY = """def grade(transcript: list, workspace_path: str) -> dict:
    return {"agent_responded": 1.0 if transcript else 0.0}"""

# walks every entry as a message: crashes on the trajectory's events (with [] it never ran the loop)
FRAGILE = """def grade(transcript: list, workspace_path: str) -> dict:
    roles = [entry["message"]["role"] for entry in transcript]
    return {"agent_responded": 1.0 if "assistant" in roles else 0.0}"""


def _skill(root: Path) -> Path:
    (root / "tasks").mkdir(parents=True)
    for tid, code in (("task_sanity", SANITY), ("task_any_entry", ANY_ENTRY), ("task_fragile", FRAGILE)):
        (root / "tasks" / f"{tid}.md").write_text(TASK.format(id=tid, grade=code))
    return root


def test_the_transcript_carries_openclaw_trajectory_events() -> None:
    got = openclaw_transcript(
        [
            {"role": "user", "content": "Say hello."},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c0", "type": "function", "function": {"name": "ls", "arguments": '{"path": "."}'}}
            ]},
            {"role": "tool", "tool_call_id": "c0", "content": "(empty)"},
            {"role": "assistant", "content": "Hello, I'm ready!"},
        ]
    )  # fmt: skip
    assert [e["type"] for e in got] == [
        "message", "message", "model.completed", "message", "message", "model.completed", "trace.artifacts"
    ]  # fmt: skip
    assert got[2]["data"] == {"assistantTexts": []}  # a turn of tool calls says nothing
    assert got[-1]["data"] == {"assistantTexts": ["Hello, I'm ready!"]}
    assert got[1]["message"]["content"][0] == {
        "type": "toolCall",
        "id": "c0",
        "name": "ls",
        "arguments": {"path": "."},
    }


def _reply(req: ReceivedRequest) -> Reply:
    """Answers in words, no tool call (the sanity task's whole job)."""
    return Reply.text("Hello, I'm ready!")


def _silent(req: ReceivedRequest) -> Reply:
    """Ends the task at once without a word."""
    n = sum(1 for m in req.body["messages"] if m["role"] == "assistant")
    return Reply.tool_call("finish", {}, call_id="c0") if n == 0 else Reply.text("")


@needs_sandbox
def test_audit_passes_a_chat_only_task_and_fails_graders_a_real_transcript_exposes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert _run(["tasks", "import", "pinchbench", str(_skill(tmp_path / "skill")), "-o", str(run)]) == 0
    rows = {r["id"]: r for r in map(json.loads, (run / "tasks.jsonl").read_text().splitlines())}
    assert rows["task_sanity"]["config"]["empty_workspace"] is True
    _run(["tasks", "audit", str(run), "-o", str(tmp_path / "audit")])
    reports = {
        r["id"]: r
        for r in map(json.loads, (tmp_path / "audit" / "code_audit.jsonl").read_text().splitlines())
    }
    failed = {tid: {c["reason"] for c in r["checks"] if not c["passed"]} for tid, r in reports.items()}
    # no workspace files is what the task declares, not a builder that wrote nothing
    assert verdict(reports["task_sanity"]) == "pass" and reports["task_sanity"]["untouched_score"] == 0.0
    assert failed["task_any_entry"] == {"untouched_above_floor"}
    assert verdict(reports["task_fragile"]) == "DEFECT"

    for agent, want in ((_reply, 1.0), (_silent, 0.0)):
        out = tmp_path / f"ro-{agent.__name__}"
        with OpenAIServer(responder=agent) as server:
            args = ["tasks", "rollout", str(run), "-o", str(out), "--model", f"{server.base_url}::agent"]
            assert _run(args) == 0
        recs = {r["task_id"]: r for r in map(json.loads, (out / "rollouts.jsonl").read_text().splitlines())}
        rec = recs["task_sanity"]
        assert rec["reward"] == want, rec["score"]
        assert rec["reward_components"]["workplace"]["score"] == want
