"""τ²-bench, the real thing: the published ``src/tau2`` (../shared/data/tau2-bench, a2c0247, MIT) and the
real mock and retail domain data (../shared/data/tau2) laid out as a checkout, imported with tau2's own
environment, tools, database hash and EnvironmentEvaluator running in the sandboxed env worker on
``.venv-tau2`` (never in this process). Gold = 1.0 and doing nothing = 0 on every imported task, the state's
``reward_components`` against tau2's own ``EnvironmentEvaluator``, rejects with reasons (a gold that
changes nothing is flagged ``gold_noop``), resume, a domain without its code, a missing side venv, and the
imported tasks through ``tasks rollout``."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from dataclaw.cli.app import _run
from dataclaw.envcraft.importers import Produces, run_import
from dataclaw.envcraft.importers.base import package_handle
from dataclaw.envcraft.importers.tau2 import Tau2Importer, convert_task
from dataclaw.envcraft.tasks.tool.stages import replay_task
from dataclaw.envcraft.worker.pythons import PythonEnvMissing, python_env_name, python_for
from dataclaw.sandbox import sandbox_available
from support.openai_server import OpenAIServer, Reply

SHARED = Path(__file__).resolve().parents[4] / "shared" / "data"
DATA, SRC = SHARED / "tau2", SHARED / "tau2-bench" / "src"
pytestmark = pytest.mark.skipif(not (DATA / "mock").is_dir(), reason="needs ../shared/data/tau2")
needs_real = pytest.mark.skipif(
    not sandbox_available() or not (SRC / "tau2").is_dir(),
    reason="needs the sandbox and ../shared/data/tau2-bench",
)
try:
    python_for("tau2")
    HAVE_VENV = True
except PythonEnvMissing:
    HAVE_VENV = False
needs_venv = pytest.mark.skipif(not HAVE_VENV, reason="needs .venv-tau2 (make tau2-setup)")
MOCK_REJECTS = {
    # no criteria but NL assertions: tau2's default basis (DB) passes by doing nothing
    "mock/create_task_1_nl_eval": "unsupported",
    # tau2's own gold (no action) leaves its env assertion unmet
    "mock/update_task_with_history_and_env_assertions": "gold_fails",
    # its env assertion is on the user's side: only the user's tools meet it
    "mock/update_task_with_user_tools": "unsupported",
    # DB and ACTION, its gold a transfer that changes no database: only the transcript tells (gold_noop)
    "mock/impossible_task_1": "unsupported",
}


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _checkout(root: Path, *domains: str, code: bool = True) -> Path:
    """A tau2-bench checkout's layout: data/tau2/domains/<d>/ (the shared real data) + the real src/."""
    for d in domains:
        shutil.copytree(DATA / d, root / "data" / "tau2" / "domains" / d)
    if code:
        shutil.copytree(SRC, root / "src", ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.fixture(scope="module")
def mock_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (HAVE_VENV and sandbox_available() and (SRC / "tau2").is_dir()):
        pytest.skip("needs the sandbox, .venv-tau2 and ../shared/data/tau2-bench")
    root = _checkout(tmp_path_factory.mktemp("tau2") / "tau2-bench", "mock")
    run = root.parent / "run"
    s = run_import("auto", root, run, Produces.TASKS)
    assert s.format == "tau2" and s.items == 10, s.reject_messages
    return run


@needs_real
@needs_venv
def test_the_real_mock_domain_imports_through_tau2s_own_code(mock_run: Path) -> None:
    tasks = {t["scenario_id"]: t for t in _records(mock_run / "tasks.jsonl")}
    rejects = {r["detail"]["key"]: r for r in _records(mock_run / "rejects.jsonl")}
    assert {k: r["reason"] for k, r in rejects.items()} == MOCK_REJECTS
    assert "gold_noop" in rejects["mock/create_task_1_nl_eval"]["message"]
    assert set(tasks) == {
        "create_task_1",
        "create_task_1_with_env_assertions",
        "update_task_1",
        "update_task_with_message_history",
        "update_task_with_initialization_data",
        "update_task_with_initialization_actions",
    }
    t = tasks["create_task_1"]
    assert t["env"] == "tau2_mock" and t["gold_chain"] == [
        {"tool": "create_task", "params": {"user_id": "user_1", "title": "Important Meeting"}}
    ]
    assert "Important Meeting" in t["user_turns"][0]
    assert [a["path"] for a in t["verifier"]["assertions"]] == ["/tau2_reward"]
    assert t["metadata"]["scored"] == ["db"] and t["metadata"]["not_scored"] == ["COMMUNICATE"]
    # S0 is tau2's: the task, no calls, tau2's DB hash, the components in the agreed shape
    s0 = t["initial_state"]
    assert s0["tau2"]["task"]["id"] == "create_task_1" and s0["calls"] == []
    assert s0["reward_components"]["db"] == {
        "score": 0.0,
        "weight": 1.0,
        "detail": "database differs from the one the gold actions reach (tau2 DB check)",
    }
    env_a = tasks["create_task_1_with_env_assertions"]["initial_state"]["reward_components"]
    assert env_a["env_assertions"]["weight"] == 1.0 and env_a["env_assertions"]["score"] == 0.0
    assert "gold_noop" in rejects["mock/impossible_task_1"]["message"]
    # tau2's message history replays into S0 (task_2 exists before the agent acts)
    hist = tasks["update_task_with_message_history"]
    assert hist["initial_state"]["db_hash"] != t["initial_state"]["db_hash"]
    pkg = mock_run / "envs" / "tau2_mock"
    assert python_env_name(pkg) == "tau2"
    assert (pkg / "data" / "tau2" / "domains" / "mock" / "user_db.json").is_file()
    assert (pkg / "vendor" / "tau2" / "evaluator" / "evaluator_env.py").is_file()
    assert not [m for m in sys.modules if m == "tau2" or m.startswith("tau2.")]  # only in the sandbox


@needs_real
@needs_venv
def test_gold_scores_one_doing_nothing_zero_and_wrong_or_read_only_episodes_zero(mock_run: Path) -> None:
    tasks = _records(mock_run / "tasks.jsonl")
    for t in tasks:
        assert replay_task(t)["score"] == 1.0, t["scenario_id"]
        assert replay_task(t, [])["score"] == 0.0, t["scenario_id"]
    t = next(t for t in tasks if t["scenario_id"] == "create_task_1")
    wrong = [{"tool": "create_task", "params": {"user_id": "user_1", "title": "Unimportant Meeting"}}]
    assert replay_task(t, wrong)["score"] == 0.0
    # gold, then extra harm: another task created for the same user changes the database
    assert replay_task(t, t["gold_chain"] + wrong)["score"] == 0.0
    # a read changes nothing; an unknown user is tau2's own tool error, the DB stays as it was
    reads = [
        {"tool": "get_users", "params": {}},
        {"tool": "create_task", "params": {"user_id": "nobody", "title": "x"}},
    ]
    out = replay_task(t, reads)
    assert (out["score"], out["errors"]) == (0.0, 1)


@needs_real
@needs_venv
def test_state_components_agree_with_tau2s_own_evaluators(mock_run: Path) -> None:
    """The ``tau2`` dimension runs tau2's EnvironmentEvaluator and ActionEvaluator end to end (fresh
    environments, tau2's replay of the session's messages): it agrees with the state's ``tau2_reward``
    on gold, on doing nothing and on a wrong write, task by task."""
    handle = package_handle(mock_run / "envs" / "tau2_mock")
    for t in _records(mock_run / "tasks.jsonl"):
        wrong = [{"tool": "create_task", "params": {"user_id": "user_1", "title": "Not this"}}]
        for calls in (t["gold_chain"], [], wrong):
            session = handle.session(t["scenario_id"], initial_state=t["initial_state"])
            try:
                for c in calls:
                    session.call(c["tool"], **c["params"])
                state, ev = session.state(), session.evaluate()
            finally:
                session.close()
            assert ev["dimensions"]["tau2"]["score"] == state["tau2_reward"], (t["scenario_id"], calls)


@needs_real
@needs_venv
def test_a_rerun_resumes_and_tasks_rollout_with_the_gold_calls_gets_reward_one(
    mock_run: Path, tmp_path
) -> None:
    again = run_import("tau2", mock_run.parent / "tau2-bench", mock_run, Produces.TASKS)
    assert (again.resumed, again.imported) == (10, 6)
    tasks = [
        t
        for t in _records(mock_run / "tasks.jsonl")
        if t["scenario_id"] in ("create_task_1", "update_task_1")
    ]
    src = tmp_path / "tasks.jsonl"
    src.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    gold = {t["user_turns"][0]: t["gold_chain"] for t in tasks}

    def respond(req) -> Reply:
        msgs = req.body["messages"]
        calls = gold[msgs[1]["content"]]
        n = sum(1 for m in msgs if m["role"] == "assistant")
        if n < len(calls):
            return Reply.tool_call(calls[n]["tool"], calls[n]["params"], call_id=f"c{n}")
        return Reply.text("Done.")

    with OpenAIServer(responder=respond) as server:
        out = tmp_path / "ro"
        assert (
            _run(["tasks", "rollout", str(src), "-o", str(out), "--model", f"{server.base_url}::agent"]) == 0
        )
    records = _records(out / "rollouts.jsonl")
    assert {r["reward"] for r in records} == {1.0}
    # the db component is the one tau2's DB check scored in the worker
    assert {r["reward_components"]["db"]["detail"] for r in records} == {
        "database matches the gold actions' (tau2 DB check)"
    }


@needs_real
@needs_venv
def test_env_import_makes_one_library_row_per_domain_with_tau2s_tools(mock_run: Path, tmp_path) -> None:
    s = run_import("tau2", mock_run.parent / "tau2-bench", tmp_path / "lib", Produces.ENVIRONMENTS)
    assert (s.items, s.imported) == (1, 1), s.reject_messages
    row = _records(tmp_path / "lib" / "index.jsonl")[0]
    assert (row["env"], row["passed"], row["scenarios"]) == ("tau2_mock", True, 9)  # the convertible tasks
    assert row["tool_names"] == ["create_task", "get_users", "transfer_to_human_agents", "update_task_status"]


def test_retail_without_its_code_is_a_reject_per_task_naming_the_file(tmp_path) -> None:
    run = tmp_path / "run"
    s = run_import("tau2", DATA / "retail", run, Produces.TASKS)
    assert (s.items, s.imported, s.rejects) == (114, 0, {"missing_tools": 114})
    msg = _records(run / "rejects.jsonl")[0]["message"]
    assert "src/tau2/domains/retail/tools.py" in msg


def test_a_package_whose_side_venv_is_missing_says_how_to_get_it(tmp_path, monkeypatch) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    assert python_env_name(pkg) is None
    (pkg / "runtime.json").write_text('{"python_env": "tau2"}')
    assert python_env_name(pkg) == "tau2"
    monkeypatch.setenv("DATACLAW_TAU2_PYTHON", str(tmp_path / "nowhere" / "python"))
    with pytest.raises(PythonEnvMissing, match=r"DATACLAW_TAU2_PYTHON"):
        python_for("tau2")
    if (SRC / "tau2").is_dir():  # the import goes on: each task a reject that says what to do
        s = run_import("tau2", _checkout(tmp_path / "ck", "mock"), tmp_path / "run", Produces.TASKS)
        assert (s.imported, s.rejects) == (0, {"import_error": 9, "unsupported": 1}), s.reject_messages
        assert "$DATACLAW_TAU2_PYTHON" in s.reject_messages[0] and "not a file" in s.reject_messages[0]
    monkeypatch.delenv("DATACLAW_TAU2_PYTHON")
    monkeypatch.chdir(tmp_path)
    if not HAVE_VENV:
        with pytest.raises(PythonEnvMissing, match=r"make tau2-setup"):
            python_for("tau2")
    (pkg / "runtime.json").write_text('{"python_env": "../../usr/bin/python"}')
    with pytest.raises(PythonEnvMissing, match="short lowercase name"):
        python_env_name(pkg)


def test_every_real_retail_task_converts_with_its_db_criteria_and_user_scenario() -> None:
    tasks = json.loads((DATA / "retail" / "tasks.json").read_text())
    converted = [convert_task("retail", t) for t in tasks]
    assert len(converted) == 114
    assert all("DB" in c["reward_basis"] and c["turn"] for c in converted)
    first = converted[0]
    assert first["gold"][-1]["tool"] == "exchange_delivered_order_items"
    assert "#W2378156" in first["turn"] and "Yusuf Rossi" in first["turn"]
    assert first["setup"]["task"] == tasks[0]  # tau2 gets its task as it is


def test_sources_that_are_not_tau2_and_malformed_tasks_say_why(tmp_path) -> None:
    assert "no tau2 domain" in Tau2Importer().sniff(tmp_path)
    root = _checkout(tmp_path / "ck", "mock", code=False)
    tasks_file = root / "data" / "tau2" / "domains" / "mock" / "tasks.json"
    tasks = json.loads(tasks_file.read_text())
    tasks[0] = {"id": tasks[0]["id"], "evaluation_criteria": {}}  # no user scenario
    tasks[1]["evaluation_criteria"]["actions"][0] = {"arguments": {}}  # an action without a name
    tasks.append(dict(tasks[3]))  # a duplicate id
    tasks_file.write_text(json.dumps(tasks))
    rows = Tau2Importer()._plan(root)[0][1]
    errors = {key: str(err.reason) for key, _, err in rows if err is not None}
    assert errors == {
        f"mock/{tasks[0]['id']}": "malformed",
        f"mock/{tasks[1]['id']}": "malformed",
        f"mock/{tasks[3]['id']}": "duplicate",
        "mock/update_task_with_user_tools": "unsupported",  # the real task whose assertion is the user's
    }


@pytest.mark.slow
@needs_real
@needs_venv
def test_all_124_real_tasks_gold_one_and_doing_nothing_zero(tmp_path) -> None:
    """The whole published mock + retail task set (10 + 114): every task is imported or a reject with its
    reason; every imported one scores 1.0 on its gold and 0 on doing nothing (scored in the import, and
    again here through ``replay_task``); the soundness suite on a sample."""
    from dataclaw.envcraft.quality.soundness import SoundnessSettings, run_soundness

    root = _checkout(tmp_path / "tau2-bench", "mock", "retail")
    started = time.monotonic()
    s = run_import("tau2", root, tmp_path / "run", Produces.TASKS)
    took = time.monotonic() - started
    assert s.items == 124, s.reject_messages
    rejects = {r["detail"]["key"]: r for r in _records(tmp_path / "run" / "rejects.jsonl")}
    noop = sorted(k for k, r in rejects.items() if "gold_noop" in r["message"])
    assert noop == ["mock/create_task_1_nl_eval", "mock/impossible_task_1"] + [
        f"retail/{i}" for i in ("10", "105", "12", "24", "25", "50", "57", "62", "65", "67", "68")
    ]
    assert {k: r["reason"] for k, r in rejects.items() if k.startswith("mock/")} == MOCK_REJECTS
    assert s.imported == 124 - len(rejects) == 109, s.reject_messages
    tasks = _records(tmp_path / "run" / "tasks.jsonl")
    retail = [t for t in tasks if t["env"] == "tau2_retail"]
    assert len(retail) == 103
    for t in retail[::10]:
        assert replay_task(t)["score"] == 1.0 and replay_task(t, [])["score"] == 0.0, t["scenario_id"]
    # gold reads tau2's own tools refuse (ids that do not exist) are left out of the chain, listed
    refused = [t for t in retail if t["metadata"]["gold_errors"]]
    assert len(refused) == 12
    for t in refused[:3]:
        crit = t["metadata"]["evaluation_criteria"]["actions"]
        assert len(t["gold_chain"]) == len(crit) - len(t["metadata"]["gold_errors"])
        assert replay_task(t) == {"score": 1.0, "passed": True, "results": [True], "errors": 0}
    reports = [run_soundness(t, SoundnessSettings(random_episodes=2)) for t in retail[:3]]
    print(f"import of 124 tasks: {took:.1f} s; soundness:", [r.to_record() for r in reports])
    assert all(r.passed for r in reports), [r.to_record() for r in reports]
