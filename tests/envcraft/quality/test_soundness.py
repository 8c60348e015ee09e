"""The soundness suite per tool task: each policy's figure, and each way a verifier is gamed caught with
the reason naming the policy (tasks made by the real pipeline: grounded chains of an archetype)."""

from __future__ import annotations

import pytest

from dataclaw.envcraft import archetypes
from dataclaw.envcraft.quality.soundness import (
    Policy,
    SoundnessReason,
    SoundnessSettings,
    run_soundness,
    summarize,
)
from dataclaw.envcraft.tasks.tool.initial import build_verifier
from support.tool_tasks import tool_task

TICKETS = "transactional_workspace"


def _figures(report) -> dict:
    return {f.policy: f for f in report.figures}


def test_a_guarded_task_passes_every_policy_with_its_figures(grounded: dict) -> None:
    verifier, _ = build_verifier(grounded, archetypes.get(TICKETS).env_cls)
    report = run_soundness(tool_task(grounded, verifier))
    assert report.passed, [f.detail for f in report.figures if not f.ok]
    figs = _figures(report)
    assert list(figs) == [str(p) for p in Policy]
    assert figs["gold"].score == 1.0 and figs["untouched"].score == 0.0
    assert figs["collateral"].runs > 0 and figs["collateral"].score <= 0.75
    assert figs["wrong_last_write"].runs > 0 and figs["wrong_last_write"].score < 1.0
    assert figs["random"].runs == 8 and figs["random"].score <= 0.1
    rec = report.to_record()
    assert (
        rec["passed"]
        and rec["reasons"] == []
        and rec["figures"]["gold"] == {"score": 1.0, "runs": 1, "ok": True}
    )
    assert all(c["passed"] for c in report.checks())
    assert run_soundness(tool_task(grounded, verifier)).to_record() == rec  # seeded: the same figures again
    # what it cost: every call made (the gold run's and every random step's at least), seconds per part;
    # neither is stored with the audit record (a rerun differs)
    steps = sum(len(t.calls) for t in report.trials if t.policy in ("gold", "random"))
    assert report.calls >= steps and set(report.seconds) == {"setup", *map(str, Policy)}
    assert "calls" not in rec and "seconds" not in rec


def test_every_trial_replays_from_s0_to_its_score_in_a_fresh_file_backed_session(grounded: dict) -> None:
    """The suite's runs (in one in-memory session, restored between runs) are calls from S0 whose score a
    plain replay reproduces: what an export or a served environment is compared against."""
    from dataclaw.envcraft.tasks.tool.stages import replay_task

    verifier, _ = build_verifier(grounded, archetypes.get(TICKETS).env_cls)
    task = tool_task(grounded, verifier)
    report = run_soundness(task)
    by_policy = {f.policy: f.runs for f in report.figures}
    counted = {p: sum(t.policy == p for t in report.trials) for p in by_policy}
    assert counted == by_policy  # one trial per scored run, no more
    for trial in report.trials:
        assert replay_task(task, trial.calls)["score"] == trial.score, (trial.policy, trial.calls)


def test_a_verifier_that_only_checks_what_must_change_is_gamed_by_collateral_writes(grounded: dict) -> None:
    legacy, _ = build_verifier(grounded, archetypes.get(TICKETS).env_cls, guard=False)
    report = run_soundness(tool_task(grounded, legacy))
    assert SoundnessReason.GAMED_BY_COLLATERAL in report.reasons
    collateral = _figures(report)["collateral"]
    assert collateral.score == 1.0 and "scores 1.000" in collateral.detail
    failed = [c for c in report.checks() if not c["passed"]]
    assert any(c["name"] == "soundness:collateral" and c["reason"] == "gamed_by_collateral" for c in failed)


def test_a_verifier_that_counts_log_entries_is_gamed_by_every_policy_that_writes(grounded: dict) -> None:
    gold_log = len(grounded["final_state"]["audit_log"])
    weak = {"version": 1, "assertions": [{"path": "/audit_log", "op": "count_gte", "value": gold_log}]}
    report = run_soundness(tool_task(grounded, weak))
    assert SoundnessReason.GAMED_BY_COLLATERAL in report.reasons
    assert SoundnessReason.GAMED_BY_WRONG_LAST_WRITE in report.reasons
    assert SoundnessReason.GOLD_FAILS not in report.reasons


def test_doing_nothing_and_a_broken_gold_chain_are_named(grounded: dict) -> None:
    free = {"version": 1, "assertions": [{"path": "/tickets", "op": "exists"}]}
    report = run_soundness(tool_task(grounded, free))
    assert SoundnessReason.GAMED_BY_UNTOUCHED in report.reasons
    assert SoundnessReason.GAMED_BY_RANDOM in report.reasons
    never = {"version": 1, "assertions": [{"path": "/tickets", "op": "absent"}]}
    assert run_soundness(tool_task(grounded, never)).reasons[0] == SoundnessReason.GOLD_FAILS


def test_a_task_the_suite_cannot_run_is_a_reject_not_a_crash(grounded: dict) -> None:
    task = {**tool_task(grounded, {"version": 1, "assertions": []}), "env": "no_such_env"}
    report = run_soundness(task)
    assert report.reasons == [SoundnessReason.SUITE_ERROR] and "could not run" in report.error
    assert report.checks()[0]["reason"] == "soundness_error"
    assert summarize([report])["reasons"]["soundness_error"] == 1


def test_settings_are_checked_and_tighten_the_suite(grounded: dict) -> None:
    with pytest.raises(ValueError, match="collateral_margin"):
        SoundnessSettings(collateral_margin=0)
    with pytest.raises(ValueError, match="random_max_mean"):
        SoundnessSettings(random_max_mean=1.0)
    verifier, _ = build_verifier(grounded, archetypes.get(TICKETS).env_cls)
    # a guard costs half the score: a margin above one half is more than it can give
    strict = run_soundness(tool_task(grounded, verifier), SoundnessSettings(collateral_margin=0.6))
    assert strict.reasons == [SoundnessReason.GAMED_BY_COLLATERAL]


def test_an_export_refuses_a_task_set_a_policy_games(grounded: dict, tmp_path) -> None:
    import json

    from dataclaw.envcraft.export import ExportError, prepare

    env_cls = archetypes.get(TICKETS).env_cls
    legacy, _ = build_verifier(grounded, env_cls, guard=False)
    guarded, _ = build_verifier(grounded, env_cls)
    src = tmp_path / "tasks.jsonl"
    src.write_text(json.dumps(tool_task(grounded, legacy)) + "\n")
    with pytest.raises(ExportError, match=r"fail the soundness suite: task:t \(.*gamed_by_collateral"):
        prepare(src)
    assert prepare(src, soundness=False).tasks  # the user's explicit choice
    src.write_text(json.dumps(tool_task(grounded, guarded)) + "\n")
    assert [t.id for t in prepare(src).tasks] == ["task:t"]


def test_grounding_rejects_a_chain_whose_reward_a_policy_games_before_any_text_is_written() -> None:
    """``GroundStage`` runs the suite on the task a grounded chain becomes: a gamed one is a reject naming
    the policy (with its figures), a sound one carries its figures into the task's metadata."""
    from dataclaw.envcraft.graph import ChainSampler, build_tool_graph
    from dataclaw.envcraft.tasks import GroundStage, chain_record
    from dataclaw.envcraft.tasks.tool.stages import grounded_task

    sampler = ChainSampler([build_tool_graph(archetypes.get(a)) for a in archetypes.names()])
    plain, gated = GroundStage(soundness=None), GroundStage()
    seen: dict[str, int] = {"sound": 0, "gamed": 0}
    for chain in sampler.sample(120, seed=7, min_len=2, max_len=5):
        rec = chain_record(chain)
        out = plain.process(rec)
        if not isinstance(out, list):
            continue
        report = run_soundness(grounded_task(out[0]))
        got = gated.process(rec)
        if report.passed:
            assert isinstance(got, list) and got[0]["soundness"] == report.to_record()
            seen["sound"] += 1
        else:
            assert not isinstance(got, list)
            assert got.reason == str(report.reasons[0]) and got.reason.startswith("gamed_by_")
            assert got.detail["soundness"]["passed"] is False and got.message
            seen["gamed"] += 1
        if seen["sound"] >= 3 and seen["gamed"] >= 2:
            return
    pytest.fail(f"120 chains gave {seen}")


def test_a_write_the_verifier_cannot_see_is_caught_by_skip_write(grounded: dict) -> None:
    """The gold chain less each of its writes must fail: a task whose gold repeats its write (the second
    sets what the record already holds) pays a run that skips one, and is a reject naming the policy."""
    verifier, _ = build_verifier(grounded, archetypes.get(TICKETS).env_cls)
    task = tool_task(grounded, verifier)
    sound = _figures(run_soundness(task))["skip_write"]
    assert sound.ok and sound.runs == 1 and sound.score == 0.0  # one write: skipping it is doing nothing
    write = task["gold_chain"][-1]
    report = run_soundness({**task, "gold_chain": [*task["gold_chain"], write]})
    fig = _figures(report)["skip_write"]
    assert report.reasons == [SoundnessReason.GAMED_BY_SKIP_WRITE]
    assert (fig.runs, fig.score, fig.ok) == (2, 1.0, False) and "update_ticket" in fig.detail
    assert (
        _figures(
            run_soundness({**task, "gold_chain": [*task["gold_chain"], write]}, SoundnessSettings(max_skip=0))
        )["skip_write"].runs
        == 0
    )


def test_a_comment_on_a_new_ticket_is_verified_in_full_and_every_parameter_gets_a_wrong_value() -> None:
    """create_ticket → add_comment (a real grounding): the comment lives inside a ticket with a generated
    id, so its body and its `internal` flag are matched as nested content; the suite's wrong last writes
    reach the flag the gold call leaves at its default (three tries drawn from one pool went to ids)."""
    from dataclaw.envcraft.tasks import GroundingError, ground_chain
    from dataclaw.envcraft.tasks.tool.initial import build_initial_state
    from dataclaw.envcraft.tasks.tool.stages import replay_task

    env_cls = archetypes.get(TICKETS).env_cls
    for seed in range(20):
        try:
            g = build_initial_state(
                env_cls, ground_chain(env_cls, ["create_ticket", "add_comment"], seed=seed), seed=seed
            )
        except GroundingError:
            continue
        break
    else:
        pytest.fail("no grounding of create_ticket → add_comment in 20 seeds")
    verifier, _ = build_verifier(g, env_cls)
    assert any(a["op"] == "match_deep" and a["path"] == "/tickets" for a in verifier["assertions"])
    task = tool_task(g, verifier)
    gold = task["gold_chain"]
    comment = gold[-1]["params"]
    for wrong in ({"internal": not comment.get("internal", False)}, {"body": "Something else entirely."}):
        assert (
            replay_task(task, [*gold[:-1], {"tool": "add_comment", "params": {**comment, **wrong}}])["score"]
            < 1.0
        )
    report = run_soundness(task)
    assert report.passed, [f.detail for f in report.figures if not f.ok]
    tried = {
        k
        for t in report.trials
        if t.policy == "wrong_last_write"
        for k, v in t.calls[-1]["params"].items()
        if comment.get(k, False) != v
    }
    assert tried == {"ticket_id", "body", "internal"}
