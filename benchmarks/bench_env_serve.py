"""Server overhead per tool step of ``dataclaw env serve`` (OpenEnv) on localhost.

The server runs as a user runs it (``dataclaw env serve transactional_workspace``, its own process);
``--sessions`` OpenEnv clients (``MCPToolClient``, one WebSocket session each, all in flight at once)
reset into a scenario, log in, then call ``get_ticket`` ``--steps`` times each, timing every step as the
client sees it. Baseline in the same run: the same call through the same harness in-process. Overhead =
p50(served step) − p50(in-process call). Also shown: the MCP JSON-RPC path (``call_tool`` over HTTP
``/mcp``), informational. Needs the ``[openenv]`` extra (``make .venv-openenv``); prints one JSON line,
exits 1 when the overhead p50 misses the target, 2 when openenv is not installed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ENV = "transactional_workspace"
TOOL, ARGS = "get_ticket", {"ticket_id": "T-1001"}
TARGET_MS = 5.0


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def _proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _own_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def in_process(steps: int) -> list[float]:
    """Per-call ms of the tool through the scenario harness the server uses, no server in between."""
    from dataclaw.envcraft import archetypes
    from dataclaw.envcraft.serve import ScenarioHarness

    env_cls = archetypes.get(ENV).env_cls
    harness = ScenarioHarness(env_cls, sorted(env_cls.scenarios())[0])
    harness.setup()
    try:
        assert harness.execute("login", {"account_id": "agent_lee"}).ok
        out = []
        for _ in range(steps):
            t = time.perf_counter()
            assert harness.execute(TOOL, ARGS).ok
            out.append((time.perf_counter() - t) * 1000)
        return out
    finally:
        harness.cleanup()


async def served(url: str, sessions: int, steps: int, warmup: int) -> tuple[list[float], list[float], float]:
    """Per-step ms over the WebSocket (all sessions at once), per-call ms over /mcp, and steps/s."""
    from openenv.core.env_server import CallToolAction
    from openenv.core.mcp_client import MCPToolClient

    sid = None

    async def one(lat: list[float], mcp: list[float]) -> None:
        async with MCPToolClient(base_url=url, message_timeout_s=120) as env:
            reset = await env.reset(index=0)
            nonlocal sid
            sid = reset.observation.task_id
            await env.step(CallToolAction(tool_name="login", arguments={"account_id": "agent_lee"}))
            for i in range(warmup + steps):
                t = time.perf_counter()
                res = await env.step(CallToolAction(tool_name=TOOL, arguments=ARGS))
                took = (time.perf_counter() - t) * 1000
                if res.observation.error is not None or res.observation.result["is_error"]:
                    raise SystemExit(f"served step failed: {res.observation}")
                if i >= warmup:
                    lat.append(took)
            for _ in range(max(10, steps // 10)):
                t = time.perf_counter()
                await env.call_tool(TOOL, **ARGS)
                mcp.append((time.perf_counter() - t) * 1000)

    lat: list[float] = []
    mcp: list[float] = []
    t0 = time.perf_counter()
    await asyncio.gather(*(one(lat, mcp) for _ in range(sessions)))
    return lat, mcp, len(lat) / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--steps", type=int, default=300, help="timed steps per session")
    ap.add_argument("--warmup", type=int, default=20)
    args = ap.parse_args()
    try:
        import openenv.core.env_server  # noqa: F401
    except ImportError:
        print(
            json.dumps(
                {"bench": "env_serve", "ok": False, "error": "openenv not installed (make .venv-openenv)"}
            )
        )
        return 2
    exe = Path(sys.executable).parent / "dataclaw"
    port = _port()
    cmd = [str(exe), "env", "serve", ENV, "--port", str(port), "--max-steps", "1000000"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        import httpx

        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                err = proc.stderr.read().decode()[-500:] if proc.stderr else ""
                print(
                    json.dumps({"bench": "env_serve", "ok": False, "error": f"server did not start: {err}"})
                )
                return 1
            time.sleep(0.1)
        base = in_process(args.steps * 2)
        cpu0, srv0 = _own_cpu_s(), _proc_cpu_s(proc.pid)
        lat, mcp, rate = asyncio.run(served(url, args.sessions, args.steps, args.warmup))
        calls = args.sessions * (args.warmup + args.steps + max(10, args.steps // 10) + 2)
        client_cpu = (_own_cpu_s() - cpu0) * 1000 / calls
        server_cpu = (_proc_cpu_s(proc.pid) - srv0) * 1000 / calls
        base_after = in_process(args.steps)  # the baseline again, after: the machine's load may drift
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    base_p50 = statistics.median(base + base_after)
    served_p50 = statistics.median(lat)
    overhead = served_p50 - base_p50
    out = {
        "bench": "env_serve",
        "env": ENV,
        "tool": TOOL,
        "sessions": args.sessions,
        "steps": len(lat),
        "in_process_p50_ms": round(base_p50, 3),
        "served_p50_ms": round(served_p50, 3),
        "served_p90_ms": round(_p(lat, 90), 3),
        "overhead_p50_ms": round(overhead, 3),
        "served_steps_per_s": round(rate, 1),
        "server_cpu_ms_per_step": round(server_cpu, 3),
        "client_cpu_ms_per_step": round(client_cpu, 3),
        "mcp_http_call_p50_ms": round(statistics.median(mcp), 3),
        "cpus": os.cpu_count(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "target_overhead_p50_ms": TARGET_MS,
        "ok": overhead <= TARGET_MS,
    }
    print(json.dumps(out))
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
