"""Chain grounding, parameter classification, information-hiding checks and persona matching."""

from __future__ import annotations

import asyncio

import pytest

from dataclaw.envcraft import archetypes
from dataclaw.envcraft.graph import ChainSampler, build_tool_graph
from dataclaw.envcraft.tasks import GroundingError, check_text, classify, ground_chain
from dataclaw.envcraft.tasks.execute import GroundReason
from dataclaw.envcraft.tasks.initial import build_verifier
from dataclaw.envcraft.tasks.synth import SynthError, SynthReason, write_text
from dataclaw.models import get_model
from support.openai_server import OpenAIServer, Reply

ENV = "temporal_scheduling"


@pytest.fixture(scope="module")
def derived_chain() -> dict:
    """A grounded chain where some parameter value came from an earlier tool output."""
    env_cls = archetypes.get(ENV).env_cls
    chains = ChainSampler([build_tool_graph(archetypes.get(ENV))]).sample(60, seed=11)
    for i, c in enumerate(chains):
        try:
            g = ground_chain(env_cls, list(c.steps), seed=i)
        except GroundingError:
            continue
        if any(s == "tool" for st in g["steps"] for s in st["sources"].values()):
            build_verifier(g)  # must also be a valid task
            return {**g, "seed": i}
    pytest.fail("no grounded chain with a tool-derived parameter in 60 samples")


def test_grounding_is_deterministic_and_records_the_data_flow(derived_chain) -> None:
    env_cls = archetypes.get(ENV).env_cls
    steps = [s["tool"] for s in derived_chain["steps"]]
    again = ground_chain(env_cls, steps, seed=derived_chain["seed"])
    assert again == {k: v for k, v in derived_chain.items() if k != "seed"}
    for i, st in enumerate(derived_chain["steps"]):
        for name, src in st["sources"].items():
            if src == "tool":
                j = st["derived_from"][name]
                assert j < i
                assert str(st["params"][name]) in str(derived_chain["steps"][j]["output"])
    assert derived_chain["steps"][-1]["side_effect"] == "write"
    assert derived_chain["initial_state"] != derived_chain["final_state"]


def test_a_step_that_always_fails_rejects_the_chain() -> None:
    env_cls = archetypes.get("transactional_workspace").env_cls
    with pytest.raises(GroundingError) as err:
        ground_chain(env_cls, ["resolve_ticket"], seed=0, setup_budget=0)  # nobody logged in, no setup
    assert err.value.reason is GroundReason.STEP_ERROR


def test_check_text_finds_missing_and_leaked_values() -> None:
    user = [{"step": 0, "tool": "t", "param": "title", "value": "Quarterly review"}]
    derived = [{"step": 1, "tool": "t", "param": "event_id", "value": "E-204"}]
    assert check_text(["Book the quarterly review please"], user, derived) == ([], [])
    assert check_text(["Book it please"], user, derived) == (["Quarterly review"], [])
    assert check_text(["Book Quarterly review, event E-204"], user, derived) == ([], ["E-204"])


def test_classify_splits_by_source(derived_chain) -> None:
    user, derived = classify(derived_chain["steps"])
    assert derived and all(r["step"] > 0 for r in derived)
    assert {(r["step"], r["param"]) for r in user}.isdisjoint({(r["step"], r["param"]) for r in derived})


def _persona() -> dict:
    return {"id": "executive-assistant", "description": "An executive assistant who schedules meetings."}


def test_text_that_leaks_or_omits_values_is_rejected(derived_chain) -> None:
    user, derived = classify(derived_chain["steps"])
    secret = str(derived[0]["value"])
    values = "; ".join(str(r["value"]) for r in user)
    leak = Reply.json({"instruction": f"Handle {values} and also {secret} for me, please."})
    omit = Reply.json({"instruction": "Handle the calendar thing for me, please."})
    for reply, reason in ((leak, SynthReason.LEAKED_TOOL_VALUE), (omit, SynthReason.MISSING_USER_VALUE)):
        if reason is SynthReason.MISSING_USER_VALUE and not user:
            continue
        with OpenAIServer(default=reply) as server:
            model = get_model(f"{server.base_url}::t", cache=False)
            with pytest.raises(SynthError) as err:
                asyncio.run(write_text(model, "calendar env", derived_chain, _persona()))
        assert err.value.reason is reason


def test_model_errors_become_rejects(derived_chain) -> None:
    with OpenAIServer(default=Reply.text("not json at all")) as server:
        model = get_model(f"{server.base_url}::t", cache=False)
        with pytest.raises(SynthError) as err:
            asyncio.run(write_text(model, "calendar env", derived_chain, _persona()))
    assert err.value.reason is SynthReason.MODEL_ERROR


def test_good_text_passes_and_the_prompt_hides_tool_derived_values(derived_chain, task_text_writer) -> None:
    _, derived = classify(derived_chain["steps"])
    with OpenAIServer(responder=task_text_writer) as server:
        model = get_model(f"{server.base_url}::t", cache=False)
        text = asyncio.run(write_text(model, "calendar env", derived_chain, _persona()))
        prompts = [b["messages"][-1]["content"] for b in server.chat_bodies()]
    assert len(prompts) == 2 and "executive assistant" in prompts[1]
    for r in derived:
        if isinstance(r["value"], str) and len(r["value"]) >= 3:
            assert r["value"] not in prompts[0].split("Write ONE")[1]
    assert "<tool-derived from step" in prompts[0]
    assert 1 <= len(text["user_turns"]) <= len(derived_chain["steps"])


@pytest.mark.slow
def test_personas_match_environments_by_embedding() -> None:
    from dataclaw.envcraft.tasks.personas import PersonaMatcher, env_document, load_personas

    assert len(load_personas()) >= 30
    matcher = PersonaMatcher()
    top = matcher.top(env_document(archetypes.get("workflow_orchestration").env_cls))
    assert len(top) == 5
    assert {"release-manager", "site-reliability-engineer", "devops-engineer"} & {p.id for p, _ in top[:2]}
    sched = matcher.top(env_document(archetypes.get("temporal_scheduling").env_cls))
    assert sched[0][0].id != top[0][0].id
