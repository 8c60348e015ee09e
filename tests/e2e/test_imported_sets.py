"""Imported task sets through the rest of the CLI, as a user runs it (issue 17 item 5): a τ²-bench checkout
(the real mock domain data and its real tools.py) and a PinchBench skill are imported, then audited,
exported to a trainer (tool tasks) and rendered by the viewer. Rollouts of imported sets are covered in
tests/envcraft/importers/ (gold-playing agents); this file covers what those do not."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dataclaw.sandbox import sandbox_available
from envcraft.importers import shapes

BIN = Path(sys.executable).parent
TAU2 = Path(__file__).resolve().parents[3] / "shared" / "data" / "tau2"
TAU2_SRC = TAU2.parent / "tau2-bench" / "src"  # the published src/tau2 (a2c0247), run as it is
pytestmark = [
    pytest.mark.skipif(not sandbox_available(), reason="imported code runs in the sandbox"),
    pytest.mark.skipif(not (TAU2_SRC / "tau2").is_dir(), reason="needs ../shared/data/tau2 and tau2-bench"),
]


def dataclaw(*args: str | Path, timeout: float = 300) -> subprocess.CompletedProcess:
    exe = shutil.which("dataclaw", path=str(BIN)) or shutil.which("dataclaw")
    assert exe, "console script dataclaw is not installed"
    res = subprocess.run([exe, *map(str, args)], capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, f"dataclaw {' '.join(map(str, args))}:\n{res.stdout}\n{res.stderr}"
    return res


def _records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_imported_tau2_and_pinchbench_sets_audit_export_and_view(tmp_path: Path) -> None:
    ck = tmp_path / "tau2-bench"
    shutil.copytree(TAU2 / "mock", ck / "data" / "tau2" / "domains" / "mock")
    shutil.copytree(TAU2_SRC, ck / "src", ignore=shutil.ignore_patterns("__pycache__"))
    skill = shapes.pinchbench_skill(tmp_path / "skill", broken=False)
    tau2, pb = tmp_path / "tau2", tmp_path / "pb"
    assert "tasks: 6 records" in dataclaw("tasks", "import", "tau2", ck, "-o", tau2).stdout
    assert "tasks: 2 records" in dataclaw("tasks", "import", "pinchbench", skill, "-o", pb).stdout

    for run in (tau2, pb):  # tool tasks by gold replay, claw tasks by building and verifying in the sandbox
        dataclaw("tasks", "audit", run, "-o", f"{run}-audit", "--strict")
        assert all(r["passed"] for r in _records(Path(f"{run}-audit") / "code_audit.jsonl"))
    # the publisher's verifiers are soundness-checked too: what a policy games them with is a warning
    # naming the set (they are not ours to remake), never a silent pass
    rows = _records(Path(f"{tau2}-audit") / "code_audit.jsonl")
    assert all("soundness" in r for r in rows)
    warned = [w for r in rows for w in r.get("warnings", [])]
    assert warned and all(w["publisher"] == "tau2" and w["reason"].startswith("gamed_by_") for w in warned)

    # the export copies the imported package (the publisher's code: no Table 15 audit) and says so
    out = tmp_path / "trl"
    dataclaw("tasks", "export", tau2, "--to", "trl", "-o", out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert json.dumps(manifest).count('"imported": "tau2"') == 1, manifest
    assert (out / "envs" / "tau2_mock" / "IMPORTED.json").is_file()
    assert len(_records(out / "dataset.jsonl")) == 6

    site = tmp_path / "site"
    res = dataclaw(
        "view", tau2, f"{tau2}-audit", pb, f"{pb}-audit", "--export", site, "--cache-dir", tmp_path / "c"
    )
    assert "wrote" in res.stdout
    pages = "".join(p.read_text() for p in site.rglob("*.html"))
    assert "mock/create_task_1" in pages and "task_csv_total" in pages
