"""Mechanics of the workflow-orchestration archetype: DAG validation at definition time, capability-checked
assignment with busy-state protection, sequential vs parallel execution, abort/skip/retry policies with the
retry cap, data-driven failures (faults, missing inputs, role-bound inputs), reverse-topological rollback
with compensation, messaging (the fuzz of every tool is generic: tests/envcraft/test_fuzz.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataclaw.envcraft.archetypes.workflow_orchestration import WorkflowOrchestration
from dataclaw.envcraft.archetypes.workflow_orchestration.engine import topological_order, validate_stages
from dataclaw.envcraft.runtime import EnvError

RELEASE = "release_train_recovery"
SAGA = "order_saga_compensation"


@pytest.fixture
def env(tmp_path: Path) -> WorkflowOrchestration:
    return WorkflowOrchestration(tmp_path)


def _ok(out: dict) -> dict:
    assert out["status"] == "ok", out
    return out["data"]


def _err(out: dict, category: str) -> str:
    assert out["status"] == "error" and out["error"]["category"] == category, out
    return out["error"]["message"]


def _pipeline(env: WorkflowOrchestration, sid: str, pid: str) -> dict:
    return env.get_session_state(sid)["pipelines"][pid]


def _stages(env: WorkflowOrchestration, sid: str, pid: str) -> dict[str, dict]:
    return {s["stage_id"]: s for s in _pipeline(env, sid, pid)["stages"]}


def _worker(env: WorkflowOrchestration, sid: str, wid: str) -> dict | None:
    return env.get_session_state(sid)["workers"].get(wid)


def _assign(env: WorkflowOrchestration, sid: str, pid: str, stage_id: str, worker_id: str) -> dict:
    """The raw result of one ``assign_stage`` call."""
    return env.call(sid, "assign_stage", pipeline_id=pid, stage_id=stage_id, worker_id=worker_id)


SAGA_WORKERS = (
    ("reserve", "inventory-svc"),
    ("charge", "payments-svc"),
    ("ship", "shipping-svc"),
    ("confirm", "notify-svc"),
)


def _staff_saga(env: WorkflowOrchestration, sid: str, pid: str) -> None:
    """Assign every saga stage of ``pid`` to its service worker."""
    for stage, worker in SAGA_WORKERS:
        _ok(_assign(env, sid, pid, stage, worker))


def _approval(env: WorkflowOrchestration, sid: str, from_worker: str, body: str) -> dict:
    """Send the CHG-4471 approval to the production deployer; the raw result."""
    return env.call(
        sid,
        "send_message",
        from_worker=from_worker,
        to_worker="deployer-prod-eu",
        topic="approval",
        body=body,
        payload={"change_ticket": "CHG-4471"},
    )


def _run_reference(env: WorkflowOrchestration, sid: str, scenario_id: str) -> None:
    """Replay the scenario's reference solution; every step must succeed."""
    for step in WorkflowOrchestration.scenario(scenario_id).reference_solution:
        _ok(env.call(sid, step["tool"], **step["params"]))


def _saga_stages(**ship: object) -> list[dict]:
    return [
        {"stage_id": "reserve", "action": "reserve_inventory"},
        {"stage_id": "charge", "action": "charge_payment"},
        {"stage_id": "ship", "action": "create_shipment", "depends_on": ["reserve", "charge"], **ship},
        {"stage_id": "confirm", "action": "send_confirmation", "depends_on": ["ship"], "on_failure": "skip"},
    ]


def _unblock_release(env: WorkflowOrchestration, sid: str) -> None:
    """The first half of the release reference solution: integration tests pass on x86-01."""
    _ok(_assign(env, sid, "P-101", "integration-tests", "ci-runner-x86-01"))
    _ok(env.call(sid, "retry_stage", pipeline_id="P-101", stage_id="integration-tests"))
    _ok(_assign(env, sid, "P-101", "publish", "ci-runner-x86-02"))


# ---- world data -------------------------------------------------------------------------------------


def test_world_busy_states_follow_pending_assignments(env: WorkflowOrchestration) -> None:
    sid = env.create_session(RELEASE)
    state = env.get_session_state(sid)
    busy = {w for w, rec in state["workers"].items() if rec["status"] == "busy"}
    assert "ci-runner-arm-01" in busy and "legacy-runner-07" in busy and "payments-svc" in busy
    assert {"ci-runner-x86-01", "ci-runner-x86-02", "rm-aisha"}.isdisjoint(busy)
    assert state["workers"]["legacy-runner-07"]["assignment"] == {
        "pipeline_id": "P-101",
        "stage_id": "publish",
    }


# ---- definition-time DAG validation -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("stages", "fragment"),
    [
        ([{"stage_id": "a", "action": "unit_tests", "depends_on": ["zz"]}], "unknown stage 'zz'"),
        ([{"stage_id": "a", "action": "unit_tests", "depends_on": ["a"]}], "depends on itself"),
        (
            [
                {"stage_id": "a", "action": "unit_tests", "depends_on": ["c"]},
                {"stage_id": "b", "action": "unit_tests", "depends_on": ["a"]},
                {"stage_id": "c", "action": "unit_tests", "depends_on": ["b"]},
            ],
            "cycle: a → c → b → a",
        ),
        (
            [{"stage_id": "a", "action": "unit_tests"}, {"stage_id": "a", "action": "smoke_test"}],
            "used twice",
        ),
        ([{"stage_id": "a", "action": "launch_rockets"}], "not a known action"),
        ([{"stage_id": "a", "action": "unit_tests", "on_failure": "retry", "max_retries": 0}], "at least 1"),
        ([{"stage_id": "a", "action": "unit_tests", "on_failure": "skip", "max_retries": 2}], "only retry"),
        ([{"stage_id": "A B", "action": "unit_tests"}], "stage_id"),
        (["not a stage"], "object"),
        ([], "non-empty"),
    ],
)
def test_define_pipeline_refuses_bad_dags(env: WorkflowOrchestration, stages: list, fragment: str) -> None:
    sid = env.create_session(SAGA)
    message = _err(
        env.call(sid, "define_pipeline", name="bad saga", mode="sequential", stages=stages),
        "invalid_argument",
    )
    assert fragment in message
    state = env.get_session_state(sid)
    assert state["counters"]["next_pipeline_number"] == 103 and "P-103" not in state["pipelines"]


def test_define_pipeline_success_and_topological_order(env: WorkflowOrchestration) -> None:
    sid = env.create_session(SAGA)
    out = _ok(
        env.call(
            sid,
            "define_pipeline",
            name="order ORD-1 saga",
            mode="parallel",
            stages=_saga_stages(),
            parameters={"order_id": "ORD-1"},
        )
    )
    assert out["pipeline"]["pipeline_id"] == "P-103" and out["pipeline"]["status"] == "defined"
    assert out["topological_order"] == ["reserve", "charge", "ship", "confirm"]
    assert all(s["status"] == "pending" and s["worker"] is None for s in out["pipeline"]["stages"])
    # ties are broken by array position, dependencies always first
    stages = validate_stages(list(reversed(_saga_stages())), env.get_session_state(sid)["action_catalog"])
    assert topological_order(stages) == ["charge", "reserve", "ship", "confirm"]
    with pytest.raises(EnvError):
        validate_stages([{"stage_id": "x", "action": "unit_tests", "depends_on": "y"}], {"unit_tests": {}})


# ---- workers: registration, assignment, busy-state protection --------------------------------------


def test_register_and_deregister_worker(env: WorkflowOrchestration) -> None:
    sid = env.create_session(RELEASE)
    w = _ok(
        env.call(
            sid,
            "register_worker",
            worker_id="ci-runner-x86-03",
            name="x86 runner 03",
            role="ci_runner",
            capabilities=["build", "test", "linux-x86"],
        )
    )["worker"]
    assert w["status"] == "idle" and w["registered_at"] == "2026-03-09T09:00:00+00:00"
    _err(
        env.call(
            sid,
            "register_worker",
            worker_id="ci-runner-x86-03",
            name="again",
            role="ci_runner",
            capabilities=["build"],
        ),
        "invalid_argument",
    )
    assert "unknown tag" in _err(
        env.call(
            sid,
            "register_worker",
            worker_id="gpu-01",
            name="gpu box",
            role="ci_runner",
            capabilities=["cuda"],
        ),
        "invalid_argument",
    )
    _err(
        env.call(
            sid, "register_worker", worker_id="gpu-01", name="gpu box", role="wizard", capabilities=["build"]
        ),
        "invalid_argument",
    )
    _ok(env.call(sid, "deregister_worker", worker_id="ci-runner-x86-03"))
    assert _worker(env, sid, "ci-runner-x86-03") is None
    assert env.get_session_state(sid)["deregistered"][-1]["worker_id"] == "ci-runner-x86-03"
    _err(env.call(sid, "deregister_worker", worker_id="ci-runner-x86-03"), "invalid_reference")


def test_busy_worker_cannot_be_deregistered_until_its_stage_moves(env: WorkflowOrchestration) -> None:
    sid = env.create_session(RELEASE)
    assert "busy with stage 'publish'" in _err(
        env.call(sid, "deregister_worker", worker_id="legacy-runner-07"), "invalid_transition"
    )
    assert _worker(env, sid, "legacy-runner-07")["status"] == "busy"
    out = _ok(_assign(env, sid, "P-101", "publish", "ci-runner-x86-02"))
    assert out["previous_worker"] == "legacy-runner-07"
    assert _worker(env, sid, "legacy-runner-07")["status"] == "idle"
    assert _worker(env, sid, "ci-runner-x86-02")["assignment"] == {
        "pipeline_id": "P-101",
        "stage_id": "publish",
    }
    _ok(env.call(sid, "deregister_worker", worker_id="legacy-runner-07"))


def test_assignment_checks_capabilities_busy_state_and_stage_status(env: WorkflowOrchestration) -> None:
    sid = env.create_session(RELEASE)
    msg = _err(_assign(env, sid, "P-101", "publish", "qa-bot-01"), "invalid_argument")
    assert "lacks capability build" in msg
    msg = _err(_assign(env, sid, "P-101", "publish", "ci-runner-arm-01"), "invalid_transition")
    assert "busy" in msg
    _err(_assign(env, sid, "P-101", "compile", "ci-runner-x86-02"), "invalid_transition")
    _err(_assign(env, sid, "P-101", "nope", "ci-runner-x86-02"), "invalid_reference")
    _err(_assign(env, sid, "P-097", "publish", "ci-runner-x86-02"), "invalid_transition")
    assert _stages(env, sid, "P-101")["publish"]["worker"] == "legacy-runner-07"


# ---- execution: sequential / parallel, policies ------------------------------------------------------


def test_sequential_run_halts_on_abort_and_keeps_assignments(env: WorkflowOrchestration) -> None:
    sid = env.create_session(SAGA)
    out = _ok(env.call(sid, "run_pipeline", pipeline_id="P-102"))
    assert [(e["stage_id"], e["outcome"]) for e in out["executed"]] == [
        ("reserve", "completed"),
        ("charge", "failed"),
    ]
    assert "declined" in out["executed"][1]["reason"] and out["pipeline_status"] == "failed"
    stages = _stages(env, sid, "P-102")
    assert stages["ship"]["status"] == "pending" and stages["ship"]["history"] == []
    assert _worker(env, sid, "inventory-svc")["status"] == "idle"
    assert _worker(env, sid, "shipping-svc")["status"] == "busy"  # reserved until the rollback
    assert _pipeline(env, sid, "P-102")["failure"]["stage_id"] == "charge"
    _err(env.call(sid, "run_pipeline", pipeline_id="P-102"), "invalid_transition")
    _err(env.call(sid, "execute_stage", pipeline_id="P-102", stage_id="ship"), "invalid_transition")


def test_skip_policy_continues_and_satisfies_dependents(env: WorkflowOrchestration) -> None:
    sid = env.create_session(RELEASE)
    _unblock_release(env, sid)
    out = _ok(env.call(sid, "execute_stage", pipeline_id="P-101", stage_id="sbom"))
    assert out["execution"]["outcome"] == "skipped" and out["pipeline_status"] == "running"
    assert _stages(env, sid, "P-101")["sbom"]["status"] == "skipped"
    assert _worker(env, sid, "sec-scanner-01")["status"] == "idle"


def test_execute_stage_guards(env: WorkflowOrchestration) -> None:
    sid = env.create_session(RELEASE)
    assert "waiting for integration-tests" in _err(
        env.call(sid, "execute_stage", pipeline_id="P-101", stage_id="publish"), "invalid_transition"
    )
    assert "retry_stage" in _err(
        env.call(sid, "execute_stage", pipeline_id="P-101", stage_id="integration-tests"),
        "invalid_transition",
    )
    _err(env.call(sid, "execute_stage", pipeline_id="P-101", stage_id="checkout"), "invalid_transition")
    _err(env.call(sid, "execute_stage", pipeline_id="P-404", stage_id="checkout"), "invalid_reference")


def test_retry_policy_resets_to_pending_and_the_cap_is_enforced(env: WorkflowOrchestration) -> None:
    sid = env.create_session(RELEASE)
    # run_pipeline does not re-run a stage awaiting retry
    out = _ok(env.call(sid, "run_pipeline", pipeline_id="P-101"))
    assert {"stage_id": "integration-tests", "reason": "awaiting explicit retry (retry_stage)"} in out[
        "blocked"
    ]
    # the ARM runner always fails: the retry uses the last allowed retry (1 → 2 of 2)...
    r = _ok(env.call(sid, "retry_stage", pipeline_id="P-101", stage_id="integration-tests"))
    assert r["execution"]["outcome"] == "retry_scheduled" and r["retries_used"] == 2
    stage = _stages(env, sid, "P-101")["integration-tests"]
    assert stage["status"] == "pending" and stage["awaiting_retry"] and len(stage["history"]) == 2
    # ...and failing again past the cap aborts the pipeline
    r = _ok(env.call(sid, "retry_stage", pipeline_id="P-101", stage_id="integration-tests"))
    assert r["execution"]["outcome"] == "failed" and "retry cap 2 exhausted" in r["execution"]["reason"]
    assert r["pipeline_status"] == "failed"
    assert _worker(env, sid, "ci-runner-arm-01")["status"] == "idle"
    _err(
        env.call(sid, "retry_stage", pipeline_id="P-101", stage_id="integration-tests"), "invalid_transition"
    )


def test_fault_attempts_count_per_worker(env: WorkflowOrchestration) -> None:
    """x86-02 fails the integration suite on its first attempt only; it succeeds on the next retry."""
    sid = env.create_session(RELEASE)
    _ok(_assign(env, sid, "P-101", "integration-tests", "ci-runner-x86-02"))
    first = _ok(env.call(sid, "retry_stage", pipeline_id="P-101", stage_id="integration-tests"))["execution"]
    assert first["outcome"] == "retry_scheduled" and "Postgres" in first["reason"]
    second = _ok(env.call(sid, "retry_stage", pipeline_id="P-101", stage_id="integration-tests"))["execution"]
    assert second["outcome"] == "completed" and second["attempt"] == 3


def test_retry_stage_refuses_stages_not_awaiting_retry(env: WorkflowOrchestration) -> None:
    sid = env.create_session(RELEASE)
    _err(env.call(sid, "retry_stage", pipeline_id="P-101", stage_id="publish"), "invalid_transition")
    _err(env.call(sid, "retry_stage", pipeline_id="P-101", stage_id="compile"), "invalid_transition")


def test_parallel_mode_runs_ready_stages_as_one_wave(env: WorkflowOrchestration) -> None:
    sid = env.create_session(SAGA)
    stages = _saga_stages(on_failure="retry", max_retries=1)
    _ok(
        env.call(
            sid,
            "define_pipeline",
            name="ORD-7 saga",
            mode="parallel",
            stages=stages,
            parameters={"order_id": "ORD-7"},
        )
    )
    for stage, worker in (("reserve", "inventory-svc"), ("charge", "payments-svc")):
        _err(_assign(env, sid, "P-103", stage, worker), "invalid_transition")
    _ok(env.call(sid, "run_pipeline", pipeline_id="P-102"))  # aborts on the declined card
    _ok(env.call(sid, "rollback_pipeline", pipeline_id="P-102", reason="declined card"))  # frees the workers
    _staff_saga(env, sid, "P-103")
    wave1 = _ok(env.call(sid, "run_pipeline", pipeline_id="P-103"))
    assert [e["stage_id"] for e in wave1["executed"]] == ["reserve", "charge"]
    assert len({e["at"] for e in wave1["executed"]}) == 1  # one step
    assert [b["stage_id"] for b in wave1["blocked"]] == ["ship", "confirm"]
    wave2 = _ok(env.call(sid, "run_pipeline", pipeline_id="P-103"))
    assert [(e["stage_id"], e["outcome"]) for e in wave2["executed"]] == [
        ("ship", "completed")
    ]  # DE: no customs fault
    wave3 = _ok(env.call(sid, "run_pipeline", pipeline_id="P-103"))
    assert wave3["pipeline_status"] == "completed"
    assert _pipeline(env, sid, "P-103")["stages"][2]["result"]["shipment_id"].startswith("SHP-")


def test_sequential_mode_runs_the_whole_chain_in_one_pass(env: WorkflowOrchestration) -> None:
    sid = env.create_session(SAGA)
    _ok(env.call(sid, "run_pipeline", pipeline_id="P-102"))
    _ok(env.call(sid, "rollback_pipeline", pipeline_id="P-102", reason="declined card"))
    _ok(
        env.call(
            sid,
            "define_pipeline",
            name="ORD-8 saga",
            mode="sequential",
            stages=_saga_stages(),
            parameters={"order_id": "ORD-8"},
        )
    )
    _staff_saga(env, sid, "P-103")
    out = _ok(env.call(sid, "run_pipeline", pipeline_id="P-103"))
    assert [e["stage_id"] for e in out["executed"]] == ["reserve", "charge", "ship", "confirm"]
    assert out["pipeline_status"] == "completed"


# ---- inputs and messaging ------------------------------------------------------------------------------


def test_missing_input_fails_the_stage_by_its_policy(env: WorkflowOrchestration) -> None:
    """Without an approval sent by a release manager, production deployment lacks change_ticket → abort."""
    sid = env.create_session(RELEASE)
    _unblock_release(env, sid)
    # a message from a non-release-manager does not count for change_ticket
    _ok(_approval(env, sid, "qa-bot-01", "looks fine"))
    out = _ok(env.call(sid, "run_pipeline", pipeline_id="P-101"))
    last = out["executed"][-1]
    assert last["stage_id"] == "deploy-prod-eu" and last["outcome"] == "failed"
    assert last["reason"] == "missing input(s) change_ticket" and out["pipeline_status"] == "failed"


def test_approval_message_feeds_the_recipient_stage(env: WorkflowOrchestration) -> None:
    sid = env.create_session(RELEASE)
    _unblock_release(env, sid)
    msg = _ok(_approval(env, sid, "rm-aisha", "CHG-4471 approved"))["message"]
    assert msg["message_id"] == "M-0001" and msg["from_role"] == "release_manager"
    inbox = _ok(env.call(sid, "list_workers", role="deployer"))["workers"]
    assert [m["message_id"] for w in inbox if w["worker_id"] == "deployer-prod-eu" for m in w["inbox"]] == [
        "M-0001"
    ]
    out = _ok(env.call(sid, "run_pipeline", pipeline_id="P-101"))
    assert out["pipeline_status"] == "completed"
    results = _ok(env.call(sid, "collect_results", pipeline_id="P-101"))
    assert (
        results["outputs"]["production_release"].startswith("prod-rel-") and results["pending_stages"] == {}
    )


def test_send_message_guards(env: WorkflowOrchestration) -> None:
    sid = env.create_session(RELEASE)
    _err(
        env.call(
            sid, "send_message", from_worker="rm-aisha", to_worker="rm-aisha", topic="approval", body="x"
        ),
        "invalid_argument",
    )
    _err(
        env.call(sid, "send_message", from_worker="rm-aisha", to_worker="nobody", topic="approval", body="x"),
        "invalid_reference",
    )
    _err(
        env.call(
            sid, "send_message", from_worker="rm-aisha", to_worker="qa-bot-01", topic="Bad Topic", body="x"
        ),
        "invalid_argument",
    )
    _err(
        env.call(
            sid,
            "send_message",
            from_worker="rm-aisha",
            to_worker="qa-bot-01",
            topic="note",
            body="x",
            payload={"k": [1]},
        ),
        "invalid_argument",
    )
    assert env.get_session_state(sid)["messages"] == []


# ---- rollback ------------------------------------------------------------------------------------------


def test_rollback_compensates_in_reverse_topological_order(env: WorkflowOrchestration) -> None:
    sid = env.create_session(RELEASE)
    _unblock_release(env, sid)
    _ok(_approval(env, sid, "rm-aisha", "ok"))
    _ok(env.call(sid, "run_pipeline", pipeline_id="P-101"))
    rb = _ok(env.call(sid, "rollback_pipeline", pipeline_id="P-101", reason="p99 latency regression"))[
        "rollback"
    ]
    assert [(c["stage_id"], c["action"]) for c in rb["compensations"]] == [
        ("deploy-prod-eu", "restore_previous_release"),
        ("deploy-staging", "undeploy_staging"),
        ("publish", "delete_image"),
    ]
    assert rb["nothing_to_undo"] == ["smoke", "integration-tests", "unit-tests", "compile", "checkout"]
    stages = _stages(env, sid, "P-101")
    assert stages["publish"]["status"] == "compensated" and stages["smoke"]["status"] == "completed"
    assert stages["sbom"]["status"] == "skipped"
    assert _pipeline(env, sid, "P-101")["status"] == "rolled_back"
    _err(env.call(sid, "rollback_pipeline", pipeline_id="P-101", reason="again please"), "invalid_transition")


def test_rollback_cancels_pending_stages_and_frees_workers(env: WorkflowOrchestration) -> None:
    sid = env.create_session(SAGA)
    _err(env.call(sid, "rollback_pipeline", pipeline_id="P-102", reason="nothing ran"), "invalid_transition")
    _ok(env.call(sid, "run_pipeline", pipeline_id="P-102"))
    _err(env.call(sid, "rollback_pipeline", pipeline_id="P-102", reason="x"), "invalid_argument")
    rb = _ok(env.call(sid, "rollback_pipeline", pipeline_id="P-102", reason="payment declined"))["rollback"]
    assert [c["stage_id"] for c in rb["compensations"]] == ["reserve"]
    assert {s: st["status"] for s, st in _stages(env, sid, "P-102").items()} == {
        "reserve": "compensated",
        "charge": "failed",
        "ship": "cancelled",
        "confirm": "cancelled",
    }
    state = env.get_session_state(sid)
    assert all(
        state["workers"][w]["status"] == "idle"
        for w in ("inventory-svc", "payments-svc", "shipping-svc", "notify-svc")
    )


# ---- evaluation ----------------------------------------------------------------------------------------


def test_evaluator_penalises_wrong_rollback_and_fleet_changes(env: WorkflowOrchestration) -> None:
    sid = env.create_session(RELEASE)
    _run_reference(env, sid, RELEASE)
    assert env.evaluate_session(sid)["overall_score"] == 1.0
    _ok(env.call(sid, "rollback_pipeline", pipeline_id="P-101", reason="undo the release"))
    dims = env.evaluate_session(sid)["dimensions"]
    assert dims["rollback_correctness"]["score"] == 0.0 and dims["pipeline_outcome"]["score"] < 1.0


def test_evaluator_scores_a_half_done_saga_low(env: WorkflowOrchestration) -> None:
    sid = env.create_session(SAGA)
    _ok(env.call(sid, "run_pipeline", pipeline_id="P-102"))
    report = env.evaluate_session(sid)
    assert report["overall_score"] < 0.6
    assert "no such pipeline defined" in report["dimensions"]["pipeline_outcome"]["reason"]


def test_overview_and_long_context_distractors(env: WorkflowOrchestration) -> None:
    sid = env.create_session(RELEASE)
    overview = _ok(env.call(sid, "collect_results"))
    assert [p["pipeline_id"] for p in overview["pipelines"]] == ["P-102", "P-101", "P-097"]
    assert overview["pipelines"][1]["stage_statuses"] == {"completed": 3, "pending": 6}
    long_sid = env.create_session(RELEASE, long_context=True)
    running = _ok(env.call(long_sid, "collect_results", status="completed"))
    assert running["count"] == 41  # P-097 + 40 historical release trains
    state = env.get_session_state(long_sid)
    assert state["pipelines"]["P-057"]["stages"][-1]["worker"] == "deployer-prod-eu"
    assert {w for w, r in state["workers"].items() if r["status"] == "busy"} == {
        w for w, r in env.get_session_state(sid)["workers"].items() if r["status"] == "busy"
    }
    _run_reference(env, long_sid, RELEASE)
    assert env.evaluate_session(long_sid)["overall_score"] == 1.0
