"""End to end: ``dataclaw tasks sample`` (single- and cross-environment chains) → ground → model text
recorded once from a scripted server → ``dataclaw tasks synth`` replaying the recording; every task's
verifier is proven on fresh sessions."""

from __future__ import annotations

import json
import shutil

import pytest

from dataclaw.cli.app import _run
from dataclaw.core.store import RunStore
from dataclaw.envcraft.tasks import GroundStage, SynthStage, evaluate, replay_task
from dataclaw.models import get_model
from dataclaw.pipeline import run_stage
from dataclaw.pipeline.executors import LocalExecutor
from support.openai_server import OpenAIServer

ENVS = ["temporal_scheduling", "event_triggering", "bilateral_matching", "state_machine"]
TASK_KEYS = {
    "id",
    "env",
    "env_module",
    "scenario_id",
    "persona",
    "instruction",
    "user_turns",
    "initial_state",
    "verifier",
    "gold_chain",
    "metadata",
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, task_text_writer) -> dict:
    root = tmp_path_factory.mktemp("tasks")
    run = root / "recorded"
    args = ["tasks", "sample", "--out", str(run), "-n", "40", "--seed", "5", "--cross-env", "0.3"]
    assert _run([*args, *[x for e in ENVS for x in ("--env", e)]]) == 0
    replay = root / "answers.jsonl"
    with RunStore(run) as store, OpenAIServer(responder=task_text_writer) as server:
        chains = list(store.records("chains"))
        run_stage(GroundStage(), chains, store, LocalExecutor(workers=1))
        stage = SynthStage("unused")
        stage._model = get_model(f"{server.base_url}::scripted", cache=False, record_to=replay)
        run_stage(stage, list(store.records("grounded")), store, LocalExecutor(workers=1))
        tasks = list(store.records("tasks"))
        calls = server.request_count
    return {"root": root, "run": run, "replay": replay, "tasks": tasks, "calls": calls}


@pytest.mark.slow
def test_synth_cli_replays_recorded_answers_and_resumes(recorded, capsys) -> None:
    assert recorded["tasks"], "no task survived synthesis"
    run2 = recorded["root"] / "replayed"
    run2.mkdir()
    shutil.copy(recorded["run"] / "chains.jsonl", run2 / "chains.jsonl")
    args = ["tasks", "synth", "--run", str(run2), "--model", f"replay:{recorded['replay']}"]
    assert _run(args) == 0
    out = capsys.readouterr().out
    assert "grounded" in out and "tasks" in out and "pass rate" in out
    replayed = [json.loads(x) for x in (run2 / "tasks.jsonl").read_text().splitlines()]
    by_id = {t["id"]: t for t in recorded["tasks"]}
    assert sorted(t["id"] for t in replayed) == sorted(by_id)  # same tasks, in completion order
    assert all(t["user_turns"] == by_id[t["id"]]["user_turns"] for t in replayed)
    usage = json.loads((run2 / "manifest.json").read_text())["models"]["usage"]["total"]
    assert usage["calls"] >= 2 * len(replayed)  # the model calls are on record (replayed answers)
    # resume: a rerun adds nothing and still prints the summary
    assert _run(args) == 0
    assert len((run2 / "tasks.jsonl").read_text().splitlines()) == len(replayed)
    assert "pass rate" in capsys.readouterr().out
    rejects = [json.loads(x) for x in (run2 / "rejects.jsonl").read_text().splitlines()]
    assert all(r["reason"] for r in rejects)


@pytest.mark.slow
def test_every_task_is_a_complete_record_with_a_sound_verifier(recorded) -> None:
    assert any(t.get("envs") for t in recorded["tasks"]), "no cross-environment task"
    for task in recorded["tasks"]:
        cross = {"envs", "env_modules"} if task.get("envs") else set()
        assert set(task) == TASK_KEYS | cross
        assert task["user_turns"] and task["persona"]["id"]
        assert task["gold_chain"][-1]["tool"]
        # soundness: the gold chain replayed on a fresh session → 1.0; doing nothing → < 1.0
        gold = replay_task(task)
        assert (gold["score"], gold["errors"]) == (1.0, 0), task["id"]
        assert replay_task(task, calls=[])["score"] < 1.0
        assert evaluate(task["verifier"], task["initial_state"])["score"] < 1.0
        md = task["metadata"]
        assert md["verifier_check"]["gold"] == 1.0 and md["verifier_check"]["initial"] < 1.0
        # information hiding held: no tool-derived value is stated in the user turns
        blob = " ".join(task["user_turns"]).lower()
        for r in md["tool_derived"]:
            if isinstance(r["value"], str) and len(r["value"]) >= 3:
                user_vals = {str(u["value"]) for u in md["user_specified"]}
                assert r["value"] in user_vals or r["value"].lower() not in blob
