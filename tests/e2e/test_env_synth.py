"""``dataclaw env synth`` as a user runs it, then the library it wrote feeding the other commands:
``env list --library``, ``tasks sample --library``, ``tasks synth`` and ``tasks rollout`` — the packages'
code only ever running in their sandboxed env workers. Specs come from SmolLM2-135M's recorded answers
(replayed); task text and the agent from a scripted OpenAI-compatible server (a test double)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from dataclaw.cli.app import _run
from dataclaw.sandbox import sandbox_available
from support.openai_server import OpenAIServer, ReceivedRequest, Reply

pytestmark = pytest.mark.slow
RECORDED = Path(__file__).parents[1] / "envcraft" / "synth" / "fixtures" / "compile"
SCENARIOS = ["support_ticketing", "monitoring_logging"]
JOB = "A user wants an AI assistant to "


@pytest.fixture(autouse=True)
def require_bwrap() -> None:
    avail = sandbox_available()
    if not avail:
        pytest.skip(avail.reason)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def writer(req: ReceivedRequest) -> Reply:
    """Task text as a competent model writes it (user values verbatim), and an agent that answers in
    words without calling a tool."""
    body = req.body or {}
    if body.get("tools"):
        return Reply.text("I have looked into it; nothing else to do.")
    prompt = body["messages"][-1]["content"]
    if prompt.startswith(JOB):
        job = prompt[len(JOB) :].split("\n", 1)[0].rstrip(".")
        return Reply.json({"message": f"Hi! Could you please {job}? Thanks."})
    steps = re.findall(r"^\d+\. (.+)$", prompt.split("Its steps:\n", 1)[1], flags=re.M)
    return Reply.json({"messages": [f"Step {i + 1}: please {s}." for i, s in enumerate(steps)]})


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synth")
    replay = root / "smollm2.jsonl"
    replay.write_text("".join((RECORDED / f"smollm2_{s}.jsonl").read_text() for s in SCENARIOS))
    out = root / "LIB"
    args = ["env", "synth", "--out", str(out), "--model", f"replay:{replay}", "--spec-bounds", "compact"]
    args += [x for s in [*SCENARIOS, "not_a_scenario"] for x in ("--scenario", s)]
    code = _run(args)
    # a library with no passing environment is a run that produced nothing: exit 1, why in one line
    assert code == (0 if any(r["passed"] for r in _jsonl(out / "index.jsonl")) else 1)
    before = (out / "index.jsonl").read_text()
    assert _run(args) == code  # a rerun resumes: nothing to do, nothing written
    assert (out / "index.jsonl").read_text() == before
    return out


def test_synth_writes_the_index_and_the_packages(lib: Path, capsys) -> None:
    """SmolLM2's specs compile into packages that pass the audit, but they are generic CRUD over one
    entity named after an id: the meaning gates fail them, so none passes, and the library says so."""
    rows = {r["scenario_id"]: r for r in _jsonl(lib / "index.jsonl")}
    assert set(rows) == {*SCENARIOS, "not_a_scenario"}
    for sid in SCENARIOS:
        r = rows[sid]
        assert r["gates"]["spec"] and r["gates"]["audit"] and (lib / r["package"] / "SKILL.md").is_file()
        assert r["passed"] == (r["status"] == "passing") == all(r["gates"].values())
    assert rows["not_a_scenario"]["reasons"][0]["code"] == "unknown_scenario"
    assert _run(["env", "list", "--library", str(lib), "--json"]) == 0
    listed = {e["name"]: e for e in json.loads(capsys.readouterr().out)}
    assert set(SCENARIOS) <= set(listed) and all(listed[s]["tools"] >= 6 for s in SCENARIOS)
    assert {listed[s]["status"] for s in SCENARIOS} <= {"passing", "failed"}


def test_library_feeds_sample_synth_and_rollout(lib: Path, tmp_path: Path, capsys) -> None:
    """``tasks sample --library`` takes only passing environments (none here: it says so in one line);
    the packages themselves, named by folder, still feed sampling, task text and rollouts."""
    run = tmp_path / "run"
    rows = {r["scenario_id"]: r for r in _jsonl(lib / "index.jsonl")}
    passing = [s for s in SCENARIOS if rows[s]["passed"]]
    code = _run(["tasks", "sample", "--library", str(lib), "--out", str(run), "-n", "12", "--seed", "3"])
    assert code == (0 if passing else 1)
    if not passing:
        assert "has no passing environment" in capsys.readouterr().err
        folders = [x for s in SCENARIOS for x in ("--env", str(lib / rows[s]["package"]))]
        assert _run(["tasks", "sample", *folders, "--out", str(run), "-n", "12", "--seed", "3"]) == 0
    chains = _jsonl(run / "chains.jsonl")
    assert {c["envs"][0] for c in chains} == set(SCENARIOS)
    homes = {(lib / rows[s]["package"]).parent for s in SCENARIOS}
    assert all(Path(c["env_modules"][c["envs"][0]]).parent in homes for c in chains)
    with OpenAIServer(responder=writer) as server:
        assert _run(["tasks", "synth", "--run", str(run), "--model", f"{server.base_url}::writer"]) == 0
        tasks = _jsonl(run / "tasks.jsonl")
        assert tasks and {t["env"] for t in tasks} <= set(SCENARIOS)
        assert all(t["metadata"]["verifier_check"]["gold"] == 1.0 for t in tasks)
        rollouts = tmp_path / "rollouts"
        args = ["tasks", "rollout", str(run), "--out", str(rollouts), "--model", f"{server.base_url}::agent"]
        assert _run([*args, "--limit", "2", "--max-turns", "2"]) == 0
    recs = _jsonl(rollouts / "rollouts.jsonl")
    assert len(recs) == 2 and all(0.0 <= r["reward"] < 1.0 for r in recs)  # did nothing: not solved
    capsys.readouterr()
    # the synthesised packages ran in their workers, never in this process
    assert not [m for m in sys.modules if m.split(".")[0] in SCENARIOS]
