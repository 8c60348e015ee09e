"""`make run` = `dataclaw quickstart` on the bundled examples with the embedded model, as a user runs it.

Every part must leave real output: a schema-valid answer, ingested streams/anchors/candidates, Tailor
responses that each became a sample or a reject with a reason, and EnvCraft chains, audits and rollouts
with rewards. A second run into the same directory resumes and pays for no model call again.
"""

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from dataclaw.models.demo import TASK_SCHEMA

pytestmark = pytest.mark.slow
EXE = Path(sys.executable).parent / "dataclaw"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
    out = tmp_path_factory.mktemp("qs") / "run"
    first = subprocess.run(
        [str(EXE), "quickstart", "--out", str(out)], capture_output=True, text=True, timeout=1800
    )
    assert first.returncode == 0, first.stderr[-3000:]
    return out, first


def test_every_part_reports_and_says_where_output_went(quickstart):
    out, res = quickstart
    for part in ("model", "ingest", "tailor", "envcraft", "envsynth"):
        assert part in res.stdout
        assert (out / part).is_dir()
    assert "output written under" in res.stdout
    assert "Traceback" not in res.stderr


def test_model_part_answer_is_schema_valid(quickstart):
    out = quickstart[0]
    record = json.loads((out / "model" / "answer.json").read_text())
    jsonschema.validate(record["answer"], TASK_SCHEMA)
    assert record["usage"]["completion_tokens"] > 0


def test_ingest_part_produces_streams_anchors_and_candidates(quickstart):
    run = quickstart[0] / "ingest"
    streams, anchors, cands = (_jsonl(run / f"{s}.jsonl") for s in ("streams", "anchors", "candidates"))
    assert {s["modality"] for s in streams} >= {"robot", "gui", "video", "lecture"}
    assert anchors and cands
    stream_ids = {s["id"] for s in streams}
    assert all(c["stream_id"] in stream_ids for c in cands)
    assert json.loads((run / "manifest.json").read_text())["counts"]["streams"] == len(streams)


def test_tailor_part_accounts_for_every_response(quickstart):
    run = quickstart[0] / "tailor"
    responses = _jsonl(run / "responses.jsonl")
    assert responses
    samples = {s["provenance"]["response_id"] for s in _jsonl(run / "samples.jsonl")}
    rejected = {r["record_id"] for r in _jsonl(run / "rejects.jsonl") if r["stage"] != "ingest"}
    for resp in responses:  # each answer became a sample or a reject with a reason: nothing silently lost
        assert resp["id"] in samples or resp["id"] in rejected, resp["id"]
    artifacts = {a["id"]: a for a in _jsonl(run / "artifacts.jsonl")}
    for sample in _jsonl(run / "samples.jsonl"):
        for media in sample["media"]:
            assert (run / artifacts[media["artifact_id"]]["path"]).is_file()


def test_envcraft_part_samples_audits_and_rolls_out(quickstart):
    run = quickstart[0] / "envcraft"
    assert _jsonl(run / "chains.jsonl")
    audits = _jsonl(run / "code_audit.jsonl")
    assert audits and all(a["passed"] for a in audits)  # the bundled claw tasks are sound
    rollouts = _jsonl(run / "rollouts.jsonl")
    assert rollouts and all(0.0 <= r["reward"] <= 1.0 for r in rollouts)


def test_envcraft_part_makes_trustworthy_tool_tasks_with_the_embedded_model(quickstart):
    from dataclaw.envcraft.tasks import check_text

    run = quickstart[0] / "envcraft"
    grounded, tasks = _jsonl(run / "grounded.jsonl"), _jsonl(run / "tasks.jsonl")
    assert tasks, "the embedded model wrote no tool task"  # 2 of 4 chains on the reference machine
    rejected = {r["record_id"]: r["reason"] for r in _jsonl(run / "rejects.jsonl") if r["stage"] == "tasks"}
    made = {t["metadata"]["grounded_id"] for t in tasks}
    assert all(g["id"] in made or g["id"] in rejected for g in grounded)  # a task or a reason, each
    for task in tasks:
        meta = task["metadata"]
        for texts in ([task["instruction"]], task["user_turns"]):
            # every user-specified value stated exactly (by the model or the recorded addition), none leaked
            assert check_text(texts, meta["user_specified"], meta["tool_derived"]) == ([], [])
        for a in meta["values_added_by_code"]:  # what the code added is recorded where it was added
            where = task["instruction"] if a["in"] == "instruction" else task["user_turns"][a["turn"]]
            assert a["value"] in where.rsplit("Details:", 1)[1]
    rolled = {r["task_id"] for r in _jsonl(run / "rollouts.jsonl")}
    assert {t["id"] for t in tasks[:2]} <= rolled  # the quickstart's rollouts run on tool tasks too


def test_envsynth_part_compiles_audits_and_uses_two_catalogue_scenarios(quickstart):
    part = quickstart[0] / "envsynth"
    rows = _jsonl(part / "LIB" / "index.jsonl")
    assert sorted(r["scenario_id"] for r in rows) == ["monitoring_logging", "support_ticketing"]
    assert all(r["usage"]["spec"]["calls"] >= 3 for r in rows)  # the embedded model wrote the specs
    for r in rows:  # compiled and audited; passing only with every gate (meaning, soundness too)
        assert r["gates"]["audit"] and r["tools"] >= 6 and (part / "LIB" / r["package"]).is_dir()
        assert r["passed"] == (r["status"] == "passing") == all(r["gates"].values()), r["reasons"]
    passed = [r for r in rows if r["passed"]]  # none on the reference machine: the meaning gates fail
    chains = _jsonl(part / "tasks" / "chains.jsonl")  # SmolLM2's one-entity CRUD specs
    assert {c["envs"][0] for c in chains} <= {r["env"] for r in passed}
    assert bool(chains) == bool(passed) == bool(_jsonl(part / "tasks" / "grounded.jsonl"))


def test_rerun_resumes_without_paying_twice(quickstart):
    out = quickstart[0]
    before = len(_jsonl(out / "tailor" / "responses.jsonl"))
    again = subprocess.run(
        [str(EXE), "quickstart", "--out", str(out)], capture_output=True, text=True, timeout=1800
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert len(_jsonl(out / "tailor" / "responses.jsonl")) == before
    assert json.loads((out / "model" / "answer.json").read_text())
    assert "cached: True" in again.stdout
    assert len(_jsonl(out / "envsynth" / "LIB" / "index.jsonl")) == 2  # the library resumed
