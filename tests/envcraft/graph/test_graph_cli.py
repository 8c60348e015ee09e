"""``dataclaw env graph``: print or export a tool graph, optionally with model-proposed edges."""

from __future__ import annotations

import json
from pathlib import Path

from dataclaw.cli.app import _run
from dataclaw.envcraft.graph import load_tool_graph
from support.openai_server import OpenAIServer, Reply


def test_env_graph_exports_node_link_json(tmp_path: Path, capsys) -> None:
    out = tmp_path / "ts.json"
    assert _run(["env", "graph", "temporal_scheduling", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "resolve_conflict" in printed and "dataflow" in printed
    tg = load_tool_graph(out)
    assert tg.env == "temporal_scheduling" and "resolve_conflict" in tg.write_tools()


def test_env_graph_reads_clawforge_files_and_adds_model_edges(shared_data: Path, capsys) -> None:
    path = shared_data / "clawforge" / "tool_graphs" / "crm_envs_tool_graph.json"
    answer = {"edges": [{"source": "list-tags", "target": "archive-contact", "reason": "tidy up"}]}
    with OpenAIServer(default=Reply.json(answer)) as server:
        code = _run(["env", "graph", str(path), "--json", "--model", f"{server.base_url}::m"])
    assert code == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert "1 model edges added" in captured.err
    edge = next(e for e in data["links"] if (e["source"], e["target"]) == ("list-tags", "archive-contact"))
    assert edge["tier"] == "llm_weak"


def test_an_unusable_model_answer_keeps_the_code_derived_graph(capsys) -> None:
    """A model that answers with something other than the edge schema costs its edges, not the run."""
    with OpenAIServer(default=Reply.text("sure! here are some edges")) as server:
        code = _run(["env", "graph", "temporal_scheduling", "--json", "--model", f"{server.base_url}::m"])
    assert code == 0
    captured = capsys.readouterr()
    assert "no model edges added" in captured.err
    assert "Traceback" not in captured.err
    data = json.loads(captured.out)
    assert data["links"] and all(e["tier"] != "llm_weak" for e in data["links"])


def test_env_graph_unknown_environment_is_one_clear_line(capsys) -> None:
    assert _run(["env", "graph", "no_such_env"]) == 1
    assert "unknown environment 'no_such_env'" in capsys.readouterr().err
