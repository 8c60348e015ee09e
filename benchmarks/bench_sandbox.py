"""Sandbox startup: sandboxed ``python -c pass`` vs a plain subprocess, and the warm worker's per-call cost.

All variants are measured in this one run, interleaved call by call so machine load hits them alike; p50 over
``--runs`` calls each. Target (DESIGN.md, sandbox issue): sandboxed/plain <= 1.5, or a warm-worker mode whose
per-call cost is <= 10 ms. Prints one JSON line; exits 1 when neither target is met, 2 when no sandbox.
``audit_s_per_archetype``: seconds of the full audit (static + sandboxed dynamic) of each archetype.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dataclaw.sandbox import Limits, WarmWorker, run, sandbox_available

RATIO_TARGET = 1.5
WARM_TARGET_MS = 10.0


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def _p50(xs: list[float]) -> float:
    return round(statistics.median(xs), 2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=50)
    opts = parser.parse_args()
    avail = sandbox_available()
    if not avail:
        print(json.dumps({"benchmark": "sandbox", "error": avail.reason}))
        return 2
    limits = Limits(cpu_s=10, wall_s=30)
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        ws = Path(tmp)
        py = [sys.executable, "-c", "pass"]
        series: dict[str, list[float]] = {"plain": [], "sandbox_argv": [], "sandbox_source": [], "warm": []}
        with WarmWorker(ws, limits) as worker:
            for fn in (
                lambda: run(py, ws, limits),
                lambda: run("pass", ws, limits),
                lambda: worker.run("pass"),
            ):
                fn()  # warm caches once, outside the measurement
            for _ in range(opts.runs):
                series["plain"].append(_timed(lambda: subprocess.run(py, check=True)))
                series["sandbox_argv"].append(_timed(lambda: _must(run(py, ws, limits))))
                series["sandbox_source"].append(_timed(lambda: _must(run("pass", ws, limits))))
                series["warm"].append(_timed(lambda: _must(worker.run("pass"))))
            restarts = worker.restarts
    p50 = {name: _p50(xs) for name, xs in series.items()}
    ratio = round(p50["sandbox_argv"] / p50["plain"], 2)
    met = {"ratio": ratio <= RATIO_TARGET, "warm": p50["warm"] <= WARM_TARGET_MS}
    result = {
        "benchmark": "sandbox",
        "runs": opts.runs,
        "plain_python_p50_ms": p50["plain"],
        "sandboxed_python_p50_ms": p50["sandbox_argv"],
        "sandboxed_source_p50_ms": p50["sandbox_source"],
        "ratio_sandboxed_vs_plain": ratio,
        "ratio_source_vs_plain": round(p50["sandbox_source"] / p50["plain"], 2),
        "warm_worker_call_p50_ms": p50["warm"],
        "warm_worker_restarts": restarts,
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
        "target": {"ratio_max": RATIO_TARGET, "or_warm_call_max_ms": WARM_TARGET_MS},
        "met": met,
        "pass": met["ratio"] or met["warm"],
        "audit_s_per_archetype": _audit_seconds(),
    }
    print(json.dumps(result))
    return 0 if result["pass"] else 1


def _audit_seconds() -> dict[str, float]:
    """Wall seconds of the full environment audit (static + sandboxed dynamic) of each archetype."""
    from dataclaw.envcraft import archetypes
    from dataclaw.envcraft.audit import audit_package

    out = {}
    for name in archetypes.names():
        report = audit_package(archetypes.ARCHETYPES_DIR / name)
        if not report.passed:
            raise SystemExit(f"archetype {name} failed its audit: {report.reasons()[:3]}")
        out[name] = report.timings["total_s"]
    return out


def _must(outcome: object) -> None:
    if not getattr(outcome, "ok", False):
        raise SystemExit(f"benchmark run failed: {getattr(outcome, 'message', outcome)}")


if __name__ == "__main__":
    sys.exit(main())
