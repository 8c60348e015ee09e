"""ClawForge's released environments made runnable (issue 26): ``dataclaw env import clawforge`` over the
release in ``../shared/data/clawforge`` (26 environments: tool docs, graphs, chains, the world data of two),
then, per environment: whether it is runnable (its compiled package loads in the env worker, passes the
environment audit the synthesis path uses, and its released tools answer), the share of its released tools
reproduced, the rules found and enforced, and tool tasks derived from its released chains (each chain's
environment steps grounded in the package, S0 with distractors, a whole-state verifier): every derived
task must replay its gold to 1.0 and score 0 on its untouched state. Each derived task also goes through the
soundness suite (collateral writes, a wrong last write, a seeded random policy): reported, not a target.

Targets: >= 90% of the released environments runnable with >= 80% of their tools; every derived task's
gold 1.0 and untouched 0. Prints one JSON line; exits 1 on a miss, 2 when the sandbox cannot run here.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dataclaw.envcraft.importers import Produces, run_import
from dataclaw.sandbox import sandbox_available

HERE = Path(__file__).resolve().parent
RELEASE = HERE.parent.parent / "shared" / "data" / "clawforge"
MIN_RUNNABLE, MIN_TOOLS = 0.9, 0.8


def derived_tasks(lib: Path, row: dict[str, Any], per_env: int) -> dict[str, Any]:
    """Up to ``per_env`` tool tasks derived from the environment's kept released chains: how many were
    derived, how many replay gold to 1.0 and score 0 untouched, and why the others were not derived."""
    from dataclaw.envcraft.importers.clawforge_runnable import chain_steps
    from dataclaw.envcraft.quality.soundness import run_soundness
    from dataclaw.envcraft.runtime.task import ToolTask
    from dataclaw.envcraft.tasks import GroundingError, ground_chain
    from dataclaw.envcraft.tasks.tool.initial import build_initial_state, build_verifier
    from dataclaw.envcraft.tasks.tool.stages import replay_task
    from dataclaw.envcraft.tasks.tool.synth import SynthError
    from dataclaw.envcraft.worker import open_environment

    out: dict[str, Any] = {
        "chains": 0,
        "derived": 0,
        "gold_1": 0,
        "untouched_0": 0,
        "sound": 0,
        "gamed_by": {},
        "not_derived": {},
    }
    chains_file = (row.get("chains") or {}).get("file")
    if not chains_file or not row.get("package"):
        return out
    chains = [json.loads(x) for x in (lib / chains_file).read_text().splitlines() if x.strip()]
    out["chains"] = len(chains)
    seen: set[tuple[str, ...]] = set()
    handle = open_environment(lib / row["package"])
    try:
        for n, chain in enumerate(chains):
            steps = chain_steps(chain, handle.env_cls.tools)
            if not steps or tuple(steps) in seen:
                continue
            seen.add(tuple(steps))
            try:
                g = build_initial_state(handle.env_cls, ground_chain(handle.env_cls, steps, seed=n), seed=n)
                verifier, _ = build_verifier(g, handle.env_cls)
            except (GroundingError, SynthError) as exc:
                code = str(getattr(exc, "reason", type(exc).__name__))
                out["not_derived"][code] = out["not_derived"].get(code, 0) + 1
                continue
            task = ToolTask(
                id=f"bench/{row['env']}/{n}",
                env=row["env"],
                env_module=str(lib / row["package"]),
                scenario_id=g["scenario_id"],
                initial_state=g["initial_state"],
                verifier=verifier,
                gold_chain=[{"tool": s["tool"], "params": s["params"]} for s in g["steps"]],
            )
            out["derived"] += 1
            out["gold_1"] += replay_task(task)["score"] == 1.0
            out["untouched_0"] += replay_task(task, [])["score"] == 0.0
            report = run_soundness(task, env_cls=handle.env_cls)
            out["sound"] += report.passed
            for r in report.reasons:
                out["gamed_by"][str(r)] = out["gamed_by"].get(str(r), 0) + 1
            if out["derived"] >= per_env:
                break
    finally:
        handle.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--release", type=Path, default=RELEASE, help="the ClawForge release folder")
    ap.add_argument("--tasks-per-env", type=int, default=3, help="tool tasks derived per environment")
    args = ap.parse_args()
    if not sandbox_available():
        print(json.dumps({"ok": False, "error": "the sandbox cannot run here"}))
        return 2
    tmp = tempfile.TemporaryDirectory(prefix="bench-clawforge-")
    lib = Path(tmp.name) / "lib"
    t0 = time.perf_counter()
    s = run_import("clawforge", args.release, lib, Produces.ENVIRONMENTS)
    import_s = time.perf_counter() - t0
    rows = [json.loads(x) for x in (lib / "index.jsonl").read_text().splitlines() if x.strip()]
    envs = []
    t1 = time.perf_counter()
    for r in sorted(rows, key=lambda r: r["env"]):
        tasks = derived_tasks(lib, r, args.tasks_per_env) if r.get("passed") else {}
        envs.append(
            {
                "env": r["env"],
                "runnable": bool(r.get("passed")),
                "audit": r.get("audit"),
                "tools": f"{r.get('tools_reproduced', 0)}/{r.get('tools_released', 0)}",
                "tools_share": r.get("tools_share", 0.0),
                "rules": f"{r.get('rules_enforced', 0)}/{r.get('rules_found', 0)}",
                "dropped": len(r.get("dropped") or []),
                "tasks": tasks,
                "reasons": [x.get("code") for x in r.get("reasons") or []],
            }
        )
    tasks_s = time.perf_counter() - t1
    good = [e for e in envs if e["runnable"] and e["tools_share"] >= MIN_TOOLS]
    derived = sum(e["tasks"].get("derived", 0) for e in envs)
    gold = sum(e["tasks"].get("gold_1", 0) for e in envs)
    untouched = sum(e["tasks"].get("untouched_0", 0) for e in envs)
    share = len(good) / max(1, len(envs))
    out = {
        "bench": "clawforge_import",
        "released": s.items,
        "imported": s.imported,
        "runnable": sum(e["runnable"] for e in envs),
        "runnable_with_tools": len(good),
        "runnable_share": round(share, 3),
        "target": {"runnable_share": MIN_RUNNABLE, "tools_share": MIN_TOOLS},
        "audited": sum(e["audit"] is True for e in envs),
        "tools_reproduced": sum(int(e["tools"].split("/")[0]) for e in envs),
        "tools_released": sum(int(e["tools"].split("/")[1]) for e in envs),
        "rules_enforced": sum(int(e["rules"].split("/")[0]) for e in envs),
        "rules_found": sum(int(e["rules"].split("/")[1]) for e in envs),
        "envs_with_chain_tasks": sum(1 for e in envs if e["tasks"].get("derived")),
        "envs_with_kept_chains": sum(1 for e in envs if e["tasks"].get("chains")),
        "tasks_derived": derived,
        "tasks_gold_1": gold,
        "tasks_untouched_0": untouched,
        "tasks_sound": sum(e["tasks"].get("sound", 0) for e in envs),
        "import_s": round(import_s, 1),
        "tasks_s": round(tasks_s, 1),
        "load": round(os.getloadavg()[0], 2),
        "envs": envs,
    }
    out["ok"] = bool(share >= MIN_RUNNABLE and derived and gold == derived and untouched == derived)
    print(json.dumps(out))
    tmp.cleanup()
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
