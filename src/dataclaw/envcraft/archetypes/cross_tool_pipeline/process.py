"""Phase 2, process: a dispatch table keyed by job type selects a deterministic simulator over the world
corpus — search ranks articles, transcribe reads recording segments, parse reads table rows — and every
simulator emits the same unified record shape. A simulator failure (a corrupt recording, a malformed
table) fails the job, not the call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dataclaw.envcraft.archetypes.cross_tool_pipeline.ingest import job
from dataclaw.envcraft.archetypes.cross_tool_pipeline.normalize import STOPWORDS, tokens
from dataclaw.envcraft.runtime import invalid_argument, invalid_transition, now, tool


class JobFailure(Exception):
    """The input cannot be processed; the message is shown to the agent as the job's error."""


def _entities(session: dict[str, Any], text: str) -> list[str]:
    """Gazetteer matching on whole tokens: deterministic entity extraction."""
    padded = f" {' '.join(tokens(text))} "
    return sorted(
        name
        for name, aliases in session["entities"].items()
        if any(f" {' '.join(tokens(a))} " in padded for a in aliases)
    )


def _record(j: dict[str, Any], index: int, **fields: Any) -> dict[str, Any]:
    base = {"title": None, "text": None, "outlet": None, "date": None, "url": None, "speaker": None}
    base |= {"start_s": None, "end_s": None, "fields": None, "entities": []}
    return (
        {"record_id": f"{j['job_id']}.{index + 1}", "job_id": j["job_id"], "source_id": j["source_id"]}
        | base
        | fields
    )


def _search(session: dict[str, Any], j: dict[str, Any]) -> list[dict[str, Any]]:
    terms = [t for t in tokens(j["input"]) if t not in STOPWORDS]
    outlets = set(session["feeds"][j["source_id"]].get("outlets", []))
    hits = []
    for art in session["corpus"]["articles"]:
        if art["outlet"] not in outlets:
            continue
        words = tokens(art["title"] + " " + art["text"])
        if all(any(w.startswith(t) for w in words) for t in terms):  # every term, as a word prefix
            hits.append(art)
    hits.sort(key=lambda a: (a["published"], a["doc_id"]), reverse=True)
    return [
        _record(
            j,
            i,
            kind="article",
            title=a["title"],
            text=a["text"],
            outlet=a["outlet"],
            date=a["published"],
            url=a["url"],
            entities=_entities(session, a["title"] + " " + a["text"]),
        )
        for i, a in enumerate(hits[: j["options"]["max_results"]])
    ]


def _transcribe(session: dict[str, Any], j: dict[str, Any]) -> list[dict[str, Any]]:
    media = session["corpus"]["media"][j["input"]]
    if media.get("corrupt"):
        raise JobFailure(f"cannot transcribe {j['input']}: {media['corrupt']}")
    return [
        _record(
            j,
            i,
            kind="transcript_segment",
            title=f"{media['title']} @ {s['start'] // 60:02d}:{s['start'] % 60:02d}",
            text=s["text"],
            outlet=media["outlet"],
            date=media["recorded"],
            url=f"media://{j['input']}#t={s['start']}",
            speaker=s["speaker"],
            start_s=s["start"],
            end_s=s["end"],
            entities=_entities(session, s["text"]),
        )
        for i, s in enumerate(media["segments"])
    ]


def _parse(session: dict[str, Any], j: dict[str, Any]) -> list[dict[str, Any]]:
    table = session["corpus"]["tables"][j["input"]]
    if table.get("malformed"):
        raise JobFailure(f"cannot parse {j['input']}: {table['malformed']}")
    out = []
    for i, row in enumerate(table["rows"]):
        fields = dict(zip(table["columns"], row, strict=True))
        text = "; ".join(f"{c}: {v}" for c, v in fields.items())
        out.append(
            _record(
                j,
                i,
                kind="table_row",
                title=f"{table['title']}: {row[0]}",
                text=text,
                outlet=table["publisher"],
                date=table["published"],
                url=f"table://{j['input']}#row={i + 1}",
                fields=fields,
                entities=_entities(session, text),
            )
        )
    return out


PROCESSORS: dict[str, Callable[[dict[str, Any], dict[str, Any]], list[dict[str, Any]]]] = {
    "search": _search,
    "transcribe": _transcribe,
    "parse": _parse,
}


@tool("write", fields=["jobs"], returns=["processed"])
def process_jobs(session: dict, job_ids: list[str] | None = None) -> dict:
    """Run queued jobs through the processor for their type (search, transcribe or parse).

    A job that cannot be processed (e.g. a corrupt recording) ends as "failed" with an error; the others
    end as "completed" with their records.

    Args:
        job_ids: the jobs to run; omit to run every queued job.
    """
    if job_ids is None:
        targets = [j for j in session["jobs"].values() if j["status"] == "queued"]
        if not targets:
            raise invalid_argument("job_ids", "there are no queued jobs; ingest something first")
    else:
        if not job_ids:
            raise invalid_argument("job_ids", "give at least one job id, or omit it to run all queued jobs")
        targets = [job(session, jid) for jid in dict.fromkeys(job_ids)]
        for j in targets:
            if j["status"] != "queued":
                why = (
                    "it already ran" if j["status"] == "completed" else "failed jobs are final; ingest again"
                )
                raise invalid_transition("job", j["job_id"], j["status"], "processing", why)
    processed = []
    for j in targets:
        try:
            j["records"] = PROCESSORS[j["job_type"]](session, j)
            j["status"] = "completed"
        except JobFailure as exc:
            j["status"], j["error"] = "failed", str(exc)
        j["processed_at"] = now(session)
        processed.append(
            {
                "job_id": j["job_id"],
                "job_type": j["job_type"],
                "status": j["status"],
                "record_count": len(j["records"]),
                "error": j["error"],
            }
        )
    return {"processed": processed}
