"""Reward components on the real τ²-bench mock domain (the published src/tau2 and mock data imported with
``tasks import tau2``, tau2's own code in the env worker on .venv-tau2): the environment's own db check
replaces ours, communicate comes from τ²'s communicate_info and the transcript, and the reward is the
product over τ²'s reward basis (DB, COMMUNICATE by default)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from dataclaw.cli.app import _run
from dataclaw.envcraft.importers import Produces, run_import
from dataclaw.envcraft.worker.pythons import PythonEnvMissing, python_for
from dataclaw.sandbox import sandbox_available
from support.openai_server import OpenAIServer, ReceivedRequest, Reply

SHARED = Path(__file__).resolve().parents[4] / "shared" / "data"
DATA, SRC = SHARED / "tau2" / "mock", SHARED / "tau2-bench" / "src"


def _have_venv() -> bool:
    try:
        python_for("tau2")
    except PythonEnvMissing:
        return False
    return True


pytestmark = [
    pytest.mark.slow,  # a τ² import through the env worker, then rollouts against it
    pytest.mark.skipif(
        not (DATA.is_dir() and (SRC / "tau2").is_dir() and sandbox_available() and _have_venv()),
        reason="needs ../shared/data/tau2{,-bench}, the sandbox and .venv-tau2 (make tau2-setup)",
    ),
]
TASKS = ("mock/create_task_1", "mock/update_task_with_initialization_data")


def _agent(rows: dict[str, dict[str, Any]], text: str):
    """Replays the gold chain of the task it is asked about, then says ``text``."""
    by_turn = {r["user_turns"][0]: r for r in rows.values()}

    def respond(req: ReceivedRequest) -> Reply:
        msgs = (req.body or {})["messages"]
        row = by_turn[next(m["content"] for m in msgs if m["role"] == "user")]
        n = sum(1 for m in msgs if m["role"] == "assistant")
        chain = row["gold_chain"]
        if n < len(chain):
            return Reply.tool_call(chain[n]["tool"], chain[n]["params"], call_id=f"c{n}")
        return Reply.text(text)

    return respond


def test_tau2_components_and_basis_on_the_real_mock_domain(tmp_path: Path) -> None:
    root = tmp_path / "tau2-bench"
    shutil.copytree(DATA, root / "data" / "tau2" / "domains" / "mock")
    shutil.copytree(SRC, root / "src", ignore=shutil.ignore_patterns("__pycache__"))
    run = tmp_path / "run"
    run_import("tau2", root, run, Produces.TASKS)
    rows = {
        r["metadata"]["tau2_id"]: r
        for r in map(json.loads, (run / "tasks.jsonl").read_text().splitlines())
        if r["metadata"]["tau2_id"] in {t.split("/")[1] for t in TASKS}
    }
    assert len(rows) == 2
    sub = tmp_path / "two.jsonl"
    sub.write_text("".join(json.dumps(r) + "\n" for r in rows.values()))
    crit = rows["update_task_with_initialization_data"]["metadata"]["evaluation_criteria"]
    said = " ".join(crit["communicate_info"])  # τ²'s info strings, said verbatim

    got = {}
    for name, text in (("silent", "Done."), ("told", said)):
        with OpenAIServer(responder=_agent(rows, text)) as server:
            args = [
                "tasks",
                "rollout",
                str(sub),
                "-o",
                str(tmp_path / name),
                "--model",
                f"{server.base_url}::a",
            ]
            assert _run(args) == 0
        recs = map(json.loads, (tmp_path / name / "rollouts.jsonl").read_text().splitlines())
        got[name] = {rows_id(rows, r["task_id"]): r for r in recs}

    for name in ("silent", "told"):
        create = got[name]["create_task_1"]
        comps = create["reward_components"]
        # the environment's own db check (τ²'s hash comparison in the worker), in the basis
        assert comps["db"]["score"] == 1.0 and comps["db"]["weight"] == 1.0
        assert "verifier assertions hold" not in comps["db"]["detail"]
        # no communicate info: absent, not 1.0; its NL assertions are outside the basis (weight 0)
        assert "communicate" not in comps and comps["nl_assertions"]["weight"] == 0.0
        assert create["reward"] == 1.0
    # the basis has COMMUNICATE and the task lists info: acting without saying it is not a pass
    silent = got["silent"]["update_task_with_initialization_data"]
    assert silent["reward_components"]["communicate"]["score"] == 0.0 and silent["reward"] == 0.0
    told = got["told"]["update_task_with_initialization_data"]
    assert told["reward_components"]["communicate"]["score"] == 1.0 and told["reward"] == 1.0


def rows_id(rows: dict[str, dict[str, Any]], task_id: str) -> str:
    return next(k for k, r in rows.items() if r["id"] == task_id)
