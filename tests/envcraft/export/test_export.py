"""``tasks export --to trl|verl`` in dataclaw's own venv: the files, the exported classes driven as a trainer
would drive them (they import only dataclaw's light core), rewards, and every bad input's error."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from dataclaw.cli.app import _run
from dataclaw.envcraft.export import EXPORTERS, ExportError, export_tasks
from dataclaw.envcraft.export.base import class_name, method_name
from dataclaw.envcraft.export.episode import (
    EpisodeStateError,
    ExportedTaskError,
    Sessions,
    TaskSet,
    ToolCallError,
)
from dataclaw.envcraft.tasks.tool.verifier import evaluate
from envcraft.export.conftest import ENV, write

COUNTER = Path(__file__).resolve().parents[1] / "fixtures" / "counter_env"


def load(path: Path, name: str) -> Any:
    """Import a generated module from its export folder (as a trainer does, by file)."""
    spec = importlib.util.spec_from_file_location(f"{name}_{abs(hash(str(path)))}", path / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def play_gold(env: Any, task: dict[str, Any]) -> None:
    for step in task["gold_chain"]:
        getattr(env, method_name(step["tool"]))(**step["params"])


@pytest.fixture
def trl_export(tasks_file: Path, tmp_path: Path) -> Path:
    return export_tasks(tasks_file, "trl", tmp_path / "trl").out


def test_registry_lists_both_trainer_formats() -> None:
    assert {"trl", "verl"} <= set(EXPORTERS.names())
    with pytest.raises(Exception, match="unknown trainer export 'nope'"):
        EXPORTERS.get("nope")


def test_trl_export_writes_module_dataset_tasks_and_manifest(trl_export: Path, tool_tasks: list) -> None:
    names = {p.name for p in trl_export.iterdir()}
    assert {"envcraft_trl.py", "dataset.jsonl", "tasks.jsonl", "manifest.json", "README.md"} <= names
    manifest = json.loads((trl_export / "manifest.json").read_text())
    assert manifest["group"] == ENV and manifest["tasks"] == len(tool_tasks)
    assert manifest["sources"] == {ENV: {"archetype": ENV}}  # a built-in: loaded from dataclaw itself
    rows = [json.loads(x) for x in (trl_export / "dataset.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in rows] == [t["id"] for t in tool_tasks]
    assert [m["role"] for m in rows[0]["prompt"]] == ["system", "user"]
    assert rows[0]["prompt"][-1]["content"] == ""  # reset() supplies the request (TRL appends it)


def test_trl_class_gold_chain_gives_reward_1_and_untouched_gives_the_verifiers_score(
    trl_export: Path, tool_tasks: list
) -> None:
    module = load(trl_export, "envcraft_trl")
    cls = getattr(module, class_name(ENV))
    rows = [json.loads(x) for x in (trl_export / "dataset.jsonl").read_text().splitlines()]
    env = cls()  # no-argument constructor: TRL's environment_factory
    for row, task in zip(rows, tool_tasks, strict=True):
        assert env.reset(**row) == task["instruction"]
        play_gold(env, task)
        assert env.get_reward() == 1.0
        env.reset(**row)  # untouched: binary reward of the verifier on S0
        assert env.get_reward() == 0.0
        assert evaluate(task["verifier"], task["initial_state"])["score"] < 1.0


def test_fraction_reward_gives_partial_credit_equal_to_the_verifiers_untouched_score(
    tasks_file: Path, tool_tasks: list, tmp_path: Path
) -> None:
    out = export_tasks(tasks_file, "trl", tmp_path / "frac", reward="fraction").out
    env = getattr(load(out, "envcraft_trl"), class_name(ENV))()
    for task in tool_tasks:
        env.reset(task_id=task["id"])
        assert env.get_reward() == pytest.approx(task["metadata"]["verifier_check"]["initial"])
        env.reset(task_id=task["id"])
        play_gold(env, task)
        assert env.get_reward() == 1.0


def test_trl_methods_are_typed_and_documented_like_the_environments_tools(trl_export: Path) -> None:
    import inspect

    from dataclaw.envcraft import archetypes

    cls = getattr(load(trl_export, "envcraft_trl"), class_name(ENV))
    tools = archetypes.get(ENV).env_cls.tools
    public = {n for n, _ in inspect.getmembers(cls, inspect.isfunction) if not n.startswith("_")}
    assert public == {*tools.names(), "reset", "get_reward"}  # nothing else would become a tool
    for spec in tools:
        fn = getattr(cls, spec.name)
        params = list(inspect.signature(fn).parameters)[1:]
        assert sorted(params) == sorted(p.name for p in spec.params)
        hints = {k: v for k, v in fn.__annotations__.items() if k != "return"}
        assert set(hints) == set(params) and fn.__annotations__["return"] is str
        assert spec.description in fn.__doc__ and all(f"    {p}:" in fn.__doc__ for p in params)


def test_trl_class_bad_calls_give_clear_agent_safe_errors(trl_export: Path, tool_tasks: list) -> None:
    cls = getattr(load(trl_export, "envcraft_trl"), class_name(ENV))
    env = cls()
    task = tool_tasks[0]
    first = task["gold_chain"][0]
    tool = getattr(env, method_name(first["tool"]))
    with pytest.raises(EpisodeStateError, match=r"before reset\(\)"):
        tool(**first["params"])
    with pytest.raises(ExportedTaskError, match=r"unknown task id 'nope'.*holds 4 tasks"):
        env.reset(task_id="nope")
    env.reset(task_id=task["id"])
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        tool(**first["params"], bogus=1)
    name = next(p for p, v in first["params"].items() if isinstance(v, str))
    with pytest.raises(ToolCallError) as err:
        tool(**{**first["params"], name: 12345})
    assert err.value.category in {"invalid_argument", "invalid_reference", "not_found"}
    assert "Traceback" not in str(err.value) and "/work" not in str(err.value)
    play_gold(env, task)  # a refused call changes nothing: the gold chain still solves the task
    assert env.get_reward() == 1.0
    with pytest.raises(EpisodeStateError, match="ended"):
        tool(**first["params"])


def test_trl_reward_function_replays_completions(trl_export: Path, tool_tasks: list) -> None:
    module = load(trl_export, "envcraft_trl")
    gold = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"type": "function", "function": {"name": method_name(s["tool"]), "arguments": s["params"]}}
            ],
        }
        for s in tool_tasks[0]["gold_chain"]
    ]
    as_text = [  # arguments as a JSON string, as OpenAI-style messages carry them
        {
            **m,
            "tool_calls": [
                {**c, "function": {**c["function"], "arguments": json.dumps(c["function"]["arguments"])}}
            ],
        }
        for m in gold
        for c in m["tool_calls"]
    ]
    nothing = [{"role": "assistant", "content": "Done!"}]
    ids = [tool_tasks[0]["id"]] * 3
    assert module.envcraft_reward(completions=[gold, as_text, nothing], task_id=ids) == [1.0, 1.0, 0.0]


def test_cross_environment_group_exports_with_prefixed_tool_methods(
    cross_tasks: list, tmp_path: Path
) -> None:
    task = cross_tasks[0]
    out = export_tasks(write([task], tmp_path / "t.jsonl"), "trl", tmp_path / "x").out
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["group"] == task["env"] and manifest["envs"] == task["envs"]
    env = getattr(load(out, "envcraft_trl"), class_name(task["env"]))()
    env.reset(task_id=task["id"])
    play_gold(env, task)
    assert env.get_reward() == 1.0
    assert all("__" in m for m in manifest["tools"])


def test_verl_export_parquet_tool_config_and_compute_score(
    tasks_file: Path, tool_tasks: list, tmp_path: Path
) -> None:
    import yaml

    out = export_tasks(tasks_file, "verl", tmp_path / "verl").out
    rows = pq.read_table(out / "train.parquet").to_pylist()
    assert [r["extra_info"]["task_id"] for r in rows] == [t["id"] for t in tool_tasks]
    row = rows[0]
    assert row["data_source"] == f"dataclaw/{ENV}" and row["agent_name"] == "tool_agent"
    assert json.loads(row["reward_model"]["ground_truth"]) == tool_tasks[0]["verifier"]
    assert row["prompt"][-1] == {"role": "user", "content": tool_tasks[0]["instruction"]}
    tools = yaml.safe_load((out / "tool_config.yaml").read_text())["tools"]
    assert {t["tool_schema"]["function"]["name"] for t in tools} == set(row["extra_info"]["tools_kwargs"])
    assert all(t["class_name"] == "dataclaw_verl_tools.DataclawTool" for t in tools)
    assert all(
        k["create_kwargs"] == {"task_id": row["extra_info"]["task_id"]}
        for k in row["extra_info"]["tools_kwargs"].values()
    )
    reward = load(out, "reward")  # compute_score needs no verl
    untouched = reward.compute_score(
        row["data_source"], "", row["reward_model"]["ground_truth"], row["extra_info"]
    )
    assert untouched == {
        "score": 0.0,
        "fraction": pytest.approx(tool_tasks[0]["metadata"]["verifier_check"]["initial"]),
        "passed": 0.0,
    }
    # the state the adapters leave after the gold chain (one session per request id) scores 1.0
    sessions = Sessions(TaskSet(out))
    episode = sessions.get("req-1", tool_tasks[0]["id"])
    other = sessions.get("req-2", tool_tasks[0]["id"])
    for step in tool_tasks[0]["gold_chain"]:
        assert episode.envelope(method_name(step["tool"]), step["params"])["status"] == "ok"
    assert other.result()["passed"] is False  # a concurrent rollout's session is its own
    extra = {
        **row["extra_info"],
        "dataclaw_task_id": tool_tasks[0]["id"],
        "dataclaw_state": json.dumps(episode.state()),
    }
    assert (
        reward.compute_score(row["data_source"], "", row["reward_model"]["ground_truth"], extra)["score"]
        == 1.0
    )
    with pytest.raises(ExportedTaskError, match="data_source 'other'"):
        reward.compute_score("other", "", row["reward_model"]["ground_truth"], extra)
    with pytest.raises(ExportedTaskError, match="tools ran task"):
        reward.compute_score(row["data_source"], "", "", {**extra, "task_id": tool_tasks[1]["id"]})
    with pytest.raises(ExportedTaskError, match="runs task"):
        sessions.get("req-1", tool_tasks[1]["id"])


def test_an_episode_answers_unknown_tools_and_bad_arguments_with_envelopes(
    trl_export: Path, tool_tasks: list
) -> None:
    sessions = Sessions(TaskSet(trl_export), limit=2)
    episode = sessions.get("r", tool_tasks[0]["id"])
    bad = episode.envelope("no_such_tool", {})
    assert bad["status"] == "error" and bad["error"]["category"] == "unknown_tool"
    assert "Available tools" in bad["error"]["message"]
    assert (
        episode.envelope(method_name(tool_tasks[0]["gold_chain"][0]["tool"]), "not json")["status"] == "error"
    )
    assert episode.errors == 2 and episode.calls == 2
    sessions.get("s", tool_tasks[1]["id"])
    sessions.get("t", tool_tasks[2]["id"])
    assert len(sessions) == 2  # bounded: the oldest rollout's session was closed


def test_mixed_environment_groups_are_refused_and_env_picks_one(
    tool_tasks: list, cross_tasks: list, tmp_path: Path
) -> None:
    mixed = write([*tool_tasks, cross_tasks[0]], tmp_path / "mixed.jsonl")
    with pytest.raises(ExportError, match=rf"mixes environment groups: {ENV} \(4 tasks\).*--env GROUP"):
        export_tasks(mixed, "trl", tmp_path / "a")
    result = export_tasks(mixed, "trl", tmp_path / "b", group=cross_tasks[0]["env"])
    assert result.tasks == 1 and result.group == cross_tasks[0]["env"]
    with pytest.raises(ExportError, match="no task runs in environment group 'nowhere'"):
        export_tasks(mixed, "verl", tmp_path / "c", group="nowhere")


def test_an_environment_that_cannot_be_found_is_named(tool_tasks: list, tmp_path: Path) -> None:
    bad = {**tool_tasks[0], "env": "no_such_env", "env_module": "no_such_env"}
    with pytest.raises(ExportError, match="cannot load environment 'no_such_env'"):
        export_tasks(write([bad], tmp_path / "t.jsonl"), "trl", tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_a_package_environment_is_audited_and_copied(tmp_path: Path) -> None:
    from dataclaw.envcraft.runtime import load_env_package
    from dataclaw.envcraft.tasks.tool.execute import run_calls
    from dataclaw.envcraft.tasks.tool.verifier import derive_verifier

    pkg_dir = shutil.copytree(COUNTER, tmp_path / "pkgs" / "counter_env")
    # the fixture carries a deliberately crashing tool (the audit's S012); a clean package lacks it
    source = (pkg_dir / "env.py").read_text()
    crash = source.index('@tool("read")\ndef crash(')
    (pkg_dir / "env.py").write_text(source[:crash] + source[source.index("EVALUATOR = ", crash) :])
    env_cls = load_env_package(pkg_dir).env_cls
    scenario = next(s for s in env_cls.scenarios().values() if s.reference_solution)
    calls = [{"tool": s["tool"], "params": s.get("params", {})} for s in scenario.reference_solution]
    with tempfile.TemporaryDirectory() as root:  # S0: the scenario's initial state
        e = env_cls(root)
        initial = e.get_session_state(e.create_session(scenario.scenario_id))
    with_s0 = run_calls(env_cls, scenario.scenario_id, initial, calls)[1]
    fields = {f for c in calls for f in env_cls.tools.get(c["tool"]).state_fields_affected}
    task = {
        "id": "task:counter",
        "env": env_cls.name,
        "env_module": str(pkg_dir),
        "scenario_id": scenario.scenario_id,
        "instruction": scenario.task_prompt,
        "user_turns": [scenario.task_prompt],
        "initial_state": initial,
        "verifier": derive_verifier(initial, with_s0, fields),
        "gold_chain": calls,
    }
    out = export_tasks(write([task], tmp_path / "t.jsonl"), "trl", tmp_path / "out").out
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["sources"] == {env_cls.name: {"path": "envs/counter_env"}}
    assert (out / "envs" / "counter_env" / "__init__.py").is_file()
    shutil.rmtree(pkg_dir)  # the export no longer needs the original folder
    env = getattr(load(out, "envcraft_trl"), class_name(env_cls.name))()
    env.reset(task_id="task:counter")
    play_gold(env, task)
    assert env.get_reward() == 1.0

    broken = shutil.copytree(COUNTER, tmp_path / "broken" / "counter_env")  # with its crashing tool
    with pytest.raises(ExportError, match="fails its audit: S012 agent-unsafe-error"):
        export_tasks(
            write([{**task, "env_module": str(broken)}], tmp_path / "b.jsonl"), "trl", tmp_path / "o2"
        )


def test_an_export_never_imports_a_package_into_dataclaws_process(tmp_path: Path) -> None:
    """Generated or imported code runs in its env worker only: exporting a package copies its files,
    its environment described and its gold replayed through the worker."""
    from dataclaw.envcraft.tasks.tool.execute import run_calls
    from dataclaw.envcraft.tasks.tool.verifier import derive_verifier
    from dataclaw.envcraft.worker import env_class

    pkg_dir = shutil.copytree(COUNTER, tmp_path / "fresh" / "counter_fresh")
    source = (pkg_dir / "env.py").read_text()
    crash = source.index('@tool("read")\ndef crash(')
    (pkg_dir / "env.py").write_text(source[:crash] + source[source.index("EVALUATOR = ", crash) :])
    remote = env_class(pkg_dir)
    scenario = next(s for s in remote.scenarios().values() if s.reference_solution)
    calls = [{"tool": s["tool"], "params": s.get("params", {})} for s in scenario.reference_solution]
    with tempfile.TemporaryDirectory() as root:
        e = remote(root)
        initial = e.get_session_state(e.create_session(scenario.scenario_id))
    final = run_calls(remote, scenario.scenario_id, initial, calls)[1]
    fields = {f for c in calls for f in remote.tools.get(c["tool"]).state_fields_affected}
    task = {
        "id": "task:fresh",
        "env": remote.name,
        "env_module": str(pkg_dir),
        "scenario_id": scenario.scenario_id,
        "instruction": scenario.task_prompt,
        "initial_state": initial,
        "verifier": derive_verifier(initial, final, fields),
        "gold_chain": calls,
    }
    out = export_tasks(write([task], tmp_path / "t.jsonl"), "trl", tmp_path / "out").out
    assert (out / "envs" / "counter_fresh" / "env.py").is_file()
    assert not [m for m in sys.modules if m.split(".")[0] == "counter_fresh"]


def test_stale_tasks_claw_tasks_and_malformed_files_are_refused(tool_tasks: list, tmp_path: Path) -> None:
    stale = json.loads(json.dumps(tool_tasks[0]))
    stale["verifier"]["assertions"].append({"path": "/nowhere", "op": "exists"})
    with pytest.raises(ExportError, match="no longer passes its verifier"):
        export_tasks(write([stale], tmp_path / "s.jsonl"), "trl", tmp_path / "a")
    assert export_tasks(write([stale], tmp_path / "s.jsonl"), "trl", tmp_path / "a", check=False).tasks == 1
    with pytest.raises(ExportError, match="has no scenario 'nope'"):
        export_tasks(
            write([{**tool_tasks[0], "scenario_id": "nope"}], tmp_path / "n.jsonl"), "trl", tmp_path / "n"
        )
    with pytest.raises(ExportError, match="claw workspace task"):
        export_tasks(
            write([{"id": "c", "kind": "claw_workspace"}], tmp_path / "c.jsonl"), "verl", tmp_path / "b"
        )
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    with pytest.raises(ExportError, match=r"bad.jsonl:1: not JSON"):
        export_tasks(tmp_path / "bad.jsonl", "trl", tmp_path / "c")
    with pytest.raises(ExportError, match="lacks initial_state, verifier"):
        export_tasks(
            write([{"id": "x", "env": ENV, "scenario_id": "s"}], tmp_path / "m.jsonl"), "trl", tmp_path / "d"
        )
    with pytest.raises(ExportError, match="reward must be one of binary, fraction"):
        export_tasks(write(tool_tasks, tmp_path / "ok.jsonl"), "trl", tmp_path / "e", reward="sparse")


def test_cli_export_and_its_errors(tasks_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert _run(["tasks", "export", str(tasks_file.parent), "--to", "verl", "-o", str(tmp_path / "v")]) == 0
    assert "exported 4 tasks of temporal_scheduling for verl" in capsys.readouterr().out
    assert (tmp_path / "v" / "train.parquet").is_file()
    assert _run(["tasks", "export", str(tmp_path / "none"), "--to", "trl", "-o", str(tmp_path / "t")]) == 1
    assert "no tasks file" in capsys.readouterr().err
    assert _run(["tasks", "export", str(tasks_file), "--to", "openrlhf", "-o", str(tmp_path / "t")]) == 1
    assert "unknown trainer export 'openrlhf': expected one of trl, verl" in capsys.readouterr().err


def test_train_grpo_without_a_trainer_venv_says_how_to_install_it(
    tasks_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    missing = tmp_path / "nowhere" / "python"
    args = ["train", "grpo", str(tasks_file), "-o", str(tmp_path / "run"), "--train-python", str(missing)]
    assert _run(args) == 1
    err = capsys.readouterr().err
    assert f"no trainer Python at {missing}" in err and "make train-setup" in err
    # a Python without the trainer stack (this venv has no trl) is named with what it lacks
    assert _run([*args[:-1], sys.executable]) == 1
    assert "lacks trl" in capsys.readouterr().err
    assert _run(["train", "grpo", str(tasks_file), "--recipe", "tailor"]) == 1
    assert "only 'envcraft'" in capsys.readouterr().err
