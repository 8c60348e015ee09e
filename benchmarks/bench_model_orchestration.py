"""Model-call orchestration throughput: with concurrency C=32 against an OpenAI-compatible server that answers
after a fixed 200 ms, the client must reach ≥ 0.9 × C / 0.2 s requests/s (the ideal is C / 0.2 s), with the
adaptive concurrency window on (``adaptive=true``, the default): a server that keeps up must not be throttled,
so the window must still be C at the end.

The server (tests/support/openai_server.py, threaded) runs in its own process so its work does not share
the client's GIL, and reports how many requests it really had in flight at once. Every prompt is distinct
and the cache is off, so each request reaches the server. Prints one JSON line; exits 1 below target.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

CONCURRENCY = 32
DELAY_S = 0.2
ROUNDS = 10  # measured requests = ROUNDS × CONCURRENCY
TARGET_FRACTION = 0.9


def _serve(conn) -> None:  # runs in the server process
    from support.openai_server import OpenAIServer, Reply

    with OpenAIServer(delay=DELAY_S, default=Reply.json({"ok": True})) as server:
        conn.send(server.base_url)
        conn.recv()  # "reset" after warm-up
        server.reset_counters()
        cpu_start = time.process_time()
        conn.send("ok")
        conn.recv()  # "stop"
        cpu = time.process_time() - cpu_start
        conn.send({"requests": server.request_count, "max_in_flight": server.max_in_flight, "cpu_s": cpu})


async def _burst(model, n: int, tag: str) -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    await asyncio.gather(*(model.complete(f"{tag} request {i}", schema=schema) for i in range(n)))


async def _measure(base_url: str, conn) -> tuple[float, float, dict[str, int]]:
    from dataclaw.models import UsageLedger, get_model

    ledger = UsageLedger()
    spec = f"{base_url}::bench-model?concurrency={CONCURRENCY}&max_retries=0&adaptive=true"
    model = get_model(spec, cache=False, ledger=ledger)
    await _burst(model, CONCURRENCY, "warm-up")  # opens the connection pool
    conn.send("reset")
    conn.recv()
    start, cpu_start = time.perf_counter(), time.process_time()
    await _burst(model, CONCURRENCY * ROUNDS, "measured")
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    await model.aclose()
    return elapsed, cpu, ledger.summary()["by_model"][model.model_id]["concurrency"]


def main() -> int:
    parent, child = mp.Pipe()
    proc = mp.get_context("spawn").Process(target=_serve, args=(child,), daemon=True)
    proc.start()
    try:
        base_url = parent.recv()
        elapsed, client_cpu, window = asyncio.run(_measure(base_url, parent))
        parent.send("stop")
        seen = parent.recv()
    finally:
        proc.join(timeout=5)
        if proc.is_alive():
            proc.terminate()
    n = CONCURRENCY * ROUNDS
    ideal = CONCURRENCY / DELAY_S
    rate = n / elapsed
    target = TARGET_FRACTION * ideal
    ok = (
        rate >= target
        and seen["requests"] == n
        and seen["max_in_flight"] == CONCURRENCY
        and window["effective"] == window["lowest"] == CONCURRENCY
    )
    print(
        json.dumps(
            {
                "bench": "model_orchestration",
                "concurrency": CONCURRENCY,
                "server_delay_s": DELAY_S,
                "requests": n,
                "elapsed_s": round(elapsed, 3),
                "requests_per_s": round(rate, 1),
                "ideal_requests_per_s": round(ideal, 1),
                "target_requests_per_s": round(target, 1),
                "fraction_of_ideal": round(rate / ideal, 3),
                "client_cpu_ms_per_request": round(1000 * client_cpu / n, 2),
                "server_cpu_ms_per_request": round(1000 * seen["cpu_s"] / n, 2),
                "load_average_1m": round(os.getloadavg()[0], 2),
                "server_requests": seen["requests"],
                "server_max_in_flight": seen["max_in_flight"],
                "adaptive_window": window,
                "ok": ok,
            }
        )
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
