"""What a rollout runs against: one task instantiated (a session or a workspace), its tools, its verifier.

* :class:`ToolTaskHarness` — an EnvCraft tool task (:class:`ToolTask`): a fresh session of the task's
  environment restored to ``initial_state``, the environment's tools, the JSON-assertion verifier; the
  reward is binary (1.0 only when every assertion holds, D.3).
* :class:`ClawTaskHarness` — a claw workspace task (four-file protocol): the builder makes the workspace
  in the sandbox, the agent gets the claw tools, ``verify_workplace.py`` scores the final workspace in
  [0, 1] as ``total_score`` over the declared maximum (the score file's or the task YAML's, else the C.5
  convention of 100) — never over the details an early-exiting verifier happened to write, so an agent
  that does nothing cannot collect a large share. A verifier that writes a valid score file and then
  exits non-zero is scored from its file (the exit status is kept in the score detail), not a defect.

Harness methods are synchronous (they touch files and the sandbox); the loop runs them in threads.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from dataclaw.envcraft.rollout.claw_tools import FINISH, ClawTools, ToolResult
from dataclaw.envcraft.rollout.errors import SetupError, VerifierError
from dataclaw.envcraft.rollout.user_sim import UserScenario, scenario_of
from dataclaw.envcraft.runtime.task import CLAW_KIND, ToolTask
from dataclaw.sandbox import SandboxPolicy

TOOL_SYSTEM_PROMPT = (
    "You are an agent operating a software environment through its tools. Use the tools to do what the "
    "user asks; look up identifiers with the tools rather than guessing them. When the request is "
    "complete, reply to the user in plain text without calling a tool."
)
CLAW_SYSTEM_PROMPT = (
    "You are an agent working in a file workspace (your working directory). Use the tools bash, read, "
    "write, edit, ls and grep to inspect the files and produce what the request asks for; use "
    "workspace-relative paths. Call finish when the work is done."
)


@dataclass
class Score:
    """The verifier's verdict on the final state."""

    reward: float
    detail: dict[str, Any] = field(default_factory=dict)


def envelope_result(envelope: dict[str, Any]) -> ToolResult:
    """An environment's response envelope as the agent's tool observation (errors are agent-safe)."""
    content = json.dumps(envelope, ensure_ascii=False, default=str)
    if envelope.get("status") == "ok":
        return ToolResult(content)
    return ToolResult(content, ok=False, error_kind=str((envelope.get("error") or {}).get("category")))


def verifier_score(verifier: dict[str, Any], state: dict[str, Any]) -> Score:
    """A tool task's binary reward (D.3: 1.0 only when every assertion holds) from its final state."""
    from dataclaw.envcraft.tasks.tool.verifier import evaluate

    try:
        result = evaluate(verifier, state)
    except Exception as exc:
        raise VerifierError("evaluating the task's assertions", exc) from exc
    if "error" in result:
        raise VerifierError(f"evaluating a malformed verifier ({result['error']})")
    return Score(
        1.0 if result["passed"] else 0.0, {"fraction": result["score"], "results": result["results"]}
    )


class Harness(ABC):
    """One task, instantiated for one rollout."""

    kind: ClassVar[str]

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.messages: list[dict[str, Any]] = []
        """The episode so far (OpenAI-format messages), set by the loop before :meth:`score`."""

    @abstractmethod
    def setup(self) -> None:
        """Instantiate the task (raise :class:`SetupError` when the task data cannot be instantiated)."""

    @abstractmethod
    def tools(self) -> list[dict[str, Any]]:
        """OpenAI function schemas offered to the agent."""

    @abstractmethod
    def system_prompt(self) -> str: ...

    @abstractmethod
    def user_turns(self) -> list[str]:
        """What the simulated user says, in order; the next turn comes when the agent stops calling tools."""

    def user_scenario(self) -> UserScenario | None:
        """Who a simulated user plays (its instructions, persona, hidden values); None: the task has no
        conversation to simulate and keeps its scripted turns."""
        return None

    @abstractmethod
    def execute(self, name: str, args: dict[str, Any]) -> ToolResult:
        """Run one tool call; recoverable errors come back as an error result, never raise."""

    @abstractmethod
    def score(self) -> Score:
        """Run the verifier on the final state (raise :class:`VerifierError` when it fails)."""

    def cleanup(self) -> None:  # noqa: B027 - optional
        """Release the session or workspace."""


class ToolTaskHarness(Harness):
    """A tool task (or its ``tasks.jsonl`` row): a session of its environment, its verifier's reward."""

    kind = "tool"

    def __init__(self, task: ToolTask | dict[str, Any], *, state_root: Path | None = None) -> None:
        task = ToolTask.of(task)
        super().__init__(task.id)
        self.task = task
        self._root_arg = state_root
        self._tmp: str | None = None
        self.env: Any = None
        self.session_id = ""
        self._env_cls: Any = None
        self._names: dict[str, str] = {}  # agent-facing tool name → environment tool name

    def setup(self) -> None:
        from dataclaw.envcraft.tasks.tool.loading import record_env

        try:
            self._env_cls = record_env(self.task)
            root = self._root_arg
            if root is None:
                self._tmp = tempfile.mkdtemp(prefix="dataclaw-rollout-")
                root = Path(self._tmp)
            self.env = self._env_cls(root)
            self.session_id = self.env.create_session(self.task.scenario_id)
            self.env.restore_env_state(self.task.initial_state)
        except Exception as exc:
            raise SetupError(f"creating a session of {self.task.env!r}", exc) from exc

    def tools(self) -> list[dict[str, Any]]:
        """The environment's tools; a cross-environment task's ``env.tool`` names become ``env__tool``
        (OpenAI function names allow no dots)."""
        schemas = self._env_cls.tools.openai_schemas()
        for schema in schemas:
            name = schema["function"]["name"]
            schema["function"]["name"] = agent_name = name.replace(".", "__")
            self._names[agent_name] = name
        return schemas

    def system_prompt(self) -> str:
        return TOOL_SYSTEM_PROMPT

    def user_turns(self) -> list[str]:
        return self.task.turns()

    def user_scenario(self) -> UserScenario | None:
        return scenario_of(self.task)

    def execute(self, name: str, args: dict[str, Any]) -> ToolResult:
        # never raises; errors are agent-safe
        return envelope_result(self.env.call(self.session_id, self._names.get(name, name), **args))

    def score(self) -> Score:
        try:
            state = self.env.get_session_state(self.session_id)
        except Exception as exc:
            raise VerifierError("reading the session's final state", exc) from exc
        return verifier_score(self.task.verifier, state)

    def cleanup(self) -> None:
        if self.env is not None and self.session_id:
            try:
                self.env.delete_session(self.session_id)
            except Exception:  # noqa: BLE001 - best effort: the temp root goes below anyway
                pass
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


class ClawTaskHarness(Harness):
    """A claw workspace task: sandboxed builder, claw tools, ``verify_workplace.py`` reward in [0, 1]."""

    kind = "claw"

    def __init__(
        self, task: Any, *, policy: SandboxPolicy | None = None, scratch: Path | None = None
    ) -> None:
        super().__init__(task.task_id)
        self.task = task
        self.policy = policy or SandboxPolicy()
        self.scratch = scratch
        self._tmp: str | None = None
        self.workspace: Path | None = None
        self.claw: ClawTools | None = None

    def setup(self) -> None:
        from dataclaw.envcraft.tasks.claw.workspace import BUILDER_NAME, crash_summary, run_builder

        self._tmp = tempfile.mkdtemp(prefix="dataclaw-claw-", dir=self.scratch)
        self.workspace = Path(self._tmp) / "workspace"
        out = run_builder(self.task, self.workspace, policy=self.policy)
        if not out.ok:
            mount = str(self.workspace.resolve()) if self.policy.unsafe else self.policy.workspace_mount
            why = crash_summary(out.stderr, BUILDER_NAME, mount, out.message)
            raise SetupError(f"building the workspace ({out.status}: {why})")
        self.claw = ClawTools(self.workspace, policy=self.policy)

    def tools(self) -> list[dict[str, Any]]:
        assert self.claw is not None
        return self.claw.schemas()

    def system_prompt(self) -> str:
        return CLAW_SYSTEM_PROMPT

    def user_turns(self) -> list[str]:
        return [self.task.prompt]

    def execute(self, name: str, args: dict[str, Any]) -> ToolResult:
        assert self.claw is not None
        return self.claw.call(name, args)

    def score(self) -> Score:
        from dataclaw.envcraft.tasks.claw.workspace import run_verifier

        assert self.workspace is not None
        vr = run_verifier(
            self.task, self.workspace, policy=self.policy, transcript=openclaw_transcript(self.messages)
        )
        if vr.defect:
            raise VerifierError(f"running verify_workplace.py ({vr.problem})")
        assert vr.score is not None
        return Score(vr.score, {"workplace_score": vr.report, **vr.metrics()})

    def cleanup(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


TERMINAL_TOOLS = frozenset({FINISH})


def openclaw_transcript(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-format messages → the session transcript claw graders read (OpenClaw's JSONL entries:
    ``{"type": "message", "message": {"role", "content": [{"type": "text" | "toolCall", …}]}}``, tool
    results as role ``toolResult``), so a grader such as PinchBench's ``grade(transcript, workspace)``
    sees what the agent said and did. Each assistant turn is followed by its trajectory event
    ``{"type": "model.completed", "data": {"assistantTexts": [...]}}`` and the transcript ends with
    ``{"type": "trace.artifacts", "data": {"assistantTexts": [...]}}`` (every text the agent said), the
    entries PinchBench's newer graders (``task_sanity``) read."""
    out: list[dict[str, Any]] = []
    said: list[str] = []
    for m in messages:
        role, text = m.get("role"), m.get("content")
        parts: list[dict[str, Any]] = []
        if isinstance(text, str) and text:
            parts.append({"type": "text", "text": text})
        elif isinstance(text, list):
            parts += [{"type": "text", "text": p.get("text", "")} for p in text if p.get("type") == "text"]
        if role == "tool":
            msg = {"role": "toolResult", "toolCallId": m.get("tool_call_id"), "toolName": m.get("name"),
                   "content": parts}  # fmt: skip
        else:
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    args = {"raw": fn.get("arguments")}
                parts.append(
                    {"type": "toolCall", "id": call.get("id"), "name": fn.get("name"), "arguments": args}
                )
            msg = {"role": role, "content": parts}
        out.append({"type": "message", "message": msg})
        if role == "assistant":
            texts = [p["text"] for p in parts if p.get("type") == "text" and p["text"].strip()]
            said += texts
            out.append({"type": "model.completed", "data": {"assistantTexts": texts}})
    out.append({"type": "trace.artifacts", "data": {"assistantTexts": said}})
    return out


def task_of(task: Any) -> Any:
    """A task object: a :class:`ToolTask` or :class:`WorkspaceTask` as it is, a row of either read."""
    from dataclaw.envcraft.tasks.claw.workspace import WorkspaceTask

    if isinstance(task, ToolTask | WorkspaceTask):
        return task
    if isinstance(task, dict) and task.get("kind") == CLAW_KIND:
        return WorkspaceTask.from_record(task)
    if isinstance(task, dict):
        return ToolTask.from_row(task)
    raise TypeError(f"not a task: {type(task).__name__}")


def harness_for(task: Any, **kwargs: Any) -> Harness:
    """The harness of a task (or of its row): claw for a workspace task, else a tool task's."""
    task = task_of(task)
    if isinstance(task, ToolTask):
        return ToolTaskHarness(task, **kwargs)
    return ClawTaskHarness(task, **kwargs)
