"""Environment base: template fields, deterministic clock, action log, rollback, harness interface, errors."""

from __future__ import annotations

import gc
import logging
from pathlib import Path

import pytest

from dataclaw.envcraft.runtime import EnvError, EnvPackage, state_hash
from dataclaw.envcraft.runtime.environment import Scenario


@pytest.fixture(params=["files", "memory"])
def any_store_env(request, counter_pkg: EnvPackage, tmp_path: Path):
    """The counter environment over the file store and over the in-memory store: the same behaviour."""
    return counter_pkg.env_cls(tmp_path / "state", memory=request.param == "memory")


def test_memory_store_writes_no_files(counter_pkg: EnvPackage, tmp_path: Path) -> None:
    env = counter_pkg.env_cls(tmp_path / "state", memory=True)
    sid = env.create_session("reach_three")
    env.call(sid, "increment", by=2)
    assert env.get_session_state(sid)["counter"]["value"] == 2
    assert not (tmp_path / "state").exists()
    env.delete_session(sid)
    assert env.call(sid, "get_counter")["error"]["category"] == "session_not_found"


def test_a_throwaway_environment_removes_its_state_folder_and_a_memory_one_makes_none(
    counter_pkg: EnvPackage,
) -> None:
    env = counter_pkg.env_cls()
    env.call(env.create_session("reach_three"), "increment", by=1)
    root = env.state_root
    assert root is not None and root.is_dir() and any(root.iterdir())
    del env
    gc.collect()
    assert not root.exists()
    assert counter_pkg.env_cls(memory=True).state_root is None


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


def test_clock_and_action_log_are_deterministic(any_store_env) -> None:
    sid = any_store_env.create_session("start_at_ten")
    any_store_env.call(sid, "get_counter")
    any_store_env.call(sid, "increment", by=5)
    any_store_env.call(sid, "increment", by=0)  # domain error: still logged
    any_store_env.call(sid, "no_such_tool", x=1)  # unknown tool: still logged
    s = any_store_env.get_session_state(sid)
    assert s["counter"] == {"value": 15, "last_at": "2026-06-01T12:01:00+00:00"}
    assert [(a["index"], a["tool"], a["status"], a["at"]) for a in s["actions"]] == [
        (0, "get_counter", "ok", "2026-06-01T12:00:00+00:00"),
        (1, "increment", "ok", "2026-06-01T12:01:00+00:00"),
        (2, "increment", "error", "2026-06-01T12:02:00+00:00"),
        (3, "no_such_tool", "error", "2026-06-01T12:03:00+00:00"),
    ]
    assert s["actions"][1]["params"] == {"by": 5}
    assert s["actions"][3]["error"]["category"] == "unknown_tool"


def test_failed_write_is_rolled_back(any_store_env) -> None:
    sid = any_store_env.create_session("reach_three")
    any_store_env.call(sid, "increment", by=2)
    out = any_store_env.call(sid, "fail_halfway")
    assert out["status"] == "error" and out["error"]["category"] == "invalid_transition"
    assert any_store_env.get_session_state(sid)["counter"]["value"] == 2
    assert any_store_env.call(sid, "get_counter")["data"]["value"] == 2


def test_caller_objects_are_not_aliased_into_state(any_store_env) -> None:
    sid = any_store_env.create_session("reach_three")
    tags = ["a"]
    any_store_env.call(sid, "set_note", key="k", text="t", tags=tags)
    tags.append("mutated by caller")
    out = any_store_env.call(sid, "get_counter")
    out["data"]["value"] = 999  # mutating a result does not reach the state either
    s = any_store_env.get_session_state(sid)
    assert s["notes"]["k"]["tags"] == ["a"] and s["counter"]["value"] == 0


def test_bug_in_tool_becomes_generic_error_logged_server_side(any_store_env, caplog) -> None:
    sid = any_store_env.create_session("reach_three")
    with caplog.at_level(logging.ERROR, logger="dataclaw.envcraft.runtime"):
        out = any_store_env.call(sid, "crash")
    err = out["error"]
    assert err["category"] == "infrastructure" and err["retryable"] is True
    assert "boom" not in err["message"] and "/" not in err["message"] and "ref " in err["message"]
    assert "boom in" in caplog.text and "Traceback" in caplog.text
    assert any_store_env.call(sid, "get_counter")["status"] == "ok"


def test_evaluate_is_weighted_and_penalises(any_store_env) -> None:
    sid = any_store_env.create_session("reach_three")
    any_store_env.call(sid, "increment", by=3)
    ev = any_store_env.evaluate_session(sid)
    assert ev["overall_score"] == 1.0 and set(ev["dimensions"]) == {"reached_target", "no_refusals"}
    any_store_env.call(sid, "fail_halfway")
    ev = any_store_env.evaluate_session(sid)
    assert ev["dimensions"]["no_refusals"]["score"] == 0.5 and ev["overall_score"] == pytest.approx(0.9)


def test_reset_session_restores_initial_state(any_store_env) -> None:
    sid = any_store_env.create_session("reach_three", long_context=True)
    initial = state_hash(any_store_env.get_session_state(sid))
    any_store_env.call(sid, "increment", by=3)
    any_store_env.reset_session(sid)
    assert state_hash(any_store_env.get_session_state(sid)) == initial


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
