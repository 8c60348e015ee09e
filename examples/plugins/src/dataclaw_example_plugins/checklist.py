"""An importer: checklist files → claw workspace tasks (``dataclaw tasks import checklist FILE -o RUN``).

A checklist (``*.checklist.yaml``) is a small task set a team writes by hand: per task the request, the
files the workspace starts with, and file checks that decide whether the agent did it::

    tasks:
      - id: weekly_report
        prompt: Rename notes.txt to report.md and put the title "# Weekly report" on its first line.
        files: {notes.txt: "sales up 4%\\n"}
        checks:
          - {file: report.md, startswith: "# Weekly report"}
          - {file: notes.txt, absent: true}
        solution: |          # optional: a reference solution the audit runs to prove the task solvable
          import os
          ...

Each task becomes a four-file claw task (EnvCraft C.5): ``env_builder.py`` writes the files,
``verify_workplace.py`` runs the checks and writes ``workplace_score.json`` (100 × the share of checks
passed). Both are generated here and run only in the sandbox, like every claw script; each check is
written out as a literal test on a literal path, so ``dataclaw tasks audit`` can match the paths the
prompt asks for with the ones the verifier reads. A task without checks cannot be scored: it is a
``malformed`` reject, and the rest of the file is imported.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import yaml

from dataclaw.core.ids import stable_hash
from dataclaw.envcraft.importers.base import (
    ImportContext,
    Importer,
    ImportReason,
    ImportReject,
    Produces,
    SourceItem,
)

SUFFIX = ".checklist.yaml"

CHECKS = {
    "exists": "os.path.isfile({file!r})",
    "absent": "not os.path.exists({file!r})",
    "contains": "{value!r} in (text({file!r}) or '')",
    "lacks": "text({file!r}) is not None and {value!r} not in text({file!r})",
    "startswith": "(text({file!r}) or '').startswith({value!r})",
}
"""Each kind of check as the Python expression the verifier evaluates (``file``: a path, ``value``: text)."""

BUILDER = '''"""Builds the workspace of checklist task {task_id}: its files."""
import json
import os

FILES = json.loads({files!r})


def build_env():
    for path, text in FILES.items():
        if os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    build_env()
'''

VERIFIER = '''"""Verifier of checklist task {task_id}: each check passed is an equal share of 100."""
import json
import os
import sys


def text(path):
    """The file's text, or None when there is no such file."""
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as fh:
        return fh.read()


CHECKS = [
{checks}
]


def main():
    os.chdir(sys.argv[1] if len(sys.argv) > 1 else os.getcwd())
    each = 100.0 / len(CHECKS)
    details = []
    for name, check in CHECKS:
        ok = bool(check())
        details.append({{"item": name, "score": each if ok else 0.0, "max_score": each, "passed": ok}})
    total = sum(d["score"] for d in details)
    with open("workplace_score.json", "w", encoding="utf-8") as fh:
        json.dump({{"total_score": total, "max_score": 100, "details": details}}, fh)


if __name__ == "__main__":
    main()
'''


def check_code(check: Any) -> str:
    """One entry of the verifier's ``CHECKS``: ``("name", lambda: test)``; ValueError when malformed."""
    kinds = [k for k in check if k != "file"] if isinstance(check, dict) else []
    if "file" not in (check or {}) or len(kinds) != 1 or kinds[0] not in CHECKS:
        raise ValueError(f"check {check!r} needs 'file' and one of {', '.join(CHECKS)}")
    kind, path, value = kinds[0], str(check["file"]), str(check[kinds[0]])
    name = f"{path} {kind}" if kind in ("exists", "absent") else f"{path} {kind} {value!r}"
    return f"    ({name!r}, lambda: {CHECKS[kind].format(file=path, value=value)}),"


class ChecklistImporter(Importer):
    """Registered by the entry point ``checklist = dataclaw_example_plugins.checklist:ChecklistImporter``
    in the ``dataclaw.importers`` group."""

    name: ClassVar[str] = "checklist"
    produces: ClassVar[frozenset[Produces]] = frozenset({Produces.TASKS})
    description: ClassVar[str] = "checklist files (*.checklist.yaml: prompt, files, file checks) → claw tasks"

    def sniff(self, src: Path) -> str | None:
        return None if self._files(src) else f"no *{SUFFIX} file"

    def items(self, src: Path, ctx: ImportContext) -> Iterator[SourceItem]:
        for path in self._files(src):
            tasks = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("tasks") or []
            for n, task in enumerate(tasks):
                key = f"{path.name}#{task.get('id', n) if isinstance(task, dict) else n}"
                yield SourceItem(key, stable_hash(json.dumps(task, sort_keys=True), 16), task)

    def convert(self, item: SourceItem, ctx: ImportContext) -> list[dict[str, Any]] | ImportReject:
        from dataclaw.envcraft.tasks.claw.workspace import WorkspaceTask

        task = item.payload
        if not isinstance(task, dict) or not task.get("id") or not task.get("prompt"):
            return ImportReject(ImportReason.MALFORMED, "a task needs an id and a prompt")
        if not task.get("checks"):
            return ImportReject(ImportReason.MALFORMED, "no checks: nothing could score the workspace")
        try:
            checks = "\n".join(check_code(c) for c in task["checks"])
        except ValueError as exc:
            return ImportReject(ImportReason.MALFORMED, str(exc))
        task_id = str(task["id"])
        files = json.dumps({str(k): str(v) for k, v in (task.get("files") or {}).items()})
        config = {"id": task_id, "prompt": f"tasks/prompts/{task_id}.md", "asset": task_id}
        record = WorkspaceTask(
            task_id=task_id,
            config={**config, "source": {"format": self.name, "item": item.key}},
            prompt=str(task["prompt"]).strip() + "\n",
            builder=BUILDER.format(task_id=task_id, files=files),
            verifier=VERIFIER.format(task_id=task_id, checks=checks),
            solution=task.get("solution"),
            inferred={"layout": "imported from a checklist file"},
        )
        return [record.to_record()]

    @staticmethod
    def _files(src: Path) -> list[Path]:
        if src.is_file():
            return [src] if src.name.endswith(SUFFIX) else []
        return sorted(src.glob(f"*{SUFFIX}")) if src.is_dir() else []
