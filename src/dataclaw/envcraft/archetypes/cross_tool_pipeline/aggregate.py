"""Phase 3, aggregate: merge the records of completed jobs with semantic deduplication on a user-declared
key (one to three record fields) after a user-declared chain of string normalisations; with a similarity
threshold below 1, records whose normalised keys share enough tokens (Jaccard) merge as well."""

from __future__ import annotations

import re
from typing import Any, Literal

from dataclaw.envcraft.archetypes.cross_tool_pipeline.ingest import job
from dataclaw.envcraft.archetypes.cross_tool_pipeline.normalize import jaccard, normalize
from dataclaw.envcraft.runtime import invalid_argument, invalid_reference, invalid_transition, now, tool
from dataclaw.envcraft.runtime.errors import echo

KEY_FIELDS = ("title", "text", "url", "outlet", "date", "speaker")
_COLUMN_KEY = re.compile(r"^fields\.[A-Za-z0-9_]{1,40}$")  # a table column, e.g. "fields.line"
Step = Literal[
    "lowercase", "strip_punctuation", "collapse_whitespace", "strip_accents", "drop_stopwords", "sort_tokens"
]


def _key(record: dict[str, Any], fields: list[str], steps: list[str]) -> str | None:
    parts = []
    for f in fields:
        value = (record["fields"] or {}).get(f[7:]) if f.startswith("fields.") else record.get(f)
        if value is None:
            return None
        parts.append(normalize(str(value), steps))
    return " | ".join(parts)


def _new_item(number: int, record: dict[str, Any], key: str | None) -> dict[str, Any]:
    keep = ("kind", "title", "text", "outlet", "date", "url", "speaker", "start_s", "fields")
    return {
        "item_id": f"I-{number}",
        "key": key,
        "representative": record["record_id"],
        **{k: record.get(k) for k in keep},
        "entities": list(record["entities"]),
        "duplicates": [],
        "outlets": [record["outlet"]],
        "urls": [record["url"]],
        "jobs": [record["job_id"]],
    }


def _merge(item: dict[str, Any], record: dict[str, Any]) -> None:
    item["duplicates"].append(record["record_id"])
    item["entities"] = sorted(set(item["entities"]) | set(record["entities"]))
    for field, value in (("outlets", record["outlet"]), ("urls", record["url"]), ("jobs", record["job_id"])):
        if value not in item[field]:
            item[field].append(value)
    if record["fields"]:  # table rows merged on a shared key combine their columns (first value wins)
        item["fields"] = {**record["fields"], **(item["fields"] or {})}


def deduplicate(
    records: list[dict[str, Any]], fields: list[str], steps: list[str], threshold: float
) -> list[dict]:
    """Greedy, order-preserving clustering: exact normalised-key match, then token Jaccard >= threshold."""
    items: list[dict[str, Any]] = []
    exact: dict[str, dict[str, Any]] = {}
    token_sets: list[tuple[set[str], dict[str, Any]]] = []
    for record in records:
        key = _key(record, fields, steps)
        if key is None:  # records without the key cannot be compared: each stays on its own
            items.append(_new_item(len(items) + 1, record, None))
            continue
        target = exact.get(key)
        if target is None and threshold < 1.0:
            words = set(key.split())
            target = next((it for ws, it in token_sets if jaccard(words, ws) >= threshold), None)
        if target is not None:
            _merge(target, record)
            continue
        item = _new_item(len(items) + 1, record, key)
        items.append(item)
        exact[key] = item
        token_sets.append((set(key.split()), item))
    return items


def _head(agg: dict[str, Any]) -> dict[str, Any]:
    """An aggregate without its items, with their count (what tools show before paging the items)."""
    return {k: v for k, v in agg.items() if k != "items"} | {"item_count": len(agg["items"])}


def aggregate_of(session: dict[str, Any], aggregate_id: str) -> dict[str, Any]:
    if aggregate_id not in session["aggregates"]:
        raise invalid_reference("aggregate", aggregate_id, list(session["aggregates"]))
    return session["aggregates"][aggregate_id]


@tool("write", fields=["aggregates", "counters"], returns=["aggregate"])
def aggregate(
    session: dict,
    job_ids: list[str],
    dedup_key: list[str],
    normalization: list[Step] | None = None,
    similarity_threshold: float = 1.0,
    name: str | None = None,
) -> dict:
    """Merge the records of completed jobs into one deduplicated set (an aggregate).

    Records whose dedup key, after the normalisation steps, is equal are merged into one item that keeps
    every outlet and URL; with similarity_threshold < 1, keys sharing at least that fraction of their
    tokens merge too. An aggregate over a superset of an earlier one's jobs supersedes it.

    Args:
        job_ids: completed jobs to merge (1-20), e.g. ["J-1", "J-2"].
        dedup_key: 1-3 record fields forming the key: title, text, url, outlet, date, speaker, or a table
            column as "fields.<column>"; e.g. ["title"], ["speaker", "text"] or ["fields.line"].
        normalization: string normalisation steps applied to the key, in order, e.g.
            ["lowercase", "strip_punctuation", "collapse_whitespace"]; omit for exact comparison.
        similarity_threshold: token overlap (0.5-1.0) at which two keys count as the same; 1.0 = exact.
        name: a label for the aggregate.
    """
    steps = list(normalization or [])
    if not 1 <= len(job_ids) <= 20:
        raise invalid_argument("job_ids", "give 1 to 20 job ids")
    if not 1 <= len(dedup_key) <= 3 or len(set(dedup_key)) != len(dedup_key):
        raise invalid_argument("dedup_key", "give 1 to 3 distinct fields")
    for key in dedup_key:
        if key not in KEY_FIELDS and not _COLUMN_KEY.match(key):
            raise invalid_argument(
                "dedup_key", f"{echo(key)} is not a key field; use {', '.join(KEY_FIELDS)} or fields.<column>"
            )
    if len(steps) != len(set(steps)):
        raise invalid_argument("normalization", "each step may appear once")
    if not 0.5 <= similarity_threshold <= 1.0:
        raise invalid_argument(
            "similarity_threshold", f"must be between 0.5 and 1.0 (got {echo(similarity_threshold)})"
        )
    if name is not None and not 1 <= len(name.strip()) <= 80:
        raise invalid_argument("name", "must be 1 to 80 characters")
    jobs = [job(session, jid) for jid in dict.fromkeys(job_ids)]
    for j in jobs:
        if j["status"] != "completed":
            why = "process it first" if j["status"] == "queued" else f"it failed: {j['error']}"
            raise invalid_transition("job", j["job_id"], j["status"], "aggregated", why)
    records = [r for j in jobs for r in j["records"]]
    items = deduplicate(records, list(dedup_key), steps, similarity_threshold)
    number = session["counters"]["next_aggregate"]
    session["counters"]["next_aggregate"] = number + 1
    agg_id = f"AG-{number}"
    job_set = {j["job_id"] for j in jobs}
    for older in session["aggregates"].values():
        if older["superseded_by"] is None and set(older["job_ids"]) <= job_set:
            older["superseded_by"] = agg_id
    entry = {
        "aggregate_id": agg_id,
        "name": (name or "").strip() or agg_id,
        "job_ids": [j["job_id"] for j in jobs],
        "dedup_key": list(dedup_key),
        "normalization": steps,
        "similarity_threshold": similarity_threshold,
        "input_records": len(records),
        "duplicates_removed": len(records) - len(items),
        "items": items,
        "created_at": now(session),
        "superseded_by": None,
    }
    session["aggregates"][agg_id] = entry
    return {"aggregate": _head(entry)}


@tool("read", returns=["aggregate", "items"])
def get_aggregate(session: dict, aggregate_id: str, offset: int = 0, limit: int = 20) -> dict:
    """Show an aggregate's settings and a page of its merged items (with duplicates, outlets and URLs).

    Args:
        aggregate_id: the aggregate, e.g. "AG-1".
        offset: index of the first item to show.
        limit: at most this many items (1-100).
    """
    agg = aggregate_of(session, aggregate_id)
    if offset < 0 or not 1 <= limit <= 100:
        raise invalid_argument("offset/limit", "offset must be >= 0 and limit between 1 and 100")
    return {"aggregate": _head(agg), "items": agg["items"][offset : offset + limit]}
