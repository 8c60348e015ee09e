"""The LLM rubric on the embedded model (local:smollm2-135m): the rubric's schema once became a llama.cpp
grammar 1200 groups deep that segfaulted the whole `tasks audit` (exit 139). Now every task ends as a
verdict or a reject, and a grammar llama.cpp cannot hold is the task's model_error, never the run's death."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dataclaw.core.store import RunStore
from dataclaw.envcraft.quality.rubric import RUBRIC_SCHEMA, gate
from dataclaw.envcraft.quality.runs import rubric_tasks
from envcraft.rollout.rollout_helpers import example_claw_task

pytest.importorskip("llama_cpp", reason="the embedded model needs dataclaw[local]")

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "claw_tasks"


def test_the_rubric_schema_fits_a_grammar():
    from dataclaw.core.ids import canonical_json
    from dataclaw.models.backends.local import _checked_grammar
    from dataclaw.models.schema import grammar_schema

    assert _checked_grammar(canonical_json(RUBRIC_SCHEMA))  # as written, too deep for llama.cpp
    assert _checked_grammar(canonical_json(grammar_schema(RUBRIC_SCHEMA))) is None
    scores = grammar_schema(RUBRIC_SCHEMA)["properties"]["scores"]["properties"]
    assert all(s["enum"] == [0, 1, 2, 3] for s in scores.values())


def test_a_grammar_llama_cpp_cannot_hold_is_the_tasks_model_error(tmp_path, monkeypatch):
    from dataclaw.models import get_model
    from dataclaw.models.backends import local

    monkeypatch.setattr(local, "GRAMMAR_MAX_DEPTH", 5)  # every rubric grammar is now "too deep"
    local._checked_grammar.cache_clear()
    store = RunStore(tmp_path / "run")
    tasks = [example_claw_task("smart_home_energy_cost"), example_claw_task("logistics_manager_review")]
    model = get_model("local:smollm2-135m", cache=False)
    try:
        rows = asyncio.run(rubric_tasks(model, tasks, store))
    finally:
        local._checked_grammar.cache_clear()
    assert rows == []
    rejects = [json.loads(line) for line in (tmp_path / "run" / "rejects.jsonl").read_text().splitlines()]
    assert {r["reason"] for r in rejects} == {"model_error"} and len(rejects) == 2
    assert all("levels deep" in r["message"] for r in rejects)


@pytest.mark.slow
def test_tasks_audit_with_the_embedded_model_scores_every_task_and_exits_0(tmp_path):
    exe = shutil.which("dataclaw", path=str(Path(sys.executable).parent))
    assert exe
    out = tmp_path / "audit"
    done = subprocess.run(
        [exe, "tasks", "audit", str(EXAMPLES), "--model", "local:smollm2-135m", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    scored_file = out / "rubric.jsonl"
    verdicts = [json.loads(x) for x in scored_file.read_text().splitlines()] if scored_file.exists() else []
    rejects = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    rubric_rejects = [r for r in rejects if r["stage"] == "rubric"]
    scored = {v["id"] for v in verdicts}
    errored = {r["record_id"] for r in rubric_rejects if r["reason"] == "model_error"}
    assert scored | errored == {"smart_home_energy_cost", "logistics_manager_review"}
    for v in verdicts:  # the full schema holds: every score 0-3, the gate recomputed here
        assert all(s in range(4) for s in v["scores"].values())
        assert v["qualified"] == gate(v["scores"])
    assert "rubric" in done.stdout
