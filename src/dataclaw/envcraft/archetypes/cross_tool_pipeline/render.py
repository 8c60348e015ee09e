"""Phase 4, render: format an aggregate with a format strategy (markdown, bullets, JSON, graph description)
into a stored report."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any, Literal

from dataclaw.envcraft.archetypes.cross_tool_pipeline.aggregate import aggregate_of
from dataclaw.envcraft.runtime import invalid_argument, invalid_reference, now, stale_warning, tool

Format = Literal["markdown", "bullets", "json", "graph"]


def _others(item: dict[str, Any]) -> list[str]:
    return [o for o in item["outlets"][1:] if o]


def _markdown(title: str, agg: dict[str, Any]) -> str:
    lines = [
        f"# {title}",
        "",
        f"{len(agg['items'])} items from {len(agg['job_ids'])} jobs; "
        f"{agg['duplicates_removed']} duplicates merged (key: {', '.join(agg['dedup_key'])}).",
        "",
    ]
    for n, item in enumerate(agg["items"], 1):
        lines.append(f"## {n}. {item['title']}")
        who = item["speaker"] or item["outlet"]
        lines.append(
            f"*{who}, {item['date']}*"
            + (f" (also reported by: {', '.join(_others(item))})" if _others(item) else "")
        )
        lines += ["", f"> {item['text']}", "", f"Source: {item['url']}", ""]
    return "\n".join(lines).rstrip() + "\n"


def _bullets(title: str, agg: dict[str, Any]) -> str:
    lines = [f"{title}:"]
    for item in agg["items"]:
        extra = f" [+{len(item['duplicates'])} duplicate(s)]" if item["duplicates"] else ""
        lines.append(f"- {item['title']} ({item['speaker'] or item['outlet']}, {item['date']}){extra}")
    return "\n".join(lines) + "\n"


def _json(title: str, agg: dict[str, Any]) -> str:
    keep = (
        "item_id",
        "kind",
        "title",
        "text",
        "outlet",
        "date",
        "url",
        "speaker",
        "fields",
        "entities",
        "outlets",
        "urls",
    )
    body = {
        "title": title,
        "aggregate_id": agg["aggregate_id"],
        "items": [{k: it[k] for k in keep} for it in agg["items"]],
    }
    return json.dumps(body, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def _graph(title: str, agg: dict[str, Any]) -> str:
    """Actors (the speaker, else the outlet) linked to the entities their items mention, with counts."""
    edges: Counter[tuple[str, str]] = Counter()
    for item in agg["items"]:
        actor = item["speaker"] or item["outlet"]
        for entity in item["entities"]:
            edges[(actor, entity)] += 1
    actors = sorted({a for a, _ in edges})
    entities = sorted({e for _, e in edges})
    lines = [
        f"Graph '{title}': {len(actors) + len(entities)} nodes ({len(actors)} actors, {len(entities)} "
        f"entities), {len(edges)} edges."
    ]
    for (actor, entity), weight in sorted(edges.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"- {actor} → {entity} (mentioned in {weight} item(s))")
    return "\n".join(lines) + "\n"


RENDERERS: dict[str, Callable[[str, dict[str, Any]], str]] = {
    "markdown": _markdown,
    "bullets": _bullets,
    "json": _json,
    "graph": _graph,
}


@tool("write", fields=["reports", "counters"], returns=["report"])
def render_report(session: dict, aggregate_id: str, format: Format, title: str) -> dict:
    """Render an aggregate as a report: markdown, bullet summary, JSON, or a graph description of who
    mentions which entities.

    Args:
        aggregate_id: the aggregate to render, e.g. "AG-2".
        format: the output format.
        title: the report title (3-120 characters).
    """
    agg = aggregate_of(session, aggregate_id)
    title = title.strip()
    if not 3 <= len(title) <= 120:
        raise invalid_argument("title", "must be 3 to 120 characters")
    warnings = []
    if agg["superseded_by"]:
        warnings.append(
            stale_warning(
                f"{aggregate_id} was superseded by {agg['superseded_by']}, which covers more jobs; this "
                "report renders the older set.",
                aggregate_id=aggregate_id,
            )
        )
    number = session["counters"]["next_report"]
    session["counters"]["next_report"] = number + 1
    report = {
        "report_id": f"RP-{number}",
        "aggregate_id": aggregate_id,
        "format": format,
        "title": title,
        "item_count": len(agg["items"]),
        "content": RENDERERS[format](title, agg),
        "created_at": now(session),
    }
    session["reports"][report["report_id"]] = report
    return {"report": report, "warnings": warnings}


@tool("read", returns=["report"])
def get_report(session: dict, report_id: str) -> dict:
    """Show a rendered report with its content.

    Args:
        report_id: the report, e.g. "RP-1".
    """
    if report_id not in session["reports"]:
        raise invalid_reference("report", report_id, list(session["reports"]))
    return {"report": session["reports"][report_id]}
