"""Through the worker, a package behaves exactly as in-process: schemas, scenarios, envelopes, states,
evaluations, errors and grounded chains are the same — and the package is never imported here."""

from __future__ import annotations

import sys

import pytest

from dataclaw.envcraft import archetypes
from dataclaw.envcraft.runtime import EnvError
from dataclaw.envcraft.tasks.tool.execute import ground_chain
from dataclaw.envcraft.worker import open_environment

from .conftest import copy_archetype

ARCHETYPES = ["state_machine", "transactional_workspace"]


@pytest.fixture(scope="module", params=ARCHETYPES)
def pair(request, pkgs):
    name = request.param
    folder = copy_archetype(name, pkgs, f"copy_{name}")
    handle = open_environment(folder)
    yield archetypes.get(name).env_cls, handle
    handle.close()


def test_it_runs_in_the_worker_not_here(pair):
    _local, handle = pair
    assert not handle.builtin and handle.worker is not None
    assert not [m for m in sys.modules if m.startswith("copy_")], "the package was imported in-process"
    assert open_environment(handle.folder).worker is handle.worker  # one worker per package, shared


def test_class_side_is_the_same(pair):
    local, handle = pair
    remote = handle.env_cls
    assert remote.name == local.name and remote.prefix() == local.prefix()
    assert remote.tools.unified_schemas() == local.tools.unified_schemas()
    assert remote.tools.openai_schemas() == local.tools.openai_schemas()
    assert remote.scenarios() == local.scenarios()
    assert remote.DEFAULT_STATE == local.DEFAULT_STATE
    assert [(d.name, d.weight) for d in remote.evaluator.dimensions] == [
        (d.name, d.weight) for d in local.evaluator.dimensions
    ]
    assert handle.layout_problems() == []


def _episode(env_cls, root, scenario_id):
    env = env_cls(root)
    sid = env.create_session(scenario_id, session_id="parity")
    steps = env_cls.scenario(scenario_id).reference_solution + env_cls.scenario(scenario_id).forbidden_actions
    steps = [*steps, {"tool": "no_such_tool"}, {"tool": steps[0]["tool"], "params": {"bogus": 1}}]
    envelopes = [env.call(sid, s["tool"], **s.get("params", {})) for s in steps]
    state = env.get_session_state(sid)
    evaluation = env.evaluate_session(sid)
    env.reset_session(sid)
    after_reset = env.get_session_state(sid)
    env.restore_env_state(state)
    restored = env.get_session_state(sid)
    return envelopes, state, evaluation, after_reset, restored


def test_every_scenario_gives_the_same_envelopes_states_and_scores(pair, tmp_path):
    local, handle = pair
    for n, scenario_id in enumerate(sorted(local.scenarios())):
        here = _episode(local, tmp_path / f"local{n}", scenario_id)
        there = _episode(handle.env_cls, tmp_path / f"remote{n}", scenario_id)
        assert there == here, scenario_id
    assert any(e["status"] == "error" for e in here[0]) and any(e["status"] == "ok" for e in here[0])


def test_environment_errors_are_the_same_exceptions(pair, tmp_path):
    local, handle = pair
    for env_cls in (local, handle.env_cls):
        env = env_cls(tmp_path / env_cls.__name__)
        with pytest.raises(EnvError) as caught:
            env.create_session("no_such_scenario")
        assert caught.value.category == "invalid_reference"
        with pytest.raises(EnvError) as caught:
            env.get_session_state("nobody")
        assert caught.value.category == "session_not_found"


def test_grounding_a_chain_gives_the_same_task(pair):
    local, handle = pair
    scenario = local.scenarios()[sorted(local.scenarios())[0]]
    steps = [s["tool"] for s in scenario.reference_solution[:3]]
    here = ground_chain(local, steps, seed=7)
    there = ground_chain(handle.env_cls, steps, seed=7)
    assert there == here


def test_a_run_of_calls_is_one_round_trip_and_gives_what_the_calls_give_one_at_a_time(pair):
    """``run_from`` (the soundness suite's runs): restore, calls, state in one request to the worker,
    the same envelopes and state as in-process; an instance made ``memory=True`` writes no files."""
    from dataclaw.envcraft.worker.client import STATE_DIR

    local, handle = pair
    scenario_id = sorted(local.scenarios())[0]
    sc = local.scenario(scenario_id)
    steps = [*sc.reference_solution, *sc.forbidden_actions, {"tool": "no_such_tool"}]
    runs = {}
    for name, cls in (("local", local), ("remote", handle.env_cls)):
        env = cls(memory=True)
        env.create_session(scenario_id, session_id="parity")
        start = env.get_session_state("parity")
        before = handle.worker._next_id
        runs[name] = env.run_from(start, steps), env.run_from(start, [])
        if name == "remote":
            assert handle.worker._next_id - before == 2  # one request per run
            assert not (handle.worker._tmp / STATE_DIR / env.inst).exists()
    assert runs["remote"] == runs["local"]
    envelopes = runs["local"][0][0]
    assert {e["status"] for e in envelopes} == {"ok", "error"}
