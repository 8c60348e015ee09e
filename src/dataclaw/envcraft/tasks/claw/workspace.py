"""Claw workspace tasks in the four-file protocol (EnvCraft C.5): records, folder layout, sandboxed runs.

A task ``<id>`` is four files under one root::

    tasks/<id>.yaml                       task configuration (prompt path, asset id, runtime)
    tasks/prompts/<id>.md                 the user's request (email, ticket, hand-off)
    tasks/<id>/env_builder.py             builds the initial workspace in its working directory
    scripts/<id>/verify_workplace.py      scores a workspace, writes workplace_score.json

plus, optionally, ``tasks/<id>/solution.py``: a reference solution the auditor runs to prove the task is
solvable with full score (not part of the protocol; tasks made elsewhere simply lack it).

The loader reads the layout as other projects write it (C.5 asks the YAML only for "the prompt path, the
asset identifier, and basic runtime configuration"): the id may come from ``id``, ``task_id``,
``task_name``, ``name``, a nested ``task:`` mapping or the file stem (the stem wins when they disagree);
the prompt from ``prompt``, ``prompt_path``, ``prompt_file`` (relative to the root or to ``tasks/``), a
nested key, inline text, or the conventional ``tasks/prompts/<id>.md``; the YAML itself is optional.
Every inference lands in :attr:`WorkspaceTask.inferred`, so a record says how it was read.

Builder, verifier and solution are untrusted code: they run only through :mod:`dataclaw.sandbox`, with the
task workspace as the one writable path and the standard library only. The verifier is wrapped so the
files it stats, opens and lists are recorded (an audit hook plus ``os.stat``), which is what the
cross-artifact checks of C.6 compare.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml

from dataclaw.core import pyast
from dataclaw.core.errors import ConfigError
from dataclaw.sandbox import Limits, Outcome, SandboxPolicy, Status, run

SCORE_FILE = "workplace_score.json"
SCORE_FILE_CAP = 1 << 20
"""Largest score file read (bytes): a verifier writing more has a defect, and is not parsed."""
MAX_TEXT_BYTES = 4 << 20
"""Largest task file (YAML, prompt, script) the loader reads."""
DEFAULT_MAX_SCORE = 100.0
"""The C.5 convention: ``total_score`` is out of 100 unless the task or the verifier declares a total."""
_TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_TRACE_MARK = "@@dataclaw-trace@@"
REQUIRED_YAML_KEYS = ("id", "prompt", "asset")
"""What the task YAMLs *we* write carry (``claw-synth``); the loader requires none of them."""
ID_KEYS = ("id", "task_id", "task_name", "name")
PROMPT_KEYS = ("prompt", "prompt_path", "prompt_file", "prompt_md", "instruction_path")
MAX_SCORE_KEYS = ("max_score", "max_total", "max_total_score", "total_max", "full_score", "score_max")
BUILDER_NAME = "env_builder.py"
VERIFIER_NAME = "verify_workplace.py"
SOLUTION_NAME = "solution.py"
ENTRY_NAMES = ("build_env", "main", "build_workspace", "build")
"""Builder functions a harness elsewhere may call instead of running the file as a script."""


def _positive_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        x = float(value)
    except ValueError:
        return None
    return x if x > 0 else None


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
    inferred: dict[str, str] = field(default_factory=dict)
    """How each part was found when the files did not say so plainly (``{"id": "from task_id"}``)."""
    paths: dict[str, str] = field(default_factory=dict)
    """Root-relative file of each part (``yaml``, ``prompt``, ``builder``, ``verifier``, ``solution``)."""

    def _sections(self) -> list[dict[str, Any]]:
        """The config and the mappings nested in it that carry task settings, outermost first."""
        out = [self.config]
        for key in ("task", "runtime", "scoring", "evaluation"):
            sub = self.config.get(key)
            if isinstance(sub, dict):
                out.append(sub)
        return out

    def _setting(self, *keys: str) -> Any:
        for section in self._sections():
            for key in keys:
                if key in section:
                    return section[key]
        return None

    @property
    def max_turns(self) -> int | None:
        value = _positive_number(self._setting("max_turns"))
        return int(value) if value is not None else None

    @property
    def timeout_s(self) -> float | None:
        seconds = _positive_number(self._setting("timeout_s", "timeout_seconds", "timeout"))
        if seconds is not None:
            return seconds
        minutes = _positive_number(self._setting("max_time_minutes", "timeout_minutes"))
        return minutes * 60 if minutes is not None else None

    @property
    def declared_max(self) -> float | None:
        """The score total the task YAML declares (``max_score`` and its spellings), if any."""
        return _positive_number(self._setting(*MAX_SCORE_KEYS))

    def files(self) -> dict[str, str]:
        """Relative path → content, in protocol order."""
        out = {
            f"tasks/{self.task_id}.yaml": yaml.safe_dump(self.config, sort_keys=False, allow_unicode=True),
            f"tasks/prompts/{self.task_id}.md": self.prompt,
            f"tasks/{self.task_id}/{BUILDER_NAME}": self.builder,
            f"scripts/{self.task_id}/{VERIFIER_NAME}": self.verifier,
        }
        if self.solution is not None:
            out[f"tasks/{self.task_id}/{SOLUTION_NAME}"] = self.solution
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
            "inferred": self.inferred,
            "paths": self.paths,
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
            inferred=dict(rec.get("inferred") or {}),
            paths=dict(rec.get("paths") or {}),
        )


class LayoutProblem(StrEnum):
    """Why a folder entry is not a loadable four-file task."""

    MISSING_FILE = "missing_file"
    BAD_YAML = "bad_yaml"
    BAD_ID = "bad_id"
    PROMPT_PATH = "prompt_path_mismatch"
    BAD_ENCODING = "bad_encoding"
    FILE_TOO_LARGE = "file_too_large"


@dataclass
class LayoutError:
    """A task id found in a folder whose files do not form a task (the message names the files)."""

    task_id: str
    reason: LayoutProblem
    message: str
    files: list[str] = field(default_factory=list)
    """Root-relative files that were found for this id."""


def write_task(task: WorkspaceTask, root: Path) -> list[Path]:
    """Write the task's files under ``root`` (the folder holding ``tasks/`` and ``scripts/``)."""
    written = []
    for rel, content in task.files().items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        written.append(path)
    return written


# ---- loading -----------------------------------------------------------------------------------------


def task_ids(root: Path) -> list[str]:
    """Ids of everything under ``root`` that looks like (part of) a task: YAML stems, task folders,
    verifier folders and prompt stems. Parts that cannot be paired become :class:`LayoutError` on load."""
    tasks_dir = root / "tasks"
    if not tasks_dir.is_dir():
        raise ConfigError(f"{root} has no tasks/ folder (expected the four-file layout: tasks/<id>.yaml …)")
    ids: set[str] = set()
    for p in tasks_dir.iterdir():
        if p.is_file() and p.suffix in (".yaml", ".yml"):
            ids.add(p.stem)
        elif p.is_dir() and p.name != "prompts" and any(c.is_file() for c in p.iterdir()):
            ids.add(p.name)
    prompts = tasks_dir / "prompts"
    if prompts.is_dir():
        ids.update(p.stem for p in prompts.iterdir() if p.is_file() and p.suffix in (".md", ".txt"))
    scripts = root / "scripts"
    if scripts.is_dir():
        ids.update(p.name for p in scripts.iterdir() if p.is_dir() and any(p.glob("*.py")))
    return sorted(ids)


class _Bad(Exception):
    """A task file that cannot be read (internal: becomes a LayoutError)."""

    def __init__(self, reason: LayoutProblem, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def _read_text(path: Path, rel: str) -> str:
    size = path.stat().st_size
    if size > MAX_TEXT_BYTES:
        raise _Bad(
            LayoutProblem.FILE_TOO_LARGE, f"{rel} is {size} bytes (the loader reads at most {MAX_TEXT_BYTES})"
        )
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _Bad(LayoutProblem.BAD_ENCODING, f"{rel} is not UTF-8 text (byte {exc.start})") from None


def _first_key(sections: list[tuple[str, dict[str, Any]]], keys: tuple[str, ...]) -> tuple[str, Any] | None:
    for prefix, section in sections:
        for key in keys:
            value = section.get(key)
            if value is not None and value != "":
                return prefix + key, value
    return None


def _inside(root: Path, candidate: Path) -> bool:
    root = root.resolve()
    try:
        candidate.resolve().relative_to(root)
    except ValueError:
        return False
    return True


def _looks_like_path(text: str) -> bool:
    return "\n" not in text and len(text) < 300 and not re.search(r"\s", text.strip())


def _find_prompt(
    root: Path, task_id: str, declared: tuple[str, Any] | None, inferred: dict[str, str]
) -> tuple[str, str] | str | None:
    """(relative path, how) of the prompt file, the prompt text itself (inline), or None (missing)."""
    conventional = [
        f"tasks/prompts/{task_id}.md",
        f"tasks/prompts/{task_id}.txt",
        f"tasks/{task_id}/prompt.md",
    ]
    if declared is not None:
        key, value = declared
        if isinstance(value, dict):
            inner = _first_key([("", value)], ("path", "file", "text", "content"))
            if inner is None:
                raise _Bad(LayoutProblem.BAD_YAML, f"the yaml's {key} mapping has no path, file or text")
            key, value = f"{key}.{inner[0]}", inner[1]
        if not isinstance(value, str):
            raise _Bad(LayoutProblem.BAD_YAML, f"the yaml's {key} is a {type(value).__name__}, not a path")
        if not _looks_like_path(value):
            inferred["prompt"] = f"inline text in the yaml's {key}"
            return value.strip() + "\n"
        rel = value.strip().removeprefix("./")
        if rel.startswith("/"):
            raise _Bad(LayoutProblem.PROMPT_PATH, f"the yaml's {key} {value!r} is an absolute path")
        for base, how in ((root, "the task root"), (root / "tasks", "tasks/")):
            cand = base / rel
            if not _inside(root, cand):
                continue
            if cand.is_file():
                found = cand.resolve().relative_to(root.resolve()).as_posix()
                if key != "prompt" or base != root:
                    inferred["prompt"] = f"from the yaml's {key}, relative to {how}"
                return found, key
        if not any(_inside(root, base / rel) for base in (root, root / "tasks")):
            raise _Bad(LayoutProblem.PROMPT_PATH, f"the yaml's {key} {value!r} points outside the task root")
        for conv in conventional:
            if (root / conv).is_file():
                inferred["prompt"] = f"conventional path {conv} (the yaml's {key} {value!r} does not exist)"
                return conv, "conventional"
        return None
    for conv in conventional:
        if (root / conv).is_file():
            inferred["prompt"] = f"conventional path {conv}"
            return conv, "conventional"
    return None


def _parse_yaml(text: str, rel: str) -> dict[str, Any]:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise _Bad(LayoutProblem.BAD_YAML, f"{rel} is not YAML{where}: {problem}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _Bad(LayoutProblem.BAD_YAML, f"{rel} must be a mapping, not a {type(raw).__name__}")
    return raw


def load_task(root: Path, task_id: str) -> WorkspaceTask | LayoutError:
    """Read one task's files; what is missing, unreadable or malformed is a :class:`LayoutError` that names
    the files found."""
    if not _TASK_ID.match(task_id):
        return LayoutError(task_id, LayoutProblem.BAD_ID, f"task id {task_id!r} is not a safe file name")
    found = _files_of(root, task_id)
    try:
        return _load(root, task_id, found)
    except _Bad as bad:
        return LayoutError(task_id, bad.reason, bad.message, found)


def _files_of(root: Path, task_id: str) -> list[str]:
    """Root-relative files that belong to ``task_id`` by the layout."""
    out = []
    for rel in (
        f"tasks/{task_id}.yaml",
        f"tasks/{task_id}.yml",
        f"tasks/prompts/{task_id}.md",
        f"tasks/prompts/{task_id}.txt",
    ):
        if (root / rel).is_file():
            out.append(rel)
    for folder in (root / "tasks" / task_id, root / "scripts" / task_id):
        if folder.is_dir():
            out += sorted(p.relative_to(root).as_posix() for p in folder.rglob("*") if p.is_file())[:20]
    return out


def _load(root: Path, task_id: str, found: list[str]) -> WorkspaceTask | LayoutError:
    inferred: dict[str, str] = {}
    paths: dict[str, str] = {}
    config: dict[str, Any] = {}
    yaml_rel = next(
        (r for r in (f"tasks/{task_id}.yaml", f"tasks/{task_id}.yml") if (root / r).is_file()), None
    )
    if yaml_rel is not None:
        paths["yaml"] = yaml_rel
        config = _parse_yaml(_read_text(root / yaml_rel, yaml_rel), yaml_rel)
        if not config:
            inferred["config"] = f"{yaml_rel} is empty"
    else:
        inferred["config"] = "no task yaml: id from the folder name, files from the layout"
    nested = config.get("task") if isinstance(config.get("task"), dict) else {}
    sections = [("", config), ("task.", nested)]
    declared_id = _first_key(sections, ID_KEYS)
    if declared_id is None:
        inferred["id"] = "file stem" if yaml_rel else "folder name"
    elif str(declared_id[1]).strip() == task_id:
        if declared_id[0] != "id":
            inferred["id"] = f"from {declared_id[0]}"
    else:
        inferred["id"] = f"file stem; the yaml's {declared_id[0]} {str(declared_id[1])!r} disagrees"
    prompt_at = _find_prompt(root, task_id, _first_key(sections, PROMPT_KEYS), inferred)
    if _first_key(sections, ("asset", "asset_id")) is None:
        inferred["asset"] = "none declared: the workspace is built in an empty folder"
    builder_rel = f"tasks/{task_id}/{BUILDER_NAME}"
    verifier_rel = next(
        (
            r
            for r in (f"scripts/{task_id}/{VERIFIER_NAME}", f"tasks/{task_id}/{VERIFIER_NAME}")
            if (root / r).is_file()
        ),
        f"scripts/{task_id}/{VERIFIER_NAME}",
    )
    if verifier_rel.startswith("tasks/"):
        inferred["verifier"] = f"{verifier_rel} (not under scripts/)"
    missing = []
    if prompt_at is None:
        missing.append(f"the prompt (tasks/prompts/{task_id}.md)")
    if not (root / builder_rel).is_file():
        missing.append(f"the builder ({builder_rel})")
    if not (root / verifier_rel).is_file():
        missing.append(f"the verifier ({verifier_rel})")
    if missing:
        have = ", ".join(found) if found else "no files"
        return LayoutError(
            task_id, LayoutProblem.MISSING_FILE, f"found {have}; missing {', '.join(missing)}", found
        )
    if isinstance(prompt_at, tuple):
        paths["prompt"] = prompt_at[0]
        prompt = _read_text(root / prompt_at[0], prompt_at[0])
    else:
        assert prompt_at is not None
        paths["prompt"] = paths.get("yaml", "")
        prompt = prompt_at
    if not prompt.strip():
        raise _Bad(LayoutProblem.MISSING_FILE, f"{paths['prompt']} is empty: the task has no request")
    paths["builder"], paths["verifier"] = builder_rel, verifier_rel
    builder = _read_text(root / builder_rel, builder_rel)
    verifier = _read_text(root / verifier_rel, verifier_rel)
    solution_rel = f"tasks/{task_id}/{SOLUTION_NAME}"
    solution = None
    if (root / solution_rel).is_file():
        paths["solution"] = solution_rel
        solution = _read_text(root / solution_rel, solution_rel)
    return WorkspaceTask(
        task_id=task_id,
        config=config,
        prompt=prompt,
        builder=builder,
        verifier=verifier,
        solution=solution,
        source=str(root),
        inferred=inferred,
        paths=paths,
    )


def load_tasks(root: Path) -> list[WorkspaceTask | LayoutError]:
    """Every task under ``root`` (tasks made here or elsewhere in the four-file layout)."""
    return [load_task(root, tid) for tid in task_ids(root)]


# ---- sandboxed runs --------------------------------------------------------------------------------


class ScoreProblem(StrEnum):
    """Why a verifier run gave no score."""

    FAILED = "verifier_failed"
    """The verifier crashed, timed out or hit a limit before writing a valid score file."""
    NO_FILE = "no_score_file"
    TOO_LARGE = "score_file_too_large"
    NOT_JSON = "score_file_not_json"
    MALFORMED = "malformed_score"


@dataclass
class ScoreReading:
    """A ``workplace_score.json`` object read against the declared maximum."""

    score: float | None
    """``total_score / max_total`` in [0, 1]; None when the object is malformed."""
    problem: str | None = None
    max_total: float = DEFAULT_MAX_SCORE
    max_source: str = "C.5 convention (100)"
    details_max: float | None = None
    """Sum of the written details' ``max_score``."""

    @property
    def partial(self) -> bool:
        """The written details cover less than the declared total (an early exit, a skipped check)."""
        return self.details_max is not None and self.details_max < self.max_total - 1e-9


def read_score(raw: Any, declared_max: float | None = None) -> ScoreReading:
    """Read a score object: ``total_score / max``, where ``max`` is what the score file declares
    (``max_score`` at the top), else ``declared_max`` (the task YAML), else the C.5 convention of 100 —
    never the sum of the details the verifier happened to write (an early exit writes fewer)."""
    if not isinstance(raw, dict):
        return ScoreReading(None, "workplace_score.json is not a JSON object")
    total = raw.get("total_score")
    if isinstance(total, bool) or not isinstance(total, int | float):
        return ScoreReading(None, "total_score is missing or not a number")
    details = raw.get("details")
    if not isinstance(details, list):
        return ScoreReading(None, "details is missing or not a list")
    details_max = 0.0
    for i, item in enumerate(details):
        if not isinstance(item, dict) or not {"score", "max_score"} <= set(item):
            return ScoreReading(None, f"details[{i}] needs item, score, max_score, passed")
        values = (item["max_score"], item["score"])
        if any(isinstance(v, bool) or not isinstance(v, int | float) for v in values):
            return ScoreReading(None, f"details[{i}] score/max_score must be numbers")
        details_max += float(item["max_score"])
    file_max = next((_positive_number(raw[k]) for k in MAX_SCORE_KEYS if k in raw), None)
    if file_max is not None:
        scale, source = file_max, "declared in workplace_score.json"
    elif declared_max is not None:
        scale, source = float(declared_max), "declared in the task yaml"
    elif details_max > DEFAULT_MAX_SCORE:
        scale, source = details_max, "sum of the detail maxima (above the C.5 convention of 100)"
    else:
        scale, source = DEFAULT_MAX_SCORE, "C.5 convention (100)"
    if total < 0 or total > scale + 1e-9:
        return ScoreReading(
            None, f"total_score {total} is outside [0, {scale:g}] ({source})", scale, source, details_max
        )
    return ScoreReading(float(total) / scale, None, scale, source, details_max)


def parse_score(raw: Any, declared_max: float | None = None) -> tuple[float | None, str | None]:
    """Normalised score in [0, 1] from a ``workplace_score.json`` object, or (None, problem)."""
    reading = read_score(raw, declared_max)
    return reading.score, reading.problem


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
    kind: ScoreProblem | None = None
    reading: ScoreReading | None = None

    @property
    def defect(self) -> bool:
        """A verifier failure (crash, timeout, malformed output) — a data defect, not an agent failure.
        A verifier that wrote a valid score file and then exited non-zero is scored, not a defect."""
        return self.score is None

    @property
    def exit_code(self) -> int | None:
        return self.outcome.exit_code

    def metrics(self) -> dict[str, Any]:
        """What a record keeps of the run besides the score (exit status, the scale it was read on)."""
        out: dict[str, Any] = {"exit_code": self.exit_code, "status": str(self.outcome.status)}
        if self.reading is not None and self.reading.score is not None:
            out |= {
                "max_total": self.reading.max_total,
                "max_source": self.reading.max_source,
                "details_max": self.reading.details_max,
                "partial_details": self.reading.partial,
            }
        return out


def builder_limits(wall_s: float | None = None) -> Limits:
    """Task code runs on the standard library only (C.6), enforced by the interpreter it gets."""
    return Limits(cpu_s=30, wall_s=wall_s or 60, memory_mb=1024, file_size_mb=64, stdlib_only=True)


def verifier_limits() -> Limits:
    return Limits(cpu_s=20, wall_s=30, memory_mb=1024, file_size_mb=16, stdlib_only=True)


def uncalled_entry(source: str) -> str | None:
    """The builder function (``build_env`` …) the script defines at module level but never calls there:
    another harness would call it; run as a script, the builder would build nothing."""
    try:
        tree = pyast.parse(source)
    except SyntaxError:
        return None
    defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    called: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
                continue
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
                called.add(child.func.id)
            visit(child)

    visit(tree)
    if called & set(defined):
        return None
    return next((name for name in ENTRY_NAMES if name in defined), None)


_SCRIPT_PRELUDE = r"""
import sys as _s
_s.argv[0] = NAME
_g = {"__name__": "__main__", "__file__": NAME}
exec(compile(SOURCE, NAME, "exec"), _g)
if ENTRY:
    _g[ENTRY]()
"""


def _as_script(source: str, name: str, entry: str | None = None) -> str:
    """``source`` run as ``name`` (tracebacks name the task's file, not a sandbox temp file); ``entry``
    is called afterwards when the script defines it without calling it."""
    return f"NAME = {name!r}\nSOURCE = {source!r}\nENTRY = {entry!r}\n{_SCRIPT_PRELUDE}"


def run_builder(
    task: WorkspaceTask, workspace: Path, *, policy: SandboxPolicy | None = None, wall_s: float | None = None
) -> Outcome:
    """Run ``env_builder.py`` with the (empty) workspace as its working directory; a builder that only
    defines ``build_env()`` gets it called (see :func:`uncalled_entry`)."""
    workspace.mkdir(parents=True, exist_ok=True)
    program = _as_script(task.builder, BUILDER_NAME, uncalled_entry(task.builder))
    return run(program, workspace, builder_limits(wall_s), policy=policy or SandboxPolicy())


def run_solution(
    task: WorkspaceTask, workspace: Path, *, policy: SandboxPolicy | None = None, wall_s: float | None = None
) -> Outcome:
    if task.solution is None:
        raise ConfigError(f"task {task.task_id} has no solution.py")
    program = _as_script(task.solution, SOLUTION_NAME, uncalled_entry(task.solution))
    return run(program, workspace, builder_limits(wall_s), policy=policy or SandboxPolicy())


_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)')


def crash_summary(stderr: str, name: str, mount: str, fallback: str = "") -> str:
    """``ExcType: message (name, line N)`` from the tail of a traceback: the last frame inside the task's
    own file or the workspace; paths are workspace-relative (nothing of the host or the sandbox)."""
    lines = [ln.rstrip() for ln in stderr.strip().splitlines() if ln.strip()]
    where = None
    for ln in lines:
        m = _FRAME.match(ln)
        if m and (m.group(1) == name or m.group(1).startswith(mount + "/")):
            where = (m.group(1).removeprefix(mount + "/"), m.group(2))
    exc = next((ln for ln in reversed(lines) if not ln.startswith((" ", "\t", "Traceback"))), "")
    exc = exc.replace(mount + "/", "").replace(mount, ".")[:240]
    if not exc:
        return fallback
    return f"{exc} ({where[0]}, line {where[1]})" if where else exc


def missing_module(outcome: Outcome) -> str | None:
    """The module an uncaught ImportError names (the sandbox's record, else the traceback's last line)."""
    if outcome.module:
        return outcome.module
    m = re.search(r"(?:ModuleNotFoundError|ImportError): No module named '([\w.]+)'", outcome.stderr or "")
    return m.group(1) if m else None


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


def _clear(path: Path) -> None:
    """Remove whatever sits at ``path`` (a stale score file, or a folder or link planted there)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def run_verifier(
    task: WorkspaceTask,
    workspace: Path,
    *,
    policy: SandboxPolicy | None = None,
    timeout: float | None = None,
    transcript: list[dict[str, Any]] | None = None,
) -> VerifierRun:
    """Run ``verify_workplace.py`` on ``workspace`` (a stale score file is removed first) and read its
    score against the declared maximum. The verifier gets the workspace path as argv[1] and runs with it
    as working directory; after a rollout, the episode's transcript (JSONL, one entry a line) is on its
    stdin for graders that judge what the agent said (empty otherwise). A valid score file counts even
    when the verifier then exits non-zero (the exit status stays in the outcome); a crash, timeout or
    limit before that, no file, a file over :data:`SCORE_FILE_CAP` or a malformed one is a defect."""
    score_path = workspace / SCORE_FILE
    _clear(score_path)
    policy = policy or SandboxPolicy()
    # where the verifier sees the workspace: the sandbox mount, or the host folder in unsafe mode
    mount = str(workspace.resolve()) if policy.unsafe else policy.workspace_mount
    outcome = run(
        _traced(task.verifier), workspace, verifier_limits(), timeout=timeout, policy=policy, args=[mount],
        stdin="".join(json.dumps(e) + "\n" for e in transcript).encode() if transcript else None,
    )  # fmt: skip
    outcome.stderr, paths = _split_trace(outcome.stderr)
    inspected = _relative(paths, mount)

    def failed(kind: ScoreProblem, problem: str) -> VerifierRun:
        return VerifierRun(outcome, None, None, problem, inspected, kind)

    has_file = score_path.is_file() and not score_path.is_symlink()
    if has_file and score_path.stat().st_size > SCORE_FILE_CAP:
        size = score_path.stat().st_size
        return failed(ScoreProblem.TOO_LARGE, f"{SCORE_FILE} is {size} bytes (read at most {SCORE_FILE_CAP})")
    if outcome.status not in (Status.OK, Status.ERROR) or (outcome.status is Status.ERROR and not has_file):
        return failed(ScoreProblem.FAILED, f"verifier {outcome.status}: {outcome.message}")
    if not has_file:
        return failed(ScoreProblem.NO_FILE, f"verifier wrote no {SCORE_FILE}")
    try:
        with score_path.open("rb") as fh:
            raw = json.loads(fh.read(SCORE_FILE_CAP + 1).decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        if outcome.status is Status.ERROR:
            return failed(ScoreProblem.FAILED, f"verifier {outcome.status}: {outcome.message}")
        return failed(ScoreProblem.NOT_JSON, f"{SCORE_FILE} is not JSON ({str(exc)[:120]})")
    reading = read_score(raw, task.declared_max)
    if reading.score is None:
        kind = ScoreProblem.FAILED if outcome.status is Status.ERROR else ScoreProblem.MALFORMED
        return VerifierRun(outcome, None, None, reading.problem, inspected, kind, reading)
    return VerifierRun(outcome, reading.score, raw, None, inspected, None, reading)


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


def folders(workspace: Path) -> set[str]:
    """Relative paths of every folder in the workspace (empty ones included: a builder's ``ops/``)."""
    return {
        p.relative_to(workspace).as_posix() for p in workspace.rglob("*") if p.is_dir() and not p.is_symlink()
    }


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
