"""``dataclaw tasks audit|rollout|calibrate`` at the scale of a real task set, as a user runs them (console
script in a subprocess): parallel audits that resume per task, a summary instead of a wall of rows, every
report in ``code_audit.jsonl`` whatever the source mixes, and unloadable tasks reported, never dropped."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dataclaw.core.store import is_current
from envcraft.quality.quality_helpers import guarded_tool_task
from envcraft.rollout.rollout_helpers import example_claw_task

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("require_sandbox")]

BUILDER = """import csv, os
rows = [["item", "qty"], *[[f"sku-{i:02d}", str(i * {k} % 7 + 1)] for i in range(12)]]
os.makedirs("data", exist_ok=True)
with open(os.path.join("data", "stock.csv"), "w", newline="", encoding="utf-8") as fh:
    csv.writer(fh).writerows(rows)
"""
VERIFIER = """import csv, json, os, sys
root = sys.argv[1] if len(sys.argv) > 1 else "."
with open(os.path.join(root, "data", "stock.csv"), encoding="utf-8") as fh:
    want = sum(int(r["qty"]) for r in csv.DictReader(fh))
path = os.path.join(root, "out", "stock_total.json")
got = None
if os.path.isfile(path):
    with open(path, encoding="utf-8") as fh:
        got = json.load(fh)
ok = isinstance(got, dict) and got.get("units") == want
details = [{"item": "units", "score": 100 if ok else 0, "max_score": 100, "passed": ok}]
with open(os.path.join(root, "workplace_score.json"), "w", encoding="utf-8") as fh:
    json.dump({"total_score": 100 if ok else 0, "details": details}, fh)
"""
PROMPT = """Hi! The shop's stock count is in `data/stock.csv` (one row per item, `qty` is units on the shelf).
How many units do we have in total? Please write `out/stock_total.json` as an object with one field,
`units`, holding the number. Thanks, Kim
"""


@pytest.fixture
def require_sandbox() -> None:
    from dataclaw.sandbox import sandbox_available

    avail = sandbox_available()
    if not avail:
        pytest.skip(avail.reason)


def dataclaw(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    exe = shutil.which("dataclaw", path=str(Path(sys.executable).parent))
    assert exe
    env = {"COLUMNS": "200", "PATH": "/usr/bin:/bin"}
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout, env=env)


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def write_task(root: Path, tid: str, k: int = 3, builder: str | None = None) -> None:
    files = {
        f"tasks/{tid}.yaml": f"id: {tid}\nprompt: tasks/prompts/{tid}.md\nasset: {tid}\n",
        f"tasks/prompts/{tid}.md": PROMPT,
        f"tasks/{tid}/env_builder.py": builder or BUILDER.replace("{k}", str(k)),
        f"scripts/{tid}/verify_workplace.py": VERIFIER,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


@pytest.fixture
def task_set(tmp_path: Path) -> Path:
    """Six sound tasks, one whose builder crashes, one whose verifier pays for doing nothing, one folder
    entry that is not a task (a YAML file alone)."""
    root = tmp_path / "set"
    for i in range(6):
        write_task(root, f"stock_{i}", k=i + 2)
    write_task(root, "crashing_builder", builder="raise RuntimeError('no data source configured')\n")
    write_task(root, "free_credit")
    free = root / "scripts" / "free_credit" / "verify_workplace.py"
    free.write_text(VERIFIER.replace("100 if ok else 0", "100"), encoding="utf-8")
    (root / "tasks" / "lonely.yaml").write_text("id: lonely\nprompt: tasks/prompts/lonely.md\nasset: x\n")
    return root


def test_parallel_audit_prints_a_summary_records_every_task_and_resumes(task_set: Path, tmp_path: Path):
    run = tmp_path / "run"
    res = dataclaw("tasks", "audit", str(task_set), "-o", str(run), "--workers", "2")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "code audit of 9 tasks" in out and "pass rate 6/9" in out and "slowest:" in out
    for reason in ("builder_crash", "untouched_above_floor"):
        assert reason in out
    assert "stock_3 " not in out.split("slowest:")[0]  # no per-task rows without --verbose
    assert "Table 2" not in out  # the paper's synthesis numbers say nothing about this audit
    reports = {r["id"]: r for r in _lines(run / "code_audit.jsonl")}
    assert set(reports) == {*(f"stock_{i}" for i in range(6)), "crashing_builder", "free_credit"}
    assert all(reports[f"stock_{i}"]["passed"] for i in range(6))
    assert all(isinstance(r["duration_s"], float) for r in reports.values())
    rejects = {r["record_id"] for r in _lines(run / "rejects.jsonl")}
    assert {"crashing_builder", "free_credit", "lonely"} <= rejects

    # a rerun into the same run directory skips finished tasks ...
    again = dataclaw("tasks", "audit", str(task_set), "-o", str(run), "--workers", "2", "--verbose")
    assert again.returncode == 0, again.stderr
    assert "8 resumed" in again.stdout and "0 audited" in again.stdout
    assert "stock_0" in again.stdout and "failed checks" in again.stdout  # --verbose: the per-task table
    assert len(_lines(run / "code_audit.jsonl")) == 8
    # ... but a task edited on disk is audited again: its stored verdict belonged to the old files
    write_task(task_set, "stock_0", builder="raise SystemExit(3)\n")
    third = dataclaw("tasks", "audit", str(task_set), "-o", str(run), "--workers", "2")
    assert third.returncode == 0, third.stderr
    current = [r for r in _lines(run / "code_audit.jsonl") if is_current(run / "code_audit.jsonl")(r)]
    assert len(current) == 8
    assert not {r["id"]: r for r in current}["stock_0"]["passed"]
    assert "stock_0" in {r["record_id"] for r in _lines(run / "rejects.jsonl")}
    manifest = json.loads((run / "manifest.json").read_text())["audit"]
    assert manifest["workers"] == 2 and manifest["summary"]["verdicts"]["pass"] == 5  # the third run's


def test_serial_and_parallel_audits_agree(task_set: Path, tmp_path: Path):
    verdicts = {}
    for workers in ("1", "2"):
        run = tmp_path / f"run{workers}"
        res = dataclaw("tasks", "audit", str(task_set), "-o", str(run), "--workers", workers)
        assert res.returncode == 0, res.stderr
        verdicts[workers] = {r["id"]: (r["passed"], r["defect"]) for r in _lines(run / "code_audit.jsonl")}
    assert verdicts["1"] == verdicts["2"]


def test_a_mixed_tasks_jsonl_gets_one_report_per_task(tmp_path: Path):
    claw = example_claw_task("smart_home_energy_cost").to_record()
    tool = guarded_tool_task()
    src = tmp_path / "tasks.jsonl"
    src.write_text(json.dumps(tool) + "\n" + json.dumps(claw) + "\n")
    run = tmp_path / "run"
    res = dataclaw("tasks", "audit", str(src), "-o", str(run))
    assert res.returncode == 0, res.stderr
    reports = {r["id"]: r for r in _lines(run / "code_audit.jsonl")}
    assert set(reports) == {tool["id"], claw["id"]}
    assert reports[tool["id"]]["kind"] == "tool" and reports[tool["id"]]["passed"]
    again = dataclaw("tasks", "audit", str(src), "-o", str(run))
    assert "2 resumed" in again.stdout and len(_lines(run / "code_audit.jsonl")) == 2


def test_rollout_and_calibrate_report_unloadable_tasks_and_fail_when_none_loads(tmp_path: Path):
    root = tmp_path / "set"
    (root / "tasks" / "prompts").mkdir(parents=True)
    (root / "tasks" / "only_yaml.yaml").write_text("id: only_yaml\nprompt: tasks/prompts/only_yaml.md\n")
    (root / "tasks" / "broken.yaml").write_text("id: [unclosed\n")
    model = "http://127.0.0.1:9/v1::never-called"  # nothing loads, so no model is asked
    for cmd in (("rollout",), ("calibrate", "-k", "2")):
        run = tmp_path / f"run-{cmd[0]}"
        res = dataclaw("tasks", *cmd, str(root), "-o", str(run), "--model", model)
        assert res.returncode == 1, res.stdout + res.stderr
        assert "no task could be loaded" in res.stderr and "Traceback" not in res.stderr
        rejected = {r["record_id"]: r for r in _lines(run / "rejects.jsonl")}
        assert set(rejected) >= {"only_yaml", "broken"}
        assert all(r["message"] for r in rejected.values())
        assert "unloadable: broken" in res.stdout


def _sandboxed_descendants(pid: int) -> int:
    """Sandboxed interpreters (``-S``, running a marshalled builder) below ``pid``: this command's own,
    not another test's or program's on the same machine."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue

    def below(p: int) -> bool:
        while p > 1:
            p = parents.get(p, 0)
            if p == pid:
                return True
        return False

    count = 0
    for p in parents:
        try:
            cmdline = (Path("/proc") / str(p) / "cmdline").read_bytes()
        except OSError:
            continue
        count += b"\0-S\0" in cmdline and b"marshal" in cmdline and below(p)
    return count


def test_ctrl_c_ends_the_audits_in_flight_and_stores_none_of_them(tmp_path: Path):
    import signal
    import time

    root = tmp_path / "set"
    for i in range(2):
        write_task(root, f"hangs_{i}", builder="import time\nwhile True:\n    time.sleep(0.1)\n")
    run = tmp_path / "run"
    exe = shutil.which("dataclaw", path=str(Path(sys.executable).parent))
    assert exe
    cmd = [exe, "tasks", "audit", str(root), "-o", str(run), "--workers", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until its sandboxed interpreters run (the builders' limit is 60 s)
        if _sandboxed_descendants(proc.pid) >= 2:
            break
        time.sleep(0.2)
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=45)  # not the 60 s the builders would still have
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err
    stored = _lines(run / "code_audit.jsonl") if (run / "code_audit.jsonl").exists() else []
    assert stored == []  # half-done audits are not results


def test_audit_of_an_empty_task_folder_is_a_clear_error(tmp_path: Path):
    (tmp_path / "tasks").mkdir()
    res = dataclaw("tasks", "audit", str(tmp_path), "-o", str(tmp_path / "run"))
    assert res.returncode == 1 and "no tasks found" in res.stderr and "Traceback" not in res.stderr


def test_tasks_audit_takes_the_soundness_settings(tmp_path: Path):
    src = tmp_path / "tasks.jsonl"
    src.write_text(json.dumps(guarded_tool_task()) + "\n")
    done = dataclaw("tasks", "audit", str(src), "-o", str(tmp_path / "a"), "--strict")
    assert done.returncode == 0, done.stdout + done.stderr
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())["audit"]
    assert manifest["soundness"]["collateral_margin"] == 0.25
    # a guard takes half the score: a margin above that is one the task cannot meet
    strict = dataclaw(
        "tasks", "audit", str(src), "-o", str(tmp_path / "b"), "--strict", "--collateral-margin", "0.6"
    )
    assert strict.returncode == 1 and "gamed_by_collateral" in strict.stdout
    bad = dataclaw("tasks", "audit", str(src), "--collateral-margin", "0")
    assert bad.returncode == 1 and "collateral_margin must be in (0, 1]" in bad.stdout + bad.stderr
    assert "Traceback" not in bad.stdout + bad.stderr
