"""`tasks audit` bookkeeping: the summary (verdicts, reasons, warnings, pass rate, slowest tasks), its
console form, and an audit that crashes on one task."""

from __future__ import annotations

from rich.console import Console

from dataclaw.cli import tasks as tasks_cli
from dataclaw.envcraft.quality.task_audit import summarize_audit, verdict


def _row(
    tid: str,
    *,
    passed: bool = True,
    defect: bool = False,
    fail: str | None = None,
    warn: str | None = None,
    secs: float = 1.0,
) -> dict:
    checks = [{"name": "builder", "passed": True, "reason": None, "message": "", "severity": None}]
    if fail:
        checks.append({"name": "x", "passed": False, "reason": fail, "message": "m", "severity": "error"})
    if warn:
        checks.append({"name": "y", "passed": True, "reason": warn, "message": "w", "severity": "warning"})
    return {"id": tid, "passed": passed, "defect": defect, "checks": checks, "duration_s": secs}


def test_summary_counts_verdicts_reasons_and_warnings_and_names_the_slowest(monkeypatch):
    console = Console(record=True, width=160)
    monkeypatch.setattr(tasks_cli, "console", console)
    rows = [
        _row("t1", secs=0.5),
        _row("t2", warn="path_uncertain", secs=9.0),
        _row("t3", passed=False, fail="builder_crash", secs=2.0),
        _row("t4", passed=False, defect=True, fail="verifier_crash", warn="path_uncertain"),
        {"id": "t5", "passed": False, "defect": False, "layout": "missing_file",
         "checks": [{"name": "layout", "passed": False, "reason": "missing_file", "message": "no builder"}]},
    ]  # fmt: skip
    summarized = summarize_audit(rows, seconds=2.0, resumed=1)
    tasks_cli._print_audit_summary(summarized, floor=0.0, workers=2)
    summary = summarized.to_dict()
    text = console.export_text()
    assert [verdict(r) for r in rows] == ["pass", "pass", "FAIL", "DEFECT", "unloadable"]
    assert summary["verdicts"] == {"pass": 2, "FAIL": 1, "DEFECT": 1, "unloadable": 1}
    assert summary["reasons"] == {"builder_crash": 1, "verifier_crash": 1, "missing_file": 1}
    assert summary["warnings"] == {"path_uncertain": 2}
    assert summary["pass_rate"] == 0.4 and summary["audited"] == 3 and summary["tasks_per_s"] == 1.5
    assert summary["slowest"][0] == ("t2", 9.0) and summary["seconds"] == 2.0
    assert summarized.examples["path_uncertain"] == "t2" and summarized.warned_tasks == 2
    assert "pass rate 2/5 = 40.0%; 2 warnings on 2 tasks" in text
    assert "slowest: t2 9.0 s, t3 2.0 s" in text and "1 resumed" in text
    for word in ("unloadable", "DEFECT", "path_uncertain", "missing_file"):
        assert word in text
    assert "Table 2" not in text


def test_a_crashing_audit_is_that_task_s_reject_and_is_retried_next_run(tmp_path, monkeypatch):
    """A bug in the checks fails one task (``audit_error``), never the run, and is not stored as a verdict."""
    from dataclaw.core.store import RunStore
    from dataclaw.envcraft.quality import runs
    from dataclaw.envcraft.tasks.claw import audit as workspace_audit
    from dataclaw.sandbox import SandboxPolicy
    from envcraft.rollout.rollout_helpers import example_claw_task

    good = example_claw_task("smart_home_energy_cost")
    bad = example_claw_task("logistics_manager_review")

    class Report:
        def __init__(self, tid):
            self.tid = tid

        def to_record(self):
            return {"id": self.tid, "passed": True, "defect": False, "checks": []}

    def fake_audit(task, **kw):
        if task.task_id == bad.task_id:
            raise KeyError("a bug")
        return Report(task.task_id)

    monkeypatch.setattr(workspace_audit, "audit_task", fake_audit)
    loaded = runs.LoadedTasks([good, bad])
    policy = SandboxPolicy(unsafe=True)
    with RunStore(tmp_path / "run") as store:
        rows = {r["id"]: r for r in runs.audit_by_code(loaded, store, policy=policy, workers=2)}
        rejects = {r["record_id"]: r["reason"] for r in store.rejects("code_audit")}
        stored = {r["id"] for r in store.records("code_audit")}
    assert rows[good.task_id]["passed"] and not rows[bad.task_id]["passed"]
    assert "KeyError" in rows[bad.task_id]["checks"][0]["message"]
    assert rejects == {bad.task_id: "audit_error"} and stored == {good.task_id}
