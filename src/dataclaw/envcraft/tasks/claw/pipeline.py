"""The claw-task run composition (EnvCraft C.5/C.6): ``dataclaw tasks claw-synth``. Chains (ClawForge chain
lines or ``tasks sample`` output) → one workspace task per chain written by the model in one pass
(``RUN/claw_tasks/``, rejects of stage ``claw_generate``) → the code audit of each (``code_audit.jsonl``).
Resumable: a chain whose task exists is not generated again, an unchanged task is not audited again.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError
from dataclaw.core.progress import ProgressFactory, progress_for
from dataclaw.core.store import RunStore
from dataclaw.envcraft.quality.common import StageCount
from dataclaw.envcraft.quality.runs import audit_by_code, default_workers, load_task_source
from dataclaw.envcraft.quality.task_runs import run_model
from dataclaw.envcraft.tasks.claw.generate import synth_claw_tasks
from dataclaw.models.ledger import saved_usage
from dataclaw.sandbox import SandboxPolicy


def read_chains(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """The first ``limit`` records of a chains JSONL; a ConfigError when it is not a JSONL file."""
    if not path.is_file():
        raise ConfigError(f"{path} is not a file (expected a chains JSONL)")
    try:
        return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()][:limit]
    except ValueError as exc:
        raise ConfigError(f"{path}: not JSONL ({exc})") from None


@dataclass
class ClawSynth:
    """What :func:`claw_synth` did: where the tasks are, and chains → tasks → passing the code audit."""

    root: Path
    counts: list[StageCount]


def claw_synth(
    chains: Path,
    out: Path,
    model: str,
    *,
    limit: int | None = None,
    floor: float = 0.0,
    workers: int | None = None,
    policy: SandboxPolicy | None = None,
    progress: ProgressFactory | None = None,
) -> ClawSynth:
    """Claw workspace tasks from the first ``limit`` chains of ``chains`` by ``model`` into
    ``out/claw_tasks/``, then the code audit of each (``workers`` at once, default one per CPU; a task
    fails when its untouched workspace scores above ``floor``)."""
    recs = read_chains(chains, limit)
    root = out / "claw_tasks"
    with RunStore(out) as store, saved_usage(store) as ledger:
        chat = run_model(model, out, ledger)
        with progress_for(progress, "generate") as bar:
            ids = asyncio.run(synth_claw_tasks(chat, recs, root, store, bar))
        loaded = load_task_source(root) if ids else None
        n = workers or default_workers()
        rows = audit_by_code(loaded, store, floor=floor, policy=policy, workers=n) if loaded else []
        wanted = set(ids)
        rows = [r for r in rows if r["id"] in wanted]
        store.update_manifest(claw_synth={"chains": str(chains), "model": model})
        gen_reasons = Counter(r["reason"] for r in store.rejects("claw_generate"))
    passed = sum(r["passed"] for r in rows)
    audit_reasons = Counter(str(c["reason"]) for r in rows for c in r["checks"] if not c["passed"])
    counts = [
        StageCount("claw_generate", len(recs), len(ids), dict(gen_reasons)),
        StageCount("code_audit", len(ids), passed, dict(audit_reasons)),
    ]
    return ClawSynth(root, counts)
