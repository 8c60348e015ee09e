"""PinchBench tasks → claw workspace tasks (EnvCraft C.5 four-file protocol).

PinchBench (``pinchbench/skill``) keeps one Markdown file per task, ``tasks/task_*.md``: YAML front matter
(``id``, ``name``, ``category``, ``grading_type``, ``timeout_seconds``, ``workspace_files``, optional
``grading_weights``) and ``## Prompt``, ``## Expected Behavior``, ``## Grading Criteria``, ``## Automated
Checks`` (a fenced Python block defining ``grade(transcript, workspace_path) -> {criterion: 0..1}``) and
``## LLM Judge Rubric`` sections. ``workspace_files`` entries are ``{source, dest}`` (a file under the
skill's ``assets/``), ``{path, content}`` (inline text) or a plain root-relative path.

Each task becomes a :class:`~dataclaw.envcraft.tasks.claw.workspace.WorkspaceTask` record in ``tasks.jsonl``:

* ``env_builder.py`` writes the workspace files (their bytes embedded, so the task is self-contained);
* ``verify_workplace.py`` is the task's own grading code followed by a runner that calls ``grade`` on the
  workspace and writes ``workplace_score.json``: ``total_score`` = PinchBench's automated score (the mean
  of the numeric criteria, clipped to [0, 1]) × 100, one ``details`` entry per criterion;
* the prompt section is the prompt; the rest (expected behaviour, criteria, judge rubric, weights) stays
  in the task config under ``pinchbench`` for the LLM rubric and for people.

The grading code is never run here: the importer only parses it (a syntax error is a ``syntax_error``
reject); it runs in the sandbox through the verifier, like every claw verifier. What does not carry over:
the transcript in OpenClaw's own format: after a rollout the verifier reads the episode's transcript from
stdin (:func:`dataclaw.envcraft.rollout.harness.openclaw_transcript`: messages with text and toolCall
parts, tool results as ``toolResult``, each assistant turn's ``model.completed`` event and the closing
``trace.artifacts`` with every text the agent said). In an audit the untouched workspace is graded with the
transcript of an episode in which the agent did nothing (the request alone), so a grader that reads the
transcript (``pinchbench.reads_transcript``) runs over real entries there: one that gives credit for that
episode fails the untouched floor, one that crashes on a real entry is a verifier defect. A task without
``workspace_files`` declares an empty workspace (``empty_workspace``), which the audit accepts.
Tasks without automated checks (``grading_type: llm_judge``) are ``unsupported`` rejects.
"""

from __future__ import annotations

import ast
import base64
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import yaml

from dataclaw.core import pyast
from dataclaw.core.ids import stable_hash
from dataclaw.envcraft.importers.base import (
    IMPORTERS,
    ImportContext,
    Importer,
    ImportReason,
    ImportReject,
    Produces,
    SourceItem,
)

_FRONT = re.compile(r"^---\s*\n(.*?)\n---\s*\n(.*)$", re.DOTALL)
_SECTION = re.compile(r"^##\s+(.+)$")
_CODE = re.compile(r"```python\s*(.*?)\s*```", re.DOTALL)
_CRITERION = re.compile(r"^-\s+\[[ xX]\]\s+(.+)$")
_TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
MAX_TASK_BYTES = 4 << 20
"""Largest task file read."""
MAX_WORKSPACE_BYTES = 16 << 20
"""Largest total of workspace files embedded in one task's builder."""


def split_task(text: str) -> tuple[dict[str, Any], dict[str, str]]:
    """(front matter, ``{section title: body}``) of a PinchBench task file; ValueError when malformed."""
    m = _FRONT.match(text)
    if not m:
        raise ValueError("no YAML front matter (a '---' block at the top)")
    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError as exc:
        raise ValueError(f"front matter is not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(meta, dict):
        raise ValueError("front matter is not a mapping")
    sections: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    in_code = False
    for line in m.group(2).split("\n"):
        if line.lstrip().startswith("```"):
            in_code = not in_code
        header = None if in_code else _SECTION.match(line)
        if header:
            if current is not None:
                sections[current] = "\n".join(lines).strip()
            current, lines = header.group(1).strip(), []
        elif current is not None:
            lines.append(line)
    if current is not None:
        sections[current] = "\n".join(lines).strip()
    return meta, sections


def grading_code(sections: dict[str, str]) -> str | None:
    """The first fenced Python block of ``## Automated Checks`` (as PinchBench's grader extracts it)."""
    m = _CODE.search(sections.get("Automated Checks") or "")
    return m.group(1) if m else None


def _task_files(src: Path) -> tuple[Path, list[Path]]:
    """(skill root, task files): a skill checkout (``tasks/task_*.md``), a folder of task files, or one."""
    if src.is_file():
        return (src.parent.parent if src.parent.name == "tasks" else src.parent), [src]
    tasks_dir = src / "tasks" if (src / "tasks").is_dir() else src
    root = src if tasks_dir != src else (src.parent if (src.parent / "assets").is_dir() else src)
    files = sorted(p for p in tasks_dir.glob("*.md") if p.is_file() and p.name.lower() != "readme.md")
    return root, files


def _front_id(data: bytes) -> str | None:
    """The ``id`` of a task file's front matter, if it has a readable one."""
    try:
        meta, _ = split_task(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return str(meta["id"]) if meta.get("id") is not None else None


def _reads_transcript(tree: ast.Module) -> bool:
    """Whether ``grade`` uses its first parameter (the transcript)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "grade" and node.args.args:
            first = node.args.args[0].arg
            return any(isinstance(n, ast.Name) and n.id == first for n in ast.walk(node))
    return False


_RUNNER = """

# ---- dataclaw: run the PinchBench grader on the workspace (argv[1]) and write workplace_score.json ----
def _dataclaw_main():
    import json as _json
    import os as _os
    import sys as _sys

    _ws = _sys.argv[1] if len(_sys.argv) > 1 else _os.getcwd()
    _transcript = []  # after a rollout the episode's transcript is on stdin (JSONL); empty in audits
    if not _sys.stdin.isatty():
        for _line in _sys.stdin.read().splitlines():
            try:
                _transcript.append(_json.loads(_line))
            except ValueError:
                pass
    _scores = grade(_transcript, _ws)
    if not isinstance(_scores, dict):
        _scores = {}
    _items = []
    for _k, _v in _scores.items():
        if isinstance(_v, (int, float)) and not isinstance(_v, bool):
            _items.append((str(_k), min(1.0, max(0.0, float(_v)))))
    _each = 100.0 / len(_items) if _items else 0.0
    _details = [
        {"item": _k, "score": round(_v * _each, 6), "max_score": round(_each, 6), "passed": _v >= 1.0}
        for _k, _v in _items
    ]
    _total = min(100.0, sum(_d["score"] for _d in _details))
    with open(_os.path.join(_ws, "workplace_score.json"), "w", encoding="utf-8") as _fh:
        _json.dump({"total_score": _total, "max_score": 100, "details": _details}, _fh, indent=2)


if __name__ == "__main__":
    _dataclaw_main()
"""


def verifier_source(task_id: str, code: str) -> str:
    """``verify_workplace.py``: the task's grading code as written, then the runner (``from __future__``
    imports of the grader stay first, where Python needs them)."""
    future = [ln for ln in code.splitlines() if ln.startswith("from __future__ import")]
    body = "\n".join(ln for ln in code.splitlines() if not ln.startswith("from __future__ import"))
    head = f'"""Verifier of PinchBench task {task_id}: its grade() function, run on the workspace."""\n'
    return "\n".join([*future, head, body.rstrip(), _RUNNER.rstrip(), ""])


def builder_source(task_id: str, files: list[tuple[str, bytes]]) -> str:
    """``env_builder.py``: writes the task's workspace files (embedded) into its working directory."""
    lines = [
        f'"""Builds the workspace of PinchBench task {task_id}: its workspace_files."""',
        "import base64",
        "import os",
        "",
        "FILES = [",
    ]
    for dest, data in files:
        lines.append(f"    ({dest!r}, {base64.b64encode(data).decode()!r}),")
    lines += [
        "]",
        "",
        "",
        "def build_env():",
        "    for dest, data in FILES:",
        "        folder = os.path.dirname(dest)",
        "        if folder:",
        "            os.makedirs(folder, exist_ok=True)",
        '        with open(dest, "wb") as fh:',
        "            fh.write(base64.b64decode(data))",
        "",
        "",
        'if __name__ == "__main__":',
        "    build_env()",
        "",
    ]
    return "\n".join(lines)


def _safe_rel(path: str) -> str | None:
    """A relative path that stays inside its root, normalised; None when it would escape."""
    p = Path(str(path))
    if p.is_absolute() or ".." in p.parts or not p.parts:
        return None
    return p.as_posix()


@IMPORTERS.add
class PinchBenchImporter(Importer):
    """PinchBench task files (``tasks/task_*.md`` with a ``grade()``) → claw workspace tasks."""

    name: ClassVar[str] = "pinchbench"
    produces: ClassVar[frozenset[Produces]] = frozenset({Produces.TASKS})
    description: ClassVar[str] = (
        "PinchBench skill checkout or folder of task_*.md (YAML front matter + grade(transcript, "
        "workspace_path)) → claw workspace tasks; graders run in the sandbox"
    )

    def sniff(self, src: Path) -> str | None:
        if src.is_file() and src.suffix != ".md":
            return "not a folder of Markdown task files"
        if not src.exists():
            return "does not exist"
        _, files = _task_files(src)
        if not files:
            return "no Markdown task files (tasks/task_*.md)"
        for path in files[:20]:
            try:
                head = path.read_text(encoding="utf-8", errors="replace")[:MAX_TASK_BYTES]
                meta, sections = split_task(head)
            except (OSError, ValueError):
                continue
            if "id" in meta and "Prompt" in sections:
                return None
        return "no Markdown file with YAML front matter (id) and a '## Prompt' section"

    def items(self, src: Path, ctx: ImportContext) -> Iterator[SourceItem]:
        root, files = _task_files(src)
        seen: dict[str, str] = {}
        for path in files:
            rel = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
            if "_XX_" in path.stem:  # PinchBench's own template (its loader skips it too)
                continue
            try:
                data = path.read_bytes()[: MAX_TASK_BYTES + 1]
            except OSError as exc:
                yield SourceItem(rel, "unreadable", {"error": str(exc)})
                continue
            payload: dict[str, Any] = {"root": str(root), "file": str(path)}
            task_id = _front_id(data) or path.stem
            if task_id in seen:  # two files, one task id: the second is a duplicate, not a silent overwrite
                payload["duplicate_of"] = seen[task_id]
            seen.setdefault(task_id, rel)
            yield SourceItem(rel, stable_hash(data, 16), payload)

    def convert(self, item: SourceItem, ctx: ImportContext) -> list[dict[str, Any]] | ImportReject:
        from dataclaw.envcraft.tasks.claw.workspace import WorkspaceTask

        payload = item.payload or {}
        if "error" in payload:
            return ImportReject(ImportReason.UNREADABLE, f"cannot read the file ({payload['error']})")
        if "duplicate_of" in payload:
            return ImportReject(ImportReason.DUPLICATE, f"same task id as {payload['duplicate_of']}")
        path, root = Path(payload["file"]), Path(payload["root"])
        raw = path.read_bytes()
        if len(raw) > MAX_TASK_BYTES:
            return ImportReject(ImportReason.UNREADABLE, f"larger than {MAX_TASK_BYTES >> 20} MB")
        try:
            meta, sections = split_task(raw.decode("utf-8"))
        except UnicodeDecodeError:
            return ImportReject(ImportReason.UNREADABLE, "not UTF-8 text")
        except ValueError as exc:
            return ImportReject(ImportReason.MALFORMED, str(exc))
        task_id = str(meta.get("id") or path.stem)
        if not _TASK_ID.match(task_id):
            return ImportReject(ImportReason.MALFORMED, f"task id {task_id!r} is not a plain name")
        prompt = (sections.get("Prompt") or "").strip()
        if not prompt:
            return ImportReject(ImportReason.MALFORMED, "no '## Prompt' section (the user's request)")
        code = grading_code(sections)
        if code is None:
            kind = meta.get("grading_type", "automated")
            return ImportReject(
                ImportReason.UNSUPPORTED,
                f"grading_type {kind!r} without a '## Automated Checks' python block: only an LLM judge "
                "grades it, and no grade() function can be run as a verifier",
            )
        try:
            tree = pyast.parse(code, filename=f"{task_id}/grade.py")
        except SyntaxError as exc:
            return ImportReject(
                ImportReason.SYNTAX_ERROR,
                f"grade() code does not compile: {exc.msg} (line {exc.lineno} of the Automated Checks block)",
            )
        if not any(isinstance(n, ast.FunctionDef) and n.name == "grade" for n in tree.body):
            why = "the Automated Checks block defines no grade() function"
            return ImportReject(ImportReason.MALFORMED, why)
        files = self._workspace_files(meta.get("workspace_files") or [], root, path.parent, task_id)
        if isinstance(files, ImportReject):
            return files
        criteria = [
            m.group(1).strip()
            for line in (sections.get("Grading Criteria") or "").splitlines()
            if (m := _CRITERION.match(line.strip()))
        ]
        config: dict[str, Any] = {
            "id": task_id,
            "prompt": f"tasks/prompts/{task_id}.md",
            "asset": task_id,
            "name": meta.get("name") or task_id,
            "category": meta.get("category"),
            "timeout_seconds": meta.get("timeout_seconds", 120),
            # no workspace_files: the agent starts in an empty folder (PinchBench's task_sanity answers in
            # chat alone), which the audit takes as declared, not as a builder that failed to write
            "empty_workspace": not files,
            "source": {"format": "pinchbench", "file": item.key},
            "pinchbench": {
                "grading_type": meta.get("grading_type", "automated"),
                "grading_weights": meta.get("grading_weights"),
                "expected_behavior": sections.get("Expected Behavior", ""),
                "grading_criteria": criteria,
                "llm_judge_rubric": sections.get("LLM Judge Rubric"),
                "reads_transcript": _reads_transcript(tree),
                "scored_here": "automated checks only (mean of grade() criteria × 100)",
            },
        }
        task = WorkspaceTask(
            task_id=task_id,
            config=config,
            prompt=prompt + "\n",
            builder=builder_source(task_id, files),
            verifier=verifier_source(task_id, code),
            source=str(path),
            inferred={"layout": "imported from a PinchBench task file"},
        )
        return [task.to_record()]

    @staticmethod
    def _workspace_files(
        specs: Any, root: Path, task_dir: Path, task_id: str
    ) -> list[tuple[str, bytes]] | ImportReject:
        """(workspace path, bytes) of every ``workspace_files`` entry, read from the skill checkout."""
        if not isinstance(specs, list):
            return ImportReject(ImportReason.MALFORMED, "workspace_files is not a list")
        out: list[tuple[str, bytes]] = []
        total = 0
        for i, spec in enumerate(specs):
            if isinstance(spec, str):
                spec = {"source": spec, "dest": spec, "_plain": True}
            if not isinstance(spec, dict):
                why = f"workspace_files[{i}] is not a mapping or a path"
                return ImportReject(ImportReason.MALFORMED, why)
            if "content" in spec:
                dest = _safe_rel(spec.get("path") or spec.get("dest") or "")
                if dest is None:
                    return ImportReject(ImportReason.MALFORMED, f"workspace_files[{i}] has no safe 'path'")
                data = str(spec["content"]).encode("utf-8")
            else:
                source = _safe_rel(spec.get("source") or spec.get("src") or "")
                dest = _safe_rel(spec.get("dest") or spec.get("path") or source or "")
                if source is None or dest is None:
                    return ImportReject(
                        ImportReason.MALFORMED, f"workspace_files[{i}] needs a relative 'source' and 'dest'"
                    )
                candidates = [root / source] if spec.get("_plain") else []
                candidates += [root / "assets" / source, task_dir / task_id / source, task_dir / source]
                found = next((c for c in candidates if c.is_file()), None)
                if found is None:
                    return ImportReject(
                        ImportReason.MALFORMED,
                        f"workspace file {source!r} is missing from the source (looked in assets/ and the "
                        "task folder)",
                    )
                data = found.read_bytes()
            total += len(data)
            if total > MAX_WORKSPACE_BYTES:
                return ImportReject(
                    ImportReason.UNSUPPORTED, f"workspace files exceed {MAX_WORKSPACE_BYTES >> 20} MB"
                )
            out.append((dest, data))
        return out
