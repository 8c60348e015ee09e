"""Concurrency of the EnvCraft runtime's session store across processes.

(1) 8 processes × 500 increments on ONE session → the total must be exact (writes serialised, none lost);
(2) 32 processes each writing its own session concurrently → no cross-talk (each session holds only its own
marks, in order). Throughput is printed for both, beside the paper's published design (O_EXCL lock file
polled every 50 ms, whole-file JSON rewrite) measured in the same run on the same contention pattern
(fewer increments: it is slow). Also: a process SIGKILLed while holding the session lock must not wedge
the session (the published design's lock file stays behind and blocks every later call; ``flock`` dies
with its holder). Prints one JSON line; exits 1 on a wrong total, any cross-talk, or a wedged session.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, ClassVar

from bench_env_step import PublishedDesign
from dataclaw.envcraft.runtime import Environment, Evaluator, Scenario, ToolSet, tool


@tool("write", fields=["counter"], returns=["value"])
def increment(session: dict) -> dict:
    """Add one to the counter."""
    session["counter"]["value"] += 1
    return {"value": session["counter"]["value"]}


@tool("write", fields=["marks"], returns=["n"])
def mark(session: dict, owner: str, n: int) -> dict:
    """Append a mark.

    Args:
        owner: who writes.
        n: sequence number.
    """
    session["marks"].append([owner, n])
    return {"n": n}


_EVAL = Evaluator()


@_EVAL.dimension("noop", 1.0)
def _noop(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    return 1.0, "benchmark"


class ConcurrencyEnv(Environment):
    name: ClassVar[str] = "concurrency_bench"
    DEFAULT_STATE: ClassVar[dict[str, Any]] = {"counter": {"value": 0}, "marks": []}
    tools: ClassVar[ToolSet] = ToolSet([increment.__envcraft_tool__, mark.__envcraft_tool__])
    evaluator: ClassVar[Evaluator] = _EVAL

    @classmethod
    def scenarios(cls) -> dict[str, Scenario]:
        return {"s": Scenario(scenario_id="s", title="s", task_prompt="s", base_time="2026-01-01T00:00:00Z")}


def _incrementer(root: str, sid: str, n: int, start: Any) -> None:
    env = ConcurrencyEnv(root, lock_timeout_s=60)
    start.wait()
    for _ in range(n):
        out = env.call(sid, "increment")
        if out["status"] != "ok":
            raise SystemExit(f"increment failed: {out}")


def _marker(root: str, sid: str, owner: str, n: int, start: Any) -> None:
    env = ConcurrencyEnv(root, lock_timeout_s=60)
    start.wait()
    for i in range(n):
        if env.call(sid, "mark", owner=owner, n=i)["status"] != "ok":
            raise SystemExit("mark failed")


def _add_one(state: dict[str, Any]) -> None:
    state["counter"]["value"] += 1


def _published_incrementer(root: str, n: int, start: Any) -> None:
    pub = PublishedDesign(Path(root), "pub")
    start.wait()
    for _ in range(n):
        pub.update(_add_one, timeout_s=600)


def _hold_published_lock(root: str, ready: Any) -> None:
    PublishedDesign(Path(root), "pub").acquire()
    ready.set()
    time.sleep(60)


def _hold_our_lock(root: str, sid: str, ready: Any) -> None:
    with ConcurrencyEnv(root).store.transaction(sid):
        ready.set()
        time.sleep(60)


def kill_while_locked(ctx: Any, target: Any, args: tuple[Any, ...]) -> None:
    ready = ctx.Event()
    p = ctx.Process(target=target, args=(*args, ready))
    p.start()
    if not ready.wait(30):
        raise SystemExit("lock holder did not start")
    os.kill(p.pid, signal.SIGKILL)
    p.join()


def wedge_after_kill(ctx: Any, tmp: str, root: str, sid: str) -> dict[str, Any]:
    """Kill a process while it holds the session lock; can the next caller proceed?"""
    kill_while_locked(ctx, _hold_published_lock, (tmp,))
    try:
        PublishedDesign(Path(tmp), "pub").acquire(timeout_s=1.0)
        published_wedged = False
    except TimeoutError:
        published_wedged = True
    kill_while_locked(ctx, _hold_our_lock, (root, sid))
    out = ConcurrencyEnv(root, lock_timeout_s=1.0).call(sid, "increment")
    return {"published_design_wedged": published_wedged, "ours_wedged": out["status"] != "ok"}


def _run(ctx: Any, procs: list[tuple[Any, tuple[Any, ...]]], start: Any) -> float:
    ps = [ctx.Process(target=t, args=a) for t, a in procs]
    for p in ps:
        p.start()
    time.sleep(0.3)  # every worker is imported and waiting
    t0 = time.perf_counter()
    start.set()
    for p in ps:
        p.join()
    elapsed = time.perf_counter() - t0
    bad = [p.exitcode for p in ps if p.exitcode != 0]
    if bad:
        raise SystemExit(f"{len(bad)} worker(s) failed: {bad}")
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--increments", type=int, default=500)
    ap.add_argument("--sessions", type=int, default=32)
    ap.add_argument("--marks", type=int, default=200)
    ap.add_argument("--published-increments", type=int, default=25)
    args = ap.parse_args()
    ctx = mp.get_context("fork")
    with tempfile.TemporaryDirectory(prefix="bench-env-conc-") as tmp:
        root = str(Path(tmp) / "state")
        env = ConcurrencyEnv(root)
        shared = env.create_session("s", "shared")
        start = ctx.Event()
        t = _run(ctx, [(_incrementer, (root, shared, args.increments, start))] * args.workers, start)
        state = ConcurrencyEnv(root).get_session_state(shared)
        expected = args.workers * args.increments
        contention = {
            "processes": args.workers,
            "increments_each": args.increments,
            "expected_total": expected,
            "total": state["counter"]["value"],
            "actions_logged": len(state["actions"]),
            "exact": state["counter"]["value"] == expected == len(state["actions"])
            and [a["index"] for a in state["actions"]] == list(range(expected)),
            "seconds": round(t, 3),
            "writes_per_s": round(expected / t, 1),
        }
        sids = [env.create_session("s", f"iso{i:02d}") for i in range(args.sessions)]
        start = ctx.Event()
        t = _run(ctx, [(_marker, (root, sid, sid, args.marks, start)) for sid in sids], start)
        fresh = ConcurrencyEnv(root)
        crosstalk = [
            sid
            for sid in sids
            if fresh.get_session_state(sid)["marks"] != [[sid, i] for i in range(args.marks)]
        ]
        isolation = {
            "sessions": args.sessions,
            "writes_each": args.marks,
            "sessions_with_crosstalk": len(crosstalk),
            "seconds": round(t, 3),
            "writes_per_s": round(args.sessions * args.marks / t, 1),
        }
        pub = PublishedDesign(Path(tmp), "pub", {"counter": {"value": 0}})
        start = ctx.Event()
        t = _run(
            ctx, [(_published_incrementer, (tmp, args.published_increments, start))] * args.workers, start
        )
        pub_total = json.loads(pub.path.read_text())["counter"]["value"]
        pub_expected = args.workers * args.published_increments
        published = {
            "processes": args.workers,
            "increments_each": args.published_increments,
            "exact": pub_total == pub_expected,
            "seconds": round(t, 3),
            "writes_per_s": round(pub_expected / t, 1),
        }
        wedge = wedge_after_kill(ctx, tmp, root, shared)
    ok = contention["exact"] and not crosstalk and not wedge["ours_wedged"]
    result = {
        "benchmark": "env_concurrency",
        "contention_one_session": contention,
        "isolation_many_sessions": isolation,
        "published_design_contention": published,
        "killed_lock_holder": wedge,
        "throughput_ratio_vs_published": round(contention["writes_per_s"] / published["writes_per_s"], 1),
        "target": {"exact_total": True, "crosstalk_sessions": 0, "ours_wedged": False},
        "passed": ok,
    }
    print(json.dumps(result))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
