"""The tool graph of an environment as a user names it (``graph/build.py``): built from a package or read
from a file, with a model's proposed edges and saved when asked; its edges heaviest first."""

from __future__ import annotations

from pathlib import Path

from dataclaw.envcraft.graph import load_tool_graph
from dataclaw.envcraft.graph.build import env_tool_graph
from support.openai_server import OpenAIServer, Reply


def test_an_archetype_graph_is_built_and_saved(tmp_path: Path) -> None:
    made = env_tool_graph("temporal_scheduling", out=tmp_path / "g" / "ts.json")
    assert made.saved == tmp_path / "g" / "ts.json" and made.proposed is None and made.proposal is None
    again = env_tool_graph(str(made.saved))
    assert again.graph.env == "temporal_scheduling" and again.saved is None
    assert again.graph.graph.number_of_edges() == made.graph.graph.number_of_edges()
    assert load_tool_graph(made.saved).write_tools() == made.graph.write_tools()


def test_edge_rows_are_heaviest_first_and_say_whether_the_target_writes() -> None:
    tg = env_tool_graph("temporal_scheduling").graph
    rows = tg.edge_rows()
    assert len(rows) == tg.graph.number_of_edges()
    assert [(-r.weight, r.source, r.target) for r in rows] == sorted(
        (-r.weight, r.source, r.target) for r in rows
    )
    assert all(r.target_writes == tg.is_write(r.target) for r in rows)
    assert any(r.tier == "dataflow" for r in rows)


def test_a_model_adds_weak_edges_and_says_how_many() -> None:
    tools = env_tool_graph("temporal_scheduling").graph.tools()
    answer = {
        "edges": [
            {"source": tools[0], "target": tools[1], "reason": "x"},
            {"source": "nope", "target": tools[0], "reason": "y"},
        ]
    }
    with OpenAIServer(default=Reply.json(answer)) as server:
        made = env_tool_graph("temporal_scheduling", model=f"{server.base_url}::m")
    assert made.proposed is not None and made.proposed["dropped"] == 1
    assert made.proposal.endswith("model edges added, 1 dropped")
    assert made.graph.graph.edges[tools[0], tools[1]]["weight"] >= 0.25
