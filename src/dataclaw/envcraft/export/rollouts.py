"""What a trainer export says of the rollouts its tasks already had: pass^k and the reward's components.

A task run that was also rolled out (``dataclaw tasks rollout RUN -o RUN``, or calibrated there) holds
``rollouts.jsonl`` beside ``tasks.jsonl``; the export's manifest then carries, for the exported tasks only,
pass^k (τ-bench's, :func:`dataclaw.envcraft.rollout.run.pass_hat_k`), the mean reward, the component means
and each task's trials and successes — the difficulty a curriculum or a reader wants, next to the tasks.

The manifest's ``unscored_basis`` counts the tasks whose reward basis holds a component the exported
reward cannot compute (``communicate``, ``nl_assertions``: they need the conversation, a trainer's reward
sees the end state), so a reader knows where the exported reward is more lenient than the task's own.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from dataclaw.envcraft.rollout.evaluate import COMMUNICATE, NL_ASSERTIONS, component_summary, criteria_of
from dataclaw.envcraft.rollout.run import is_success, pass_hat_k

ROLLOUTS_FILE = "rollouts.jsonl"
log = logging.getLogger(__name__)


def read_rollouts(path: Path) -> list[dict[str, Any]]:
    """The records of a ``rollouts.jsonl``; a torn or foreign line is skipped with a warning naming it."""
    out = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                log.warning("%s:%d: not JSON (a torn line?), skipped", path, n)
                continue
            if isinstance(rec, dict) and "task_id" in rec and "reward" in rec:
                out.append(rec)
            else:
                log.warning("%s:%d: not a rollout record, skipped", path, n)
    return out


def rollout_stats(folder: Path, task_ids: list[str]) -> dict[str, Any] | None:
    """pass^k, mean reward, components and per-task trials of the rollouts in ``folder`` of the tasks
    ``task_ids``; None when the folder holds no rollouts of them."""
    path = folder / ROLLOUTS_FILE
    if not path.is_file():
        return None
    wanted = set(task_ids)
    recs = [r for r in read_rollouts(path) if r["task_id"] in wanted]
    if not recs:
        return None
    per_task: dict[str, dict[str, int]] = {}
    for r in recs:
        t = per_task.setdefault(r["task_id"], {"trials": 0, "successes": 0})
        t["trials"] += 1
        t["successes"] += is_success(r.get("reward"))
    rewards = [float(r.get("reward") or 0.0) for r in recs]
    return {
        "file": ROLLOUTS_FILE,
        "models": sorted({str(r.get("model")) for r in recs}),
        "tasks": len(per_task),
        "of_tasks": len(wanted),
        "rollouts": len(recs),
        "pass_hat_k": pass_hat_k(recs),
        "mean_reward": round(sum(rewards) / len(rewards), 4),
        "components": component_summary(recs),
        "per_task": dict(sorted(per_task.items())),
    }


TRANSCRIPT_COMPONENTS = (COMMUNICATE, NL_ASSERTIONS)
"""Components a trainer's reward function cannot compute: it sees the environment's state, not the
conversation (and has no judge)."""


def unscored_basis(tasks: list[Any]) -> dict[str, int]:
    """Tasks per component that is in a task's reward basis, has data there, and needs the conversation:
    where an exported reward (the verifier on the end state) is more lenient than the task's own."""
    out: dict[str, int] = {}
    for task in tasks:
        crit = criteria_of(task)
        has = {COMMUNICATE: bool(crit.communicate), NL_ASSERTIONS: bool(crit.nl_assertions)}
        for name in TRANSCRIPT_COMPONENTS:
            if name in crit.basis and has[name]:
                out[name] = out.get(name, 0) + 1
    return out


def rollout_lines(export: Path) -> list[str]:
    """What an export's summary says of the rollouts its manifest carries (nothing when none), and of the
    components its reward leaves out (:func:`unscored_lines`)."""
    try:
        stats = json.loads((export / "manifest.json").read_text(encoding="utf-8")).get("rollouts")
    except (OSError, ValueError):
        return []
    if not stats:
        return unscored_lines(export)
    hat = " ".join(f"pass^{k}={v:.3f}" for k, v in stats["pass_hat_k"].items())
    return [
        f"rollouts: {stats['rollouts']} of {stats['tasks']}/{stats['of_tasks']} tasks ({ROLLOUTS_FILE}): "
        f"{hat}, mean reward {stats['mean_reward']:.3f}",
        *unscored_lines(export),
    ]


def unscored_lines(export: Path) -> list[str]:
    """The export's warning when its reward leaves out components of some tasks' reward basis."""
    try:
        gaps = json.loads((export / "manifest.json").read_text(encoding="utf-8")).get("unscored_basis")
    except (OSError, ValueError):
        return []
    if not gaps:
        return []
    what = ", ".join(f"{name} ({n} tasks)" for name, n in sorted(gaps.items()))
    return [
        f"warning: the exported reward scores the end state only; not scored: {what} "
        "(they need the conversation)"
    ]
