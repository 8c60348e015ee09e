"""Env worker: per-tool-call latency through the sandboxed worker at 32 concurrent sessions vs in-process.

A built-in archetype is copied to a temp folder (so it counts as non-built-in and goes through
``open_environment``'s sandboxed worker); 32 threads, one session each, call its tools, each waiting
``--think-ms`` between calls (an agent's model step; real ones take far longer). The in-process baseline is
the built-in class itself under the same load, in the same run. Target (issue 13): worker p50 <= 5 ms per
tool call at 32 concurrent sessions. Also printed: the saturated case (no think time: every session calls
back to back, so a call waits behind the others' — one worker serves one call at a time, in-process the GIL
does the same) and one session alone (the worker's own cost per call). Prints one JSON line; exits 1 on a
miss, 2 when the sandbox cannot run here.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from dataclaw.envcraft import archetypes
from dataclaw.envcraft.archetypes import ARCHETYPES_DIR
from dataclaw.envcraft.worker import open_environment
from dataclaw.sandbox import sandbox_available

TARGET_P50_MS = 5.0


def _copy(name: str, dest: Path) -> Path:
    folder = dest / f"bench_{name}"
    shutil.copytree(ARCHETYPES_DIR / name, folder, ignore=shutil.ignore_patterns("__pycache__"))
    for py in folder.rglob("*.py"):
        py.write_text(py.read_text().replace(f"dataclaw.envcraft.archetypes.{name}", folder.name))
    return folder


def _calls(env_cls: Any) -> list[tuple[str, dict[str, Any]]]:
    """The read tools without required parameters, plus the first scenario's reference solution."""
    sc = env_cls.scenarios()[sorted(env_cls.scenarios())[0]]
    reads = [
        (s.name, {})
        for s in env_cls.tools
        if s.side_effect == "read" and not any(p.required for p in s.params)
    ]
    return reads + [(c["tool"], dict(c.get("params", {}))) for c in sc.reference_solution]


def _drive(env_cls: Any, root: Path, sessions: int, per_session: int, think_ms: float = 0.0) -> list[float]:
    """``sessions`` threads, one session each, ``per_session`` calls ``think_ms`` apart (jittered ±50%
    so the sessions do not march in step): latencies in ms."""
    import random

    scenario = sorted(env_cls.scenarios())[0]
    calls = _calls(env_cls)
    env = env_cls(root)
    sids = [env.create_session(scenario, f"bench-{i}") for i in range(sessions)]
    out: list[list[float]] = [[] for _ in range(sessions)]
    go = threading.Barrier(sessions)

    def agent(i: int) -> None:
        rng = random.Random(i)
        go.wait()
        for n in range(per_session):
            if think_ms:
                time.sleep(think_ms * rng.uniform(0.5, 1.5) / 1000)
            tool, params = calls[(n + i) % len(calls)]
            t0 = time.perf_counter()
            env.call(sids[i], tool, **params)
            out[i].append((time.perf_counter() - t0) * 1000)

    threads = [threading.Thread(target=agent, args=(i,)) for i in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [x for xs in out for x in xs]


def _pct(xs: list[float], q: float) -> float:
    return round(statistics.quantiles(xs, n=100)[int(q) - 1], 3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--archetype", default="state_machine")
    parser.add_argument("--sessions", type=int, default=32)
    parser.add_argument("--calls", type=int, default=40, help="calls per session")
    parser.add_argument("--think-ms", type=float, default=50.0, help="mean pause between a session's calls")
    args = parser.parse_args()
    avail = sandbox_available()
    if not avail:
        print(json.dumps({"bench": "env_worker", "error": f"no sandbox: {avail.reason}"}))
        return 2
    local = archetypes.get(args.archetype).env_cls
    with tempfile.TemporaryDirectory(prefix="bench-envw-") as tmp:
        t0 = time.perf_counter()
        handle = open_environment(_copy(args.archetype, Path(tmp)))
        start_s = time.perf_counter() - t0
        try:
            _drive(handle.env_cls, Path(tmp) / "warm", 2, 10)  # warm-up: imports, caches
            _drive(local, Path(tmp) / "warm-local", 2, 10)
            single_w = _drive(handle.env_cls, Path(tmp) / "w1", 1, args.calls * 4)
            single_l = _drive(local, Path(tmp) / "l1", 1, args.calls * 4)
            worker = _drive(handle.env_cls, Path(tmp) / "w", args.sessions, args.calls, args.think_ms)
            inproc = _drive(local, Path(tmp) / "l", args.sessions, args.calls, args.think_ms)
            sat_w = _drive(handle.env_cls, Path(tmp) / "ws", args.sessions, args.calls)
            sat_l = _drive(local, Path(tmp) / "ls", args.sessions, args.calls)
            restarts = handle.worker.restarts if handle.worker else 0
        finally:
            handle.close()
    p50 = _pct(worker, 50)
    line = {
        "bench": "env_worker",
        "archetype": args.archetype,
        "sessions": args.sessions,
        "calls": len(worker),
        "think_ms": args.think_ms,
        "worker_p50_ms": p50,
        "worker_p95_ms": _pct(worker, 95),
        "inproc_p50_ms": _pct(inproc, 50),
        "inproc_p95_ms": _pct(inproc, 95),
        "overhead_p50_ms": round(p50 - _pct(inproc, 50), 3),
        "saturated_worker_p50_ms": _pct(sat_w, 50),
        "saturated_worker_p95_ms": _pct(sat_w, 95),
        "saturated_inproc_p50_ms": _pct(sat_l, 50),
        "single_session_worker_p50_ms": _pct(single_w, 50),
        "single_session_inproc_p50_ms": _pct(single_l, 50),
        "worker_start_s": round(start_s, 3),
        "restarts": restarts,
        "target_p50_ms": TARGET_P50_MS,
        "passed": p50 <= TARGET_P50_MS,
        "load": os.getloadavg()[0],
    }
    print(json.dumps(line))
    return 0 if line["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
