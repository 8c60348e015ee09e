"""The deterministic evaluator: jobs reached the right status, the aggregate holds each expected story
exactly once (judged by URL groups, so any key/normalisation that merges correctly passes), and the
report renders a current aggregate in the asked format with the asked content."""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft.runtime import Evaluator, Scenario, failed_actions, penalty_score, warned_actions

EVALUATOR = Evaluator()


def _same(a: str, b: str) -> bool:
    return " ".join(a.casefold().split()) == " ".join(b.casefold().split())


def _job_present(state: dict[str, Any], spec: dict[str, Any]) -> bool:
    return any(
        j["source_id"] == spec["source_id"]
        and _same(j["input"], spec["input"])
        and j["status"] == spec["status"]
        for j in state["jobs"].values()
    )


@EVALUATOR.dimension("ingest_and_process", 0.2, "the expected inputs were ingested and processed", goal=True)
def ingest_and_process(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    specs = scenario.evaluation.get("jobs", [])
    if not specs:
        return 1.0, "no jobs expected"
    missing = [f"{s['source_id']}:{s['input']}" for s in specs if not _job_present(state, s)]
    return 1 - len(missing) / len(specs), "all present" if not missing else "missing: " + ", ".join(missing)


def aggregate_score(agg: dict[str, Any], groups: list[list[str]]) -> float:
    """Fraction of URL groups held by exactly one item (and by nothing else), scaled down by extra items."""
    where: dict[str, set[str]] = {}
    for item in agg["items"]:
        for url in item["urls"]:
            where.setdefault(url, set()).add(item["item_id"])
    good = 0
    for group in groups:
        holders = set().union(*(where.get(u, set()) for u in group))
        good += len(holders) == 1 and all(u in where for u in group)
    extra = max(0, len(agg["items"]) - len(groups))
    return good / len(groups) * penalty_score(extra, 0.2)


@EVALUATOR.dimension(
    "aggregation", 0.35, "the best current aggregate holds each expected story exactly once", goal=True
)
def aggregation(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    groups = scenario.evaluation.get("expected_groups", [])
    if not groups:
        return 1.0, "no aggregate expected"
    current = [a for a in state["aggregates"].values() if a["superseded_by"] is None]
    if not current:
        return 0.0, "no aggregate"
    best = max(current, key=lambda a: aggregate_score(a, groups))
    score = aggregate_score(best, groups)
    return score, f"{best['aggregate_id']}: {len(best['items'])} items for {len(groups)} expected stories"


@EVALUATOR.dimension(
    "report", 0.3, "a report of a current, correct aggregate in the asked format and content", goal=True
)
def report(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    spec = scenario.evaluation.get("report")
    if not spec:
        return 1.0, "no report expected"
    candidates = [r for r in state["reports"].values() if r["format"] == spec["format"]]
    if not candidates:
        return 0.0, f"no {spec['format']} report"
    groups = scenario.evaluation.get("expected_groups", [])
    best, best_note = 0.0, ""
    for r in candidates:
        agg = state["aggregates"].get(r["aggregate_id"], {})
        checks = [
            spec["title_contains"].casefold() in r["title"].casefold(),
            agg.get("superseded_by") is None,
        ]
        checks += [phrase in r["content"] for phrase in spec.get("content_contains", [])]
        if groups and agg:
            checks.append(aggregate_score(agg, groups) == 1.0)
        score = sum(checks) / len(checks)
        if score > best:
            best, best_note = score, f"{r['report_id']}: {sum(checks)}/{len(checks)} checks"
    return best, best_note


@EVALUATOR.dimension("efficiency", 0.15, "no stray jobs, few rejected calls, no stale renders")
def efficiency(state: dict[str, Any], scenario: Scenario) -> tuple[float, str]:
    allowed = scenario.evaluation.get("jobs", []) + scenario.evaluation.get("allowed_jobs", [])
    stray = [
        j["job_id"]
        for j in state["jobs"].values()
        if not any(j["source_id"] == s["source_id"] and _same(j["input"], s["input"]) for s in allowed)
    ]
    bad = failed_actions(
        state, "invalid_argument", "invalid_reference", "invalid_transition", "missing_field"
    )
    stale = warned_actions(state, "stale_information")
    score = penalty_score(len(stray), 0.2) * penalty_score(len(bad), 0.1) * penalty_score(len(stale), 0.5)
    return score, f"{len(stray)} stray job(s), {len(bad)} rejected call(s), {len(stale)} stale render(s)"
