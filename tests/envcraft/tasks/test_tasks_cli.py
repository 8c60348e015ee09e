"""``dataclaw tasks sample|synth`` on ClawForge's graphs: reproducible, resumable, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

from dataclaw.cli.app import _run


def _graph_args(shared_data: Path) -> list[str]:
    files = sorted((shared_data / "clawforge" / "tool_graphs").glob("*_tool_graph.json"))
    return [x for f in files for x in ("--graph", str(f))]


def test_sample_is_reproducible_and_resumable(shared_data: Path, tmp_path: Path, capsys) -> None:
    base = ["tasks", "sample", "-n", "40", "--seed", "2", "--cross-env", "0.5", *_graph_args(shared_data)]
    assert _run([*base, "--out", str(tmp_path / "a")]) == 0
    assert _run([*base, "--out", str(tmp_path / "b")]) == 0
    a = (tmp_path / "a" / "chains.jsonl").read_text()
    assert a == (tmp_path / "b" / "chains.jsonl").read_text()
    chains = [json.loads(x) for x in a.splitlines()]
    assert len(chains) == 40 and any(c["cross_env"] for c in chains)
    capsys.readouterr()
    assert _run([*base, "--out", str(tmp_path / "a")]) == 0
    assert "0 new" in capsys.readouterr().out
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["chains"]["stats"]["chains"] == 40


def test_synth_rejects_chains_it_cannot_ground_with_reasons(
    shared_data: Path, tmp_path: Path, capsys
) -> None:
    run = tmp_path / "cf"
    args = ["tasks", "sample", "-n", "10", "--cross-env", "0.5", "--out", str(run), *_graph_args(shared_data)]
    assert _run(args) == 0
    capsys.readouterr()
    # nothing grounded, so no task: the summary is printed, then exit 1 with why in one line (issue 27)
    assert _run(["tasks", "synth", "--run", str(run), "--model", "replay:unused.jsonl"]) == 1
    got = capsys.readouterr()
    assert "grounded" in got.out and "0.0%" in got.out
    why = f"0 tasks: all 10 rejected at grounded (unknown_env 10), see {run / 'rejects.jsonl'}"
    assert got.err.strip() == f"error: {why}"
    reasons = {json.loads(x)["reason"] for x in (run / "rejects.jsonl").read_text().splitlines()}
    assert reasons == {"unknown_env"}  # ClawForge ships graphs, not runnable environments


def test_synth_without_chains_is_one_clear_line(tmp_path: Path, capsys) -> None:
    assert _run(["tasks", "synth", "--run", str(tmp_path)]) == 1
    assert "has no chains.jsonl" in capsys.readouterr().err


def test_sample_with_model_proposed_edges(shared_data: Path, tmp_path: Path, capsys) -> None:
    from support.openai_server import OpenAIServer, Reply

    def answer(req):  # tool prompts get one valid edge; the env prompt links two environments
        prompt = req.body["messages"][-1]["content"]
        if "cross-system workflow" in prompt:
            return Reply.json({"edges": [{"source": "crm_envs", "target": "expense_envs", "reason": "x"}]})
        return Reply.json({"edges": [{"source": "list-tags", "target": "archive-contact", "reason": "y"}]})

    graphs = shared_data / "clawforge" / "tool_graphs"
    files = [
        "--graph",
        str(graphs / "crm_envs_tool_graph.json"),
        "--graph",
        str(graphs / "expense_envs_tool_graph.json"),
    ]
    with OpenAIServer(responder=answer) as server:
        args = ["tasks", "sample", "-n", "5", "--cross-env", "1.0", "--out", str(tmp_path / "r"), *files]
        assert _run([*args, "--model", f"{server.base_url}::m"]) == 0
    out = capsys.readouterr().out
    assert "crm_envs: 1 model edges added" in out and "expense_envs: 0 model edges added" in out
    assert "env graph: 1 model edges added" in out
    usage = json.loads((tmp_path / "r" / "manifest.json").read_text())["models"]["usage"]["total"]
    assert usage["calls"] == server.request_count == 3  # two tool graphs and the env graph
    chains = [json.loads(x) for x in (tmp_path / "r" / "chains.jsonl").read_text().splitlines()]
    assert chains and all(set(c["envs"]) == {"crm_envs", "expense_envs"} for c in chains)
