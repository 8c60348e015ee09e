"""The console summary of ``tasks audit``: verdicts, reasons, warnings, pass rate, slowest tasks."""

from __future__ import annotations

from rich.console import Console

from dataclaw.cli import tasks as tasks_cli


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
    summary = tasks_cli._audit_summary(rows, floor=0.0, workers=2, seconds=2.0, resumed=1)
    text = console.export_text()
    assert summary["verdicts"] == {"pass": 2, "FAIL": 1, "DEFECT": 1, "unloadable": 1}
    assert summary["reasons"] == {"builder_crash": 1, "verifier_crash": 1, "missing_file": 1}
    assert summary["warnings"] == {"path_uncertain": 2}
    assert summary["pass_rate"] == 0.4 and summary["audited"] == 3 and summary["tasks_per_s"] == 1.5
    assert summary["slowest"][0] == ("t2", 9.0)
    assert "pass rate 2/5 = 40.0%; 2 warnings on 2 tasks" in text
    assert "slowest: t2 9.0 s, t3 2.0 s" in text and "1 resumed" in text
    for word in ("unloadable", "DEFECT", "path_uncertain", "missing_file"):
        assert word in text
    assert "Table 2" not in text
