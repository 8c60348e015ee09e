"""Soundness suite: its cost against the plain gold replay, and how many gamed tasks would ship.

The task set is made by the product's own pipeline, minus the model: tool chains sampled (seed 7) over the
nine built-in archetypes, a fifth of them across two environments, grounded by ``GroundStage`` with its
soundness gate off (so the set holds every task grounding makes, gamed ones included) until there are 200.
The text a model would write is not what the suite measures; each task gets a placeholder instruction.

Measured on the same 200 tasks in one run, warm (one untimed replay per environment first):

- ``gold_replay``: ``replay_task`` — a fresh session, the gold chain, the verifier on the end state (what
  the audit and the export already did per task before the suite existed);
- ``suite``: ``run_soundness`` with the default settings — gold, untouched, collateral writes, wrong last
  writes, seeded random episodes.

What the suite's time goes to: scored runs and tool calls per task (the replay: one run, the gold
chain's calls), milliseconds per scored run, and per task by part (setup, each policy).

Counts: tasks per policy that gamed them, tasks that pass (what ``tasks audit`` passes and ``tasks export``
writes: *shipped*). To check that a shipped task is not gamed, every shipped task is run again through a
harder suite with other seeds (seed 1, 3× the random episodes, collateral writes and wrong writes; a random
mean counts as gamed above 1.5× the limit, a margin for the sampling noise of a mean near it):
``gamed_shipped`` counts shipped tasks the harder suite finds gamed.

Targets (issue 25): the suite costs ≤ 2× the plain gold replay (``ratio``); 0 gamed tasks shipped. Prints
one JSON line; exits 1 on a miss. Wall-clock figures on this machine: run it on a quiet one.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from dataclasses import replace

from dataclaw.envcraft import archetypes
from dataclaw.envcraft.graph import ChainSampler, build_env_graph, build_tool_graph
from dataclaw.envcraft.quality.soundness import Policy, SoundnessSettings, run_soundness
from dataclaw.envcraft.tasks import GroundStage, chain_record
from dataclaw.envcraft.tasks.tool.stages import grounded_task, replay_task

TARGET_RATIO = 2.0
N_TASKS = 200
# the harder suite calls a random mean gamed above 1.5x the limit: a larger sample of a task whose true
# mean sits at the limit lands on either side of it; the margin keeps sampling noise out of the count
RECHECK_RANDOM_SLACK = 1.5


def task_set(n: int = N_TASKS) -> list:
    """``n`` tasks grounded from seeded chains over every archetype (a fifth cross-environment)."""
    graphs = [build_tool_graph(archetypes.get(a)) for a in archetypes.names()]
    sampler = ChainSampler(graphs, build_env_graph(graphs))
    stage = GroundStage(soundness=None)
    tasks = []
    for chain in sampler.sample(n * 4, seed=7, cross_env_fraction=0.2, min_len=2, max_len=5):
        out = stage.process(chain_record(chain))
        if isinstance(out, list):
            tasks.append(grounded_task(out[0]).model_copy(update={"instruction": "(placeholder)"}))
        if len(tasks) == n:
            break
    return tasks


def timed(fn, items: list) -> tuple[float, list]:
    t0 = time.perf_counter()
    out = [fn(x) for x in items]
    return time.perf_counter() - t0, out


def main() -> int:
    t0 = time.perf_counter()
    tasks = task_set()
    make_s = time.perf_counter() - t0
    for env in {t.env: t for t in tasks}.values():  # warm: each environment loaded once, untimed
        replay_task(env)
    settings = SoundnessSettings()
    gold_s, gold = timed(replay_task, tasks)
    suite_s, reports = timed(lambda t: run_soundness(t, settings), tasks)
    gamed = Counter(str(r) for rep in reports for r in rep.reasons)
    shipped = [t for t, rep in zip(tasks, reports, strict=True) if rep.passed]
    harder = replace(
        settings,
        seed=1,
        random_episodes=3 * settings.random_episodes,
        max_collateral=3 * settings.max_collateral,
        max_wrong=3 * settings.max_wrong,
        random_max_mean=RECHECK_RANDOM_SLACK * settings.random_max_mean,
    )
    recheck = [run_soundness(t, harder) for t in shipped]
    gamed_shipped = Counter(str(r) for rep in recheck for r in rep.reasons)
    n_gamed_shipped = sum(not rep.passed for rep in recheck)
    ratio = suite_s / gold_s
    runs = sum(len(r.trials) for r in reports)
    result = {
        "bench": "soundness",
        "tasks": len(tasks),
        "envs": len({t.env for t in tasks}),
        "cross_env": sum(bool(t.envs) for t in tasks),
        "gold_replay_passed": sum(bool(g["passed"]) for g in gold),
        "gold_replay_tasks_per_s": round(len(tasks) / gold_s, 1),
        "suite_tasks_per_s": round(len(tasks) / suite_s, 1),
        "gold_replay_ms_per_task": round(gold_s / len(tasks) * 1000, 2),
        "suite_ms_per_task": round(suite_s / len(tasks) * 1000, 2),
        "ratio": round(ratio, 2),
        "target_ratio": TARGET_RATIO,
        "runs_per_task": round(runs / len(tasks), 1),
        "suite_ms_per_run": round(suite_s / runs * 1000, 3),
        "calls_per_task": {
            "gold_replay": round(sum(len(t.gold_chain) for t in tasks) / len(tasks), 1),
            "suite": round(sum(r.calls for r in reports) / len(tasks), 1),
        },
        "suite_ms_per_task_by_part": {
            part: round(sum(r.seconds.get(part, 0.0) for r in reports) / len(tasks) * 1000, 2)
            for part in ("setup", *(str(p) for p in Policy))
        },
        "passed": len(shipped),
        "gamed_by_policy": {k: gamed[k] for k in sorted(gamed)},
        "shipped": len(shipped),
        "gamed_shipped": n_gamed_shipped,
        "gamed_shipped_by_policy": {k: gamed_shipped[k] for k in sorted(gamed_shipped)},
        "make_set_s": round(make_s, 1),
    }
    ok = len(tasks) == N_TASKS and ratio <= TARGET_RATIO and n_gamed_shipped == 0
    result["ok"] = ok
    print(json.dumps(result))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
