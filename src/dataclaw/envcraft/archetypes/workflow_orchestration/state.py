"""The repository layer: immutable world data from ``data/`` and the session template built from it.

Only this module reads ``data/``; domain modules see nothing but the session dict (Table 15, rules 3, 10).
World pipelines go through the same DAG validation as agent-defined ones, so bad world data fails at
import; worker busy states are derived from the pipelines' pending assignments, so they always agree.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from dataclaw.envcraft.archetypes.workflow_orchestration.engine import OPEN_PIPELINE, check_dag, new_stage
from dataclaw.envcraft.runtime.state import parse_time

DATA = Path(__file__).resolve().parent / "data"


def _read(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _pipeline(raw: dict[str, Any], actions: dict[str, Any]) -> dict[str, Any]:
    stages = []
    for s in raw["stages"]:
        assert s["action"] in actions, s
        stage = new_stage(
            s["stage_id"], s["action"], s.get("depends_on", []), s["on_failure"], s.get("max_retries", 0)
        )
        for key in ("worker", "status", "retries", "awaiting_retry", "history", "result", "last_error"):
            if key in s:
                stage[key] = s[key]
        stages.append(stage)
    check_dag(stages)
    return {
        "pipeline_id": raw["pipeline_id"],
        "name": raw["name"],
        "mode": raw["mode"],
        "status": raw["status"],
        "parameters": raw["parameters"],
        "origin": "world",
        "defined_at": raw["defined_at"],
        "stages": stages,
        "failure": None,
        "rollback": None,
    }


def _default_state() -> dict[str, Any]:
    actions = _read("actions.json")
    fleet = _read("workers.json")
    spec = _read("pipelines.json")
    pipelines = {p["pipeline_id"]: _pipeline(p, actions) for p in spec["pipelines"]}
    workers = {
        w["worker_id"]: {**w, "status": "idle", "assignment": None, "registered_at": None}
        for w in fleet["workers"]
    }
    for p in pipelines.values():
        for s in p["stages"]:
            if p["status"] in (*OPEN_PIPELINE, "failed") and s["status"] == "pending" and s["worker"]:
                w = workers[s["worker"]]
                assert w["assignment"] is None, f"{w['worker_id']} holds two assignments"
                w["status"], w["assignment"] = (
                    "busy",
                    {"pipeline_id": p["pipeline_id"], "stage_id": s["stage_id"]},
                )
    return {
        "workspace_account": None,
        "roles": fleet["roles"],
        "workers": workers,
        "action_catalog": actions,
        "faults": _read("faults.json"),
        "pipelines": pipelines,
        "messages": [],
        "execution_log": [],
        "deregistered": [],
        "counters": {"next_pipeline_number": spec["next_number"], "next_message_number": 1},
    }


# The template every session is deep-copied from (never mutated: the runtime copies it).
DEFAULT_STATE: dict[str, Any] = _default_state()


def history_pipelines(base_time: str) -> dict[str, dict[str, Any]]:
    """Long-context distractors: 40 finished release pipelines (P-057 … P-096), one a day before the
    scenario, built from ``data/long_context.json`` with the same stage records as live pipelines."""
    spec = _read("long_context.json")
    actions = _read("actions.json")
    base = parse_time(base_time)
    out: dict[str, dict[str, Any]] = {}
    for i in range(spec["count"]):
        pid = f"P-{57 + i:03d}"
        service = spec["services"][i % len(spec["services"])]
        day = base - timedelta(days=spec["count"] - i + 14)
        stages = []
        for k, tpl in enumerate(spec["stages"]):
            worker = tpl["worker"] or spec["regions"][i % len(spec["regions"])]
            at = (day + timedelta(minutes=9 * (k + 1))).isoformat()
            digest = hashlib.sha1(f"{pid}/{tpl['stage_id']}".encode()).hexdigest()[:8]
            raw = {
                **tpl,
                "on_failure": tpl.get("on_failure", "abort"),
                "worker": worker,
                "status": "completed",
            }
            raw["history"] = [{"attempt": 1, "worker": worker, "outcome": "completed", "at": at}]
            raw["result"] = {k2: f"{prefix}{digest}" for k2, prefix in tpl["result"].items()}
            stages.append(raw)
        raw_pipeline = {
            "pipeline_id": pid,
            "name": f"{service} release train #{i + 1}",
            "mode": "sequential",
            "status": "completed",
            "parameters": {"git_ref": f"release/{i // 5 + 1}.{i % 5}", "service": service},
            "defined_at": day.isoformat(),
            "stages": stages,
        }
        out[pid] = _pipeline(raw_pipeline, actions)
    return out
