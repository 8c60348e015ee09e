"""The soundness suite scores each policy with the reward the task's basis composes (rollout/evaluate.py):
our default basis (the verifier alone) keeps every figure, a basis with τ²'s ACTION multiplies in the
required-actions component, and an actions-only reward is caught gamed by doing extra."""

from __future__ import annotations

import asyncio

import pytest

from dataclaw.envcraft import archetypes
from dataclaw.envcraft.quality.soundness import Policy, SoundnessReason, run_soundness
from dataclaw.envcraft.rollout import ToolTaskHarness, run_rollout
from dataclaw.envcraft.tasks.tool.initial import build_verifier
from dataclaw.models import get_model
from support.openai_server import OpenAIServer, ReceivedRequest, Reply
from support.tool_tasks import tool_task

TICKETS = "transactional_workspace"


@pytest.fixture(scope="module")
def task(grounded: dict) -> dict:
    """login → update_ticket on a ticket the user names (a real grounded chain), with a guarded verifier."""
    verifier, _ = build_verifier(grounded, archetypes.get(TICKETS).env_cls)
    return tool_task(grounded, verifier)


def _figures(report) -> dict:
    return {f.policy: (f.score, f.runs, f.ok) for f in report.figures}


def test_our_basis_keeps_every_figure_and_a_db_action_basis_holds(task: dict) -> None:
    plain = run_soundness(task)
    assert plain.passed
    same = run_soundness({**task, "metadata": {"reward_basis": ["DB"]}})
    assert _figures(same) == _figures(plain)
    both = run_soundness({**task, "metadata": {"reward_basis": ["DB", "ACTION"]}})
    assert both.passed, [f.detail for f in both.figures if not f.ok]
    for policy, (score, _runs, _) in _figures(both).items():  # the product never exceeds the verifier's
        base = _figures(plain)[policy][0]
        assert score is None or score <= base + 1e-9, policy
    # the gold chain's own calls are every required action: gold still scores 1.0
    assert _figures(both)[str(Policy.GOLD)][0] == 1.0


def test_an_actions_only_reward_is_gamed_by_doing_extra(task: dict) -> None:
    report = run_soundness({**task, "metadata": {"reward_basis": ["ACTION"]}})
    figs = _figures(report)
    assert figs[str(Policy.GOLD)][2] and figs[str(Policy.UNTOUCHED)] == (0.0, 1, True)
    # gold + a write on a record the task never names: every required action is still there
    assert SoundnessReason.GAMED_BY_COLLATERAL in report.reasons
    assert figs[str(Policy.COLLATERAL)][0] == 1.0


def test_saying_the_right_thing_never_lifts_harm_or_extra_to_a_pass(task: dict) -> None:
    """The suite's own collateral and wrong-last-write runs played by an agent that also says the task's
    communicate info: under a τ²-style basis (DB, COMMUNICATE) communicate is 1, db is 0, the reward 0."""
    told = {**task, "metadata": {"reward_basis": ["DB", "COMMUNICATE"], "communicate_info": ["updated"]}}
    trials = {t.policy: t.calls for t in run_soundness(task).trials}
    for policy in (Policy.COLLATERAL, Policy.WRONG_LAST_WRITE, Policy.GOLD):
        calls = trials[str(policy)]

        def agent(req: ReceivedRequest, calls=calls) -> Reply:
            n = sum(1 for m in (req.body or {})["messages"] if m["role"] == "assistant")
            if n < len(calls):
                return Reply.tool_call(calls[n]["tool"], calls[n]["params"], call_id=f"c{n}")
            return Reply.text("The ticket is updated.")

        with OpenAIServer(responder=agent) as server:
            model = get_model(f"{server.base_url}::agent", cache=False)
            traj = asyncio.run(run_rollout(model, ToolTaskHarness(told)))
        comps = traj.reward_components
        assert comps["communicate"]["score"] == 1.0, policy
        gold = policy == Policy.GOLD
        assert (comps["db"]["score"], traj.reward) == ((1.0, 1.0) if gold else (0.0, 0.0)), policy
