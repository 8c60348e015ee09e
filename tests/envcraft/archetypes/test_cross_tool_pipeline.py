"""Mechanics of the cross-tool data-pipeline archetype: format detection and derived job types, the
processor dispatch table and failing jobs, dedup keys with normalisation chains and similarity, supersession,
format strategies, and behaviour-based evaluation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dataclaw.envcraft.archetypes.cross_tool_pipeline import CrossToolPipeline
from dataclaw.envcraft.archetypes.cross_tool_pipeline.normalize import jaccard, normalize, tokens

FULL = ["lowercase", "strip_punctuation", "collapse_whitespace"]
HD, SD, RADIO = (
    "council-hearing-2026-05-06-hd.mp4",
    "council-hearing-2026-05-06-sd.mp4",
    "radio-aurora-council-simulcast.mp3",
)


@pytest.fixture
def desk(tmp_path: Path) -> CrossToolPipeline:
    return CrossToolPipeline(tmp_path)


def _ok(out: dict) -> dict:
    assert out["status"] == "ok", out
    return out["data"]


def _err(out: dict, category: str) -> str:
    assert out["status"] == "error" and out["error"]["category"] == category, out
    return out["error"]["message"]


def _run(desk: CrossToolPipeline, scenario: str, upto: int | None = None) -> str:
    sid = desk.create_session(scenario)
    for step in desk.scenario(scenario).reference_solution[:upto]:
        _ok(desk.call(sid, step["tool"], **step["params"]))
    return sid


def test_normalisers_and_similarity_are_pure() -> None:
    assert normalize("  Line-4 Tram, DELAYED!  ", FULL) == "line 4 tram delayed"
    assert normalize("Café Düsseldorf", ["strip_accents", "lowercase"]) == "cafe dusseldorf"
    assert normalize("the delay of the tram", ["drop_stopwords", "sort_tokens"]) == "delay tram"
    assert normalize("Line 4.", []) == "Line 4."
    assert tokens("Line-4 extension, 2028") == ["line", "4", "extension", "2028"]
    assert jaccard({"a", "b"}, {"a", "b", "c"}) == pytest.approx(2 / 3) and jaccard(set(), set()) == 1.0


def test_job_type_is_derived_from_the_input_format(desk: CrossToolPipeline) -> None:
    sid = desk.create_session("council_hearing_graph")
    _ok(desk.call(sid, "register_source", feed_id="council-broadcast-archive"))
    _ok(desk.call(sid, "register_source", feed_id="aurora-open-data"))
    jobs = _ok(desk.call(sid, "ingest", source_id="council-broadcast-archive", inputs=[SD, RADIO]))["jobs"]
    assert [(j["input_format"], j["job_type"], j["status"]) for j in jobs] == [
        ("video", "transcribe", "queued"),
        ("audio", "transcribe", "queued"),
    ]
    tables = ["rider-survey-2026-q1.csv", "ridership-by-line-2025.xlsx", "stop-upgrades-2026.json"]
    jobs = _ok(desk.call(sid, "ingest", source_id="aurora-open-data", inputs=tables))["jobs"]
    assert [(j["job_id"], j["input_format"], j["job_type"]) for j in jobs] == [
        ("J-3", "csv", "parse"),
        ("J-4", "xlsx", "parse"),
        ("J-5", "json", "parse"),
    ]
    search = _ok(desk.call(sid, "ingest", source_id="aurora-news-index", inputs=["fare rise"]))["jobs"][0]
    assert (search["input_format"], search["job_type"]) == ("text_query", "search")


def test_ingest_guards_change_nothing(desk: CrossToolPipeline) -> None:
    sid = desk.create_session("council_hearing_graph")
    before = desk.get_session_state(sid)
    _err(desk.call(sid, "ingest", source_id="council-broadcast-archive", inputs=[SD]), "invalid_reference")
    _err(desk.call(sid, "register_source", feed_id="aurora-news-index"), "invalid_argument")
    _err(desk.call(sid, "register_source", feed_id="twitter-firehose"), "invalid_reference")
    msg = _err(desk.call(sid, "ingest", source_id="aurora-news-index", inputs=[SD]), "invalid_argument")
    assert "accepts text_query" in msg
    _err(
        desk.call(sid, "ingest", source_id="transit-talk-podcast", inputs=["ep-999.mp3"]), "invalid_reference"
    )
    forced = desk.call(
        sid,
        "ingest",
        source_id="transit-talk-podcast",
        inputs=["transit-talk-ep112.mp3"],
        input_format="video",
    )
    _err(forced, "invalid_argument")
    _err(desk.call(sid, "ingest", source_id="aurora-news-index", inputs=["the of"]), "invalid_argument")
    _err(desk.call(sid, "ingest", source_id="aurora-news-index", inputs=[]), "invalid_argument")
    _err(desk.call(sid, "ingest", source_id="aurora-news-index", inputs=["tram", "Tram"]), "invalid_argument")
    after = desk.get_session_state(sid)
    assert after["jobs"] == before["jobs"] == {} and after["counters"] == before["counters"]
    _ok(desk.call(sid, "ingest", source_id="aurora-news-index", inputs=["tram delay"]))
    assert "already ingested as J-1" in _err(
        desk.call(sid, "ingest", source_id="aurora-news-index", inputs=["Tram delay "]), "invalid_argument"
    )


def test_processing_dispatch_unified_records_and_failures(desk: CrossToolPipeline) -> None:
    sid = desk.create_session("council_hearing_graph")
    _err(desk.call(sid, "process_jobs"), "invalid_argument")  # nothing queued
    for feed in ("council-broadcast-archive", "aurora-open-data"):
        _ok(desk.call(sid, "register_source", feed_id=feed))
    _ok(desk.call(sid, "ingest", source_id="council-broadcast-archive", inputs=[HD, RADIO]))
    _ok(
        desk.call(
            sid,
            "ingest",
            source_id="aurora-open-data",
            inputs=["rider-survey-2026-q1.csv", "stop-upgrades-2026.json"],
        )
    )
    _ok(desk.call(sid, "ingest", source_id="aurora-news-index", inputs=["night buses"]))
    done = {p["job_id"]: p for p in _ok(desk.call(sid, "process_jobs"))["processed"]}
    assert [done[j]["status"] for j in ("J-1", "J-2", "J-3", "J-4", "J-5")] == [
        "failed",
        "completed",
        "completed",
        "failed",
        "completed",
    ]
    assert "truncated" in done["J-1"]["error"] and "not valid JSON" in done["J-4"]["error"]
    state = desk.get_session_state(sid)
    shapes = {tuple(sorted(state["jobs"][j]["records"][0])) for j in ("J-2", "J-3", "J-5")}
    assert len(shapes) == 1  # one intermediate representation for transcripts, table rows and articles
    row = state["jobs"]["J-3"]["records"][3]
    assert (
        row["kind"] == "table_row"
        and row["fields"]["satisfaction_pct"] == 52
        and row["entities"] == ["Line 4"]
    )
    seg = state["jobs"]["J-2"]["records"][1]
    assert (seg["speaker"], seg["start_s"], seg["url"]) == (
        "Councillor Ines Varga",
        60,
        f"media://{RADIO}#t=60",
    )
    assert "Soil survey" in seg["entities"]
    article = state["jobs"]["J-5"]["records"][0]
    assert article["kind"] == "article" and article["outlet"] == "Valley Courier"
    msg = _err(desk.call(sid, "process_jobs", job_ids=["J-2"]), "invalid_transition")
    assert "'completed'" in msg and "already ran" in msg
    assert "final" in _err(desk.call(sid, "process_jobs", job_ids=["J-1"]), "invalid_transition")
    _err(desk.call(sid, "process_jobs", job_ids=["J-9"]), "invalid_reference")
    assert _ok(desk.call(sid, "list_jobs", status="failed"))["count"] == 2
    # a failed input may be ingested again (it fails again: the file is corrupt)
    assert (
        _ok(desk.call(sid, "ingest", source_id="council-broadcast-archive", inputs=[HD]))["jobs"][0]["job_id"]
        == "J-6"
    )


def test_search_is_restricted_to_the_sources_outlets_and_bounded(desk: CrossToolPipeline) -> None:
    sid = desk.create_session("line4_press_briefing")
    _ok(desk.call(sid, "register_source", feed_id="eastside-gazette-feed"))
    _ok(desk.call(sid, "ingest", source_id="aurora-news-index", inputs=["tram delay"], max_results=3))
    _ok(desk.call(sid, "ingest", source_id="eastside-gazette-feed", inputs=["tram delay"]))
    _ok(desk.call(sid, "process_jobs"))
    state = desk.get_session_state(sid)
    j1, j2 = state["jobs"]["J-1"]["records"], state["jobs"]["J-2"]["records"]
    assert len(j1) == 3 and [r["date"] for r in j1] == sorted((r["date"] for r in j1), reverse=True)
    assert "Eastside Gazette" not in {r["outlet"] for r in j1} and [r["outlet"] for r in j2] == [
        "Eastside Gazette"
    ]
    page = _ok(desk.call(sid, "get_job", job_id="J-1", offset=1, limit=1))
    assert page["job"]["record_count"] == 3 and page["records"][0]["record_id"] == "J-1.2"


@pytest.mark.parametrize(
    ("key", "steps", "items"),
    [
        (["title"], [], 9),  # exact: case and a trailing period keep syndicated copies apart
        (["title"], ["lowercase"], 8),
        (["title"], FULL, 7),  # the three syndicated copies become one story
        (["url"], [], 9),  # the same article found by two queries merges by URL
        (["outlet"], FULL, 6),
    ],
)
def test_dedup_key_and_normalisation_chain(
    desk: CrossToolPipeline, key: list, steps: list, items: int
) -> None:
    sid = _run(desk, "line4_press_briefing", upto=6)
    agg = _ok(
        desk.call(sid, "aggregate", job_ids=["J-1", "J-2", "J-3", "J-4"], dedup_key=key, normalization=steps)
    )
    assert agg["aggregate"]["item_count"] == items and agg["aggregate"]["input_records"] == 15
    assert agg["aggregate"]["duplicates_removed"] == 15 - items


def test_similarity_threshold_merges_near_duplicate_statements(desk: CrossToolPipeline) -> None:
    sid = _run(desk, "council_hearing_graph", upto=7)
    exact = _ok(desk.call(sid, "aggregate", job_ids=["J-3", "J-2"], dedup_key=["text"], normalization=FULL))
    fuzzy = _ok(
        desk.call(
            sid,
            "aggregate",
            job_ids=["J-3", "J-2"],
            dedup_key=["text"],
            normalization=FULL,
            similarity_threshold=0.8,
        )
    )
    assert exact["aggregate"]["item_count"] == 11 and fuzzy["aggregate"]["item_count"] == 9
    items = _ok(desk.call(sid, "get_aggregate", aggregate_id="AG-2", limit=100))["items"]
    varga = items[1]
    assert varga["speaker"] == "Councillor Ines Varga" and varga["duplicates"] == ["J-2.2"]
    assert varga["urls"] == [f"media://{SD}#t=35", f"media://{RADIO}#t=60"]
    keyed = _ok(
        desk.call(
            sid,
            "aggregate",
            job_ids=["J-3", "J-2"],
            dedup_key=["speaker", "text"],
            normalization=FULL,
            similarity_threshold=0.8,
        )
    )
    assert keyed["aggregate"]["item_count"] == 9


def test_aggregate_guards(desk: CrossToolPipeline) -> None:
    sid = _run(desk, "council_hearing_graph", upto=6)  # J-3 (SD) still queued, J-1 failed
    assert "process it first" in _err(
        desk.call(sid, "aggregate", job_ids=["J-3"], dedup_key=["text"]), "invalid_transition"
    )
    assert "it failed" in _err(
        desk.call(sid, "aggregate", job_ids=["J-1", "J-2"], dedup_key=["text"]), "invalid_transition"
    )
    _err(desk.call(sid, "aggregate", job_ids=["J-7"], dedup_key=["text"]), "invalid_reference")
    _err(desk.call(sid, "aggregate", job_ids=["J-2"], dedup_key=["text", "text"]), "invalid_argument")
    _err(desk.call(sid, "aggregate", job_ids=["J-2"], dedup_key=["fields"]), "invalid_argument")
    _err(
        desk.call(sid, "aggregate", job_ids=["J-2"], dedup_key=["text"], similarity_threshold=0.2),
        "invalid_argument",
    )
    _err(
        desk.call(
            sid, "aggregate", job_ids=["J-2"], dedup_key=["text"], normalization=["lowercase", "lowercase"]
        ),
        "invalid_argument",
    )
    state = desk.get_session_state(sid)
    assert state["aggregates"] == {} and state["counters"]["next_aggregate"] == 1


def test_supersession_and_stale_render(desk: CrossToolPipeline) -> None:
    sid = _run(desk, "line4_press_briefing", upto=6)
    _ok(desk.call(sid, "aggregate", job_ids=["J-1"], dedup_key=["url"]))
    _ok(desk.call(sid, "aggregate", job_ids=["J-3"], dedup_key=["url"]))
    _ok(desk.call(sid, "aggregate", job_ids=["J-1", "J-2"], dedup_key=["url"]))
    aggs = desk.get_session_state(sid)["aggregates"]
    assert [aggs[a]["superseded_by"] for a in ("AG-1", "AG-2", "AG-3")] == ["AG-3", None, None]
    out = desk.call(sid, "render_report", aggregate_id="AG-1", format="bullets", title="Old set")
    assert out["status"] == "ok" and out["warnings"][0]["category"] == "stale_information"
    assert "warnings" not in desk.call(
        sid, "render_report", aggregate_id="AG-3", format="bullets", title="New set"
    )
    _err(
        desk.call(sid, "render_report", aggregate_id="AG-9", format="json", title="Nope"), "invalid_reference"
    )
    _err(desk.call(sid, "render_report", aggregate_id="AG-3", format="json", title="  "), "invalid_argument")
    assert desk.evaluate_session(sid)["dimensions"]["efficiency"]["score"] < 0.5


def test_format_strategies(desk: CrossToolPipeline) -> None:
    sid = _run(desk, "council_hearing_graph", upto=8)
    contents = {}
    for fmt in ("markdown", "bullets", "json", "graph"):
        contents[fmt] = _ok(
            desk.call(sid, "render_report", aggregate_id="AG-1", format=fmt, title="Hearing")
        )["report"]["content"]
    assert contents["markdown"].startswith(
        "# Hearing\n\n9 items from 2 jobs; 6 duplicates merged (key: text)."
    )
    assert "*Councillor Ines Varga, 2026-05-06* (also reported by: Radio Aurora)" in contents["markdown"]
    bullets = contents["bullets"].splitlines()
    assert bullets[0] == "Hearing:" and len(bullets) == 10 and bullets[2].endswith("[+1 duplicate(s)]")
    body = json.loads(contents["json"])
    assert (
        body["aggregate_id"] == "AG-1"
        and len(body["items"]) == 9
        and body["items"][1]["outlets"] == ["City Council TV", "Radio Aurora"]
    )
    graph = contents["graph"].splitlines()
    assert graph[0] == "Graph 'Hearing': 12 nodes (5 actors, 7 entities), 13 edges."
    assert "- Councillor Ines Varga → Kessler Rail Systems (mentioned in 1 item(s))" in graph
    assert _ok(desk.call(sid, "get_report", report_id="RP-4"))["report"]["format"] == "graph"


def test_evaluator_rewards_correct_merges_only(desk: CrossToolPipeline) -> None:
    sid = _run(desk, "line4_press_briefing")
    assert desk.evaluate_session(sid)["overall_score"] == 1.0
    sid = _run(desk, "line4_press_briefing", upto=6)
    _ok(
        desk.call(
            sid,
            "aggregate",
            job_ids=["J-1", "J-2", "J-3", "J-4"],
            dedup_key=["title"],
            normalization=["lowercase"],
        )
    )
    _ok(
        desk.call(
            sid,
            "render_report",
            aggregate_id="AG-1",
            format="markdown",
            title="Line 4 extension: press coverage",
        )
    )
    ev = desk.evaluate_session(sid)
    assert ev["dimensions"]["aggregation"]["score"] < 1.0 and ev["dimensions"]["report"]["score"] < 1.0
    assert ev["dimensions"]["ingest_and_process"]["score"] == 1.0 and ev["overall_score"] < 0.9
    sid = _run(desk, "council_hearing_graph", upto=7)
    _ok(desk.call(sid, "aggregate", job_ids=["J-3", "J-2"], dedup_key=["text"], normalization=FULL))
    assert desk.evaluate_session(sid)["dimensions"]["aggregation"]["score"] < 0.7


def test_table_rows_merge_on_a_column_key_and_combine_their_fields(desk: CrossToolPipeline) -> None:
    sid = _run(desk, "line_figures_digest", upto=6)
    jobs = {j["job_id"]: j["status"] for j in _ok(desk.call(sid, "list_jobs", job_type="parse"))["jobs"]}
    assert jobs == {"J-1": "completed", "J-2": "completed", "J-3": "failed"}
    _err(desk.call(sid, "aggregate", job_ids=["J-1", "J-2"], dedup_key=["fields."]), "invalid_argument")
    _err(desk.call(sid, "aggregate", job_ids=["J-1", "J-2"], dedup_key=["line"]), "invalid_argument")
    exact = _ok(desk.call(sid, "aggregate", job_ids=["J-1", "J-2"], dedup_key=["fields.line"]))
    assert exact["aggregate"]["item_count"] == 8  # "LINE 4" and "Bus  44e" do not match as typed
    agg = _ok(
        desk.call(
            sid,
            "aggregate",
            job_ids=["J-1", "J-2"],
            dedup_key=["fields.line"],
            normalization=["lowercase", "collapse_whitespace"],
        )
    )
    assert agg["aggregate"]["item_count"] == 6 and agg["aggregate"]["superseded_by"] is None
    items = _ok(desk.call(sid, "get_aggregate", aggregate_id="AG-2"))["items"]
    line4 = items[3]["fields"]
    assert line4 == {
        "line": "Line 4",
        "respondents": 903,
        "satisfaction_pct": 52,
        "top_complaint": "construction delays",
        "avg_weekday_riders": 18100,
        "change_vs_2024_pct": 6.2,
    }
    assert "avg_weekday_riders" not in items[5]["fields"]  # night buses are only in the survey
    report = _ok(
        desk.call(
            sid, "render_report", aggregate_id="AG-2", format="json", title="Line figures for the board"
        )
    )
    assert json.loads(report["report"]["content"])["items"][3]["fields"]["avg_weekday_riders"] == 18100
    dims = desk.evaluate_session(sid)["dimensions"]
    assert dims["aggregation"]["score"] == dims["report"]["score"] == 1.0
    assert dims["efficiency"]["score"] < 1.0  # the two refused key declarations


def test_long_context_adds_search_distractors_without_changing_the_task(desk: CrossToolPipeline) -> None:
    sid = desk.create_session("line4_press_briefing", long_context=True)
    articles = desk.get_session_state(sid)["corpus"]["articles"]
    assert len(articles) == 12 + 60 and len({a["url"] for a in articles}) == 72
    for step in desk.scenario("line4_press_briefing").reference_solution:
        _ok(desk.call(sid, step["tool"], **step["params"]))
    assert desk.evaluate_session(sid)["overall_score"] == 1.0
    _ok(desk.call(sid, "ingest", source_id="aurora-news-index", inputs=["ticket machines"], max_results=50))
    _ok(desk.call(sid, "process_jobs"))
    records = _ok(desk.call(sid, "get_job", job_id="J-5", limit=100))["records"]
    assert len(records) == 10 and all(r["title"].startswith("Ticket machines replaced at") for r in records)
