"""Environment base: template fields, deterministic clock, action log, rollback, harness interface, errors."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from dataclaw.envcraft.runtime import EnvError, EnvPackage, state_hash
from dataclaw.envcraft.runtime.environment import Scenario


def test_initial_state_has_c1_template_and_overrides(counter_env) -> None:
    sid = counter_env.create_session("reach_three")
    s = counter_env.get_session_state(sid)
    assert s["session_id"] == sid and s["scenario_id"] == "reach_three"
    assert s["created_at"] == "2026-01-01T00:00:00+00:00" and s["workspace_account"] == "tester"
    assert s["meta"] == {
        "base_time": "2026-01-01T00:00:00+00:00",
        "action_index": 0,
        "time_step_s": 60,
        "long_context": False,
    }
    assert s["actions"] == [] and s["notes"]["seed"]["text"] == "from scenario" and "extra" not in s["notes"]
    long_sid = counter_env.create_session("reach_three", long_context=True)
    assert counter_env.get_session_state(long_sid)["notes"]["extra"]["text"] == "long context"
    # the template itself is never mutated
    assert counter_env.DEFAULT_STATE["notes"] == {} and counter_env.DEFAULT_STATE["counter"]["value"] == 0


def test_clock_and_action_log_are_deterministic(counter_env) -> None:
    sid = counter_env.create_session("start_at_ten")
    counter_env.call(sid, "get_counter")
    counter_env.call(sid, "increment", by=5)
    counter_env.call(sid, "increment", by=0)  # domain error: still logged
    counter_env.call(sid, "no_such_tool", x=1)  # unknown tool: still logged
    s = counter_env.get_session_state(sid)
    assert s["counter"] == {"value": 15, "last_at": "2026-06-01T12:01:00+00:00"}
    assert [(a["index"], a["tool"], a["status"], a["at"]) for a in s["actions"]] == [
        (0, "get_counter", "ok", "2026-06-01T12:00:00+00:00"),
        (1, "increment", "ok", "2026-06-01T12:01:00+00:00"),
        (2, "increment", "error", "2026-06-01T12:02:00+00:00"),
        (3, "no_such_tool", "error", "2026-06-01T12:03:00+00:00"),
    ]
    assert s["actions"][1]["params"] == {"by": 5}
    assert s["actions"][3]["error"]["category"] == "unknown_tool"


def test_failed_write_is_rolled_back(counter_env) -> None:
    sid = counter_env.create_session("reach_three")
    counter_env.call(sid, "increment", by=2)
    out = counter_env.call(sid, "fail_halfway")
    assert out["status"] == "error" and out["error"]["category"] == "invalid_transition"
    assert counter_env.get_session_state(sid)["counter"]["value"] == 2
    assert counter_env.call(sid, "get_counter")["data"]["value"] == 2


def test_caller_objects_are_not_aliased_into_state(counter_env) -> None:
    sid = counter_env.create_session("reach_three")
    tags = ["a"]
    counter_env.call(sid, "set_note", key="k", text="t", tags=tags)
    tags.append("mutated by caller")
    out = counter_env.call(sid, "get_counter")
    out["data"]["value"] = 999  # mutating a result does not reach the state either
    s = counter_env.get_session_state(sid)
    assert s["notes"]["k"]["tags"] == ["a"] and s["counter"]["value"] == 0


def test_bug_in_tool_becomes_generic_error_logged_server_side(counter_env, caplog) -> None:
    sid = counter_env.create_session("reach_three")
    with caplog.at_level(logging.ERROR, logger="dataclaw.envcraft.runtime"):
        out = counter_env.call(sid, "crash")
    err = out["error"]
    assert err["category"] == "infrastructure" and err["retryable"] is True
    assert "boom" not in err["message"] and "/" not in err["message"] and "ref " in err["message"]
    assert "boom in" in caplog.text and "Traceback" in caplog.text
    assert counter_env.call(sid, "get_counter")["status"] == "ok"


def test_evaluate_is_weighted_and_penalises(counter_env) -> None:
    sid = counter_env.create_session("reach_three")
    counter_env.call(sid, "increment", by=3)
    ev = counter_env.evaluate_session(sid)
    assert ev["overall_score"] == 1.0 and set(ev["dimensions"]) == {"reached_target", "no_refusals"}
    counter_env.call(sid, "fail_halfway")
    ev = counter_env.evaluate_session(sid)
    assert ev["dimensions"]["no_refusals"]["score"] == 0.5 and ev["overall_score"] == pytest.approx(0.9)


def test_reset_session_restores_initial_state(counter_env) -> None:
    sid = counter_env.create_session("reach_three", long_context=True)
    initial = state_hash(counter_env.get_session_state(sid))
    counter_env.call(sid, "increment", by=3)
    counter_env.reset_session(sid)
    assert state_hash(counter_env.get_session_state(sid)) == initial


def test_harness_interface_load_snapshot_restore(counter_pkg: EnvPackage, tmp_path: Path) -> None:
    env = counter_pkg.env_cls(tmp_path)
    with pytest.raises(EnvError) as info:
        env.get_env_state()
    assert info.value.category == "missing_binding"
    env._load_scenario("reach_three")
    sid = env.session_id
    env.call(sid, "increment", by=2)
    snap = env.get_env_state()
    env.call(sid, "increment", by=5)
    env.restore_env_state(snap)
    assert env.get_env_state() == snap
    inline = {
        "scenario_id": "inline",
        "title": "t",
        "task_prompt": "p",
        "base_time": "2026-02-02T00:00:00Z",
        "overrides": {"counter": {"value": 7}},
        "evaluation": {"target": 8},
    }
    env._load_scenario(inline)
    state = env.get_env_state()
    assert env.session_id == sid and state["counter"]["value"] == 7 and state["actions"] == []


def test_scenario_validation_names_the_problem() -> None:
    with pytest.raises(ValueError, match=r"x\.json: scenario is missing task_prompt"):
        Scenario.from_dict({"scenario_id": "a", "title": "b", "base_time": "c"}, "x.json")
    with pytest.raises(ValueError, match="unknown scenario keys colour"):
        Scenario.from_dict(
            {"scenario_id": "a", "title": "b", "task_prompt": "p", "base_time": "c", "colour": 1}, "x"
        )


def test_unknown_scenario_lists_known_ones(counter_env) -> None:
    with pytest.raises(EnvError) as info:
        counter_env.create_session("nope")
    assert info.value.category == "invalid_reference" and "reach_three" in info.value.message
