"""Claw tasks written the way other projects write them (ClawForge's release is the model: YAML keyed by
``name``/``task_id``/``prompt_path``, CJK hand-off prompts, builders that ``makedirs("ops")`` and call
``build_env()`` under ``__main__``, verifiers that ``os.path.join(workspace, "ops", …)``, append detail
items, exit early when the output is missing, and sometimes ``sys.exit(1)`` below full marks).

The texts are ours; only the shapes follow the public release. ``review_task`` is a *sound* task (its
solution scores 1.0 and every check passes); the ``with_*`` helpers derive the broken and the awkward
variants the audit must tell apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

REVIEW_PROMPT = """嘿，帮个忙！下周组会要一份"高效视觉"方向的文献综述。论文库在 `papers.json` 里（数据库导出，
附件清单在 `attachments.json`），里面混了方向写错的冒牌条目。请只挑方向恰好是 `efficient_vision` 的论文，
把综述要点写进 `ops/review_summary.json`，字段要有 `review`（综述正文）、`roadmap`（路线图文件的路径）
和 `papers_used`（用到的论文 ID 列表，按 ID 排序）。路线图用 Mermaid 画，请保存到ops/roadmap.mmd里，
注意 .mmd 后缀。谢谢！
"""

REVIEW_BUILDER = """import os
import json


def build_env():
    os.makedirs("db_dumps", exist_ok=True)
    os.makedirs("ops", exist_ok=True)  # the agent writes here
    papers = [
        {"paper_id": "P-101", "title": "Tiny Nets", "direction": "efficient_vision", "year": 2019},
        {"paper_id": "P-102", "title": "Chain Prompts", "direction": "tool_reasoning", "year": 2022},
        {"paper_id": "P-103", "title": "Fast Detectors", "direction": "efficient_vision", "year": 2020},
        {"paper_id": "P-104", "title": "Hyphen Impostor", "direction": "efficient-vision", "year": 2021},
    ]
    with open("db_dumps/papers.json", "w", encoding="utf-8") as f:
        json.dump({"papers": papers}, f, ensure_ascii=False, indent=2)
    with open("db_dumps/attachments.json", "w", encoding="utf-8") as f:
        json.dump({"attachments": []}, f)


if __name__ == "__main__":
    build_env()
"""

REVIEW_VERIFIER = """import json
import os
import sys

workspace = sys.argv[1] if len(sys.argv) > 1 else "."
details = []


def finish():
    total = sum(d["score"] for d in details)
    with open(os.path.join(workspace, "workplace_score.json"), "w", encoding="utf-8") as f:
        json.dump({"total_score": min(total, 100), "details": details}, f, ensure_ascii=False, indent=2)
    EXIT_AFTER_SCORE
    sys.exit(0)


ops_dir = os.path.join(workspace, "ops")
summary_path = os.path.join(workspace, "ops", "review_summary.json")
if not os.path.isdir(ops_dir) or not os.path.isfile(summary_path):
    details.append({"item": "ops/review_summary.json 存在", "score": 0, "max_score": 20, "passed": False,
                    "reason": "文件不存在"})
    finish()
details.append({"item": "ops/review_summary.json 存在", "score": 20, "max_score": 20, "passed": True,
                "reason": "ok"})
try:
    with open(summary_path, encoding="utf-8") as f:
        data = json.load(f)
except Exception as e:
    details.append({"item": "JSON 合法", "score": 0, "max_score": 10, "passed": False, "reason": str(e)})
    finish()
details.append({"item": "JSON 合法", "score": 10, "max_score": 10, "passed": True, "reason": "ok"})
required = ["review", "roadmap", "papers_used"]
ok = isinstance(data, dict) and all(k in data for k in required)
details.append({"item": "字段齐全", "score": 10 if ok else 0, "max_score": 10, "passed": ok, "reason": ""})
expected = ["P-101", "P-103"]
got = data.get("papers_used") if isinstance(data, dict) else None
ok = got == expected
details.append({"item": "论文筛选正确", "score": 40 if ok else 0, "max_score": 40, "passed": ok,
                "reason": f"got {got}"})
roadmap = os.path.join(workspace, "ops", "roadmap.mmd")
ok = os.path.isfile(roadmap) and "graph" in open(roadmap, encoding="utf-8").read()
details.append({"item": "Mermaid 路线图", "score": 20 if ok else 0, "max_score": 20, "passed": ok,
                "reason": ""})
finish()
"""

REVIEW_SOLUTION = """import json
with open("db_dumps/papers.json", encoding="utf-8") as f:
    papers = json.load(f)["papers"]
ids = sorted(p["paper_id"] for p in papers if p["direction"] == "efficient_vision")
with open("ops/roadmap.mmd", "w", encoding="utf-8") as f:
    f.write("graph LR\\n" + "\\n".join(f"  {a} --> {b}" for a, b in zip(ids, ids[1:])) + "\\n")
with open("ops/review_summary.json", "w", encoding="utf-8") as f:
    json.dump({"review": "two efficient vision papers", "roadmap": "ops/roadmap.mmd", "papers_used": ids}, f)
"""


@dataclass
class Shape:
    """One task in the four-file layout, as files to write (``yaml`` None: the task has no YAML)."""

    task_id: str
    yaml: str | None
    prompt: str
    builder: str
    verifier: str
    solution: str | None = None
    prompt_rel: str | None = None
    """Where the prompt file goes (default ``tasks/prompts/<id>.md``)."""
    extra: dict[str, bytes] = field(default_factory=dict)

    def write(self, root: Path) -> Path:
        files: dict[str, bytes] = {
            self.prompt_rel or f"tasks/prompts/{self.task_id}.md": self.prompt.encode("utf-8"),
            f"tasks/{self.task_id}/env_builder.py": self.builder.encode("utf-8"),
            f"scripts/{self.task_id}/verify_workplace.py": self.verifier.encode("utf-8"),
            **self.extra,
        }
        if self.yaml is not None:
            files[f"tasks/{self.task_id}.yaml"] = self.yaml.encode("utf-8")
        if self.solution is not None:
            files[f"tasks/{self.task_id}/solution.py"] = self.solution.encode("utf-8")
        for rel, data in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return root


def clawforge_yaml(task_id: str, id_key: str = "name", prompt_key: str = "prompt_path") -> str:
    """A task YAML in one of the spellings the ClawForge release uses."""
    head = f"{id_key}: {task_id}\n" if id_key else ""
    prompt = f"{prompt_key}: tasks/prompts/{task_id}.md\n" if prompt_key else ""
    return f"{head}description: efficient vision review\n{prompt}asset: {task_id}\nruntime:\n  timeout: 300\n"


def review_task(task_id: str = "wp_review_env__000", *, yaml: str | None = "") -> Shape:
    """The sound task: a CJK hand-off naming its input by a partial path, its outputs (one ``.mmd``, glued
    to the CJK text) and the output field names; the verifier exits early (partial details) when the
    output is missing and checks the ``ops/`` folder the builder made."""
    return Shape(
        task_id=task_id,
        yaml=clawforge_yaml(task_id) if yaml == "" else yaml,
        prompt=REVIEW_PROMPT,
        builder=REVIEW_BUILDER,
        verifier=REVIEW_VERIFIER.replace("EXIT_AFTER_SCORE", "pass"),
        solution=REVIEW_SOLUTION,
    )


def with_exit_status(shape: Shape, code: int = 1) -> Shape:
    """The verifier exits with ``code`` after writing a valid score file (below full marks)."""
    exit_line = f"sys.exit(0 if total >= 100 else {code})"
    return replace(shape, verifier=REVIEW_VERIFIER.replace("EXIT_AFTER_SCORE", exit_line))


def with_credit_for_the_folder(shape: Shape) -> Shape:
    """The ClawForge pattern that pays for nothing: 10 points for the ``ops/`` folder the builder made,
    then an early exit (the written details sum to 20, so a details-sum scale would give 0.5)."""
    verifier = shape.verifier.replace(
        '"score": 0, "max_score": 20, "passed": False', '"score": 0, "max_score": 10, "passed": False'
    )
    verifier = verifier.replace(
        '"score": 20, "max_score": 20, "passed": True', '"score": 10, "max_score": 10, "passed": True'
    )
    verifier = verifier.replace(
        'ops_dir = os.path.join(workspace, "ops")\n',
        'ops_dir = os.path.join(workspace, "ops")\n'
        "ok = os.path.isdir(ops_dir)\n"
        'details.append({"item": "ops 目录存在", "score": 10 if ok else 0, "max_score": 10, "passed": ok,\n'
        '                "reason": ""})\n',
    )
    return replace(shape, verifier=verifier, task_id=shape.task_id)
