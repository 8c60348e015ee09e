"""The call sites that open environments take the worker for a non-built-in package: the env CLI,
grounding, the tool graph and the rollout harness — and the package never lands in ``sys.modules``."""

from __future__ import annotations

import json
import sys

import pytest
from typer.testing import CliRunner

from dataclaw.cli.env import app as env_app
from dataclaw.envcraft import archetypes
from dataclaw.envcraft.graph import build_tool_graph
from dataclaw.envcraft.rollout.harness import ToolTaskHarness
from dataclaw.envcraft.tasks.tool.loading import load_env
from dataclaw.envcraft.tasks.tool.stages import GroundStage
from dataclaw.envcraft.worker import RemoteEnvironment, is_builtin, open_environment

from .conftest import copy_archetype, counter_copy


def _not_imported(name: str) -> None:
    assert not [m for m in sys.modules if m == name or m.startswith(name + ".")]


def test_builtins_stay_in_process_everything_else_goes_to_the_worker(pkgs):
    assert is_builtin("state_machine") and is_builtin("dataclaw.envcraft.archetypes.state_machine")
    assert open_environment("state_machine").env_cls is archetypes.get("state_machine").env_cls
    folder = counter_copy(pkgs, "routed_counter")
    assert not is_builtin(folder)
    assert issubclass(load_env("counter_env", str(folder)), RemoteEnvironment)
    # an archetype's name with a foreign module is that module, not the archetype
    copy = copy_archetype("state_machine", pkgs, "routed_sm")
    assert issubclass(load_env("state_machine", str(copy)), RemoteEnvironment)
    _not_imported("routed_counter")
    _not_imported("routed_sm")


def test_env_cli_show_tools_call_graph(pkgs, tmp_path):
    folder = counter_copy(pkgs, "cli_counter")
    runner = CliRunner()
    shown = runner.invoke(env_app, ["show", str(folder)])
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.output)
    assert data["name"] == "counter_env" and data["layout_problems"] == [] and "increment" in data["tools"]
    tools = runner.invoke(env_app, ["tools", str(folder)])
    assert [t["name"] for t in json.loads(tools.output)][:2] == ["increment", "append_item"]
    root = str(tmp_path / "state")
    for expected in (2, 4):  # the poke session persists across invocations, as for an archetype
        out = runner.invoke(
            env_app, ["call", str(folder), "increment", "--arg", "by=2", "--state-root", root]
        )
        assert out.exit_code == 0, out.output
        assert json.loads(out.output)["data"]["value"] == expected
    graph = runner.invoke(env_app, ["graph", str(folder), "--json"])
    assert graph.exit_code == 0 and json.loads(graph.output)["nodes"]
    _not_imported("cli_counter")


@pytest.mark.slow
def test_grounding_graph_and_rollout_of_a_package_folder(pkgs):
    folder = counter_copy(pkgs, "rollout_counter")
    env_cls = load_env("counter_env", str(folder))
    assert build_tool_graph(env_cls).graph.number_of_nodes() == len(env_cls.tools)
    chain = {"id": "r1", "envs": ["counter_env"], "env_modules": {"counter_env": str(folder)},
             "steps": ["increment"]}  # fmt: skip
    # a one-call counter task, which a random policy completes often enough that the soundness gate
    # rejects it (that gate running through the worker is the first assertion): routing is what is tested
    gated = GroundStage().process(chain)
    assert not isinstance(gated, list) and gated.reason == "gamed_by_random", gated
    grounded = GroundStage(soundness=None).process(chain)
    assert isinstance(grounded, list), grounded
    task = {**grounded[0], "user_turns": ["Add to the counter."]}
    harness = ToolTaskHarness(task)
    harness.setup()
    try:
        assert next(t["function"]["name"] for t in harness.tools()) == "increment"
        for step in task["steps"]:
            assert harness.execute(step["tool"], step["params"]) is not None
        assert harness.score().reward == 1.0
    finally:
        harness.cleanup()
    _not_imported("rollout_counter")
