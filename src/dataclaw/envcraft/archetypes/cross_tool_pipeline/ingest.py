"""Phase 1, ingest: source registration and multi-format ingestion into jobs.

Each input becomes a job whose format is detected from the input (a file extension, otherwise a text query)
and whose type is derived from the format — text_query → search, audio/video → transcribe,
csv/xlsx/json → parse — so the agent never chooses a processor, the pipeline does."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any, Literal

from dataclaw.envcraft.archetypes.cross_tool_pipeline.normalize import STOPWORDS, tokens
from dataclaw.envcraft.runtime import EnvError, ErrorCategory, invalid_argument, invalid_reference, now, tool
from dataclaw.envcraft.runtime.errors import echo

InputFormat = Literal["text_query", "audio", "video", "csv", "xlsx", "json"]
JobStatus = Literal["queued", "completed", "failed"]
JobType = Literal["search", "transcribe", "parse"]
MAX_INPUTS = 10


def source(session: dict[str, Any], source_id: str) -> dict[str, Any]:
    if source_id not in session["sources"]:
        raise invalid_reference("registered source", source_id, sorted(session["sources"]))
    return session["sources"][source_id]


def job(session: dict[str, Any], job_id: str) -> dict[str, Any]:
    if job_id not in session["jobs"]:
        raise invalid_reference("job", job_id, list(session["jobs"]))
    return session["jobs"][job_id]


def detect_format(session: dict[str, Any], text: str) -> str:
    """The input format from the file extension; anything without a known extension is a text query."""
    suffix = PurePosixPath(text.strip()).suffix.lower()
    for name, spec in session["formats"].items():
        if suffix and suffix in spec["extensions"]:
            return name
    return "text_query"


def _items(feed: dict[str, Any]) -> list[str]:
    return feed.get("media", []) + feed.get("tables", [])


def _check_input(session: dict[str, Any], src: dict[str, Any], text: str, fmt: str) -> None:
    allowed = session["source_kinds"][src["kind"]]
    if fmt not in allowed:
        raise EnvError(
            ErrorCategory.INVALID_ARGUMENT,
            f"Source {src['source_id']} is a {src['kind']} and accepts {', '.join(allowed)}, "
            f"not {fmt} ({echo(text)}).",
            field="inputs",
        )
    if fmt == "text_query":
        if not 2 <= len(text) <= 200 or not [t for t in tokens(text) if t not in STOPWORDS]:
            raise invalid_argument("inputs", f"{echo(text)} is not a usable search query (2-200 characters)")
        return
    feed = session["feeds"][src["source_id"]]
    if text not in _items(feed):
        raise invalid_reference(f"item of {src['source_id']}", text, _items(feed))
    media = session["corpus"]["media"].get(text)
    if media is not None and media["kind"] != fmt:
        raise invalid_argument("inputs", f"{text} is a {media['kind']} recording, not {fmt}")
    table = session["corpus"]["tables"].get(text)
    if table is not None and table["format"] != fmt:
        raise invalid_argument("inputs", f"{text} is a {table['format']} table, not {fmt}")


@tool("read", returns=["sources", "available"])
def list_sources(session: dict) -> dict:
    """List registered sources and the feeds that could still be registered (with their kinds)."""
    available = [
        {"feed_id": fid, "name": f["name"], "kind": f["kind"]}
        for fid, f in session["feeds"].items()
        if fid not in session["sources"]
    ]
    return {"sources": list(session["sources"].values()), "available": available}


@tool("read", returns=["source_id", "kind", "accepts", "items"])
def list_source_items(session: dict, source_id: str) -> dict:
    """Show what a registered source offers: the outlets a news index searches, or the recordings/tables
    (file names) a feed, archive or portal holds, plus the input formats it accepts.

    Args:
        source_id: a registered source, e.g. "aurora-news-index".
    """
    src = source(session, source_id)
    feed = session["feeds"][source_id]
    out: dict[str, Any] = {"source_id": source_id, "kind": src["kind"]}
    out["accepts"] = session["source_kinds"][src["kind"]]
    corpus = session["corpus"]
    items = [{"outlet": o} for o in feed.get("outlets", [])]
    items += [
        {"file": m, "title": corpus["media"][m]["title"], "kind": corpus["media"][m]["kind"]}
        for m in feed.get("media", [])
    ]
    items += [
        {"file": t, "title": corpus["tables"][t]["title"], "format": corpus["tables"][t]["format"]}
        for t in feed.get("tables", [])
    ]
    out["items"] = items
    return out


@tool("write", fields=["sources"], returns=["source"])
def register_source(session: dict, feed_id: str) -> dict:
    """Register an available feed as a source so its content can be ingested.

    Args:
        feed_id: a feed listed under "available" by list_sources, e.g. "eastside-gazette-feed".
    """
    if feed_id not in session["feeds"]:
        raise invalid_reference("feed", feed_id, sorted(session["feeds"]))
    if feed_id in session["sources"]:
        raise invalid_argument("feed_id", f"{feed_id} is already registered")
    feed = session["feeds"][feed_id]
    entry = {"source_id": feed_id, "name": feed["name"], "kind": feed["kind"], "registered_at": now(session)}
    session["sources"][feed_id] = entry
    return {"source": entry}


@tool("write", fields=["jobs", "counters"], returns=["jobs"])
def ingest(
    session: dict,
    source_id: str,
    inputs: list[str],
    input_format: InputFormat | None = None,
    max_results: int = 10,
) -> dict:
    """Ingest one or more inputs from a source; each becomes a queued job with an auto-derived type.

    Text queries become search jobs, audio/video files transcribe jobs, csv/xlsx/json tables parse jobs.

    Args:
        source_id: the registered source to read from.
        inputs: search queries (e.g. "tram delay") or file names from list_source_items
            (e.g. "transit-talk-ep112.mp3"); 1-10 per call.
        input_format: force one format for all inputs; by default it is detected from each input.
        max_results: for search jobs, the most articles to keep (1-50).
    """
    src = source(session, source_id)
    if not 1 <= len(inputs) <= MAX_INPUTS:
        raise invalid_argument("inputs", f"give 1 to {MAX_INPUTS} inputs")
    if not 1 <= max_results <= 50:
        raise invalid_argument("max_results", "must be between 1 and 50")
    planned = []
    for raw in inputs:
        text = raw.strip()
        fmt = input_format or detect_format(session, text)
        _check_input(session, src, text, fmt)
        for other in session["jobs"].values():
            same = other["source_id"] == source_id and other["input"].casefold() == text.casefold()
            if same and other["status"] != "failed":
                raise invalid_argument("inputs", f"{echo(text)} is already ingested as {other['job_id']}")
        if any(p[0].casefold() == text.casefold() for p in planned):
            raise invalid_argument("inputs", f"{echo(text)} is listed twice")
        planned.append((text, fmt))
    created = []
    for text, fmt in planned:
        number = session["counters"]["next_job"]
        session["counters"]["next_job"] = number + 1
        entry = {
            "job_id": f"J-{number}",
            "source_id": source_id,
            "input": text,
            "input_format": fmt,
            "job_type": session["formats"][fmt]["job_type"],
            "status": "queued",
            "options": {"max_results": max_results},
            "created_at": now(session),
            "processed_at": None,
            "error": None,
            "records": [],
        }
        session["jobs"][entry["job_id"]] = entry
        created.append({k: entry[k] for k in ("job_id", "input", "input_format", "job_type", "status")})
    return {"jobs": created}


def job_summary(j: dict[str, Any]) -> dict[str, Any]:
    keys = ("job_id", "source_id", "input", "input_format", "job_type", "status", "error", "processed_at")
    return {k: j[k] for k in keys} | {"record_count": len(j["records"])}


@tool("read", returns=["jobs", "count"])
def list_jobs(session: dict, status: JobStatus | None = None, job_type: JobType | None = None) -> dict:
    """List jobs with their derived type, status and result size.

    Args:
        status: only jobs in this status.
        job_type: only jobs of this type.
    """
    rows = [
        job_summary(j)
        for j in session["jobs"].values()
        if (status is None or j["status"] == status) and (job_type is None or j["job_type"] == job_type)
    ]
    return {"jobs": rows, "count": len(rows)}


@tool("read", returns=["job", "records"])
def get_job(session: dict, job_id: str, offset: int = 0, limit: int = 20) -> dict:
    """Show a job and a page of its unified records (the intermediate representation all formats share).

    Args:
        job_id: the job, e.g. "J-1".
        offset: index of the first record to show.
        limit: at most this many records (1-100).
    """
    j = job(session, job_id)
    if offset < 0 or not 1 <= limit <= 100:
        raise invalid_argument("offset/limit", "offset must be >= 0 and limit between 1 and 100")
    return {"job": job_summary(j), "records": j["records"][offset : offset + limit]}
