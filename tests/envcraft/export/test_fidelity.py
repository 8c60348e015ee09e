"""Exports keep the reward: a task's gold chain (and the untouched S0) scores the same through the TRL
export's class — called as TRL's tool loop calls it, with only the arguments the model gave — and through
the VERL export's path (one session per rollout, the envelope per call, ``compute_score`` on the state the
adapters hand over as JSON) as in process (``replay_task``). An omitted optional argument keeps the tool's
own default (BFCL's ``tags=[]``), and the schema TRL builds from the generated methods keeps the tools'
types, enums and descriptions (checked with ``transformers.utils.get_json_schema`` in .venv-train, against
the tool specs and the publisher's own functions)."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from dataclaw.envcraft.export import export_tasks
from dataclaw.envcraft.export.base import flat_schema, locate_env, method_name, param_description
from dataclaw.envcraft.export.episode import Sessions, TaskSet, ToolCallError, reward_of
from dataclaw.envcraft.export.trl import hint
from dataclaw.envcraft.quality.soundness import Trial, run_soundness
from dataclaw.envcraft.runtime.task import ToolTask
from dataclaw.envcraft.tasks.tool.stages import replay_task
from dataclaw.sandbox import sandbox_available
from envcraft.export.conftest import REPO, TRAIN_PY, VERL_PY, write
from envcraft.export.test_trainers import probe

needs_sandbox = pytest.mark.skipif(not sandbox_available(), reason="needs the sandbox (env worker)")
needs_trl = pytest.mark.skipif(not TRAIN_PY.is_file(), reason=f"no trainer venv at {TRAIN_PY}")


@pytest.fixture(autouse=True, scope="module")
def _forget_the_trainer_side_imports(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """These tests load exports as a trainer does, in this process: the exported class and the imported
    publisher packages it runs (BFCL, tau2) land in sys.modules. They are forgotten afterwards, so the
    importer tests that prove dataclaw itself never imports publisher code see only what dataclaw did."""
    before = set(sys.modules)
    yield
    # the tests' own temp folders: not the system temp dir, which may hold this checkout (a CI clone)
    tmp = str(tmp_path_factory.getbasetemp())
    foreign = {
        name.split(".")[0]
        for name in set(sys.modules) - before
        if (getattr(sys.modules[name], "__file__", None) or "").startswith(tmp) or name.startswith("trl_")
    }
    for name in [n for n in set(sys.modules) - before if n.split(".")[0] in foreign]:
        del sys.modules[name]


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _load(out: Path) -> Any:
    """The TRL export's environment class, imported by file as a trainer does."""
    manifest = json.loads((out / "manifest.json").read_text())
    spec = importlib.util.spec_from_file_location(f"trl_{abs(hash(str(out)))}", out / "envcraft_trl.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return getattr(module, manifest["class"])


def trl_rewards(out: Path, tasks: list[dict[str, Any]], *, gold: bool = True) -> dict[str, float]:
    """Each task's reward through the TRL class: ``reset``, then each gold call as TRL dispatches a parsed
    tool call (``method(**arguments)``: an argument the call does not name is not passed), ``get_reward``."""
    env = _load(out)()
    out_rewards = {}
    for t in tasks:
        env.reset(task_id=t["id"])
        for step in t["gold_chain"] if gold else []:
            try:
                getattr(env, method_name(step["tool"]))(**step["params"])
            except ToolCallError:
                pass  # TRL shows the error to the model and goes on
        out_rewards[t["id"]] = env.get_reward()
    return out_rewards


def verl_rewards(out: Path, tasks: list[dict[str, Any]], *, gold: bool = True) -> dict[str, float]:
    """Each task's reward through the VERL export as its adapters run it: the rollout's session
    (``Sessions.get``), the call's parameters as the model sent them (``envelope``), the state as JSON in
    ``extra_info["dataclaw_state"]``, then ``compute_score`` with the row's ground truth."""
    rows = {r["extra_info"]["task_id"]: r for r in pq.read_table(out / "train.parquet").to_pylist()}
    taskset = TaskSet(out)
    sessions = Sessions(taskset)
    rewards = {}
    for i, t in enumerate(tasks):
        row = rows[t["id"]]
        episode = sessions.get(f"req-{i}", t["id"])
        extra = dict(row["extra_info"])
        for step in t["gold_chain"] if gold else []:
            episode.envelope(method_name(step["tool"]), step["params"])
            extra.update(dataclaw_task_id=t["id"], dataclaw_state=json.dumps(episode.state()))
        score = taskset.compute_score(row["data_source"], row["reward_model"]["ground_truth"], extra)
        rewards[t["id"]] = score["score"]
    return rewards


def inprocess(tasks: list[dict[str, Any]], mode: str, *, gold: bool = True) -> dict[str, float]:
    return {t["id"]: reward_of(replay_task(t, None if gold else []), mode) for t in tasks}


def assert_same_rewards(
    src: Path, tasks: list[dict[str, Any]], out: Path, mode: str = "binary"
) -> dict[bool, dict[str, float]]:
    """Gold and untouched rewards through both exports equal the in-process ones, task by task; returns
    the in-process rewards (``True``: gold, ``False``: untouched)."""
    trl = export_tasks(src, "trl", out / "trl", reward=mode).out
    verl = export_tasks(src, "verl", out / "verl", reward=mode).out
    found = {}
    for gold in (True, False):
        expected = found[gold] = inprocess(tasks, mode, gold=gold)
        assert trl_rewards(trl, tasks, gold=gold) == expected, ("trl", gold)
        assert verl_rewards(verl, tasks, gold=gold) == expected, ("verl", gold)
    return found


# ---- every trial through TRL, VERL and env serve ------------------------------------------------------

OPENENV_PY = Path(os.environ.get("DATACLAW_OPENENV_PYTHON", REPO / ".venv-openenv" / "bin" / "python"))
PYTHONS = {"trl": TRAIN_PY, "verl": VERL_PY, "serve": OPENENV_PY}
"""Each path in the venv its trainer lives in (``replay_probe.py`` drives it there)."""
needs_paths = pytest.mark.skipif(
    not all(p.is_file() for p in PYTHONS.values()),
    reason=f"needs the side venvs {', '.join(str(p) for p in PYTHONS.values())} (make test)",
)


def gold_trials(tasks: list[dict[str, Any]]) -> dict[str, list[Trial]]:
    """Each task's gold chain as a trial, scored in process (``replay_task``)."""
    return {t["id"]: [Trial("gold", t["gold_chain"], replay_task(t)["score"])] for t in tasks}


def suite_trials(tasks: list[dict[str, Any]]) -> tuple[dict[str, list[Trial]], dict[str, Any]]:
    """Every scored run of the soundness suite per task (``report.trials``), and the reports."""
    reports = {t["id"]: run_soundness(t) for t in tasks}
    for tid, rep in reports.items():
        assert rep.error is None, (tid, rep.error)
    return {tid: rep.trials for tid, rep in reports.items()}, reports


def figures_of(trials: list[Trial], scores: list[float]) -> dict[str, float]:
    """A task's soundness figures from its trials' scores, as the suite aggregates them (gold, untouched:
    the score; collateral, wrong_last_write, skip_write: the highest; random: the mean)."""
    by: dict[str, list[float]] = {}
    for trial, score in zip(trials, scores, strict=True):
        by.setdefault(trial.policy, []).append(score)
    agg = {
        "collateral": max,
        "wrong_last_write": max,
        "skip_write": max,
        "random": lambda xs: sum(xs) / len(xs),
    }
    return {p: round(agg.get(p, lambda xs: xs[0])(xs), 4) for p, xs in by.items()}


@contextlib.contextmanager
def env_server(src: Path, task: dict[str, Any], log: Path) -> Any:
    """``dataclaw env serve`` (the real command, in .venv-openenv) of the task's environment with the
    task file, on a free port; yields its base URL once ``/health`` answers."""
    from envcraft.serve.conftest import free_port

    codes = [locate_env(ToolTask.of(task), e) for e in ToolTask.of(task).member_envs]
    name = str(codes[0].package) if codes[0].package else "+".join(c.env for c in codes)
    port = free_port()
    exe = OPENENV_PY.parent / "dataclaw"
    args = [str(exe), "env", "serve", name, "--tasks", str(src), "--port", str(port), "--max-steps", "100000"]
    with open(log, "w") as err:
        proc = subprocess.Popen(args, stdout=err, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 300
            while True:
                assert proc.poll() is None, log.read_text()[-3000:]
                assert time.monotonic() < deadline, "env serve did not come up"
                try:
                    with urllib.request.urlopen(f"{url}/health", timeout=2) as res:
                        if res.status == 200:
                            break
                except OSError:
                    time.sleep(0.2)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def through(
    path: str, jobs: list[tuple[str, list[tuple[str, Trial]]]], work: Path
) -> list[tuple[list[float], list[float]]]:
    """Each job's runs (``(task id, trial)``) replayed through ``path`` against its target (an export
    folder, a server URL): per job the verifier's scores and the rewards the path hands its trainer."""
    work.mkdir(parents=True, exist_ok=True)
    runs_file, out_file = work / f"{path}-runs.json", work / f"{path}-out.json"
    payload = {
        "jobs": [
            {"target": target, "runs": [{"task_id": tid, "calls": tr.calls} for tid, tr in runs]}
            for target, runs in jobs
        ]
    }
    runs_file.write_text(json.dumps(payload))
    probe(PYTHONS[path], "replay_probe.py", path, str(runs_file), str(out_file), timeout=3000)
    found = json.loads(out_file.read_text())["jobs"]
    return [(job["scores"], job["rewards"]) for job in found]


def assert_trials_identical(
    groups: list[tuple[Path, list[dict[str, Any]], dict[str, list[Trial]]]],
    work: Path,
    *,
    reports: dict[str, Any] | None = None,
    paths: tuple[str, ...] = ("trl", "verl", "serve"),
) -> dict[str, int]:
    """Every trial of every task (``groups``: a task file of one environment group, its tasks, their
    trials) replayed through each path; each score must equal the in-process one, else the test fails
    naming the path, the task, the policy and the calls. With ``reports``, each task's soundness figures
    recomputed from each path's scores equal the suite's. Returns the runs and seconds per path."""
    jobs: dict[str, list[tuple[str, list[tuple[str, Trial]]]]] = {p: [] for p in paths}
    found: dict[str, list[tuple[list[float], list[float]]]] = {p: [] for p in paths}
    seconds = dict.fromkeys(paths, 0.0)
    for k, (src, tasks, trials) in enumerate(groups):
        runs = [(t["id"], tr) for t in tasks for tr in trials.get(t["id"], [])]
        out = work / f"g{k}"
        for fmt in {"trl", "verl"} & set(paths):
            exported = export_tasks(src, fmt, out / fmt, reward="fraction", check=False).out
            jobs[fmt].append((str(exported), runs))
        if "serve" in paths:  # one server at a time: each is a process of its own
            out.mkdir(parents=True, exist_ok=True)
            started = time.monotonic()
            with env_server(src, tasks[0], out / "serve.log") as url:
                jobs["serve"].append((url, runs))
                found["serve"] += through("serve", jobs["serve"][-1:], out)
            seconds["serve"] += time.monotonic() - started
    for p in {"trl", "verl"} & set(paths):  # one trainer process per path for every group
        started = time.monotonic()
        found[p] = through(p, jobs[p], work / "probe")
        seconds[p] += time.monotonic() - started
    wrong = []
    for p in paths:
        for (_, runs), (scores, rewards) in zip(jobs[p], found[p], strict=True):
            assert len(scores) == len(runs) == len(rewards)
            for (tid, trial), got, reward in zip(runs, scores, rewards, strict=True):
                # the served reward is binary (D.3): a gold chain that solves the task in process earns 1.0
                if p == "serve" and trial.policy == "gold" and trial.score == 1.0 and reward != 1.0:
                    wrong.append(f"serve: task {tid}: gold scores 1.0 but the served reward is {reward!r}")
                if got != trial.score:
                    calls = json.dumps(trial.calls)
                    wrong.append(
                        f"{p}: task {tid} policy {trial.policy}: in process {trial.score!r}, through {p} "
                        f"{got!r}; calls {calls[:800]}"
                    )
    assert not wrong, f"{len(wrong)} runs score differently:\n" + "\n".join(wrong[:10])
    for p in paths if reports else ():
        for (_, runs), (scores, _) in zip(jobs[p], found[p], strict=True):
            by_task: dict[str, tuple[list[Trial], list[float]]] = {}
            for (tid, trial), got in zip(runs, scores, strict=True):
                by_task.setdefault(tid, ([], []))[0].append(trial)
                by_task[tid][1].append(got)
            for tid, (trials, scores_) in by_task.items():
                if tid not in reports:
                    continue  # only its gold run was replayed
                suite = {f.policy: f.score for f in reports[tid].figures if f.score is not None}
                assert figures_of(trials, scores_) == suite, (p, tid)
    return {p: {"runs": sum(len(r) for _, r in jobs[p]), "s": round(seconds[p], 1)} for p in paths}


# ---- archetype tasks (synthesised by the task pipeline) ------------------------------------------------


def test_archetype_and_cross_environment_tasks_score_the_same_through_both_exports(
    tool_tasks: list, cross_tasks: list, tmp_path: Path
) -> None:
    src = write(tool_tasks, tmp_path / "one" / "tasks.jsonl")
    assert_same_rewards(src, tool_tasks, tmp_path / "one", mode="fraction")
    assert set(inprocess(tool_tasks, "binary").values()) == {1.0}
    assert set(inprocess(tool_tasks, "fraction", gold=False).values()) != {1.0}  # the S0 is not solved
    group = cross_tasks[0]["env"]
    picked = [t for t in cross_tasks if t["env"] == group]
    src = write(picked, tmp_path / "cross" / "tasks.jsonl")
    assert_same_rewards(src, picked, tmp_path / "cross", mode="fraction")


def test_an_optional_argument_left_out_is_not_sent_and_an_explicit_one_is(
    tool_tasks: list, tmp_path: Path
) -> None:
    import inspect

    from dataclaw.envcraft import archetypes
    from dataclaw.envcraft.export.episode import OMITTED

    src = write(tool_tasks, tmp_path / "run" / "tasks.jsonl")
    cls = _load(export_tasks(src, "trl", tmp_path / "trl").out)
    specs = archetypes.get(tool_tasks[0]["env"]).env_cls.tools
    optional = [(s, p) for s in specs for p in s.params if not p.required]
    assert optional, "the archetype has optional parameters"
    for spec, p in optional:
        param = inspect.signature(getattr(cls, method_name(spec.name))).parameters[p.name]
        assert param.default is OMITTED  # never a stand-in value that would reach the tool
    sent: list[dict[str, Any]] = []
    env = cls()
    env.reset(task_id=tool_tasks[0]["id"])
    env._episode.envelope = lambda tool, params: sent.append(params) or {"status": "ok", "data": None}
    spec, p = optional[0]
    required = {q.name: f"x-{q.name}" for q in spec.params if q.required}
    getattr(env, method_name(spec.name))(**required)
    getattr(env, method_name(spec.name))(**required, **{p.name: None})
    assert sent == [required, {**required, p.name: None}]


@needs_sandbox
def test_many_replays_in_one_env_worker_keep_working(tmp_path: Path) -> None:
    """An export's gold check and a fidelity run replay hundreds of tasks in one sandboxed env worker, each
    in a fresh instance; a dropped instance must give back its sessions' open journals (the worker's
    descriptor limit is 256: past it every session load failed as an internal problem)."""
    from dataclaw.envcraft.tasks.tool.execute import run_calls
    from dataclaw.envcraft.tasks.tool.stages import record_env

    counter = Path(__file__).resolve().parents[1] / "fixtures" / "counter_env"
    pkg = shutil.copytree(counter, tmp_path / "counter_env")
    env_cls = record_env({"env": "counter_env", "env_module": str(pkg)})
    assert getattr(env_cls, "remote", False)  # served by the env worker, as tasks and exports run it
    scenario = next(s for s in env_cls.scenarios().values() if s.reference_solution)
    calls = [{"tool": c["tool"], "params": c.get("params", {})} for c in scenario.reference_solution]
    with tempfile.TemporaryDirectory() as root:
        e = env_cls(root)
        initial = e.get_session_state(e.create_session(scenario.scenario_id))
    for _ in range(300):
        results, _final = run_calls(env_cls, scenario.scenario_id, initial, calls)
        assert all(r["status"] == "ok" for r in results), results


# ---- BFCL from the real wheel --------------------------------------------------------------------------


def _bfcl_wheel() -> Path | None:
    from dataclaw.envcraft.importers.bfcl import default_wheel

    return default_wheel()


needs_bfcl = pytest.mark.skipif(
    _bfcl_wheel() is None, reason="the bfcl-eval wheel is not cached: run `make bfcl-wheel`"
)
# Twitter-group entries whose gold chain posts a tweet without ``tags`` (BFCL's default: ``[]``)
TWITTER = ["multi_turn_base_8", "multi_turn_base_18"]


@pytest.fixture(scope="module")
def twitter(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    from dataclaw.envcraft.importers import Produces, run_import

    run = tmp_path_factory.mktemp("bfcl-twitter") / "run"
    s = run_import("bfcl", _bfcl_wheel(), run, Produces.TASKS, options={"ids": TWITTER})
    assert s.imported == len(TWITTER), s.reject_messages
    return run / "tasks.jsonl", _records(run / "tasks.jsonl")


@needs_bfcl
@needs_sandbox
def test_bfcl_twitter_tweet_without_tags_keeps_bfcls_default_through_trl_and_verl(twitter, tmp_path) -> None:
    src, tasks = twitter
    assert {t["env"] for t in tasks} == {"bfcl_gorilla_file_system_twitter_a_p_i"}
    assert_same_rewards(src, tasks, tmp_path)
    assert set(inprocess(tasks, "binary").values()) == {1.0}
    out = tmp_path / "trl"
    env = _load(out)()
    task = tasks[0]
    env.reset(task_id=task["id"])
    for step in task["gold_chain"]:
        getattr(env, method_name(step["tool"]))(**step["params"])
    tweet = next(c for c in env._episode.state()["calls"] if c["method"] == "post_tweet")
    assert "tags" not in tweet["kwargs"]  # left out, as the model left it out
    assert json.loads(tweet["result"])["tags"] == []  # BFCL's own default applied
    assert env.get_reward() == 1.0
    # what forwarding a stand-in would do: an explicit None reaches BFCL and the check fails
    env.reset(task_id=task["id"])
    for step in task["gold_chain"]:
        params = {"tags": None, **step["params"]} if step["tool"] == "post_tweet" else step["params"]
        getattr(env, method_name(step["tool"]))(**params)
    assert env.get_reward() == 0.0


def _same_type(generated: dict[str, Any], expected: dict[str, Any]) -> bool:
    keys = ("type", "items", "enum", "nullable", "prefixItems", "additionalProperties", "anyOf")
    return all(generated.get(k) == expected.get(k) for k in keys)


@needs_bfcl
@needs_sandbox
def test_bfcl_tool_schemas_keep_types_in_the_verl_config(twitter, tmp_path) -> None:
    src, tasks = twitter
    out = export_tasks(src, "verl", tmp_path / "verl").out
    tools = yaml.safe_load((out / "tool_config.yaml").read_text())["tools"]
    from dataclaw.envcraft.runtime import load_env_package

    specs = load_env_package(Path(tasks[0]["env_module"])).env_cls.tools
    kinds = Counter()
    for entry in tools:
        fn = entry["tool_schema"]["function"]
        spec = specs.get(entry["config"]["env_tool"])
        for p in spec.params:
            prop = fn["parameters"]["properties"][p.name]
            assert prop["type"] == flat_schema(p.schema)["type"], (fn["name"], p.name)
            kinds[prop["type"]] += 1
    assert {"integer", "array", "boolean", "string"} <= set(kinds)  # not every type read as a string


def check_schemas(
    out: Path, specs: Any, *, publisher: bool, differs: dict[tuple[str, str], Any] | None = None
) -> dict[str, Any]:
    """``get_json_schema`` (in .venv-train) of every generated method against the tool spec (types, enums,
    descriptions, required) and, with ``publisher``, against the publisher's own function (``differs``:
    the parameters known to differ, with the publisher's schema for them, compared exactly)."""
    found = probe(TRAIN_PY, "schema_probe.py", str(out), timeout=600)
    generated = found["generated"]
    names = {method_name(s.name): s for s in specs}
    assert set(generated) == set(names)
    for method, schema in generated.items():
        spec = names[method]
        params = schema["parameters"]
        assert " ".join(spec.description.split()) in " ".join(schema["description"].split()), method
        assert set(params.get("required", [])) == {p.name for p in spec.params if p.required}, method
        for p in spec.params:
            prop = params["properties"][p.name]
            want = flat_schema(p.schema)
            assert prop["description"] == param_description(p), (method, p.name)
            if "type" in want:
                assert prop.get("type") == want["type"], (method, p.name, prop, want)
            if "enum" in want:
                assert prop.get("enum") == want["enum"], (method, p.name)
            if isinstance(want.get("items"), dict) and "type" in want["items"]:
                assert prop["items"]["type"] == flat_schema(want["items"])["type"], (method, p.name)
    if publisher:
        assert not found["publisher_errors"], found["publisher_errors"]
        assert set(found["publisher"]) == set(generated)
        for method, theirs in found["publisher"].items():
            ours = generated[method]["parameters"]
            assert set(ours.get("required", [])) == set(theirs["parameters"].get("required", [])), method
            for name, prop in theirs["parameters"]["properties"].items():
                if (method, name) in (differs or {}):
                    assert {k: v for k, v in prop.items() if k != "description"} == differs[(method, name)]
                    continue
                assert _same_type(ours["properties"][name], prop), (method, name, ours["properties"][name])
    return found


@needs_trl
@needs_bfcl
@needs_sandbox
def test_bfcl_trl_schemas_equal_the_publishers_own_functions_schemas(twitter, tmp_path) -> None:
    from dataclaw.envcraft.runtime import load_env_package

    src, tasks = twitter
    out = export_tasks(src, "trl", tmp_path / "trl").out
    specs = load_env_package(Path(tasks[0]["env_module"])).env_cls.tools
    found = check_schemas(out, specs, publisher=True)
    post = found["generated"]["post_tweet"]["parameters"]
    assert post["properties"]["tags"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": post["properties"]["tags"]["description"],
    }
    assert post["required"] == ["content"]
    assert found["generated"]["comment"]["parameters"]["properties"]["tweet_id"]["type"] == "integer"


@needs_trl
@needs_bfcl
@needs_sandbox
def test_bfcl_dict_parameter_keeps_its_fields_and_value_types(tmp_path: Path) -> None:
    """``edit_ticket(updates)``: BFCL's doc names the fields (title, description, status: strings;
    priority: an integer). TRL's schema gets the value types and the fields in the description; the
    publisher's own hint (``Dict[str, Optional[Union[str, int]]]``) differs only in allowing null values."""
    from dataclaw.envcraft.importers import Produces, run_import
    from dataclaw.envcraft.runtime import load_env_package

    run = tmp_path / "run"
    s = run_import("bfcl", _bfcl_wheel(), run, Produces.TASKS, options={"ids": ["multi_turn_base_48"]})
    assert s.imported == 1, s.reject_messages
    tasks = _records(run / "tasks.jsonl")
    assert any(c["tool"] == "edit_ticket" for c in tasks[0]["gold_chain"])
    assert_same_rewards(run / "tasks.jsonl", tasks, tmp_path)
    specs = load_env_package(Path(tasks[0]["env_module"])).env_cls.tools
    fields = flat_schema(specs.get("edit_ticket").params[1].schema)["properties"]
    assert {k: v["type"] for k, v in fields.items()} == {
        "title": "string",
        "description": "string",
        "status": "string",
        "priority": "integer",
    }
    theirs = {"type": "object", "additionalProperties": {"type": ["integer", "string"], "nullable": True}}
    found = check_schemas(
        tmp_path / "trl", specs, publisher=True, differs={("edit_ticket", "updates"): theirs}
    )
    updates = found["generated"]["edit_ticket"]["parameters"]["properties"]["updates"]
    assert updates["type"] == "object"
    assert updates["additionalProperties"] == {"type": ["integer", "string"]}
    assert updates["description"] == (
        "Dictionary containing the fields to be updated. Fields: "
        "description (string): [Optional] New description for the ticket.; "
        "priority (integer): [Optional] New priority for the ticket.; "
        "status (string): [Optional] New status for the ticket.; "
        "title (string): [Optional] New title for the ticket."
    )
    verl = yaml.safe_load((tmp_path / "verl" / "tool_config.yaml").read_text())["tools"]
    entry = next(t for t in verl if t["config"]["env_tool"] == "edit_ticket")["tool_schema"]["function"]
    assert entry["parameters"]["properties"]["updates"]["description"] == updates["description"]


@needs_trl
def test_archetype_trl_schemas_keep_types_enums_and_descriptions(tool_tasks: list, tmp_path: Path) -> None:
    from dataclaw.envcraft import archetypes

    src = write(tool_tasks, tmp_path / "run" / "tasks.jsonl")
    out = export_tasks(src, "trl", tmp_path / "trl").out
    specs = archetypes.get(tool_tasks[0]["env"]).env_cls.tools
    check_schemas(out, specs, publisher=False)
    assert any("enum" in p.schema for s in specs for p in s.params), "the archetype has an enum parameter"


def test_type_hints_of_wrapped_and_union_schemas() -> None:
    assert hint({"anyOf": [{"type": "integer"}]}) == "int"
    assert hint({"anyOf": [{"type": "array", "items": {"type": "string"}}]}) == "list[str]"
    assert hint({"anyOf": [{"type": "integer"}, {"type": "string"}]}) == "int | str"
    assert hint({"type": ["number", "null"]}) == "float | None"
    assert hint({"anyOf": [{"type": "string", "enum": ["a", "b"]}]}) == 'Literal["a", "b"]'
    assert hint({"anyOf": [{}]}) == "Any"
    assert flat_schema({"anyOf": [{"type": "integer"}], "description": "n"}) == {
        "type": "integer",
        "description": "n",
    }
    assert flat_schema({"anyOf": [{"type": "integer"}, {"type": "string"}]}) == {
        "type": ["integer", "string"]
    }


# ---- tau2 (the real mock domain) -----------------------------------------------------------------------

TAU2 = Path(__file__).resolve().parents[4] / "shared" / "data" / "tau2"
TAU2_SRC = TAU2.parent / "tau2-bench" / "src"  # the published src/tau2 (a2c0247), run as it is


@needs_sandbox
@pytest.mark.skipif(not (TAU2_SRC / "tau2").is_dir(), reason="needs ../shared/data/tau2 and tau2-bench")
def test_tau2_mock_tasks_score_the_same_through_both_exports(tmp_path: Path) -> None:
    from dataclaw.envcraft.importers import Produces, run_import

    root = tmp_path / "tau2-bench"
    shutil.copytree(TAU2 / "mock", root / "data" / "tau2" / "domains" / "mock")
    shutil.copytree(TAU2_SRC, root / "src", ignore=shutil.ignore_patterns("__pycache__"))
    s = run_import("auto", root, tmp_path / "run", Produces.TASKS)
    assert s.format == "tau2" and s.imported >= 3, s.reject_messages
    tasks = _records(tmp_path / "run" / "tasks.jsonl")
    assert_same_rewards(tmp_path / "run" / "tasks.jsonl", tasks, tmp_path, mode="fraction")
    assert_same_rewards(tmp_path / "run" / "tasks.jsonl", tasks, tmp_path / "binary", mode="binary")
    assert set(inprocess(tasks, "binary").values()) == {1.0}


# ---- all of BFCL multi-turn ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(3600)
@needs_bfcl
@needs_sandbox
def test_every_imported_bfcl_task_scores_the_same_through_trl_and_verl(tmp_path: Path) -> None:
    """All 800 BFCL-v3 multi-turn entries: import, then per environment group both exports, gold and
    untouched rewards equal to the in-process ones; then every task's gold and every run of the soundness
    suite on a seeded sample through TRL and VERL in their venvs, and a seeded sample of runs through
    `dataclaw env serve`, each score identical (measured: see docs/training.md)."""
    from dataclaw.envcraft.importers import Produces, run_import

    started = time.monotonic()
    s = run_import("bfcl", _bfcl_wheel(), tmp_path / "run", Produces.TASKS)
    imported = time.monotonic()
    assert s.imported == 800, (s.imported, s.reject_messages)
    tasks = _records(tmp_path / "run" / "tasks.jsonl")
    by_group: dict[str, list[dict[str, Any]]] = {}
    for t in tasks:
        by_group.setdefault(t["env"], []).append(t)
    solved, untouched = Counter(), Counter()
    for group, picked in sorted(by_group.items()):
        src = write(picked, tmp_path / group / "tasks.jsonl")
        found = assert_same_rewards(src, picked, tmp_path / group)
        solved[group], untouched[group] = sum(found[True].values()), sum(found[False].values())
    assert sum(solved.values()) == 800 and sum(untouched.values()) == 0
    replayed = time.monotonic()
    # every path, scores compared run by run: the gold chain of every task, and every run of the soundness
    # suite on a seeded sample of two tasks per group (TRL, VERL); env serve, whose sandboxed episodes
    # cost ~1 s each (and a server start per group), replays a seeded sample of ten runs of each of four
    # groups, the sampled tasks' gold included (the fast tests serve every run of four other sets)
    rng = random.Random(25)
    sample = [t for _, picked in sorted(by_group.items()) for t in rng.sample(picked, 2)]
    trials, reports = suite_trials(sample)
    suite = time.monotonic()
    served_groups = set(rng.sample(sorted(by_group), 4))
    groups, served = [], []
    for group, picked in sorted(by_group.items()):
        mine = {**gold_trials(picked), **{t["id"]: trials[t["id"]] for t in picked if t["id"] in trials}}
        src = tmp_path / group / "tasks.jsonl"
        groups.append((src, picked, mine))
        runs = [(t["id"], tr) for t in picked if t["id"] in trials for tr in trials[t["id"]]]
        keep = set(
            map(
                id,
                [tr for _, tr in runs if tr.policy == "gold"]
                + [tr for _, tr in rng.sample(runs, min(8, len(runs)))],
            )
        )
        if group in served_groups:
            kept = {tid: [tr for tr in ts if id(tr) in keep] for tid, ts in mine.items()}
            served.append((src, picked, kept))
    exports = assert_trials_identical(groups, tmp_path / "paths", reports=reports, paths=("trl", "verl"))
    serve = assert_trials_identical(served, tmp_path / "served", paths=("serve",))
    # BFCL's states hold no record a collateral write of the sample both accepts and changes
    assert {"gold", "untouched", "wrong_last_write", "random"} <= _all_policies(trials)
    print(
        f"BFCL fidelity: {len(tasks)} tasks in {len(by_group)} groups; import {imported - started:.0f}s, "
        f"exports and replays {replayed - imported:.0f}s; suite on {len(sample)} tasks "
        f"({sum(map(len, trials.values()))} runs) {suite - replayed:.0f}s; runs and seconds per path "
        f"{ {**exports, **serve} }; total {time.monotonic() - started:.0f}s"
    )


# ---- every soundness trial through TRL, VERL and env serve ---------------------------------------------


def _tau2_run(tmp_path: Path, domain: str, src: Path = TAU2_SRC) -> tuple[Path, list[dict[str, Any]]]:
    from dataclaw.envcraft.importers import Produces, run_import

    root = tmp_path / "tau2-bench"
    shutil.copytree(TAU2 / domain, root / "data" / "tau2" / "domains" / domain)
    shutil.copytree(src, root / "src", ignore=shutil.ignore_patterns("__pycache__"))
    s = run_import("auto", root, tmp_path / "run", Produces.TASKS)
    assert s.format == "tau2" and s.imported >= 3, s.reject_messages
    return tmp_path / "run" / "tasks.jsonl", _records(tmp_path / "run" / "tasks.jsonl")


def _all_policies(trials: dict[str, list[Trial]]) -> set[str]:
    return {tr.policy for ts in trials.values() for tr in ts}


@needs_paths
@pytest.mark.timeout(1800)
def test_every_trial_of_archetype_tasks_scores_the_same_through_trl_verl_and_env_serve(
    tool_tasks: list, cross_tasks: list, tmp_path: Path
) -> None:
    group = cross_tasks[0]["env"]
    cross = [t for t in cross_tasks if t["env"] == group]
    trials, reports = suite_trials([*tool_tasks, *cross])
    assert _all_policies(trials) == {
        "gold",
        "untouched",
        "collateral",
        "wrong_last_write",
        "skip_write",
        "random",
    }
    groups = [
        (write(tool_tasks, tmp_path / "one" / "tasks.jsonl"), tool_tasks, trials),
        (write(cross, tmp_path / "cross" / "tasks.jsonl"), cross, trials),
    ]
    runs = assert_trials_identical(groups, tmp_path / "paths", reports=reports)
    assert runs["serve"]["runs"] == sum(len(trials[t["id"]]) for t in [*tool_tasks, *cross]) > 40
    print(f"archetype fidelity: {len(tool_tasks)} + {len(cross)} tasks; runs and seconds per path {runs}")


@needs_paths
@pytest.mark.timeout(900)
def test_a_score_that_differs_fails_naming_the_path_task_policy_and_calls(
    tool_tasks: list, tmp_path: Path
) -> None:
    """The comparison can fail: a trial whose recorded score is not what its calls reach is named."""
    task = tool_tasks[0]
    trials, _ = suite_trials([task])
    collateral = next(tr for tr in trials[task["id"]] if tr.policy == "collateral")
    collateral.score = 1.0 - collateral.score / 2 if collateral.score < 1 else 0.5
    src = write([task], tmp_path / "t" / "tasks.jsonl")
    with pytest.raises(AssertionError) as caught:
        assert_trials_identical([(src, [task], trials)], tmp_path / "paths", paths=("trl", "verl", "serve"))
    text = str(caught.value)
    assert "3 runs score differently" in text
    for path in ("trl", "verl", "serve"):
        assert f"{path}: task {task['id']} policy collateral" in text
    assert json.dumps(collateral.calls)[:200] in text


def test_the_export_summary_carries_the_soundness_figures_per_policy(
    tool_tasks: list, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    from dataclaw.cli.app import _run
    from dataclaw.envcraft.export.base import soundness_summary

    src = write(tool_tasks, tmp_path / "run" / "tasks.jsonl")
    result = export_tasks(src, "verl", tmp_path / "verl")
    manifest = json.loads((tmp_path / "verl" / "manifest.json").read_text())
    expected = soundness_summary([run_soundness(t) for t in tool_tasks])
    assert manifest["soundness"] == {**expected, "publisher_tasks": 0} == result.soundness
    figures = manifest["soundness"]["policies"]
    assert figures["gold"] == {**figures["gold"], "tasks": 4, "sound": 4, "min": 1.0, "max": 1.0}
    assert figures["untouched"]["max"] == 0.0 and figures["random"]["runs"] == 4 * 8
    assert _run(["tasks", "export", str(src), "--to", "trl", "-o", str(tmp_path / "trl")]) == 0
    out = capsys.readouterr().out
    assert "soundness: 4/4 tasks sound" in out
    assert "gold              4/4 sound over 4 runs; score min 1.000 mean 1.000 max 1.000" in out
    assert _run(["tasks", "export", str(src), "--to", "trl", "-o", str(tmp_path / "nc"), "--no-check"]) == 0
    assert "soundness: not checked (--no-check" in capsys.readouterr().out
    manifest = json.loads((tmp_path / "nc" / "manifest.json").read_text())
    assert manifest["soundness"]["checked"] is False


@needs_paths
@needs_sandbox
@pytest.mark.timeout(1800)
@pytest.mark.skipif(not (TAU2_SRC / "tau2").is_dir(), reason="needs ../shared/data/tau2 and tau2-bench")
def test_every_trial_of_tau2_mock_tasks_scores_the_same_through_every_path(tmp_path: Path) -> None:
    src, tasks = _tau2_run(tmp_path, "mock")
    trials, reports = suite_trials(tasks)
    result = export_tasks(src, "trl", tmp_path / "checked")
    assert result.soundness["checked"] is False and "publisher" in result.soundness["why"]
    runs = assert_trials_identical([(src, tasks, trials)], tmp_path / "paths", reports=reports)
    print(f"tau2 mock fidelity: {len(tasks)} tasks; runs and seconds per path {runs}")


@pytest.mark.slow  # the 800-task test covers every group; this one is the quick look at Twitter's
@needs_paths
@needs_bfcl
@needs_sandbox
@pytest.mark.timeout(1800)
def test_every_trial_of_bfcl_twitter_tasks_scores_the_same_through_every_path(twitter, tmp_path) -> None:
    """BFCL's Twitter group (the one whose omitted ``tags`` once changed the reward), every trial."""
    src, tasks = twitter
    started = time.monotonic()
    trials, reports = suite_trials(tasks)
    suite = time.monotonic()
    runs = assert_trials_identical([(src, tasks, trials)], tmp_path, reports=reports)
    print(f"BFCL twitter: suite {suite - started:.1f}s; runs and seconds per path {runs}")


def _clawforge_tasks(root: Path) -> list[dict[str, Any]]:
    """Tool tasks derived by the task pipeline over an environment imported from ClawForge's tool-API
    format (the importer tests' release shape): chains sampled from its graph, grounded (S0, verifier
    with its guard) and made into task records. The grounding's soundness gate is off: on a five-tool
    environment a seeded random policy completes these chains often, and a gamed figure must come out
    of every path exactly as it does in process too."""
    from dataclaw.envcraft.graph import ChainSampler, build_env_graph, build_tool_graph
    from dataclaw.envcraft.importers import Produces, run_import
    from dataclaw.envcraft.tasks import GroundStage, chain_record
    from dataclaw.envcraft.tasks.tool.stages import task_record
    from dataclaw.envcraft.worker import open_environment
    from envcraft.importers import shapes

    src = shapes.tool_api_folder(root / "ClawForge-Tool_env", bad=False)
    s = run_import("auto", src, root / "lib", Produces.ENVIRONMENTS)
    assert (s.format, s.imported) == ("clawforge", 1), s.reject_messages
    pkg = root / "lib" / "envs" / "import" / "todo_management_system"
    graph = build_tool_graph(open_environment(pkg))
    stage = GroundStage(soundness=None)
    out = []
    for chain in ChainSampler([graph], build_env_graph([graph])).sample(60, seed=3, min_len=1, max_len=4):
        grounded = stage.process(chain_record(chain, {"todo_management_system": str(pkg)}))
        if isinstance(grounded, list):
            g = grounded[0]
            text = {"instruction": f"Please do {len(g['steps'])} things.", "user_turns": [], "user": []}
            persona = {"id": "lead", "description": "a team lead", "similarity": 1.0}
            out.append(task_record(g, persona, {**text, "derived": []}, "scripted"))
    return out


@needs_paths
@needs_sandbox
@pytest.mark.timeout(1800)
def test_every_trial_of_clawforge_derived_tasks_scores_the_same_through_every_path(tmp_path: Path) -> None:
    tasks = _clawforge_tasks(tmp_path)
    assert len(tasks) >= 3 and all(t["env_module"].endswith("todo_management_system") for t in tasks)
    trials, reports = suite_trials(tasks)
    assert {"gamed_by_random"} <= {str(r) for rep in reports.values() for r in rep.reasons}
    src = write(tasks, tmp_path / "run" / "tasks.jsonl")
    runs = assert_trials_identical([(src, tasks, trials)], tmp_path / "paths", reports=reports)
    print(f"ClawForge-derived fidelity: {len(tasks)} tasks; runs and seconds per path {runs}")
