"""Task initial states (setup calls, added distractors) and cross-environment tasks, end to end:
grounding, the verifier proof, replay, and a rollout by a scripted tool-calling model."""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from dataclaw.envcraft import archetypes
from dataclaw.envcraft.graph import ChainSampler, ToolChain, build_env_graph, build_tool_graph
from dataclaw.envcraft.rollout import ToolTaskHarness, run_rollout
from dataclaw.envcraft.tasks import GroundingError, GroundStage, chain_record, ground_chain, replay_task
from dataclaw.envcraft.tasks.tool.composite import env_group
from dataclaw.envcraft.tasks.tool.execute import GroundReason
from dataclaw.envcraft.tasks.tool.initial import add_distractors, build_initial_state, build_verifier
from dataclaw.envcraft.tasks.tool.verifier import evaluate
from dataclaw.models import get_model
from envcraft.rollout.rollout_helpers import scripted_agent
from support.openai_server import OpenAIServer

TICKETS = "transactional_workspace"


def _task(grounded: dict) -> dict:
    """A task record from a grounded chain (the text fields do not matter to replay or rollout)."""
    return {
        **grounded,
        "user_turns": ["Please do it."],
        "gold_chain": [{"tool": s["tool"], "params": s["params"]} for s in grounded["steps"]],
    }


def test_a_chain_that_starts_mid_workflow_gets_setup_calls_in_its_initial_state() -> None:
    env_cls = archetypes.get(TICKETS).env_cls
    with pytest.raises(GroundingError) as err:  # nobody is logged in, and no setup is allowed
        ground_chain(env_cls, ["resolve_ticket"], seed=0, setup_budget=0)
    assert err.value.reason is GroundReason.STEP_ERROR and err.value.tool == "resolve_ticket"
    g = ground_chain(env_cls, ["resolve_ticket"], seed=0)
    assert [s["tool"] for s in g["setup"]] == ["login"]
    assert g["initial_state"]["auth"]["current_user"]  # S0 is logged in: the entity the path needs
    assert [s["tool"] for s in g["steps"]] == ["resolve_ticket"]
    verifier, check = build_verifier(g)
    assert check == {"gold": 1.0, "initial": evaluate(verifier, g["initial_state"])["score"]}
    assert check["initial"] < 1.0


def _user_named_ticket_chain() -> dict:
    """A grounded chain whose user names a ticket by id."""
    env_cls = archetypes.get(TICKETS).env_cls
    for seed in range(40):
        try:
            g = ground_chain(env_cls, ["get_ticket", "update_ticket"], seed=seed)
        except GroundingError:
            continue
        ticket = g["steps"][-1]["params"]["ticket_id"]
        if g["steps"][-1]["sources"]["ticket_id"] == "user" and ticket in g["initial_state"]["tickets"]:
            return g
    pytest.fail("no grounding of get_ticket → update_ticket with a user-named ticket in 40 seeds")


def _final(env_cls: type, task: dict, calls: list[dict]) -> dict:
    from dataclaw.envcraft.tasks.tool.execute import run_calls

    return run_calls(env_cls, task["scenario_id"], task["initial_state"], calls)[1]


def test_distractors_are_near_duplicates_and_the_verifier_guards_them() -> None:
    env_cls = archetypes.get(TICKETS).env_cls
    g = _user_named_ticket_chain()
    ticket = g["steps"][-1]["params"]["ticket_id"]
    aug = build_initial_state(env_cls, g, seed=3)
    copies = [d for d in aug["added_distractors"] if d["copy_of"] == ticket]
    assert copies, aug["added_distractors"]
    twin = copies[0]["id"]
    tickets = aug["initial_state"]["tickets"]
    assert twin not in g["initial_state"]["tickets"] and twin.split("-")[0] == ticket.split("-")[0]
    assert {k: v for k, v in tickets[twin].items() if v != twin} == {
        k: v for k, v in tickets[ticket].items() if v != ticket
    }
    verifier, check = build_verifier(aug, env_cls)
    assert check["gold"] == 1.0 and check["initial"] == 0.0
    # one guard keeps every record the task does not name, the added distractors included
    (guard,) = [a for a in verifier["assertions"] if a["op"] == "unchanged"]
    assert {f"/tickets/{d['id']}" for d in aug["added_distractors"]} <= set(guard["value"]["units"])
    task = {**_task(aug), "id": "task:twin", "env": TICKETS, "verifier": verifier}
    assert replay_task(task)["score"] == 1.0
    # the same update applied to the twin instead of the named ticket fails the task, and the guard says
    # which record was touched
    wrong = [dict(c, params={**c["params"], "ticket_id": twin}) for c in task["gold_chain"]]
    result = evaluate(verifier, _final(env_cls, task, wrong))
    assert result["score"] <= 0.5 and not result["passed"]
    assert f"/tickets/{twin}" in result["changed"]
    # without a guard (tasks made before guards existed) each distractor had its own assertion
    legacy, _ = build_verifier(aug, env_cls, guard=False)
    pinned = [a["path"] for a in legacy["assertions"] if a["why"] == "distractor"]
    assert pinned == [f"/tickets/{d['id']}" for d in aug["added_distractors"]]


def test_an_entity_the_agent_must_find_gets_a_sibling_copy_not_a_twin() -> None:
    state = {
        "tickets": {
            "T-1001": {"id": "T-1001", "subject": "VPN down"},
            "T-1002": {"id": "T-1002", "subject": "Printer jam"},
        },
        "counters": {"next_ticket_number": 1003},
    }
    steps = [{"tool": "close", "params": {"ticket_id": "T-1001"}, "sources": {"ticket_id": "tool"}}]
    out, added = add_distractors(state, steps, random.Random(0))
    assert len(added) == 1 and added[0]["copy_of"] == "T-1002"
    new = added[0]["id"]
    assert int(new.split("-")[1]) > 1003 + 19  # far above the counter: a create tool never reuses it
    assert out["tickets"][new] == {"id": new, "subject": "Printer jam"}
    assert state["tickets"].keys() == {"T-1001", "T-1002"}  # the input is not modified


def _cross_grounded() -> dict:
    graphs = [build_tool_graph(archetypes.get(n)) for n in archetypes.names()]
    sampler = ChainSampler(graphs, build_env_graph(graphs))
    stage = GroundStage()
    for chain in sampler.sample(40, seed=5, cross_env_fraction=1.0, min_len=2, max_len=4):
        out = stage.process(chain_record(chain))
        if isinstance(out, list):
            return out[0]
    pytest.fail("no cross-environment chain grounded in 40 samples")


@pytest.fixture(scope="module")
def cross_task() -> dict:
    return _task(_cross_grounded())


def test_a_cross_environment_chain_becomes_a_verified_task(cross_task: dict) -> None:
    envs = cross_task["envs"]
    assert len(envs) >= 2 and cross_task["env"] == "+".join(envs)
    assert set(cross_task["env_modules"]) == set(envs)
    assert set(cross_task["initial_state"]) == set(envs)
    assert all(s["tool"].split(".", 1)[0] in envs for s in cross_task["gold_chain"])
    prefixes = {a["path"].split("/")[1] for a in cross_task["verifier"]["assertions"]}
    assert prefixes <= set(envs) and prefixes
    assert replay_task(cross_task)["score"] == 1.0
    assert replay_task(cross_task, [])["score"] < 1.0
    json.dumps(cross_task)


def test_a_scripted_agent_solves_the_cross_environment_task(cross_task: dict) -> None:
    calls = [(c["tool"].replace(".", "__"), c["params"]) for c in cross_task["gold_chain"]]
    with OpenAIServer(responder=scripted_agent(calls)) as server:
        model = get_model(f"{server.base_url}::agent", cache=False)
        traj = asyncio.run(run_rollout(model, ToolTaskHarness(cross_task)))
        offered = {t["function"]["name"] for t in server.chat_bodies()[0]["tools"]}
    assert traj.error is None and traj.reward == 1.0
    assert all(s.ok for s in traj.steps) and len(traj.steps) == len(calls)
    assert {c[0] for c in calls} <= offered and all("." not in name for name in offered)
    with OpenAIServer(responder=scripted_agent([])) as server:  # answers without acting
        model = get_model(f"{server.base_url}::agent", cache=False)
        traj = asyncio.run(run_rollout(model, ToolTaskHarness(cross_task)))
    assert traj.error is None and traj.reward == 0.0


def test_a_recorded_agent_replays_to_the_same_reward(cross_task: dict, tmp_path) -> None:
    """The replay backend plays a recorded tool-calling agent back offline: same calls, same reward."""
    calls = [(c["tool"].replace(".", "__"), c["params"]) for c in cross_task["gold_chain"]]
    record = tmp_path / "agent.jsonl"
    with OpenAIServer(responder=scripted_agent(calls)) as server:
        live = get_model(f"{server.base_url}::agent", cache=False, record_to=record)
        first = asyncio.run(run_rollout(live, ToolTaskHarness(cross_task)))
    again = asyncio.run(run_rollout(get_model(f"replay:{record}"), ToolTaskHarness(cross_task)))
    assert first.reward == again.reward == 1.0
    assert [(s.tool, s.arguments) for s in again.steps] == [(s.tool, s.arguments) for s in first.steps]


def test_an_env_group_routes_calls_and_rejects_unknown_tools(tmp_path) -> None:
    a, b = "temporal_scheduling", "transactional_workspace"
    group = env_group(((a, archetypes.get(a).env_cls), (b, archetypes.get(b).env_cls)))
    assert group is env_group(((a, archetypes.get(a).env_cls), (b, archetypes.get(b).env_cls)))
    assert f"{b}.login" in group.tools and group.tools.get(f"{b}.login").state_fields_affected
    scenario = sorted(group.scenarios())[0]
    env = group(tmp_path)
    sid = env.create_session(scenario)
    assert set(env.get_session_state(sid)) == {a, b}
    bad = env.call(sid, "nowhere.tool")
    assert bad["status"] == "error" and "nowhere.tool" in bad["error"]["message"]
    assert "/" not in bad["error"]["message"]  # agent-safe: no paths
    with pytest.raises(ValueError, match="one scenario per environment"):
        env.create_session(f"{a}:x")


def test_a_chain_naming_a_tool_its_environments_lack_is_rejected_with_a_reason() -> None:
    chain = ToolChain(("temporal_scheduling", "transactional_workspace"), ("temporal_scheduling.nope",))
    out = GroundStage().process(chain_record(chain))
    assert not isinstance(out, list) and out.reason == "unknown_tool"
    assert "temporal_scheduling.nope" in out.message


def test_a_create_that_collides_with_an_existing_name_is_retried_under_a_new_one() -> None:
    from dataclaw.envcraft.tasks.tool.execute import fresh_names

    state = {"streams": {"incidents": {}, "incidents-2": {}}, "candidates": {"R-104": {}, "R-105": {}}}
    error = {
        "category": "invalid_argument",
        "message": "stream incidents already exists; R-104 is already in",
    }
    params = {"stream_id": "incidents", "candidate_id": "R-104", "note": "x", "limit": 3}
    assert fresh_names(error, params, state) == {"stream_id": "incidents-3", "candidate_id": "R-106"}
    assert fresh_names({"message": "stream incidents does not exist"}, params, state) == {}
    stream_env = archetypes.get("stream_processing").env_cls
    g = ground_chain(stream_env, ["create_stream"], seed=0)  # the scenario's reference stream id is taken
    created = g["steps"][0]["params"]["stream_id"]
    assert created not in g["initial_state"]["streams"] and created in g["final_state"]["streams"]


def test_long_context_grounding_starts_from_the_history_records_and_per_entity_sets_the_copies() -> None:
    chain = chain_record(ToolChain(("temporal_scheduling",), ("list_events", "resolve_conflict")))
    plain = GroundStage(distractors_per_entity=0).process(chain)
    long = GroundStage(long_context=True, distractors_per_entity=2).process(chain)
    assert isinstance(plain, list) and isinstance(long, list), (plain, long)
    assert len(long[0]["initial_state"]["events"]) > len(plain[0]["initial_state"]["events"]) + 50
    assert long[0]["long_context"] is True and plain[0]["added_distractors"] == []
    assert 0 < len(long[0]["added_distractors"]) <= 4
    check = long[0]["verifier_check"]
    assert check["gold"] == 1.0 and check["initial"] < 1.0
    assert replay_task(_task(long[0]))["score"] == 1.0
