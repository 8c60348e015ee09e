"""Episodes of an environment package dataclaw did not write, run in a warm sandboxed worker.

The server process never imports the package: it copies the folder into a fresh sandbox workspace and
starts one :class:`~dataclaw.sandbox.WarmWorker` per episode (no network, read-only system, only the
workspace writable); every tool call, the session's state and the scenario evaluator are worker jobs
(:mod:`.jobs`), a few milliseconds each. A task's verifier is JSON assertions — data, not code — and is
evaluated here on the state the worker returns.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from dataclaw.envcraft.rollout.claw_tools import ToolResult
from dataclaw.envcraft.rollout.errors import SetupError, VerifierError
from dataclaw.envcraft.rollout.harness import (
    TOOL_SYSTEM_PROMPT,
    Harness,
    Score,
    envelope_result,
    verifier_score,
)
from dataclaw.envcraft.runtime.task import ToolTask
from dataclaw.sandbox import SandboxPolicy, WarmWorker

JOBS = "dataclaw.envcraft.serve.jobs"
PKG_DIR = "pkg"
STATE_DIR = "state"
JOB_TIMEOUT_S = 30.0
PRELOAD = ["dataclaw.envcraft.runtime", JOBS]
"""Imported once in the worker (each job forks from it): without the jobs module a job pays ~0.5 s of
imports; the package itself is imported per job (~20 ms per call for a small package)."""


class JobError(Exception):
    """A worker job did not return (crash, timeout, limit): its status and one-line message."""


def run_job(worker: WarmWorker, name: str, *args: Any) -> Any:
    out = worker.call(f"{JOBS}:{name}", *args, timeout=JOB_TIMEOUT_S)
    if out.status.value != "ok":
        raise JobError(f"{name}: {out.status.value}: {out.message}")
    return out.result


def describe_package(folder: Path, policy: SandboxPolicy | None = None) -> dict[str, Any]:
    """Name, scenarios and tool schemas of a package folder, read in the sandbox."""
    with tempfile.TemporaryDirectory(prefix="dataclaw-serve-") as tmp:
        ws = Path(tmp)
        shutil.copytree(folder, ws / PKG_DIR / folder.name)
        with WarmWorker(ws, policy=policy, preload=PRELOAD) as worker:
            try:
                return dict(run_job(worker, "describe", f"{PKG_DIR}/{folder.name}"))
            except JobError as exc:
                raise SetupError(f"reading environment package {folder.name!r}", exc) from exc


class SandboxedHarness(Harness):
    """One episode of a package folder: a scenario (reward: the package's evaluator) or a tool task
    (``task``: S0 from its ``initial_state``, reward: its verifier)."""

    def __init__(
        self,
        folder: Path,
        *,
        scenario_id: str,
        prompt: str,
        tools: list[dict[str, Any]],
        task: ToolTask | None = None,
        policy: SandboxPolicy | None = None,
    ) -> None:
        super().__init__(task.id if task else f"{folder.name}:{scenario_id}")
        self.kind = "tool" if task else "scenario"  # type: ignore[misc]
        self.folder, self.scenario_id, self.prompt, self.task = folder, scenario_id, prompt, task
        self._tools = tools
        self.policy = policy
        self._tmp: str | None = None
        self.worker: WarmWorker | None = None
        self.session_id = ""
        self.pkg = f"{PKG_DIR}/{folder.name}"

    def _job(self, name: str, *args: Any) -> Any:
        assert self.worker is not None
        return run_job(self.worker, name, *args)

    def setup(self) -> None:
        try:
            self._tmp = tempfile.mkdtemp(prefix="dataclaw-serve-")
            ws = Path(self._tmp)
            shutil.copytree(self.folder, ws / self.pkg)
            self.worker = WarmWorker(ws, policy=self.policy, preload=PRELOAD)
            self.worker.start()
            s0 = self.task.initial_state if self.task else None
            self.session_id = str(self._job("create", self.pkg, STATE_DIR, self.scenario_id, s0))
        except Exception as exc:
            self.cleanup()
            raise SetupError(f"starting a sandboxed session of {self.folder.name!r}", exc) from exc

    def tools(self) -> list[dict[str, Any]]:
        return [json.loads(json.dumps(t)) for t in self._tools]

    def system_prompt(self) -> str:
        return TOOL_SYSTEM_PROMPT

    def user_turns(self) -> list[str]:
        if self.task:
            return self.task.turns()
        return [self.prompt]

    def execute(self, name: str, args: dict[str, Any]) -> ToolResult:
        try:
            envelope = self._job("call", self.pkg, STATE_DIR, self.session_id, name, args)
        except JobError:
            # the call itself crashed or hung the sandboxed child: agent-safe, and the session goes on
            why = f"{name} failed; try again or differently"
            envelope = {"status": "error", "error": {"category": "infrastructure", "message": why}}
        return envelope_result(envelope)

    def score(self) -> Score:
        try:
            if self.task is None:
                result = self._job("evaluate", self.pkg, STATE_DIR, self.session_id)
                return Score(float(result["overall_score"]), {"evaluation": result})
            state = self._job("state", self.pkg, STATE_DIR, self.session_id)
        except Exception as exc:
            raise VerifierError("scoring the sandboxed session", exc) from exc
        return verifier_score(self.task.verifier, state)

    def cleanup(self) -> None:
        if self.worker is not None:
            self.worker.cleanup()
            self.worker = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
