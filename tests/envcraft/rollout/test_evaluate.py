"""τ²-style reward components of a rollout (db, actions, communicate, nl_assertions) over a real HTTP model
(the OpenAI-compatible test server plays agent and judge): recorded trajectories checked by hand, the
reward basis, the gaming cases (talk without acting, act without talking, a judge that answers nonsense)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from dataclaw.envcraft.rollout import ToolTaskHarness, run_rollout
from dataclaw.envcraft.rollout.evaluate import (
    Criteria,
    action_matches,
    actions_component,
    basis_of,
    communicate_component,
    component_summary,
    criteria_of,
    evaluate_tool_rollout,
    read_verdicts,
    trajectory_calls,
)
from dataclaw.envcraft.rollout.run import is_success, pass_hat_k
from dataclaw.envcraft.runtime.task import ToolTask
from dataclaw.models import get_model
from support.openai_server import OpenAIServer, ReceivedRequest, Reply

WRITES = ["login", "assign_ticket", "start_progress", "resolve_ticket", "add_comment"]


def _gold(task: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(c["tool"], c["params"]) for c in task["gold_chain"]]


def _with(task: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {**task, "metadata": {**task["metadata"], **meta}}


def _responder(calls: list[tuple[str, dict[str, Any]]], text: str, judge: Any = None):
    """The agent (requests with tools: ``calls`` one per turn, then ``text``) and the judge (requests
    with a response format: ``judge(request)``)."""

    def respond(req: ReceivedRequest) -> Reply:
        body = req.body or {}
        if "tools" not in body:
            return judge(req)
        n = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if n < len(calls):
            return Reply.tool_call(calls[n][0], calls[n][1], call_id=f"call_{n}")
        return Reply.text(text)

    return respond


def _roll(task: dict[str, Any], calls, text: str = "Done.", judge: Any = None, with_judge: bool = False):
    with OpenAIServer(responder=_responder(calls, text, judge)) as server:
        agent = get_model(f"{server.base_url}::agent", cache=False)
        judge_model = get_model(f"{server.base_url}::judge", cache=False) if with_judge else None
        return asyncio.run(run_rollout(agent, ToolTaskHarness(task), judge=judge_model))


def test_gold_trajectory_components_by_hand(gold_tool_task) -> None:
    traj = _roll(gold_tool_task, _gold(gold_tool_task))
    comps = traj.reward_components
    # our task: no communicate info, no assertions → those components are absent, not 1.0
    assert set(comps) == {"db", "actions"}
    assert comps["db"] == {"score": 1.0, "weight": 1.0, "detail": comps["db"]["detail"]}
    assert comps["db"]["detail"].startswith(f"{len(gold_tool_task['verifier']['assertions'])}/")
    # the five write calls of the gold chain are the required actions (reads are a route): a diagnostic
    assert comps["actions"] == {"score": 1.0, "weight": 0.0, "detail": "5/5 required actions found"}
    assert traj.reward == 1.0 and traj.score["reward_basis"] == ["db"]
    json.dumps(traj.to_record())


def test_our_basis_keeps_the_verifiers_reward_whatever_route(gold_tool_task) -> None:
    # the same end state with the reads left out: actions still all found, db passes
    writes_only = [c for c in _gold(gold_tool_task) if c[0] in WRITES]
    traj = _roll(gold_tool_task, writes_only)
    assert traj.reward == 1.0 and traj.reward_components["actions"]["score"] == 1.0
    # stop before the last two writes: db fails, and the missing actions are named
    short = _roll(gold_tool_task, _gold(gold_tool_task)[:-2])
    assert short.reward == 0.0 and short.reward_components["db"]["score"] == 0.0
    detail = short.reward_components["actions"]["detail"]
    assert (
        detail.startswith("3/5 required actions found; missing resolve_ticket(") and "add_comment(" in detail
    )


def test_an_agent_that_only_says_the_gold_values_gets_communicate_not_db_or_actions(gold_tool_task) -> None:
    task = _with(
        gold_tool_task,
        reward_basis=["DB", "ACTION", "COMMUNICATE"],
        communicate_info=["KB-207", "fixed", "T-1001"],
    )
    said = " ".join(json.dumps(p) for _, p in _gold(gold_tool_task))  # every gold value, no call made
    traj = _roll(task, [], text=f"I resolved it: {said}")
    comps = traj.reward_components
    assert comps["communicate"]["score"] == 1.0 and comps["communicate"]["weight"] == 1.0
    assert comps["db"]["score"] == 0.0 and comps["actions"]["score"] == 0.0
    assert comps["actions"]["detail"].startswith("0/5 required actions found")
    assert traj.reward == 0.0 and not is_success(traj.reward)


def test_acting_without_saying_fails_a_communicate_basis_and_both_pass(gold_tool_task) -> None:
    task = _with(gold_tool_task, reward_basis=["DB", "COMMUNICATE"], communicate_info=["KB-207"])
    silent = _roll(task, _gold(gold_tool_task), text="Done.")
    assert silent.reward_components["db"]["score"] == 1.0
    assert silent.reward_components["communicate"] == {
        "score": 0.0, "weight": 1.0, "detail": "0/1 communicated; not said: 'KB-207'"
    }  # fmt: skip
    assert silent.reward == 0.0
    told = _roll(task, _gold(gold_tool_task), text="Resolved with article KB-207, as fixed.")
    assert told.reward == 1.0 and set(told.reward_components) == {"db", "actions", "communicate"}
    assert told.reward_components["actions"]["weight"] == 0.0  # not in this basis


def test_tau2_action_comparison_by_hand() -> None:
    # τ²'s Action.compare_with_tool_call: compare_args None → the call's own arguments
    gold = {
        "name": "cancel",
        "arguments": {"order_id": "#W1", "reason": "no longer needed"},
        "compare_args": None,
    }
    assert action_matches(gold, "cancel", {"order_id": "#W1", "reason": "no longer needed"})
    assert action_matches(gold, "cancel", {"order_id": "#W1"})  # τ² compares the call's keys only
    assert not action_matches(gold, "cancel", {"order_id": "#W2", "reason": "no longer needed"})
    assert not action_matches(gold, "cancel", {"order_id": "#W1", "extra": 1})  # a key gold lacks
    assert not action_matches(gold, "refund", {"order_id": "#W1"})
    only_id = {**gold, "compare_args": ["order_id"]}
    assert action_matches(only_id, "cancel", {"order_id": "#W1", "reason": "ordered by mistake"})
    assert action_matches({**gold, "compare_args": []}, "cancel", {"anything": 2})
    assert not action_matches(gold, "cancel", "not a dict")


def test_criteria_of_an_imported_tau2_task_and_basis_names() -> None:
    task = ToolTask.from_row(
        {
            "id": "t", "env": "e", "scenario_id": "s", "initial_state": {}, "verifier": {},
            "gold_chain": [{"tool": "w", "params": {"a": 1}}],
            "metadata": {
                "reward_basis": ["DB", "NL_ASSERTION"],
                "evaluation_criteria": {
                    "actions": [{"name": "w", "arguments": {"a": 1}, "compare_args": ["a"]}],
                    "communicate_info": ["42"],
                    "nl_assertions": ["The agent apologises."],
                },
            },
        }
    )  # fmt: skip
    crit = criteria_of(task, writes=set())
    assert crit.actions == [{"name": "w", "arguments": {"a": 1}, "compare_args": ["a"]}]
    assert (crit.communicate, crit.nl_assertions, crit.basis) == (
        ["42"],
        ["The agent apologises."],
        ("db", "nl_assertions"),
    )
    assert basis_of(None) == ("db",) and basis_of(["ENV_ASSERTION", "DB", "DB"]) == ("env_assertions", "db")
    assert criteria_of(task).scored_by_env is False
    assert criteria_of(ToolTask.from_row({**task.to_row(), "metadata": {"source": "tau2"}})).scored_by_env
    assert criteria_of(ToolTask.from_row({**task.to_row(), "metadata": {}}), writes=set()).actions == []


def test_communicate_follows_tau2s_substring_rule() -> None:
    msgs = [
        {"role": "user", "content": "my total is 1,234"},
        {"role": "assistant", "content": "Your total: 1,234 USD"},
    ]
    assert communicate_component(["1234"], msgs)["score"] == 1.0  # commas dropped from the text
    assert communicate_component(["usd"], msgs)["score"] == 1.0
    # only the agent's words count: the user saying it is not the agent communicating it
    assert communicate_component(["my total"], msgs)["score"] == 0.0


def _judge_answer(results: list[dict[str, Any]]):
    return lambda req: Reply.json({"results": results})


ASSERTIONS = ["The agent resolved ticket T-1001.", "The agent asked for the VPN logs."]


@pytest.mark.parametrize(
    ("answer", "score", "error"),
    [
        (
            [
                {"index": 1, "reasoning": "resolved", "met": True},
                {"index": 2, "reasoning": "asked", "met": True},
            ],
            1.0,
            None,
        ),
        (
            [{"index": 1, "reasoning": "yes", "met": True}, {"index": 2, "reasoning": "no", "met": False}],
            0.0,
            None,
        ),
        # nonsense in the right shape: one assertion graded twice, the other never
        (
            [{"index": 1, "reasoning": "x", "met": True}, {"index": 1, "reasoning": "x", "met": True}],
            0.0,
            "judge_error",
        ),
        # too few results (the schema's own count): a judge_error, never a pass
        ([{"index": 1, "reasoning": "x", "met": True}], 0.0, "judge_error"),
    ],
)
def test_nl_assertions_by_a_judge_model(gold_tool_task, answer, score, error) -> None:
    task = _with(gold_tool_task, reward_basis=["DB", "NL_ASSERTION"], nl_assertions=ASSERTIONS)
    traj = _roll(task, _gold(gold_tool_task), judge=_judge_answer(answer), with_judge=True)
    comp = traj.reward_components["nl_assertions"]
    assert comp["score"] == score and comp.get("error") == error and comp["weight"] == 1.0
    assert traj.reward == score and traj.reward_components["db"]["score"] == 1.0
    if error:
        assert comp["detail"].startswith("judge_error: ")


def test_a_failing_judge_or_none_is_recorded_and_never_a_pass(gold_tool_task) -> None:
    task = _with(gold_tool_task, reward_basis=["DB", "NL_ASSERTION"], nl_assertions=ASSERTIONS)
    down = _roll(
        task, _gold(gold_tool_task), judge=lambda req: Reply.error(400, "bad request"), with_judge=True
    )
    assert down.reward == 0.0 and down.reward_components["nl_assertions"]["error"] == "judge_error"
    assert down.error is None  # the rollout itself is fine: its other components stand
    none = _roll(task, _gold(gold_tool_task))
    assert none.reward == 0.0 and none.reward_components["nl_assertions"]["error"] == "no_judge"
    # outside the basis the assertions are a diagnostic: the reward stays the verifier's
    diag = _roll(_with(gold_tool_task, nl_assertions=ASSERTIONS), _gold(gold_tool_task))
    assert diag.reward == 1.0 and diag.reward_components["nl_assertions"]["weight"] == 0.0


def test_read_verdicts_refuses_nonsense() -> None:
    ok = {
        "results": [{"index": 2, "reasoning": "", "met": False}, {"index": 1, "reasoning": "r", "met": True}]
    }
    assert read_verdicts(ok, 2) == [(True, "r"), (False, "")]
    for bad in (
        {},
        {"results": "yes"},
        {"results": [{"index": 1, "met": "true"}, {"index": 2, "met": True}]},
        {"results": [{"index": 0, "met": True}, {"index": 2, "met": True}]},
        {"results": [{"index": True, "met": True}, {"index": 2, "met": True}]},
    ):
        with pytest.raises(ValueError):
            read_verdicts(bad, 2)


def test_component_summary_counts_means_and_errors() -> None:
    failed = {"score": 0.0, "weight": 1.0, "detail": "", "error": "judge_error"}
    recs = [
        {"reward_components": {"db": {"score": 1.0, "weight": 1.0, "detail": ""}}},
        {"reward_components": {"db": {"score": 0.0, "weight": 1.0, "detail": ""}, "nl_assertions": failed}},
        {},
    ]
    assert component_summary(recs) == {
        "db": {"rollouts": 2, "mean": 0.5, "errors": 0},
        "nl_assertions": {"rollouts": 1, "mean": 0.0, "errors": 1},
    }


def test_criteria_default_has_our_basis() -> None:
    assert Criteria().basis == ("db",)


def test_an_environments_own_components_replace_ours_with_their_weights() -> None:
    # an imported τ² domain scores db, env assertions and actions in its worker (its weights: the basis)
    own = {
        "db": {"score": 1.0, "weight": 1.0, "detail": "db hash matches gold"},
        "env_assertions": {"score": 1.0, "weight": 0.0, "detail": "no env assertion"},
        "actions": {"score": 0.0, "weight": 0.0, "detail": "0/1 actions"},
    }
    crit = Criteria(
        actions=[{"name": "w", "arguments": {}, "compare_args": None}],
        communicate=["refund of $42"],
        basis=("db", "communicate"),
        scored_by_env=True,
    )
    said = [{"role": "assistant", "content": "You get a refund of $42."}]
    reward, comps = asyncio.run(evaluate_tool_rollout(crit, 1.0, {}, [("w", {})], said, None, own))
    assert comps["actions"] == own["actions"] and comps["db"] == own["db"]  # theirs, not ours (1/1)
    assert comps["communicate"]["weight"] == 1.0 and reward == 1.0
    reward, comps = asyncio.run(evaluate_tool_rollout(crit, 1.0, {}, [], [], None, own))
    assert reward == 0.0 and comps["communicate"]["score"] == 0.0


RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "rollouts" / "tau_style_trials.jsonl"


def test_recorded_trials_recompute_to_their_components_and_pass_hat_k(gold_tool_task) -> None:
    """Three recorded rollouts of one task with a τ²-style basis (agents that act and tell, act silently,
    only talk; docs/envcraft.md): actions and communicate recomputed from the records match what was
    recorded and what a reader counts by hand; pass^k over them as three trials of one task."""
    recs = {r["agent"]: r for r in map(json.loads, RECORDED.read_text(encoding="utf-8").splitlines())}
    writes = {"login", "assign_ticket", "start_progress", "resolve_ticket", "add_comment"}
    crit = criteria_of(ToolTask.from_row(gold_tool_task), writes)
    by_hand = {  # (required actions found, KB-207 said, reward)
        "act_and_tell": ("5/5", 1.0, 1.0),
        "act_silently": ("5/5", 0.0, 0.0),
        "only_talk": ("0/5", 1.0, 0.0),
    }
    for agent, (found, said, reward) in by_hand.items():
        rec = recs[agent]
        actions = actions_component(crit.actions, trajectory_calls(rec["steps"]))
        assert actions["detail"].startswith(f"{found} required actions found"), agent
        assert actions["score"] == rec["reward_components"]["actions"]["score"]
        told = communicate_component(["KB-207"], rec["messages"])
        assert told["score"] == said == rec["reward_components"]["communicate"]["score"], agent
        assert rec["reward"] == reward
    # one success in three trials: pass^1 = 1/3, pass^2 = C(1,2)/C(3,2) = 0
    trials = [{"task_id": "t", "reward": r["reward"]} for r in recs.values()]
    assert pass_hat_k(trials) == {1: 0.3333, 2: 0.0, 3: 0.0}


def test_a_basis_of_nothing_checkable_falls_back_to_the_end_state() -> None:
    """A basis whose components the task has no data for (COMMUNICATE without info) or does not know
    ("FOO") would reward every agent 1.0: db counts instead."""
    assert basis_of(["FOO"]) == ("db",)
    empty = Criteria(basis=("communicate",))
    reward, comps = asyncio.run(evaluate_tool_rollout(empty, 0.0, {}, [], [], None))
    assert reward == 0.0 and comps["db"]["weight"] == 1.0
    reward, _ = asyncio.run(evaluate_tool_rollout(empty, 1.0, {}, [], [], None))
    assert reward == 1.0
