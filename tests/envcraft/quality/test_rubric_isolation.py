"""The LLM rubric of ``tasks audit`` runs the embedded model in one child process per audit run, by
default: a crash of that process (here: the child killed with SIGKILL while it answers, a real crash, no
fake of our code) is that task's ``model_error`` reject, counted in the rubric's reject table, and the run
goes on with a fresh child; ``local:…?isolate=false`` opts out."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from dataclaw.envcraft.quality.runs import load_task_source
from dataclaw.envcraft.quality.task_audit import audit_tasks
from dataclaw.models.backends.local import isolation_options
from dataclaw.sandbox import sandbox_available

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "claw_tasks"
TASKS = {"smart_home_energy_cost", "logistics_manager_review"}


def model_children() -> set[int]:
    """This process's isolated-model children (by the function they run), from /proc."""
    me, out = os.getpid(), set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            cmd = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == me and b"_isolated_model_main" in cmd:
            out.add(int(proc.name))
    return out


class Watcher(threading.Thread):
    """Records every model child it sees; with ``kill_after`` seconds, SIGKILLs each one that long after
    it appeared (mid-load or mid-answer: either way the model process dies under the call)."""

    def __init__(self, kill_after: float | None) -> None:
        super().__init__(daemon=True)
        self.kill_after = kill_after
        self.seen: dict[int, float] = {}
        self.killed: list[int] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            now = time.monotonic()
            for pid in model_children():
                self.seen.setdefault(pid, now)
                if self.kill_after is not None and pid not in self.killed:
                    if now - self.seen[pid] >= self.kill_after:
                        os.kill(pid, signal.SIGKILL)
                        self.killed.append(pid)
            time.sleep(0.05)


def test_only_the_embedded_model_is_isolated_by_default_and_the_spec_opts_out() -> None:
    assert isolation_options("local:smollm2-135m") == {"isolate": True}
    assert isolation_options("local:smollm2-135m", isolate=False) == {"isolate": False}
    assert isolation_options("local:smollm2-135m?isolate=false") == {}  # the user's word stands
    assert isolation_options("local:smollm2-135m?isolate=true&max_tokens=64") == {}
    assert isolation_options("http://127.0.0.1:8000/v1::qwen") == {}
    assert isolation_options("replay:/tmp/answers.jsonl") == {}


def _audit(tmp_path: Path, model: str, watcher: Watcher) -> tuple:
    loaded = load_task_source(EXAMPLES)
    watcher.start()
    try:
        done = audit_tasks(EXAMPLES, loaded, tmp_path / "run", model=model)
    finally:
        watcher.stop.set()
        watcher.join()
    rejects = [json.loads(x) for x in (tmp_path / "run" / "rejects.jsonl").read_text().splitlines()]
    return done, [r for r in rejects if r["stage"] == "rubric"]


@pytest.mark.skipif(not sandbox_available(), reason="the claw tasks' code audit runs in the sandbox")
def test_a_killed_model_process_is_the_tasks_model_error_and_the_run_goes_on(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="the embedded model needs dataclaw[local]")
    watcher = Watcher(kill_after=1.5)
    done, rejects = _audit(tmp_path, "local:smollm2-135m", watcher)
    # each task's call lost its model process: two crashes, two children, the audit itself returned
    assert len(watcher.killed) == 2 and set(watcher.seen) == set(watcher.killed)
    assert {r["record_id"] for r in rejects} == TASKS
    assert all(r["reason"] == "model_error" for r in rejects)
    assert all("model process crashed (signal 9)" in r["message"] for r in rejects), rejects
    assert done.rubric is not None and done.rubric.kept == 0
    assert done.rubric.reasons == {"model_error": 2}  # the reject table counts them
    assert not model_children()


@pytest.mark.slow
@pytest.mark.skipif(not sandbox_available(), reason="the claw tasks' code audit runs in the sandbox")
def test_one_model_process_serves_the_whole_audit_run(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="the embedded model needs dataclaw[local]")
    watcher = Watcher(kill_after=None)
    done, rejects = _audit(tmp_path, "local:smollm2-135m", watcher)
    assert len(watcher.seen) == 1  # one child for both tasks, closed when the rubric ends
    assert not model_children()
    verdicts = [json.loads(x) for x in (tmp_path / "run" / "rubric.jsonl").read_text().splitlines()]
    assert {v["id"] for v in verdicts} | {r["record_id"] for r in rejects} == TASKS
    assert done.rubric is not None and sum(done.rubric.reasons.values()) == len(rejects)


@pytest.mark.skipif(not sandbox_available(), reason="the claw tasks' code audit runs in the sandbox")
def test_the_opt_out_keeps_the_model_in_process(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="the embedded model needs dataclaw[local]")
    from dataclaw.models.backends import local

    # a grammar llama.cpp is refused before decoding: cheap, and in-process as the user asked
    mp = pytest.MonkeyPatch()
    mp.setattr(local, "GRAMMAR_MAX_DEPTH", 5)
    local._checked_grammar.cache_clear()
    watcher = Watcher(kill_after=None)
    try:
        done, rejects = _audit(tmp_path, "local:smollm2-135m?isolate=false", watcher)
    finally:
        mp.undo()
        local._checked_grammar.cache_clear()
    assert watcher.seen == {}
    assert {r["record_id"] for r in rejects} == TASKS and done.rubric.reasons == {"model_error": 2}
