"""The Ray executor gives the records the local one gives, survives a killed worker, and refuses a stage
no node can run. One local Ray (2 CPUs) for the whole session: it takes ~10 s to start."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.core.store import RunStore
from dataclaw.pipeline import Resources, Stage, run_stage
from dataclaw.pipeline.registry import ExecutorSettings, make_executor, using_executor
from dataclaw.pipeline.stage import Demand

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow

RAY = ExecutorSettings(name="ray")


@pytest.fixture(scope="session")
def local_ray():
    from dataclaw.pipeline.executors.ray import connect

    connect(None, num_cpus=2)
    yield ray
    ray.shutdown()


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _records(run: Path) -> dict[str, list]:
    """What a run holds, ignoring timings: ids per stage file, rejects as (stage, id, reason)."""
    out = {}
    for name in ("streams", "anchors", "candidates"):
        out[name] = sorted(r["id"] for r in _lines(run / f"{name}.jsonl"))
    out["rejects"] = sorted((r["stage"], r["record_id"], r["reason"]) for r in _lines(run / "rejects.jsonl"))
    return out


def test_a_tailor_ingest_on_ray_gives_the_local_records(local_ray, tmp_path, shared_data):
    from dataclaw.tailor.pipeline import IngestConfig, ingest

    inputs = [shared_data / "lerobot_g1", shared_data / "opencua" / "cot_example", tmp_path / "missing.mp4"]
    (tmp_path / "empty.mp4").write_bytes(b"")
    inputs.append(tmp_path / "empty.mp4")
    config = IngestConfig(extractors=["shots", "motion", "proprio", "gui"], workers=2)
    local = ingest(inputs, tmp_path / "local", config)
    with using_executor(RAY):
        on_ray = ingest(inputs, tmp_path / "ray", config)
    assert on_ray.anchors == local.anchors and on_ray.candidates == local.candidates
    assert on_ray.rejects == local.rejects and local.rejects, "bad inputs are rejects on both"
    assert _records(tmp_path / "ray") == _records(tmp_path / "local")
    with using_executor(RAY):  # a rerun resumes: nothing is processed again
        again = ingest(inputs, tmp_path / "ray", config)
    for name in ("anchors", "candidates"):  # (records that raised are retried, as locally)
        assert again.stages[name]["processed"] == on_ray.stages[name]["errors"]


def test_a_claw_audit_on_ray_actors_gives_the_local_verdicts(local_ray, tmp_path):
    from dataclaw.envcraft.quality.runs import audit_by_code, load_task_source
    from dataclaw.sandbox import sandbox_available
    from envcraft.tasks.claw.claw_shapes import review_task, with_credit_for_the_folder

    if not sandbox_available():
        pytest.skip("needs the sandbox")
    root = tmp_path / "set"
    with_credit_for_the_folder(review_task("wp_bad__000")).write(root)
    review_task("wp_good__000").write(root)
    review_task("wp_good__001").write(root)

    def audit(run: Path) -> tuple[list, list]:
        with RunStore(run) as store:
            rows = audit_by_code(load_task_source(root), store, floor=0.0, workers=2)
            rejects = sorted((r["record_id"], r["reason"]) for r in store.rejects("code_audit"))
        failed = [(r["id"], r["passed"], [c["reason"] for c in r["checks"] if not c["passed"]]) for r in rows]
        errors = [c.get("message") for r in rows for c in r["checks"] if c["reason"] == "audit_error"]
        assert not errors, errors  # the audit itself failing is a bug to see, not a verdict to compare
        return sorted(failed), rejects

    local = audit(tmp_path / "local")
    with using_executor(RAY):
        on_ray = audit(tmp_path / "ray")
    assert on_ray == local
    verdicts = [r[:2] for r in local[0]]
    assert verdicts == [("wp_bad__000", False), ("wp_good__000", True), ("wp_good__001", True)]


class Answer(Stage):
    """A model stage run on actors: asks a 'paid' model once per record, through the run's response cache
    (the real sqlite :class:`ResponseCache`); every paid answer is logged."""

    name = "answers"
    resources = Resources.ASYNC

    def __init__(self, cache: str, paid: str) -> None:
        self.cache_path, self.paid = cache, paid

    def setup(self) -> None:
        from dataclaw.models.cache import ResponseCache

        self.cache = ResponseCache(self.cache_path)

    async def aprocess(self, item):
        from dataclaw.models.types import Generation

        key = f"q:{item['id']}"
        hit = self.cache.get(key)
        if hit is None:
            await asyncio.sleep(0.15)  # the model thinks
            gen = Generation(text=f"answer {item['n']}")
            with open(self.paid, "a") as fh:  # the answer came back: this call is paid
                fh.write(key + "\n")
            self.cache.put(key, "paid-model", gen, 0.15)
        else:
            gen = hit[0]
        return [{"id": item["id"] + "/a", "text": gen.text, "pid": os.getpid()}]


def test_a_killed_actor_loses_no_record_and_a_resume_pays_no_call_twice(local_ray, tmp_path):
    from dataclaw.pipeline.executors.ray import RayExecutor

    run, paid = tmp_path / "run", tmp_path / "paid.log"
    stage = Answer(str(run / "model_cache.sqlite"), str(paid))
    items = [{"id": f"q{i:03d}", "n": i} for i in range(40)]
    killed: list[int] = []

    def kill_one_worker() -> None:
        out = run / "answers.jsonl"
        deadline = time.time() + 120
        while time.time() < deadline:
            rows = _lines(out) if out.exists() else []
            if len(rows) >= 6:
                pid = rows[-1]["pid"]
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=kill_one_worker, daemon=True)
    watcher.start()
    executor = RayExecutor(workers=2, concurrency=4, async_on_actors=True)
    stats = run_stage(stage, items, RunStore(run), executor)
    watcher.join(5)
    assert killed, "a worker was killed mid-run"
    rows = _lines(run / "answers.jsonl")
    ok = [r for r in rows if r["id"].endswith("/a")]
    crashed = {r["record_id"] for r in _lines(run / "rejects.jsonl")}
    assert len({r["id"] for r in ok}) == len(ok), "no record written twice"
    assert len(ok) + len(crashed) == 40 and stats.processed == 40
    assert len({r["pid"] for r in ok}) >= 2, "the records ran on more than one actor process"
    # resume: whatever did not finish is done now, and no answer is paid for twice
    executor = RayExecutor(workers=2, concurrency=4, async_on_actors=True)
    again = run_stage(stage, items, RunStore(run), executor)
    assert again.skipped + again.processed == 40 and again.errors == 0
    ids = {r["id"] for r in _lines(run / "answers.jsonl")}
    assert ids == {f"q{i:03d}/a" for i in range(40)}
    calls = paid.read_text().split()
    assert len(calls) == len(set(calls)) == 40, "every answer paid once, none twice"


class Greedy(Stage):
    name = "greedy"
    demand = Demand(cpus=1, gpus=4)

    def process(self, item):
        return [item]


def test_a_stage_no_node_can_run_is_one_error_before_anything_is_written(local_ray, tmp_path):
    with pytest.raises(ConfigError, match=r"stage greedy asks for 1 CPU, 4 GPU per worker, and no node"):
        make_executor(settings=RAY, stages=[Greedy()])
    run = tmp_path / "run"
    with pytest.raises(ConfigError, match="no node"):
        run_stage(Greedy(), [{"id": "a"}], RunStore(run), make_executor(settings=RAY))
    assert not (run / "greedy.jsonl").exists() and not (run / "manifest.json").exists()


def test_env_audit_on_ray_actors_gives_the_local_reports(local_ray, tmp_path):
    from typer.testing import CliRunner

    from dataclaw.cli.env import app
    from dataclaw.sandbox import sandbox_available

    if not sandbox_available():
        pytest.skip("needs the sandbox")
    names = ["state_machine", "event_triggering", "stream_processing"]

    def audit(out: Path, *extra: str) -> list:
        res = CliRunner().invoke(app, ["audit", *names, "--no-tests", "--json", str(out), *extra])
        assert res.exit_code == 0, res.output
        reports = json.loads(out.read_text())["reports"]
        return [(r["env"], r["passed"], len(r.get("findings") or [])) for r in reports]

    local = audit(tmp_path / "local.json")
    on_ray = audit(tmp_path / "ray.json", "--executor", "ray", "--workers", "2")
    assert on_ray == local and [r[0] for r in local] == names, "same reports, in the order given"


def _trajectory(r: dict) -> tuple:
    """A stored rollout without its timings: what the agent said and did, what it got, how it ended."""
    steps = [(s["turn"], s["tool"], s["ok"], s["error_kind"], s["observation"]) for s in r["steps"]]
    return (r["id"], r["task_id"], r["sample"], r["seed"], r["reward"], r["stop_reason"], r["error"],
            r["defect"], r["turns"], steps, r["messages"])  # fmt: skip


def test_rollouts_and_calibration_on_ray_actors_give_the_local_records(local_ray, tmp_path):
    from typer.testing import CliRunner

    from dataclaw.cli.tasks import app
    from dataclaw.envcraft.tasks.claw.workspace import load_tasks
    from dataclaw.sandbox import sandbox_available
    from envcraft.rollout.rollout_helpers import EXAMPLES, scripted_agent, solution_calls, tool_task
    from support.openai_server import OpenAIServer

    task = tool_task()
    (tmp_path / "tasks.jsonl").write_text(json.dumps(task) + "\n")
    solve = scripted_agent([(c["tool"], c["params"]) for c in task["gold_chain"]])
    give_up = scripted_agent([])
    claw = next(iter(load_tasks(EXAMPLES)))
    claw_agent = scripted_agent(solution_calls(claw))

    def respond(req):
        if req.body["messages"][1]["content"] == claw.prompt:
            return claw_agent(req)
        return solve(req) if req.body["seed"] == 0 else give_up(req)

    def run(name: str, *extra: str) -> dict:
        out = tmp_path / name
        cli = CliRunner()
        for args in (
            ["calibrate", str(tmp_path), "-k", "2", "--out", str(out / "cal"), "--model", url, *extra],
            [
                "rollout",
                str(EXAMPLES),
                "-n",
                "2",
                "--limit",
                "1",
                "--out",
                str(out / "claw"),
                "--model",
                url,
                *extra,
            ],
        ):
            if args[0] == "rollout" and not sandbox_available():
                continue
            res = cli.invoke(app, args)
            assert res.exit_code == 0, res.output
        rollouts = [r for d in ("cal", "claw") for r in _lines(out / d / "rollouts.jsonl")]
        rejects = _lines(out / "cal" / "rejects.jsonl")
        return {
            "rollouts": sorted(_trajectory(r) for r in rollouts),
            "calibration": _lines(out / "cal" / "calibration.jsonl"),
            "rejects": sorted((r["stage"], r["record_id"], r["reason"]) for r in rejects),
        }

    with OpenAIServer(responder=respond) as server:
        url = f"{server.base_url}::agent"
        local = run("local")
        on_ray = run("ray", "--executor", "ray")
    assert on_ray == local
    assert [(c["verdict"], c["p"]) for c in local["calibration"]] == [("keep", 0.5)]
    assert local["rejects"] == [], "a kept task is no reject"
    rewards = sorted((r[1], r[4]) for r in local["rollouts"])
    assert len(rewards) == 2 + 2 * bool(sandbox_available()) and (task["id"], 1.0) in rewards


def test_a_killed_rollout_worker_loses_no_rollout_and_pays_no_call_twice(
    local_ray, tmp_path, monkeypatch, caplog
):
    from dataclaw.envcraft.rollout import RolloutConfig
    from dataclaw.envcraft.rollout.run import rollout_tasks
    from dataclaw.models import get_model
    from dataclaw.pipeline.executors.ray import RayExecutor
    from envcraft.rollout.rollout_helpers import scripted_agent, tool_task
    from support.openai_server import OpenAIServer

    task = tool_task()
    solve = scripted_agent([(c["tool"], c["params"]) for c in task["gold_chain"]])
    executors: list[RayExecutor] = []
    hosting = RayExecutor.hosting

    def spy(self, concurrency):  # (to find the actors' processes)
        executors.append(self)
        return hosting(self, concurrency)

    monkeypatch.setattr(RayExecutor, "hosting", spy)
    killed: list[int] = []
    bodies: list[str] = []
    lock = threading.Lock()

    def respond(req):
        with lock:
            bodies.append(json.dumps(req.body, sort_keys=True))
            if len(bodies) == 3 and not killed:  # rollouts are mid-way on both actors: kill one
                pid = ray.get(executors[0].host_actors[0].pid.remote())
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        reply = solve(req)
        reply.delay = 0.2  # the model thinks
        return reply

    run = tmp_path / "run"

    def rollouts(url: str) -> list[dict]:
        with RunStore(run) as store, using_executor(RAY):
            model = get_model(url, cache=run / "model_cache.sqlite")
            return asyncio.run(rollout_tasks(model, [task], store, RolloutConfig(), samples=4, concurrency=2))

    with OpenAIServer(responder=respond) as server:
        url = f"{server.base_url}::agent"
        recs = rollouts(url)
        assert killed, "a worker holding a rollout was killed mid-run"
        assert "attempt 1 of 3" in caplog.text, "the rollout it held started again"
        assert len(bodies) == len(set(bodies)), "no model call was paid twice (the retry replayed the cache)"
        assert sorted(r["sample"] for r in recs) == [0, 1, 2, 3]
        assert all(r["reward"] == 1.0 and r["error"] is None for r in recs), [r["error"] for r in recs]
        assert sorted(r["id"] for r in _lines(run / "rollouts.jsonl")) == sorted(r["id"] for r in recs)
        paid = server.request_count
        again = rollouts(url)  # resume: every rollout is read back, nothing is asked again
        assert server.request_count == paid
        assert sorted(r["id"] for r in again) == sorted(r["id"] for r in recs)
    assert not _lines(run / "rejects.jsonl")


class Square(Stage):
    """Stateless (no ``setup``): Ray runs it as tasks on the started workers, not on an actor pool."""

    name = "square"

    def process(self, item):
        if item["n"] == 13:
            raise ValueError("thirteen is unlucky")
        if item["n"] % 5 == 0:
            return self.reject(item, "fives", "a multiple of five")
        return [{"id": item["id"] + "/sq", "n": item["n"] ** 2, "pid": os.getpid()}]


def test_a_stateless_stage_runs_as_ray_tasks_with_the_local_records(local_ray, tmp_path):
    from dataclaw.pipeline.executors.ray import stateless

    assert stateless(Square()) and not stateless(Answer("m", str(tmp_path / "c")))
    items = [{"id": f"r{i:03d}", "n": i} for i in range(200)]
    runs = {}
    for name in ("local", "ray"):
        with using_executor(ExecutorSettings(name=name)):
            run_stage(Square(), items, RunStore(tmp_path / name), make_executor(workers=2))
        runs[name] = (
            sorted((r["id"], r["n"]) for r in _lines(tmp_path / name / "square.jsonl")),
            sorted((r["record_id"], r["reason"]) for r in _lines(tmp_path / name / "rejects.jsonl")),
        )
    assert runs["ray"] == runs["local"] and len(runs["ray"][0]) == 200 - 40 - 1
    assert "r013" in dict(runs["ray"][1])  # the crash is that record's reject, the rest went on
    pids = {r["pid"] for r in _lines(tmp_path / "ray" / "square.jsonl")}
    assert os.getpid() not in pids  # it ran on Ray's workers
