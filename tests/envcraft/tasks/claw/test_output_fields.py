"""``output_fields``: the verifier must not require output field names the prompt never gives. ClawForge's
release has many hand-offs that say "format as before" or describe the fields in prose while the verifier
wants exact keys (``accuracy_diff``, ``requires_approval``, ``new_status``): an agent that follows the prompt
scores nothing, so the task is broken. The texts here are ours, in the release's shapes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from dataclaw.envcraft.tasks.claw.audit import (
    ClawAuditReason,
    audit_task,
    required_output_keys,
)
from dataclaw.envcraft.tasks.claw.workspace import WorkspaceTask, load_task
from dataclaw.sandbox import sandbox_available
from envcraft.tasks.claw.claw_shapes import review_task

needs_sandbox = pytest.mark.skipif(not sandbox_available(), reason="needs the sandbox")

DIFF_PROMPT = """嘿，实验跑完了，数据在 `data/runs.csv` 里。帮我比对 batch_1 和 batch_2 每个 group 的 accuracy
和 latency 差了多少，老规矩，按 group 整理成一条记录放到 `ops/diff.json` 里，格式跟之前一样，只放差值。谢啦！
"""

DIFF_BUILDER = """import os


def build_env():
    os.makedirs("data", exist_ok=True)
    with open("data/runs.csv", "w") as f:
        f.write("batch,group,accuracy,latency\\nbatch_1,g1,0.70,120\\nbatch_2,g1,0.75,110\\n")


if __name__ == "__main__":
    build_env()
"""

DIFF_VERIFIER = """import json, os, sys

ws = sys.argv[1] if len(sys.argv) > 1 else "."
details = []
path = os.path.join(ws, "ops", "diff.json")
data = {}
if os.path.isfile(path):
    with open(path) as f:
        data = json.load(f)
expected = {"g1": {"accuracy_delta": 0.05, "latency_delta": -10}}
ok = all(data.get(g, {}).get(k) == v for g, e in expected.items() for k, v in e.items())
details.append({"item": "diff", "score": 100 if ok else 0, "max_score": 100, "passed": ok, "reason": ""})
with open(os.path.join(ws, "workplace_score.json"), "w") as f:
    json.dump({"total_score": 100 if ok else 0, "details": details}, f)
"""


def _task(tmp_path: Path, prompt: str, verifier: str, task_id: str = "wp_diff_env__000") -> WorkspaceTask:
    shape = replace(review_task(task_id), prompt=prompt, builder=DIFF_BUILDER, verifier=verifier)
    shape.solution = None
    shape.write(tmp_path)
    task = load_task(tmp_path, task_id)
    assert isinstance(task, WorkspaceTask), task
    return task


def _fields(task: WorkspaceTask):
    return next(c for c in audit_task(task).checks if c.name == "output_fields")


@needs_sandbox
def test_a_verifier_wanting_field_names_the_prompt_never_gives_is_flagged(tmp_path: Path) -> None:
    report = audit_task(_task(tmp_path, DIFF_PROMPT, DIFF_VERIFIER))
    fields = next(c for c in report.checks if c.name == "output_fields")
    assert not fields.passed and fields.reason is ClawAuditReason.OBJECTIVE_MISMATCH
    assert "accuracy_delta" in fields.message and "latency_delta" in fields.message
    assert not report.passed and report.untouched_score == 0.0  # broken, though it pays nothing for nothing


@needs_sandbox
def test_the_same_task_passes_once_the_prompt_names_the_fields(tmp_path: Path) -> None:
    named = DIFF_PROMPT.replace("格式跟之前一样", "每个 group 下写 `accuracy_delta` 和 `latency_delta`")
    assert _fields(_task(tmp_path, named, DIFF_VERIFIER)).passed
    # a field named in prose with spaces for the underscores counts as named too
    prose = DIFF_PROMPT.replace("格式跟之前一样", "fields: accuracy delta and latency delta")
    assert _fields(_task(tmp_path / "p", prose, DIFF_VERIFIER)).passed


def test_keys_of_the_input_data_and_of_the_score_file_are_not_output_fields() -> None:
    verifier = """import json, sys
rows = json.load(open("data/emails.json"))
wanted = [r["id"] for r in rows if r["importance"] == "high"]
details = [{"item": "x", "score": 10, "max_score": 10, "passed": True, "reason": "", "field": "id"}]
total = sum(d["score"] for d in details)
out = {"total_score": total, "details": details}
"""
    # importance / id are keys of the inputs; the score file's and detail items' keys never count
    assert required_output_keys(verifier) == {"id", "importance"}


def test_one_accepted_shape_among_several_is_not_a_required_field() -> None:
    verifier = """import json
data = json.load(open("ops/deny.json"))
if isinstance(data, dict) and "denied_ids" in data:
    ids = data["denied_ids"]
elif isinstance(data, dict) and "ids" in data:
    ids = data["ids"]
else:
    ids = data
"""
    assert required_output_keys(verifier) == set()


def test_a_substring_test_on_free_text_is_not_a_field() -> None:
    verifier = 'text = open("ops/roadmap.md").read()\nok = "graph" in text or "flowchart" in text\n'
    assert required_output_keys(verifier) == set()


def test_required_field_lists_and_expected_records_count() -> None:
    verifier = """required_fields = ["doors_to_lock", "zones_to_arm"]
expected = [{"action": "update_status", "params": {"new_status": "shipped"}}]
"""
    assert required_output_keys(verifier) == {
        "doors_to_lock",
        "zones_to_arm",
        "action",
        "params",
        "new_status",
    }


def test_settings_read_from_the_environment_are_not_fields() -> None:
    verifier = 'import os\nws = os.environ.get("WORKSPACE", ".")\nroot = os.environ["TASK_ROOT"]\n'
    assert required_output_keys(verifier) == set()


def test_the_graders_own_score_keys_and_transcript_reads_are_not_fields() -> None:
    # PinchBench's grade(transcript, workspace_path) shape: it stores its criteria into a dict and reads the
    # agent's transcript events; neither is a field the agent must write (real task_08_memory false positive)
    verifier = """def grade(transcript: list, workspace_path: str) -> dict:
    scores = {}
    answer = open(workspace_path + "/answer.txt").read()
    scores["file_created"] = 1.0
    for event in transcript:
        msg = event.get("message", {})
        for item in msg.get("content", []):
            args = item.get("arguments", item.get("params", {}))
            if "notes.md" in str(args.get("file", "")):
                scores["read_notes"] = 1.0
    data = {"k": 1}
    if data["total"] is None:
        return {"file_created": 0.0, "read_notes": 0.0}
    return scores
"""
    assert required_output_keys(verifier) == {"k", "total"}
