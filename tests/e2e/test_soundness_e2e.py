"""Rewards nobody can game, end to end, as a user makes and ships them (issue 25).

``dataclaw env synth`` writes a library with the embedded model (SmolLM2-135M specs, compiled and audited);
``tasks sample`` chains tools in its package and in two built-in archetypes; ``tasks synth`` grounds them
and derives the verifiers (the task text from a scripted OpenAI-compatible server, a test double: the
reward does not depend on the words); ``tasks audit`` runs the soundness suite; ``tasks export`` writes
TRL (binary reward, the default) and VERL (``--reward fraction``) folders per environment group.

Then, from the exported files only — each export's ``tasks.jsonl``, the TRL module loaded by file as a
trainer loads it, the VERL ``reward.py`` and the episode sessions its tool adapters drive — every run the
soundness suite makes of an exported task (calls from S0) is replayed through the exported reward: the
untouched state, each collateral write, each wrong last write and every random episode gets less than the
task's pass threshold (collateral at most ``1 - margin``, random at most ``random_max_mean`` on average),
the gold chain 1.0. A task whose verifier lacks its ``unchanged`` guard is rejected by ``tasks audit``
(``gamed_by_<policy>``) and refused by ``tasks export``, which names the task and the policy.

Whether the exports reproduce every in-process score run by run is ``tests/envcraft/export/test_fidelity.py``.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from dataclaw.cli.app import _run
from dataclaw.sandbox import sandbox_available
from support.openai_server import OpenAIServer, ReceivedRequest, Reply

pytestmark = pytest.mark.slow
pytest.importorskip("llama_cpp", reason="the embedded model needs dataclaw[local]")

SCENARIO = "support_ticketing"
ARCHETYPES = ["transactional_workspace", "state_machine"]
JOB = "A user wants an AI assistant to "


@pytest.fixture(autouse=True, scope="module")
def require_bwrap() -> None:
    avail = sandbox_available()
    if not avail:
        pytest.skip(avail.reason)


@pytest.fixture(autouse=True, scope="module")
def _forget_the_trainer_side_imports(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The exports are loaded here as a trainer loads them (the TRL module, the library's package it
    runs): forgotten afterwards, so later tests that prove dataclaw imports no generated code see only
    what dataclaw did."""
    before = set(sys.modules)
    yield
    # the tests' own temp folders: not the system temp dir, which may hold this checkout (a CI clone)
    tmp = str(tmp_path_factory.getbasetemp())
    for name in set(sys.modules) - before:
        where = getattr(sys.modules[name], "__file__", None) or ""
        if where.startswith(tmp) or name.startswith(("trl_e2e_", "verl_e2e_")):
            del sys.modules[name]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def writer(req: ReceivedRequest) -> Reply:
    """Task text as a competent model writes it: the user's values verbatim, one message per step."""
    prompt = (req.body or {})["messages"][-1]["content"]
    if prompt.startswith(JOB):
        job = prompt[len(JOB) :].split("\n", 1)[0].rstrip(".")
        return Reply.json({"message": f"Hi! Could you please {job}? Thanks."})
    steps = re.findall(r"^\d+\. (.+)$", prompt.split("Its steps:\n", 1)[1], flags=re.M)
    return Reply.json({"messages": [f"Step {i + 1}: please {s}." for i, s in enumerate(steps)]})


def cli(*args: str) -> int:
    return _run([str(a) for a in args])


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The user's path: library → chains → tasks → audit → one TRL and one VERL export per group."""
    root = tmp_path_factory.mktemp("sound")
    lib, run = root / "LIB", root / "run"
    synth = ["env", "synth", "--out", lib, "--model", "local:smollm2-135m", "--scenario", SCENARIO]
    rc = cli(*synth, "--spec-bounds", "compact")
    rows = _jsonl(lib / "index.jsonl")
    # env synth exits 1 when no environment passes (the embedded model's usual yield): it must agree
    assert rc == (0 if any(r.get("status") == "passing" for r in rows) else 1), rows
    # every package the library wrote, passing or not: a task's reward must be sound in any environment
    packages = [lib / r["package"] for r in rows if r.get("package")]
    assert packages, _jsonl(lib / "index.jsonl")
    envs = [x for p in [*packages, *ARCHETYPES] for x in ("--env", p)]
    assert cli("tasks", "sample", "-o", run, *envs, "-n", "24", "--seed", "0", "--max-len", "4") == 0
    with OpenAIServer(responder=writer) as server:
        assert cli("tasks", "synth", "--run", run, "--model", f"{server.base_url}::writer") == 0
    tasks = _jsonl(run / "tasks.jsonl")
    assert cli("tasks", "audit", run / "tasks.jsonl", "-o", root / "audit", "--strict") == 0
    # up to here the library's generated code ran only in its sandboxed env worker, never in this process
    in_process = sorted(m for m in sys.modules if m.split(".")[0] in {p.name for p in packages})
    groups: dict[str, list[dict[str, Any]]] = {}
    for t in tasks:
        groups.setdefault(t["env"], []).append(t)
    exports = {}
    for group in groups:
        out = root / "exports" / group.replace("+", "_")
        trl = ["--to", "trl", "--env", group, "-o", out / "trl"]  # binary reward, the default
        assert cli("tasks", "export", run / "tasks.jsonl", *trl) == 0
        verl = ["--to", "verl", "--reward", "fraction", "--env", group, "-o", out / "verl"]
        assert cli("tasks", "export", run / "tasks.jsonl", *verl) == 0
        exports[group] = out
    return {
        "root": root,
        "run": run,
        "lib": lib,
        "tasks": tasks,
        "groups": groups,
        "exports": exports,
        "in_process": in_process,
    }


def test_the_pipeline_made_tasks_in_the_library_and_the_archetypes(made: dict[str, Any]) -> None:
    groups = made["groups"]
    assert set(ARCHETYPES) <= set(groups), sorted(groups)
    assert set(groups) - set(ARCHETYPES), "no task in the synthesised library's package"
    assert len(made["tasks"]) >= 6
    assert made["in_process"] == []  # sampling, grounding and the audit ran it in its env worker


# ---- the exported reward, read back from the files ---------------------------------------------------


def _trl_class(out: Path) -> Any:
    """The TRL export's environment class, imported by file as a trainer does."""
    manifest = json.loads((out / "manifest.json").read_text())
    spec = importlib.util.spec_from_file_location(f"trl_e2e_{abs(hash(str(out)))}", out / "envcraft_trl.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return getattr(module, manifest["class"])


def _reward_module(out: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"verl_e2e_{abs(hash(str(out)))}", out / "reward.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def trl_reward(env: Any, task_id: str, calls: list[dict[str, Any]]) -> float:
    """``reset``, each call as TRL dispatches a parsed tool call (only the arguments it names), the
    reward (a refused call is shown to the model and the episode goes on)."""
    from dataclaw.envcraft.export.base import method_name
    from dataclaw.envcraft.export.episode import ToolCallError

    env.reset(task_id=task_id)
    for call in calls:
        try:
            getattr(env, method_name(call["tool"]))(**(call.get("params") or {}))
        except ToolCallError:
            pass
    return float(env.get_reward())


def verl_reward(out: Path, reward: Any, sessions: Any, key: str, row: dict[str, Any], calls: list) -> float:
    """One rollout as the VERL adapters run it (one session per request, each call's envelope, the state as
    JSON in ``extra_info``), then the exported ``compute_score``."""
    from dataclaw.envcraft.export.base import method_name

    task_id = row["extra_info"]["task_id"]
    episode = sessions.get(key, task_id)
    extra = dict(row["extra_info"])
    for call in calls:
        episode.envelope(method_name(call["tool"]), call.get("params") or {})
    extra.update(dataclaw_task_id=task_id, dataclaw_state=json.dumps(episode.state()))
    got = reward.compute_score(row["data_source"], "", row["reward_model"]["ground_truth"], extra)
    return float(got["score"])


def test_no_exported_task_pays_doing_nothing_doing_harm_or_acting_at_random(made: dict[str, Any]) -> None:
    from dataclaw.envcraft.export.episode import Sessions
    from dataclaw.envcraft.quality.soundness import SoundnessSettings, run_soundness

    settings = SoundnessSettings()
    bar = settings.pass_threshold
    seen: dict[str, int] = {}
    bad: list[str] = []
    for group, out in made["exports"].items():
        exported = {fmt: _jsonl(out / fmt / "tasks.jsonl") for fmt in ("trl", "verl")}
        ids = [t["id"] for t in made["groups"][group]]
        assert [t["id"] for t in exported["trl"]] == [t["id"] for t in exported["verl"]] == ids
        env = _trl_class(out / "trl")()
        reward = _reward_module(out / "verl")
        sessions = Sessions(reward.TASKS)
        parquet = pq.read_table(out / "verl" / "train.parquet").to_pylist()
        rows = {r["extra_info"]["task_id"]: r for r in parquet}
        for task in exported["trl"]:
            report = run_soundness(task, settings)  # the exported record: its runs, calls from S0
            assert report.passed, (task["id"], report.to_record())
            randoms: dict[str, list[float]] = {"trl": [], "verl": []}
            for k, trial in enumerate(report.trials):
                seen[trial.policy] = seen.get(trial.policy, 0) + 1
                key = f"{task['id']}#{k}"
                got = {
                    "trl": trl_reward(env, task["id"], trial.calls),
                    "verl": verl_reward(out, reward, sessions, key, rows[task["id"]], trial.calls),
                }
                for fmt, r in got.items():
                    where = f"{fmt} {task['id']} {trial.policy} {json.dumps(trial.calls)[:300]}: {r}"
                    if trial.policy == "gold":
                        ok = r == 1.0
                    elif trial.policy == "untouched":
                        ok = r <= settings.untouched_max
                    elif trial.policy == "collateral":
                        ok = r <= 1 - settings.collateral_margin
                    else:
                        ok = r < bar
                    if trial.policy == "random":
                        randoms[fmt].append(r)
                    if not ok:
                        bad.append(where)
            for fmt, scores in randoms.items():
                if scores and sum(scores) / len(scores) > settings.random_max_mean:
                    bad.append(f"{fmt} {task['id']} random mean {sum(scores) / len(scores):.3f}")
    assert not bad, f"{len(bad)} exported runs pay what they must not:\n" + "\n".join(bad[:10])
    # every policy really ran through the exports, collateral writes included
    assert {"gold", "untouched", "collateral", "random"} <= set(seen), seen
    assert seen["collateral"] >= len(made["tasks"]), seen


# ---- a gamed task: the audit rejects it, the export refuses it ---------------------------------------


def test_a_task_without_its_guard_is_rejected_by_the_audit_and_refused_by_the_export(
    made: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from dataclaw.envcraft import archetypes
    from dataclaw.envcraft.tasks.tool.initial import build_verifier

    run, root = made["run"], made["root"]
    grounded = {g["id"]: g for g in _jsonl(run / "grounded.jsonl")}
    task = made["groups"]["transactional_workspace"][0]
    env_cls = archetypes.get("transactional_workspace").env_cls
    legacy, _ = build_verifier(grounded[task["metadata"]["grounded_id"]], env_cls, guard=False)
    src = root / "gamed" / "tasks.jsonl"
    src.parent.mkdir()
    src.write_text(json.dumps({**task, "verifier": legacy}) + "\n")
    capsys.readouterr()

    assert cli("tasks", "audit", src, "-o", root / "gamed_audit", "--strict") == 1
    rejects = [r for r in _jsonl(root / "gamed_audit" / "rejects.jsonl") if r["record_id"] == task["id"]]
    gamed = {r["reason"] for r in rejects if r["reason"].startswith("gamed_by_")}
    assert gamed, rejects
    (report,) = _jsonl(root / "gamed_audit" / "code_audit.jsonl")
    assert not report["passed"]

    out = root / "gamed_export"
    assert cli("tasks", "export", src, "--to", "trl", "-o", out) != 0
    said = capsys.readouterr()
    text = said.out + said.err
    assert task["id"] in text and any(reason in text for reason in gamed), text[-2000:]
    assert "Traceback" not in text
    assert not (out / "dataset.jsonl").exists()
