"""The repository layer: the media-monitoring world (feeds, articles, recordings, tables, entity gazetteer)
read once from ``data/`` into the session template. Only this module touches ``data/``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"


def _read(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def _default_state() -> dict[str, Any]:
    feeds = _read("feeds.json")
    formats = _read("formats.json")
    return {
        "workspace_account": None,
        "feeds": feeds,
        "formats": formats["formats"],
        "source_kinds": formats["source_kinds"],
        "entities": _read("entities.json"),
        "corpus": {
            "articles": _read("articles.json"),
            "media": _read("media.json"),
            "tables": _read("tables.json"),
        },
        "sources": {
            fid: {
                "source_id": fid,
                "name": f["name"],
                "kind": f["kind"],
                "registered_at": "2026-01-10T09:00:00+00:00",
            }
            for fid, f in feeds.items()
            if f["registered"]
        },
        "jobs": {},
        "aggregates": {},
        "reports": {},
        "counters": {"next_job": 1, "next_aggregate": 1, "next_report": 1},
    }


# The template every session is deep-copied from (never mutated: the runtime copies it).
DEFAULT_STATE: dict[str, Any] = _default_state()


def long_context_articles() -> list[dict[str, Any]]:
    """Routine transit news for long-context sessions: distractors for every search, matching none of the
    scenario queries (``data/long_context.json``, filled deterministically from its lists)."""
    spec = _read("long_context.json")
    outlets = list(spec["outlets"].items())
    out = []
    for i in range(spec["count"]):
        tpl = spec["templates"][i % len(spec["templates"])]
        outlet, domain = outlets[i % len(outlets)]
        slots = {
            "n": spec["numbers"][i % len(spec["numbers"])],
            "m": spec["minutes"][i % len(spec["minutes"])],
            "stop": spec["stops"][i % len(spec["stops"])],
            "street": spec["streets"][i % len(spec["streets"])],
            "date": f"2026-06-{1 + i % 28:02d}",
        }
        out.append(
            {
                "doc_id": f"lc{i + 1:03d}",
                "outlet": outlet,
                "published": f"2026-04-{1 + i % 30:02d}",
                "url": f"https://{domain}/archive/{i + 1:03d}",
                "title": tpl["title"].format(**slots),
                "text": tpl["text"].format(**slots),
            }
        )
    return out
