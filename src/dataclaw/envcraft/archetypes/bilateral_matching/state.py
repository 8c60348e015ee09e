"""The repository layer: immutable world data from ``data/`` and the session template built from it.

``directory.json`` is the agency's talent directory (resumes = supply, job postings = demand);
``pools.json`` holds the matching pools already open, whose members are copied from the directory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"


def _read(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def member(entry: dict[str, Any], side: str, at: str) -> dict[str, Any]:
    """A pool member record (also used by ``add_candidate``)."""
    out = {
        "candidate_id": entry["candidate_id"],
        "side": side,
        "name": entry["name"],
        "headline": entry.get("headline", ""),
        "attributes": entry["attributes"],
        "added_at": at,
    }
    if side == "demand":
        out["openings"] = entry.get("openings", 1)
    return out


def _default_state() -> dict[str, Any]:
    directory = {side: {c["candidate_id"]: c for c in rows} for side, rows in _read("directory.json").items()}
    pools = {}
    for raw in _read("pools.json"):
        pool = {k: raw[k] for k in ("pool_id", "name", "client", "criteria", "top_k", "created_at")}
        pool["revision"] = 0  # bumped whenever the pool's candidates change: older scores become stale
        for side in ("supply", "demand"):
            pool[side] = {cid: member(directory[side][cid], side, raw["created_at"]) for cid in raw[side]}
        pools[raw["pool_id"]] = pool
    return {
        "workspace_account": None,
        "directory": directory,
        "pools": pools,
        "matches": {},
        "counters": {"next_match": 1001},
    }


_SKILL_SETS = (
    ["java", "spring", "mysql"],
    ["python", "pandas", "numpy"],  # no sql: the fernwald task selects by sql
    ["typescript", "react", "node"],
    ["c++", "ros", "linux"],
    ["go", "docker", "postgresql"],
    ["swift", "ios"],
)
_CITIES = ("Berlin", "Hamburg", "Leipzig", "Vienna", "Warsaw", "Lisbon", "Prague")
_LEVELS = ("junior", "mid", "senior")


def archived_resumes(count: int = 60) -> dict[str, dict[str, Any]]:
    """Deterministic older resumes for long-context sessions: directory distractors, in no pool."""
    out: dict[str, dict[str, Any]] = {}
    for i in range(count):
        cid = f"R-{5001 + i}"
        level = _LEVELS[i % 3]
        out[cid] = {
            "candidate_id": cid,
            "name": f"Archived candidate {i + 1}",
            "headline": f"{level.title()} engineer (profile from 2024)",
            "attributes": {
                "skills": _SKILL_SETS[i % len(_SKILL_SETS)],
                "years_experience": 1 + (i * 7) % 15,
                "location": _CITIES[i % len(_CITIES)],
                "seniority": level,
                "salary_expectation": 45 + (i * 11) % 70,
                "remote": i % 2 == 0,
                "languages": ["english"],
            },
        }
    return out


# The template every session is deep-copied from (never mutated: the runtime copies it).
DEFAULT_STATE: dict[str, Any] = _default_state()
