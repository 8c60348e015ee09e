"""BFCL-v3 multi-turn from the real ``bfcl-eval`` wheel (``make bfcl-wheel``): task records, backend classes
as env packages run in the sandboxed env worker, BFCL's state-based check as the reward (gold = 1.0,
untouched = 0), per-item rejects, resume, and the imported tasks through ``tasks rollout``."""

from __future__ import annotations

import json
import shutil
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from dataclaw.cli.app import _run
from dataclaw.envcraft.importers import Produces, run_import
from dataclaw.envcraft.importers.bfcl import BFCL_VERSION, default_wheel
from dataclaw.envcraft.synth.library import library_packages
from dataclaw.envcraft.tasks.tool.stages import replay_task
from dataclaw.sandbox import sandbox_available
from support.openai_server import OpenAIServer, Reply

WHEEL = default_wheel()
pytestmark = [
    pytest.mark.skipif(
        WHEEL is None,
        reason=f"the bfcl-eval wheel is not cached: run `make bfcl-wheel` (bfcl-eval=={BFCL_VERSION})",
    ),
    pytest.mark.skipif(
        not sandbox_available(), reason="needs the sandbox (BFCL backends run in the env worker)"
    ),
]

# one per shape that matters: two classes sharing a turn, a backend that keeps (and later mutates) an argument
# list, ground truth passing a string for a declared integer, a held-out-function turn, an empty ground-truth
# turn, and a long-context entry
IDS = [
    "multi_turn_base_0",
    "multi_turn_base_90",
    "multi_turn_base_173",
    "multi_turn_miss_func_0",
    "multi_turn_miss_param_0",
    "multi_turn_long_context_1",
]


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("bfcl") / "run"
    s = run_import("bfcl", WHEEL, run, Produces.TASKS, options={"ids": IDS})
    assert (s.items, s.imported, s.rejects) == (len(IDS), len(IDS), {}), s.reject_messages
    return run


@pytest.fixture(scope="module")
def tasks(imported: Path) -> dict[str, dict[str, Any]]:
    return {r["scenario_id"]: r for r in _records(imported / "tasks.jsonl")}


@pytest.mark.slow
def test_entries_become_task_records_with_turns_config_and_per_turn_ground_truth(tasks) -> None:
    assert set(tasks) == set(IDS)
    t = tasks["multi_turn_base_0"]
    assert t["env"] == "bfcl_gorilla_file_system_twitter_a_p_i"
    assert Path(t["env_module"], "backend", "gorilla_file_system.py").is_file()
    assert len(t["user_turns"]) == len(t["metadata"]["gold_turns"]) == 4
    assert t["initial_state"]["bfcl"]["initial_config"]["GorillaFileSystem"]["root"]["workspace"]
    assert t["initial_state"]["check"]["valid"] is False  # nothing done yet
    assert t["gold_chain"][:2] == [
        {"tool": "cd", "params": {"folder": "document"}},
        {"tool": "mkdir", "params": {"dir_name": "temp"}},
    ]
    assert t["verifier"]["assertions"] == [
        {"path": "/check/valid", "op": "eq", "value": True, "why": "BFCL multi-turn state and response check"}
    ]
    # positional ground truth (``sort('final_report.pdf')``) is named from the method's signature
    assert {"tool": "sort", "params": {"file_name": "final_report.pdf"}} in t["gold_chain"]
    held = tasks["multi_turn_miss_func_0"]
    assert held["user_turns"][3].startswith("I have updated some more functions")
    assert held["metadata"]["missed_function"] == {"3": ["sort"]}
    assert tasks["multi_turn_long_context_1"]["initial_state"]["bfcl"]["long_context"] is True
    for t in tasks.values():
        assert t["metadata"]["gold_replay"]["valid"] is True
    # the backend classes were never imported here: they ran in the worker's sandbox
    assert not [m for m in sys.modules if "gorilla_file_system" in m or m.split(".")[0].startswith("bfcl")]


@pytest.mark.slow
def test_gold_replay_scores_one_and_an_untouched_or_partial_episode_zero(tasks) -> None:
    for sid, t in tasks.items():
        assert replay_task(t)["score"] == 1.0, sid
        assert replay_task(t, [])["score"] == 0.0, sid
    t = tasks["multi_turn_base_0"]
    assert replay_task(t, t["gold_chain"][:-1])["score"] == 0.0  # the last turn's diff never ran
    # the right end state through a wrong call is still wrong: the turn's results must be among the agent's
    wrong = [
        c if c["tool"] != "grep" else {**c, "params": {**c["params"], "pattern": "nothing"}}
        for c in t["gold_chain"]
    ]
    assert replay_task(t, wrong)["score"] == 0.0


def _per_turn_agent(turns: list[list[dict[str, Any]]]):
    """Plays BFCL's ground truth turn by turn: the calls of user turn k after the k-th user message."""

    def respond(req) -> Reply:
        msgs = req.body["messages"]
        k = sum(1 for m in msgs if m["role"] == "user") - 1
        last_user = max(i for i, m in enumerate(msgs) if m["role"] == "user")
        done = sum(1 for m in msgs[last_user:] if m["role"] == "assistant")
        if k < len(turns) and done < len(turns[k]):
            c = turns[k][done]
            return Reply.tool_call(c["tool"], c["params"], call_id=f"c{k}_{done}")
        return Reply.text("Done.")

    return respond


@pytest.mark.slow
def test_tasks_rollout_with_an_agent_playing_the_gold_calls_gets_reward_one(
    imported, tasks, tmp_path
) -> None:
    picked = [tasks["multi_turn_base_90"], tasks["multi_turn_miss_param_0"]]
    src = tmp_path / "tasks.jsonl"
    src.write_text("".join(json.dumps(t) + "\n" for t in picked))
    by_turn = {t["id"]: t["metadata"]["gold_turns"] for t in picked}

    def respond(req) -> Reply:
        first = req.body["messages"][1]["content"]
        turns = next(v for t in picked for v in [by_turn[t["id"]]] if t["user_turns"][0] == first)
        return _per_turn_agent(turns)(req)

    with OpenAIServer(responder=respond) as server:
        out = tmp_path / "ro"
        assert (
            _run(["tasks", "rollout", str(src), "-o", str(out), "--model", f"{server.base_url}::agent"]) == 0
        )
    rewards = {r["task_id"]: r["reward"] for r in _records(out / "rollouts.jsonl")}
    assert rewards == {t["id"]: 1.0 for t in picked}

    with OpenAIServer(responder=lambda req: Reply.text("I cannot help with that.")) as server:
        out = tmp_path / "idle"
        assert (
            _run(["tasks", "rollout", str(src), "-o", str(out), "--model", f"{server.base_url}::agent"]) == 0
        )
    assert {r["reward"] for r in _records(out / "rollouts.jsonl")} == {0.0}


def _unpacked(tmp_path: Path) -> Path:
    """The wheel's own files, unpacked, for editing into bad entries."""
    root = tmp_path / "bfcl"
    with zipfile.ZipFile(WHEEL) as z:
        z.extractall(root, [n for n in z.namelist() if n.startswith("bfcl_eval/")])
    return root


def _edit_jsonl(path: Path, fn) -> None:
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    path.write_text("".join(json.dumps(r) + "\n" for r in map(fn, rows)))


@pytest.mark.slow
def test_malformed_entries_unknown_tools_and_broken_backends_are_rejects_and_a_rerun_resumes(
    tmp_path,
) -> None:
    root = _unpacked(tmp_path)
    data = root / "bfcl_eval" / "data"
    qfile = next(data.glob("BFCL_v*_multi_turn_base.json"))
    afile = next((data / "possible_answer").glob("BFCL_v*_multi_turn_base.json"))

    def broken_question(q: dict[str, Any]) -> dict[str, Any]:
        if q["id"] == "multi_turn_base_1":
            return {k: v for k, v in q.items() if k != "question"}
        return q

    def broken_answer(a: dict[str, Any]) -> dict[str, Any]:
        if a["id"] == "multi_turn_base_0":
            return {**a, "ground_truth": [["teleport(to='mars')"], *a["ground_truth"][1:]]}
        if a["id"] == "multi_turn_base_3":
            return {**a, "ground_truth": [["cd(folder="], *a["ground_truth"][1:]]}
        return a

    _edit_jsonl(qfile, broken_question)
    _edit_jsonl(afile, broken_answer)
    # a backend class that does not compile (the math API: its tasks go, the others stay)
    math = root / "bfcl_eval" / "eval_checker" / "multi_turn_eval" / "func_source_code" / "math_api.py"
    math.write_text(math.read_text().replace("class MathAPI:", "class MathAPI(:", 1))
    ids = ["multi_turn_base_0", "multi_turn_base_1", "multi_turn_base_2", "multi_turn_base_3"]
    math_id = next(json.loads(x)["id"] for x in qfile.read_text().splitlines() if "MathAPI" in x)
    run = tmp_path / "run"
    opts = {"categories": ["multi_turn_base"], "ids": [*ids, math_id]}
    s = run_import("auto", root, run, Produces.TASKS, options=opts)
    rejects = {r["detail"]["key"]: (r["reason"], r["message"]) for r in _records(run / "rejects.jsonl")}
    assert s.format == "bfcl" and s.imported == 1, s.reject_messages
    assert rejects["multi_turn_base/multi_turn_base_0"][0] == "unknown_tool"
    assert "teleport" in rejects["multi_turn_base/multi_turn_base_0"][1]
    assert rejects["multi_turn_base/multi_turn_base_1"][0] == "malformed"
    assert rejects["multi_turn_base/multi_turn_base_3"][0] == "malformed"
    assert rejects[f"multi_turn_base/{math_id}"][0] == "syntax_error"
    again = run_import("bfcl", root, run, Produces.TASKS, options=opts)
    assert (again.resumed, again.imported) == (5, 1)  # rejects are verdicts: the rerun skips all five


def test_a_folder_that_is_no_bfcl_source_says_why(tmp_path) -> None:
    from dataclaw.envcraft.importers.bfcl import BFCLImporter

    (tmp_path / "x.whl").write_bytes(b"not a zip")
    assert "not a readable wheel" in BFCLImporter().sniff(tmp_path / "x.whl")
    assert "bfcl_eval" in BFCLImporter().sniff(tmp_path)
    shutil.copy(WHEEL, tmp_path / "w.whl")
    assert BFCLImporter().sniff(tmp_path / "w.whl") is None


@pytest.mark.slow
def test_env_import_writes_one_runnable_package_per_class_set(tmp_path) -> None:
    lib = tmp_path / "lib"
    s = run_import("bfcl", WHEEL, lib, Produces.ENVIRONMENTS, options={"ids": IDS[:2]})
    assert s.imported == 2 and not s.rejects
    envs = {r["env"]: r for r in _records(lib / "index.jsonl")}  # the library index env synth also writes
    assert set(envs) == {"bfcl_gorilla_file_system_twitter_a_p_i", "bfcl_twitter_a_p_i_vehicle_control_a_p_i"}
    pkg = envs["bfcl_twitter_a_p_i_vehicle_control_a_p_i"]
    assert pkg["passed"] and pkg["path"] == "import" and pkg["scenarios"] == 1
    assert {"post_tweet", "startEngine"} <= set(pkg["tool_names"]) and pkg["tools"] == len(pkg["tool_names"])
    assert [r["env"] for r, _ in library_packages(lib)] == sorted(envs)  # what env list --library shows
    args = [
        "env",
        "call",
        str(lib / pkg["package"]),
        "liter_to_gallon",
        "--scenario",
        "multi_turn_base_90",
        "--arg",
        "liter=10",
    ]
    assert _run(args) == 0
