"""Match execution and the match-record lifecycle ``pending → accepted | rejected``.

``run_matching`` scores every supply candidate of a pool against each demand candidate, sorts
descending (ties by supply id), keeps the pool's top-K per demand and persists them as pending match
records. Decided records (accepted or rejected) are never rewritten; a supply candidate already accepted
in the pool is placed and is not proposed again; pending proposals that fall out of a new shortlist are
withdrawn (deleted), since they were never decisions.
"""

from __future__ import annotations

from typing import Any, Literal

from dataclaw.envcraft.archetypes.bilateral_matching.pools import get_pool
from dataclaw.envcraft.archetypes.bilateral_matching.scoring import score_pair
from dataclaw.envcraft.runtime import (
    invalid_argument,
    invalid_reference,
    invalid_transition,
    missing_field,
    now,
    stale_warning,
    tool,
)

Status = Literal["pending", "accepted", "rejected"]
RankBy = Literal["score", "supply", "demand"]


def _match(session: dict[str, Any], match_id: str) -> dict[str, Any]:
    matches = session["matches"]
    if match_id not in matches:
        raise invalid_reference("match", match_id)
    return matches[match_id]


def _pool_matches(session: dict[str, Any], pool_id: str) -> list[dict[str, Any]]:
    return [m for m in session["matches"].values() if m["pool_id"] == pool_id]


def _placed(session: dict[str, Any], pool_id: str) -> set[str]:
    return {m["supply_id"] for m in _pool_matches(session, pool_id) if m["status"] == "accepted"}


def _view(session: dict[str, Any], m: dict[str, Any]) -> dict[str, Any]:
    p = session["pools"][m["pool_id"]]
    return m | {
        "supply_name": p["supply"][m["supply_id"]]["name"],
        "demand_name": p["demand"][m["demand_id"]]["name"],
    }


def _shortlist(session: dict[str, Any], pool: dict[str, Any], demand_id: str) -> list[dict[str, Any]]:
    """Score, sort and cap the supply candidates still available for one demand candidate."""
    decided = {
        m["supply_id"]
        for m in _pool_matches(session, pool["pool_id"])
        if m["demand_id"] == demand_id and m["status"] != "pending"
    }
    placed = _placed(session, pool["pool_id"])
    demand = pool["demand"][demand_id]["attributes"]
    rows = []
    for sid, s in pool["supply"].items():
        if sid in decided or sid in placed:
            continue
        score, breakdown = score_pair(pool["criteria"], demand, s["attributes"])
        rows.append({"supply_id": sid, "score": score, "breakdown": breakdown})
    rows.sort(key=lambda r: (-r["score"], r["supply_id"]))
    return rows[: pool["top_k"]]


@tool("write", fields=["matches", "counters"], returns=["shortlists"])
def run_matching(session: dict, pool_id: str, demand_id: str | None = None) -> dict:
    """Score every supply candidate of a pool against each demand candidate (or one), using the pool's
    weighted criteria (0-100), keep the best top-K per demand and save them as pending matches.
    Already accepted or rejected matches are kept as they are; placed candidates are skipped.
    Run it again after adding candidates: accepting a match ranked before the pool changed is stale.

    Args:
        pool_id: the pool to match in.
        demand_id: only this demand candidate (default: every demand candidate of the pool).
    """
    pool = get_pool(session, pool_id)
    if demand_id is not None and demand_id not in pool["demand"]:
        raise invalid_reference("demand candidate", demand_id, sorted(pool["demand"]))
    if not pool["supply"] or not pool["demand"]:
        raise invalid_argument("pool_id", f"pool {pool_id} needs supply and demand candidates first")
    targets = [demand_id] if demand_id is not None else sorted(pool["demand"])
    at = now(session)
    shortlists = {}
    for did in targets:
        ranked = _shortlist(session, pool, did)
        keep = {r["supply_id"] for r in ranked}
        existing = {
            m["supply_id"]: m
            for m in _pool_matches(session, pool_id)
            if m["demand_id"] == did and m["status"] == "pending"
        }
        for sid, m in existing.items():
            if sid not in keep:
                del session["matches"][m["match_id"]]  # a stale proposal, never a decision
        out = []
        for rank, r in enumerate(ranked, start=1):
            m = existing.get(r["supply_id"])
            if m is None:
                mid = f"M-{session['counters']['next_match']}"
                session["counters"]["next_match"] += 1
                m = {"match_id": mid, "pool_id": pool_id, "supply_id": r["supply_id"], "demand_id": did}
                m |= {"status": "pending", "created_at": at, "decided_at": None, "note": None}
                session["matches"][mid] = m
            m |= {"score": r["score"], "breakdown": r["breakdown"], "rank": rank, "scored_at": at}
            m["pool_revision"] = pool["revision"]
            out.append(_view(session, m))
        shortlists[did] = out
    return {"pool_id": pool_id, "shortlists": shortlists}


@tool("read", returns=["ranking"])
def rank_matches(session: dict, pool_id: str, by: RankBy = "score", status: Status | None = None) -> dict:
    """Re-rank a pool's match records: by score (one list, best first), by supply (each supply
    candidate's matches, best first) or by demand (each demand candidate's shortlist, best first).

    Args:
        pool_id: the pool.
        by: score, supply or demand.
        status: only matches with this status.
    """
    get_pool(session, pool_id)
    rows = [_view(session, m) for m in _pool_matches(session, pool_id) if status in (None, m["status"])]
    rows.sort(key=lambda m: (-m["score"], m["match_id"]))
    if by == "score":
        return {"by": by, "ranking": rows}
    key = "supply_id" if by == "supply" else "demand_id"
    groups: dict[str, list[dict[str, Any]]] = {}
    for m in rows:
        groups.setdefault(m[key], []).append(m)
    return {"by": by, "ranking": [{key: k, "matches": groups[k]} for k in sorted(groups)]}


@tool("read", returns=["matches", "count"])
def list_matches(
    session: dict,
    pool_id: str | None = None,
    status: Status | None = None,
    supply_id: str | None = None,
    demand_id: str | None = None,
    min_score: float | None = None,
) -> dict:
    """List match records filtered by pool, status, supply or demand candidate and minimum score.

    Args:
        pool_id: only matches in this pool.
        status: only pending, accepted or rejected matches.
        supply_id: only matches of this supply candidate.
        demand_id: only matches of this demand candidate.
        min_score: only matches scoring at least this much (0-100).
    """
    if pool_id is not None:
        get_pool(session, pool_id)
    if min_score is not None and not 0 <= min_score <= 100:
        raise invalid_argument("min_score", "must be between 0 and 100")
    rows = [
        _view(session, m)
        for _, m in sorted(session["matches"].items())
        if pool_id in (None, m["pool_id"])
        and status in (None, m["status"])
        and supply_id in (None, m["supply_id"])
        and demand_id in (None, m["demand_id"])
        and (min_score is None or m["score"] >= min_score)
    ]
    return {"matches": rows, "count": len(rows)}


def _decide(m: dict[str, Any], target: str) -> None:
    if m["status"] != "pending":
        raise invalid_transition(
            "match", m["match_id"], m["status"], target, "only pending matches can be decided, and only once"
        )


@tool("write", fields=["matches"], returns=["match"])
def accept_match(session: dict, match_id: str, note: str = "") -> dict:
    """Accept a pending match on behalf of both sides (e.g. offer made and taken). A supply candidate
    can be accepted only once per pool, and a demand candidate only up to its number of openings.

    Args:
        match_id: the pending match, e.g. "M-1001".
        note: optional context, e.g. "offer signed 2026-04-20".
    """
    m = _match(session, match_id)
    _decide(m, "accepted")
    pool = session["pools"][m["pool_id"]]
    others = [x for x in _pool_matches(session, m["pool_id"]) if x["status"] == "accepted"]
    placed = [x for x in others if x["supply_id"] == m["supply_id"]]
    if placed:
        raise invalid_transition(
            "match",
            match_id,
            "pending",
            "accepted",
            f"{m['supply_id']} is already placed in this pool by {placed[0]['match_id']} "
            f"({placed[0]['demand_id']})",
        )
    filled = [x for x in others if x["demand_id"] == m["demand_id"]]
    openings = pool["demand"][m["demand_id"]].get("openings", 1)
    if len(filled) >= openings:
        raise invalid_transition(
            "match", match_id, "pending", "accepted", f"{m['demand_id']} has all {openings} opening(s) filled"
        )
    if len(note) > 300:
        raise invalid_argument("note", "at most 300 characters")
    warnings = []
    if pool["revision"] != m["pool_revision"]:
        warnings.append(
            stale_warning(
                f"{match_id} was ranked before candidates were added to pool {m['pool_id']}; its shortlist "
                "may be outdated. Run run_matching again before deciding.",
                match_id=match_id,
            )
        )
    m |= {"status": "accepted", "decided_at": now(session), "note": note.strip() or None}
    return {"match": _view(session, m), "warnings": warnings}


@tool("write", fields=["matches"], returns=["match"])
def reject_match(session: dict, match_id: str, reason: str) -> dict:
    """Reject a pending match on behalf of the counterparty; the reason is mandatory and final.

    Args:
        match_id: the pending match, e.g. "M-1004".
        reason: why, e.g. "candidate withdrew" or "position filled" (3-300 characters).
    """
    m = _match(session, match_id)
    _decide(m, "rejected")
    if not 3 <= len(reason.strip()) <= 300:
        raise missing_field("reason", "say why the match is rejected (3-300 characters)")
    m |= {"status": "rejected", "decided_at": now(session), "note": reason.strip()}
    return {"match": _view(session, m)}
