"""Tool and env dependency graphs: built from the archetypes, loaded from ClawForge's released graphs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.envcraft import archetypes
from dataclaw.envcraft.graph import (
    TIER_WEIGHTS,
    build_env_graph,
    build_tool_graph,
    env_graph_json,
    id_kind,
    load_tool_graph,
)
from dataclaw.envcraft.graph.propose import propose_tool_edges
from dataclaw.envcraft.graph.tool_graph import session_reads
from dataclaw.models import get_model
from support.openai_server import OpenAIServer, Reply


@pytest.fixture(scope="module")
def graphs():
    return {p.name: build_tool_graph(p) for p in archetypes.all_packages()}


@pytest.fixture(scope="module")
def clawforge(shared_data: Path):
    files = sorted((shared_data / "clawforge" / "tool_graphs").glob("*_tool_graph.json"))
    assert len(files) >= 20
    return [load_tool_graph(f) for f in files]


def test_every_archetype_tool_is_a_node_partitioned_by_side_effect(graphs) -> None:
    for pkg in archetypes.all_packages():
        tg = graphs[pkg.name]
        specs = {s.name: s for s in pkg.env_cls.tools}
        assert set(tg.tools()) == set(specs)
        assert set(tg.write_tools()) == {n for n, s in specs.items() if s.side_effect == "write"}
        assert set(tg.read_tools()) | set(tg.write_tools()) == set(specs)


def test_edges_are_tiered_and_weighted_like_clawforge(graphs) -> None:
    for tg in graphs.values():
        for a, b, d in tg.graph.edges(data=True):
            assert a != b
            assert d["weight"] == TIER_WEIGHTS[d["tier"]]


def test_id_flow_and_state_flow_and_gold_edges(graphs) -> None:
    tw = graphs["transactional_workspace"].graph
    assert tw.edges["create_ticket", "get_ticket"]["relationship"] == "produces_ticket_id_for"
    # a write that changes tickets feeds a reader of tickets (the AST scan of session["tickets"])
    assert tw.has_edge("resolve_ticket", "list_tickets")
    assert tw.edges["resolve_ticket", "list_tickets"]["tier"] == "bridge"
    # reference solution login → list_tickets is a gold edge
    assert tw.edges["login", "list_tickets"]["tier"] == "gold"
    assert tw.edges["login", "list_tickets"]["relationship"].startswith("gold_next::")


def test_session_reads_scans_subscripts_without_running() -> None:
    def tool(session: dict, x: str) -> dict:
        raise AssertionError("never executed")
        return {"a": session["tickets"][x], "b": session.get("accounts"), "c": session[x]}

    assert session_reads(tool) == {"tickets", "accounts"}


def test_id_kind() -> None:
    assert id_kind("ticket_id") == "ticket"
    assert id_kind("job_ids") == "job"
    assert id_kind("--contact-id") == "contact"
    assert id_kind("title") is None


def test_round_trip_node_link_json(graphs, tmp_path: Path) -> None:
    tg = graphs["state_machine"]
    back = load_tool_graph(tg.save(tmp_path / "g.json"))
    assert back.env == "state_machine"
    assert sorted(back.graph.edges(data=True)) == sorted(tg.graph.edges(data=True))
    assert back.write_tools() == tg.write_tools()


def test_bad_graph_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "x_tool_graph.json"
    bad.write_text('{"nodes": []}')
    with pytest.raises(ConfigError, match=r"x_tool_graph\.json.*links"):
        load_tool_graph(bad)
    bad.write_text('{"nodes": [{"id": "a"}, {"id": "b"}], "links": [{"source": "a", "target": "b"}]}')
    with pytest.raises(ConfigError, match="edge 0 has no positive 'weight'"):
        load_tool_graph(bad)


def test_clawforge_graphs_load_with_their_tiers(clawforge) -> None:
    crm = next(tg for tg in clawforge if tg.env == "crm_envs")
    assert crm.source == "file"
    assert "add-tags" in crm.write_tools() and "get-contact" in crm.read_tools()
    assert "finish" not in crm.tools()  # scaffold tools are not walked
    assert crm.graph.edges["get-contact", "add-tags"]["weight"] > 0
    tiers = {d["tier"] for tg in clawforge for *_, d in tg.graph.edges(data=True)}
    assert {"dataflow", "bridge", "llm_weak", "gold"} <= tiers
    for tg in clawforge:
        assert tg.write_tools(), tg.env


def test_env_graph_links_environments_by_entity_flow(graphs, clawforge) -> None:
    eg = build_env_graph(graphs.values())
    assert eg.edges["temporal_scheduling", "event_triggering"]["relationship"] == "produces_event_id_for"
    for *_, d in eg.edges(data=True):
        assert d["weight"] == TIER_WEIGHTS[d["tier"]]
    cg = build_env_graph(clawforge)
    assert cg.number_of_edges() > 0
    assert env_graph_json(cg)["links"]


def test_model_proposed_edges_are_weak_and_validated(graphs) -> None:
    tg = build_tool_graph(archetypes.get("temporal_scheduling"))
    before = tg.graph.edges["schedule_event", "get_event"]["weight"]
    a, b = next((x, y) for x in tg.tools() for y in tg.tools() if x != y and not tg.graph.has_edge(x, y))
    answer = {
        "edges": [
            {"source": a, "target": b, "reason": "a plausible follow-up"},
            {"source": "schedule_event", "target": "get_event", "reason": "check it"},
            {"source": "nope", "target": "get_event", "reason": "unknown tool"},
            {"source": "get_event", "target": "get_event", "reason": "self loop"},
        ]
    }
    with OpenAIServer(default=Reply.json(answer)) as server:
        model = get_model(f"{server.base_url}::test", cache=False)
        counts = asyncio.run(propose_tool_edges(tg, model))
        assert "list_conflicts" in server.chat_bodies()[0]["messages"][0]["content"]
    assert counts == {"added": 1, "dropped": 2}
    e = tg.graph.edges[a, b]
    assert (e["tier"], e["weight"]) == ("llm_weak", 0.25)
    assert tg.graph.edges["schedule_event", "get_event"]["weight"] == before  # never downgraded
