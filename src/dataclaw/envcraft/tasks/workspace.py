"""Claw workspace tasks in the four-file protocol (EnvCraft C.5): records, folder layout, sandboxed runs.

A task ``<id>`` is four files under one root::

    tasks/<id>.yaml                       task configuration (id, prompt path, asset id, runtime)
    tasks/prompts/<id>.md                 the user's request (email, ticket, hand-off)
    tasks/<id>/env_builder.py             builds the initial workspace in its working directory
    scripts/<id>/verify_workplace.py      scores a workspace, writes workplace_score.json

plus, optionally, ``tasks/<id>/solution.py``: a reference solution the auditor runs to prove the task is
solvable with full score (not part of the protocol; tasks made elsewhere simply lack it).

Builder, verifier and solution are untrusted code: they run only through :mod:`dataclaw.sandbox`, with the
task workspace as the one writable path. The verifier is wrapped so the files it stats, opens and lists are
recorded (an audit hook plus ``os.stat``), which is what the cross-artifact checks of C.6 compare.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml

from dataclaw.core.errors import ConfigError
from dataclaw.sandbox import Limits, Outcome, SandboxPolicy, Status, run

SCORE_FILE = "workplace_score.json"
_TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_TRACE_MARK = "@@dataclaw-trace@@"
REQUIRED_YAML_KEYS = ("id", "prompt", "asset")


@dataclass
class WorkspaceTask:
    """One claw workspace task: the four files' contents (and the optional reference solution)."""

    task_id: str
    config: dict[str, Any]
    prompt: str
    builder: str
    verifier: str
    solution: str | None = None
    source: str = ""
    """Where it was loaded from (a folder), for messages."""

    @property
    def max_turns(self) -> int | None:
        rt = self.config.get("runtime") or {}
        return int(rt["max_turns"]) if isinstance(rt, dict) and "max_turns" in rt else None

    @property
    def timeout_s(self) -> float | None:
        rt = self.config.get("runtime") or {}
        return float(rt["timeout_s"]) if isinstance(rt, dict) and "timeout_s" in rt else None

    def files(self) -> dict[str, str]:
        """Relative path → content, in protocol order."""
        out = {
            f"tasks/{self.task_id}.yaml": yaml.safe_dump(self.config, sort_keys=False, allow_unicode=True),
            f"tasks/prompts/{self.task_id}.md": self.prompt,
            f"tasks/{self.task_id}/env_builder.py": self.builder,
            f"scripts/{self.task_id}/verify_workplace.py": self.verifier,
        }
        if self.solution is not None:
            out[f"tasks/{self.task_id}/solution.py"] = self.solution
        return out

    def to_record(self) -> dict[str, Any]:
        return {
            "id": self.task_id,
            "kind": "claw_workspace",
            "config": self.config,
            "prompt": self.prompt,
            "builder": self.builder,
            "verifier": self.verifier,
            "solution": self.solution,
        }

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> WorkspaceTask:
        return cls(
            task_id=rec["id"],
            config=rec["config"],
            prompt=rec["prompt"],
            builder=rec["builder"],
            verifier=rec["verifier"],
            solution=rec.get("solution"),
        )


class LayoutProblem(StrEnum):
    """Why a folder entry is not a loadable four-file task."""

    MISSING_FILE = "missing_file"
    BAD_YAML = "bad_yaml"
    BAD_ID = "bad_id"
    PROMPT_PATH = "prompt_path_mismatch"


@dataclass
class LayoutError:
    """A task id found in a folder whose files do not form a task."""

    task_id: str
    reason: LayoutProblem
    message: str


def write_task(task: WorkspaceTask, root: Path) -> list[Path]:
    """Write the task's files under ``root`` (the folder holding ``tasks/`` and ``scripts/``)."""
    written = []
    for rel, content in task.files().items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        written.append(path)
    return written


def task_ids(root: Path) -> list[str]:
    """Ids of the tasks under ``root``: one per ``tasks/<id>.yaml``."""
    tasks_dir = root / "tasks"
    if not tasks_dir.is_dir():
        raise ConfigError(f"{root} has no tasks/ folder (expected the four-file layout: tasks/<id>.yaml …)")
    return sorted(p.stem for p in tasks_dir.glob("*.yaml")) + sorted(p.stem for p in tasks_dir.glob("*.yml"))


def load_task(root: Path, task_id: str) -> WorkspaceTask | LayoutError:
    """Read one task's four files; a missing or malformed file is a :class:`LayoutError`."""
    if not _TASK_ID.match(task_id):
        return LayoutError(task_id, LayoutProblem.BAD_ID, f"task id {task_id!r} is not a safe file name")
    yaml_path = root / "tasks" / f"{task_id}.yaml"
    if not yaml_path.is_file():
        yaml_path = root / "tasks" / f"{task_id}.yml"
    paths = {
        "prompt": root / "tasks" / "prompts" / f"{task_id}.md",
        "builder": root / "tasks" / task_id / "env_builder.py",
        "verifier": root / "scripts" / task_id / "verify_workplace.py",
    }
    missing = [str(p.relative_to(root)) for p in (yaml_path, *paths.values()) if not p.is_file()]
    if missing:
        return LayoutError(task_id, LayoutProblem.MISSING_FILE, f"missing {', '.join(missing)}")
    try:
        config = yaml.safe_load(yaml_path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        return LayoutError(task_id, LayoutProblem.BAD_YAML, f"{yaml_path.name} is not YAML: {exc}")
    if not isinstance(config, dict):
        return LayoutError(task_id, LayoutProblem.BAD_YAML, f"{yaml_path.name} must be a mapping")
    absent = [k for k in REQUIRED_YAML_KEYS if k not in config]
    if absent:
        return LayoutError(task_id, LayoutProblem.BAD_YAML, f"{yaml_path.name} lacks {', '.join(absent)}")
    if str(config["id"]) != task_id:
        return LayoutError(
            task_id,
            LayoutProblem.BAD_YAML,
            f"{yaml_path.name} says id {config['id']!r}, file name {task_id!r}",
        )
    expected_prompt = f"tasks/prompts/{task_id}.md"
    if str(config["prompt"]).removeprefix("./") != expected_prompt:
        return LayoutError(
            task_id,
            LayoutProblem.PROMPT_PATH,
            f"{yaml_path.name} points its prompt at {config['prompt']!r}, the file is {expected_prompt}",
        )
    solution = root / "tasks" / task_id / "solution.py"
    return WorkspaceTask(
        task_id=task_id,
        config=config,
        prompt=paths["prompt"].read_text(encoding="utf-8"),
        builder=paths["builder"].read_text(encoding="utf-8"),
        verifier=paths["verifier"].read_text(encoding="utf-8"),
        solution=solution.read_text(encoding="utf-8") if solution.is_file() else None,
        source=str(root),
    )


def load_tasks(root: Path) -> list[WorkspaceTask | LayoutError]:
    """Every task under ``root`` (tasks made here or elsewhere in the four-file layout)."""
    return [load_task(root, tid) for tid in task_ids(root)]


# ---- sandboxed runs --------------------------------------------------------------------------------


@dataclass
class VerifierRun:
    """One verifier execution: how it ended, the parsed score file, and what it looked at."""

    outcome: Outcome
    score: float | None
    """Normalised to [0, 1]; None when the verifier failed or wrote no valid score file."""
    report: dict[str, Any] | None
    problem: str | None
    """Why the score file is unusable (None when it is fine)."""
    inspected: list[str] = field(default_factory=list)
    """Workspace-relative paths the verifier stat-ed, opened or listed (in order, unique)."""

    @property
    def defect(self) -> bool:
        """A verifier failure (crash, timeout, malformed output) — a data defect, not an agent failure."""
        return self.score is None


def builder_limits() -> Limits:
    """Task code runs on the standard library only (C.6), enforced by the interpreter it gets."""
    return Limits(cpu_s=30, wall_s=60, memory_mb=1024, file_size_mb=64, stdlib_only=True)


def verifier_limits() -> Limits:
    return Limits(cpu_s=20, wall_s=30, memory_mb=1024, file_size_mb=16, stdlib_only=True)


def run_builder(task: WorkspaceTask, workspace: Path, *, policy: SandboxPolicy | None = None) -> Outcome:
    """Run ``env_builder.py`` with the (empty) workspace as its working directory."""
    workspace.mkdir(parents=True, exist_ok=True)
    return run(task.builder, workspace, builder_limits(), policy=policy or SandboxPolicy())


def run_solution(task: WorkspaceTask, workspace: Path, *, policy: SandboxPolicy | None = None) -> Outcome:
    if task.solution is None:
        raise ConfigError(f"task {task.task_id} has no solution.py")
    return run(task.solution, workspace, builder_limits(), policy=policy or SandboxPolicy())


_TRACE_PRELUDE = r"""
import atexit as _a, json as _j, os as _o, sys as _s
_seen = []
def _note(p):
    try:
        p = _o.fsdecode(p) if not isinstance(p, int) else None
    except Exception:
        return
    if p is not None:
        _seen.append(_o.path.abspath(p))
def _hook(ev, args):
    if ev in ("open", "os.listdir", "os.scandir", "glob.glob") and args:
        _note(args[0])
_s.addaudithook(_hook)
for _n in ("stat", "lstat"):
    def _wrap(f):
        def _w(path, *a, **k):
            _note(path)
            return f(path, *a, **k)
        return _w
    setattr(_o, _n, _wrap(getattr(_o, _n)))
def _dump():
    _s.stderr.write("\n%s%s\n" % (MARK, _j.dumps(_seen)))
    _s.stderr.flush()
_a.register(_dump)
_s.argv[0] = "verify_workplace.py"
_g = {"__name__": "__main__", "__file__": "verify_workplace.py"}
exec(compile(SOURCE, "verify_workplace.py", "exec"), _g)
"""


def _traced(source: str) -> str:
    return f"MARK = {_TRACE_MARK!r}\nSOURCE = {source!r}\n{_TRACE_PRELUDE}"


def _split_trace(stderr: str) -> tuple[str, list[str]]:
    idx = stderr.rfind(_TRACE_MARK)
    if idx == -1:
        return stderr, []
    try:
        paths = json.loads(stderr[idx + len(_TRACE_MARK) :].splitlines()[0])
    except (ValueError, IndexError):
        return stderr, []
    return stderr[:idx].rstrip("\n"), [p for p in paths if isinstance(p, str)]


def _relative(paths: list[str], mount: str) -> list[str]:
    out: list[str] = []
    prefix = mount + "/"
    for p in paths:
        if p.startswith(prefix):
            rel = p[len(prefix) :]
            if rel and rel != SCORE_FILE and rel not in out:
                out.append(rel)
    return out


def parse_score(raw: Any) -> tuple[float | None, str | None]:
    """Normalised score in [0, 1] from a ``workplace_score.json`` object, or (None, problem)."""
    if not isinstance(raw, dict):
        return None, "workplace_score.json is not a JSON object"
    total = raw.get("total_score")
    if isinstance(total, bool) or not isinstance(total, int | float):
        return None, "total_score is missing or not a number"
    details = raw.get("details")
    if not isinstance(details, list):
        return None, "details is missing or not a list"
    max_total = 0.0
    for i, item in enumerate(details):
        if not isinstance(item, dict) or not {"item", "score", "max_score", "passed"} <= set(item):
            return None, f"details[{i}] needs item, score, max_score, passed"
        if not isinstance(item["max_score"], int | float) or not isinstance(item["score"], int | float):
            return None, f"details[{i}] score/max_score must be numbers"
        max_total += float(item["max_score"])
    scale = max_total if max_total > 0 else 100.0
    if total < 0 or total > scale + 1e-9:
        return None, f"total_score {total} is outside [0, {scale:g}]"
    return float(total) / scale, None


def run_verifier(
    task: WorkspaceTask, workspace: Path, *, policy: SandboxPolicy | None = None, timeout: float | None = None
) -> VerifierRun:
    """Run ``verify_workplace.py`` on ``workspace`` (a stale score file is removed first) and read its
    score. The verifier gets the workspace path as argv[1] and runs with it as working directory."""
    score_path = workspace / SCORE_FILE
    if score_path.is_symlink() or score_path.exists():
        score_path.unlink()
    policy = policy or SandboxPolicy()
    # where the verifier sees the workspace: the sandbox mount, or the host folder in unsafe mode
    mount = str(workspace.resolve()) if policy.unsafe else policy.workspace_mount
    outcome = run(
        _traced(task.verifier), workspace, verifier_limits(), timeout=timeout, policy=policy, args=[mount]
    )
    outcome.stderr, paths = _split_trace(outcome.stderr)
    inspected = _relative(paths, mount)
    if outcome.status is not Status.OK:
        return VerifierRun(outcome, None, None, f"verifier {outcome.status}: {outcome.message}", inspected)
    if score_path.is_symlink() or not score_path.is_file():
        return VerifierRun(outcome, None, None, f"verifier wrote no {SCORE_FILE}", inspected)
    try:
        raw = json.loads(score_path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        return VerifierRun(outcome, None, None, f"{SCORE_FILE} is not JSON ({exc})", inspected)
    score, problem = parse_score(raw)
    return VerifierRun(outcome, score, raw if score is not None else None, problem, inspected)


def fresh_workspace(parent: Path, name: str) -> Path:
    """An empty directory ``parent/name`` (removed first if present)."""
    ws = parent / name
    if ws.exists():
        shutil.rmtree(ws)
    ws.mkdir(parents=True)
    return ws


def snapshot(workspace: Path) -> dict[str, bytes]:
    """Relative path → bytes of every regular file (symlinks are not followed)."""
    out: dict[str, bytes] = {}
    for p in sorted(workspace.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out[p.relative_to(workspace).as_posix()] = p.read_bytes()
    return out


def escaping_links(workspace: Path) -> list[str]:
    """Symlinks in the workspace that point outside it (a builder must not plant them)."""
    root = workspace.resolve()
    bad = []
    for p in workspace.rglob("*"):
        if p.is_symlink():
            target = (p.parent / p.readlink()).resolve()
            if target != root and root not in target.parents:
                bad.append(p.relative_to(workspace).as_posix())
    return bad
