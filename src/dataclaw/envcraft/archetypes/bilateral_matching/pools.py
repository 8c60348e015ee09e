"""Matching pools (isolated contexts with a weighted criteria vector and a top-K cap), their supply and
demand candidates, and the agency's talent directory they are drawn from."""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from dataclaw.envcraft.archetypes.bilateral_matching.state import member
from dataclaw.envcraft.runtime import (
    EnvError,
    ErrorCategory,
    invalid_argument,
    invalid_reference,
    missing_field,
    now,
    tool,
)
from dataclaw.envcraft.runtime.errors import echo

Side = Literal["supply", "demand"]
_POOL_RE = re.compile(r"^pool-[a-z0-9-]{2,40}$")
_CAND_RE = re.compile(r"^[A-Z]{1,4}-\d{3,6}$")
_ATTR_RE = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
MAX_CRITERIA = 12
MAX_MEMBERS = 200


def get_pool(session: dict[str, Any], pool_id: str) -> dict[str, Any]:
    pools = session["pools"]
    if pool_id not in pools:
        raise invalid_reference("pool", pool_id, sorted(pools))
    return pools[pool_id]


def _attr_name(name: Any, where: str) -> None:
    if not isinstance(name, str) or not _ATTR_RE.match(name):
        raise invalid_argument(where, f"attribute name {echo(name)} must be lowercase letters, digits, _")


def _check_attributes(attrs: dict[str, Any]) -> None:
    """Typed attribute values: text, finite numbers, true/false, or lists of short text/numbers."""
    if not attrs or len(attrs) > 20:
        raise invalid_argument("attributes", "give 1-20 attributes")
    for key, value in attrs.items():
        _attr_name(key, "attributes")
        ok = (
            isinstance(value, bool)
            or (isinstance(value, int | float) and math.isfinite(value) and abs(value) < 1e12)
            or (isinstance(value, str) and 0 < len(value) <= 200)
            or (
                isinstance(value, list)
                and len(value) <= 30
                and all(isinstance(v, str) and 0 < len(v) <= 60 for v in value)
            )
        )
        if not ok:
            raise invalid_argument(
                "attributes",
                f"{key!r} must be text, a number, true/false or a list of short texts (got {echo(value)})",
            )


def _brief(m: dict[str, Any]) -> dict[str, Any]:
    return {k: m[k] for k in ("candidate_id", "name", "headline", "attributes") if k in m} | (
        {"openings": m["openings"]} if "openings" in m else {}
    )


@tool("read", returns=["candidates", "count"])
def list_directory(session: dict, side: Side, skill: str | None = None, location: str | None = None) -> dict:
    """Browse the agency's talent directory: resumes (side=supply) or job postings (side=demand),
    optionally only those listing a skill or located in a city.

    Args:
        side: supply for resumes, demand for job postings.
        skill: only entries whose skills include this one (case-insensitive), e.g. "kafka".
        location: only entries whose location contains this text, e.g. "Berlin".
    """
    rows = []
    for _, c in sorted(session["directory"][side].items()):
        skills = [str(s).casefold() for s in c["attributes"].get("skills", [])]
        if skill is not None and skill.strip().casefold() not in skills:
            continue
        where = str(c["attributes"].get("location", "")).casefold()
        if location is not None and location.strip().casefold() not in where:
            continue
        rows.append(_brief(c))
    return {"candidates": rows, "count": len(rows)}


@tool("read", returns=["pools"])
def list_pools(session: dict) -> dict:
    """List matching pools with their criteria weights, top-K and number of candidates per side."""
    out = []
    for _, p in sorted(session["pools"].items()):
        out.append(
            {k: p[k] for k in ("pool_id", "name", "client", "criteria", "top_k")}
            | {"supply": len(p["supply"]), "demand": len(p["demand"])}
        )
    return {"pools": out}


@tool("read", returns=["pool"])
def get_pool_details(session: dict, pool_id: str) -> dict:
    """Show one pool: criteria weights, top-K, and every supply and demand candidate with attributes.

    Args:
        pool_id: the pool, e.g. "pool-helio-platform".
    """
    p = get_pool(session, pool_id)
    return {
        "pool": {k: p[k] for k in ("pool_id", "name", "client", "criteria", "top_k", "created_at")}
        | {side: [_brief(m) for _, m in sorted(p[side].items())] for side in ("supply", "demand")}
    }


@tool("write", fields=["pools"], returns=["pool"])
def create_pool(
    session: dict, pool_id: str, name: str, criteria: dict, top_k: int = 3, client: str | None = None
) -> dict:
    """Open a new matching pool: an isolated context with a criteria vector (attribute → weight) that
    scores every demand/supply pair, and a cap on how many matches each demand keeps.

    Args:
        pool_id: new id starting with "pool-", e.g. "pool-fernwald-data".
        name: a descriptive name.
        criteria: attribute name → positive weight, e.g. {"skills": 0.5, "location": 0.2}.
        top_k: how many best matches to keep per demand candidate (1-20).
        client: the client company the pool is for.
    """
    if not _POOL_RE.match(pool_id):
        raise invalid_argument("pool_id", f"{echo(pool_id)} must look like 'pool-<lowercase-words>'")
    if pool_id in session["pools"]:
        raise EnvError(ErrorCategory.INVALID_ARGUMENT, f"pool '{pool_id}' already exists.")
    if not name.strip() or len(name) > 120 or (client is not None and not 0 < len(client) <= 120):
        raise invalid_argument("name", "needs 1-120 characters (client too)")
    if not criteria or len(criteria) > MAX_CRITERIA:
        raise invalid_argument("criteria", f"give 1-{MAX_CRITERIA} attribute weights")
    for attr, weight in criteria.items():
        _attr_name(attr, "criteria")
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 < weight <= 100:
            raise invalid_argument("criteria", f"weight of {attr!r} must be a number in (0, 100]")
    if not 1 <= top_k <= 20:
        raise invalid_argument("top_k", "must be between 1 and 20")
    pool = {
        "pool_id": pool_id,
        "name": name.strip(),
        "client": client,
        "criteria": {k: float(v) for k, v in criteria.items()},
        "top_k": top_k,
        "created_at": now(session),
        "revision": 0,
        "supply": {},
        "demand": {},
    }
    session["pools"][pool_id] = pool
    return {"pool": pool}


@tool("write", fields=["pools"], returns=["candidate"])
def add_candidate(
    session: dict,
    pool_id: str,
    side: Side,
    candidate_id: str,
    name: str | None = None,
    attributes: dict | None = None,
    openings: int | None = None,
) -> dict:
    """Add a supply (resume) or demand (job) candidate to a pool. A directory id copies its name and
    attributes from the directory; any other id needs a name and typed attributes.

    Args:
        pool_id: the pool to add to.
        side: supply (a person/resume) or demand (a job opening).
        candidate_id: a directory id such as "R-110" or "J-305", or a new id such as "REF-001".
        name: the candidate's name or job title (only for ids not in the directory).
        attributes: typed attributes for ids not in the directory, e.g. {"skills": ["sql"], "remote": true}.
        openings: demand only, number of positions (1-50, default 1); directory jobs bring their own.
    """
    p = get_pool(session, pool_id)
    if not _CAND_RE.match(candidate_id):
        raise invalid_argument("candidate_id", f"{echo(candidate_id)} must look like 'R-110' or 'REF-001'")
    if candidate_id in p["supply"] or candidate_id in p["demand"]:
        raise invalid_argument("candidate_id", f"{candidate_id} is already in pool {pool_id}")
    if len(p[side]) >= MAX_MEMBERS:
        raise invalid_argument("pool_id", f"a pool side holds at most {MAX_MEMBERS} candidates")
    other = "demand" if side == "supply" else "supply"
    if candidate_id in session["directory"][other]:
        raise invalid_argument("side", f"{candidate_id} is a {other} entry in the directory, not {side}")
    if openings is not None and (side != "demand" or not 1 <= openings <= 50):
        raise invalid_argument("openings", "only for demand candidates, between 1 and 50")
    entry = session["directory"][side].get(candidate_id)
    if entry is not None:
        if attributes is not None or name is not None or openings is not None:
            raise invalid_argument(
                "attributes", f"{candidate_id} comes from the directory; omit name, attributes and openings"
            )
    else:
        if attributes is None:
            raise missing_field("attributes", f"{candidate_id} is not in the directory; give its attributes")
        if name is None or not name.strip() or len(name) > 120:
            raise missing_field(
                "name", f"{candidate_id} is not in the directory; give its name (1-120 chars)"
            )
        _check_attributes(attributes)
        entry = {"candidate_id": candidate_id, "name": name.strip(), "attributes": attributes}
        if side == "demand":
            entry["openings"] = openings or 1
    record = member(entry, side, now(session))
    p[side][candidate_id] = record
    p["revision"] += 1
    return {"candidate": record, "pool_id": pool_id}
