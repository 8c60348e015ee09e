"""Mechanics of the bilateral-matching archetype: type-dispatched scoring and the 0-100 weighted sum,
top-K persistence, the pending → accepted | rejected lifecycle with its guards, re-ranking, filtered
listing and pool isolation."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dataclaw.envcraft.archetypes.bilateral_matching import BilateralMatchingEnv
from dataclaw.envcraft.archetypes.bilateral_matching.scoring import (
    PARTIAL_MATCH,
    jaccard,
    numeric_proximity,
    score_pair,
    string_match,
)

PLATFORM = "pool-helio-platform"


@pytest.fixture
def env(tmp_path: Path) -> BilateralMatchingEnv:
    return BilateralMatchingEnv(tmp_path)


def _ok(out: dict) -> dict:
    assert out["status"] == "ok", out
    return out["data"]


def _err(out: dict, category: str) -> str:
    assert out["status"] == "error" and out["error"]["category"] == category, out
    return out["error"]["message"]


# ---- scoring ---------------------------------------------------------------------------------------------


def test_per_type_scorers() -> None:
    assert numeric_proximity(8, 6) == 0.75 and numeric_proximity(0, 0) == 1.0
    assert numeric_proximity(5, "5") == 0.0 and numeric_proximity(True, 1) == 0.0
    assert string_match("Berlin", " berlin ") == 1.0
    assert string_match("Munich", "Munich (remote)") == PARTIAL_MATCH
    assert string_match("Berlin", "Hamburg") == 0.0 and string_match("x", 3) == 0.0
    assert jaccard(["Go", "kubernetes"], ["go", "terraform"]) == pytest.approx(1 / 3)
    assert jaccard([], []) == 0.0 and jaccard(["a"], "a") == 0.0


def test_weighted_sum_is_normalised_to_100_and_dispatches_on_demand_type() -> None:
    crit = {"skills": 2.0, "years": 1.0, "city": 1.0}
    demand = {"skills": ["sql", "python"], "years": 4, "city": "Berlin"}
    assert score_pair(crit, demand, demand) == (100.0, {"city": 1.0, "skills": 1.0, "years": 1.0})
    score, parts = score_pair(crit, demand, {"skills": ["sql"], "years": 2, "city": "Berlin-Mitte"})
    assert parts == {"city": 0.5, "skills": 0.5, "years": 0.5} and score == 50.0
    assert score_pair(crit, demand, {})[0] == 0.0  # missing attributes score nothing
    assert score_pair({"remote": 1.0}, {"remote": True}, {"remote": True})[0] == 100.0


@given(
    weights=st.dictionaries(st.sampled_from(["a", "b", "c"]), st.floats(0.01, 10), min_size=1),
    d=st.dictionaries(
        st.sampled_from(["a", "b", "c"]),
        st.integers(-50, 50) | st.text(max_size=4) | st.lists(st.text(max_size=2), max_size=3),
    ),
    s=st.dictionaries(
        st.sampled_from(["a", "b", "c"]), st.integers(-50, 50) | st.text(max_size=4) | st.booleans()
    ),
)
def test_scores_stay_in_range(weights: dict, d: dict, s: dict) -> None:
    score, parts = score_pair(weights, d, s)
    assert 0.0 <= score <= 100.0 and all(0.0 <= v <= 1.0 for v in parts.values())


# ---- matching and the lifecycle --------------------------------------------------------------------------


def test_run_matching_persists_sorted_top_k_per_demand(env: BilateralMatchingEnv) -> None:
    sid = env.create_session("platform_hiring_round")
    out = _ok(env.call(sid, "run_matching", pool_id=PLATFORM))
    j201 = out["shortlists"]["J-201"]
    assert [m["supply_id"] for m in j201] == ["R-101", "R-104", "R-107"]  # top_k = 3
    assert [m["rank"] for m in j201] == [1, 2, 3] and j201[0]["score"] == 91.68
    assert j201[0]["score"] >= j201[1]["score"] >= j201[2]["score"]
    assert set(j201[0]["breakdown"]) == {
        "skills",
        "years_experience",
        "seniority",
        "location",
        "salary_expectation",
    }
    state = env.get_session_state(sid)
    assert len(state["matches"]) == 6 and {m["status"] for m in state["matches"].values()} == {"pending"}
    # rerun is idempotent for pending proposals (same ids, same scores)
    again = _ok(env.call(sid, "run_matching", pool_id=PLATFORM, demand_id="J-201"))
    assert [m["match_id"] for m in again["shortlists"]["J-201"]] == ["M-1001", "M-1002", "M-1003"]
    assert len(env.get_session_state(sid)["matches"]) == 6
    _err(env.call(sid, "run_matching", pool_id=PLATFORM, demand_id="J-999"), "invalid_reference")
    _err(env.call(sid, "run_matching", pool_id="pool-nope"), "invalid_reference")


def test_accept_reject_lifecycle_and_guards(env: BilateralMatchingEnv) -> None:
    sid = env.create_session("platform_hiring_round")
    _ok(env.call(sid, "run_matching", pool_id=PLATFORM))
    _err(env.call(sid, "reject_match", match_id="M-1004", reason=" "), "missing_field")
    rej = _ok(env.call(sid, "reject_match", match_id="M-1004", reason="candidate withdrew"))["match"]
    assert rej["status"] == "rejected" and rej["note"] == "candidate withdrew" and rej["decided_at"]
    assert "only once" in _err(env.call(sid, "accept_match", match_id="M-1004"), "invalid_transition")
    _ok(env.call(sid, "accept_match", match_id="M-1001"))
    msg = _err(env.call(sid, "accept_match", match_id="M-1002"), "invalid_transition")
    assert "J-201 has all 1 opening(s) filled" in msg
    _err(env.call(sid, "reject_match", match_id="M-1001", reason="oops"), "invalid_transition")
    _err(env.call(sid, "accept_match", match_id="M-0001"), "invalid_reference")
    m = env.get_session_state(sid)["matches"]
    assert (m["M-1001"]["status"], m["M-1002"]["status"], m["M-1004"]["status"]) == (
        "accepted",
        "pending",
        "rejected",
    )


def test_a_placed_candidate_is_not_accepted_twice_nor_proposed_again(env: BilateralMatchingEnv) -> None:
    sid = env.create_session("fernwald_data_pool")
    _ok(env.call(sid, "create_pool", pool_id="pool-xy", name="X", criteria={"skills": 1.0}, top_k=2))
    for did in ("J-305", "J-306"):
        _ok(env.call(sid, "add_candidate", pool_id="pool-xy", side="demand", candidate_id=did))
    for rid in ("R-110", "R-111", "R-114"):
        _ok(env.call(sid, "add_candidate", pool_id="pool-xy", side="supply", candidate_id=rid))
    lists = _ok(env.call(sid, "run_matching", pool_id="pool-xy"))["shortlists"]
    both = {m["supply_id"]: m["match_id"] for m in lists["J-306"]}
    assert lists["J-305"][0]["supply_id"] == "R-110" and "R-110" in both
    _ok(env.call(sid, "accept_match", match_id=lists["J-305"][0]["match_id"]))
    msg = _err(env.call(sid, "accept_match", match_id=both["R-110"]), "invalid_transition")
    assert "R-110 is already placed" in msg
    rerun = _ok(env.call(sid, "run_matching", pool_id="pool-xy", demand_id="J-306"))["shortlists"]["J-306"]
    assert "R-110" not in {m["supply_id"] for m in rerun}  # placed: the stale proposal is withdrawn
    assert both["R-110"] not in env.get_session_state(sid)["matches"]


def test_rank_and_list_views(env: BilateralMatchingEnv) -> None:
    sid = env.create_session("platform_hiring_round")
    _ok(env.call(sid, "run_matching", pool_id=PLATFORM))
    flat = _ok(env.call(sid, "rank_matches", pool_id=PLATFORM))["ranking"]
    assert [m["score"] for m in flat] == sorted((m["score"] for m in flat), reverse=True)
    assert flat[0]["supply_id"] == "R-102" and flat[0]["supply_name"] == "Daniel Osei"  # 91.78 > 91.68
    by_supply = _ok(env.call(sid, "rank_matches", pool_id=PLATFORM, by="supply"))["ranking"]
    assert [g["supply_id"] for g in by_supply] == ["R-101", "R-102", "R-104", "R-106", "R-107", "R-108"]
    by_demand = _ok(env.call(sid, "rank_matches", pool_id=PLATFORM, by="demand", status="pending"))["ranking"]
    assert [len(g["matches"]) for g in by_demand] == [3, 3]
    high = _ok(env.call(sid, "list_matches", pool_id=PLATFORM, min_score=70))
    assert {m["supply_id"] for m in high["matches"]} == {"R-101", "R-102", "R-104", "R-108"}
    assert _ok(env.call(sid, "list_matches", demand_id="J-202", supply_id="R-108"))["count"] == 1
    _err(env.call(sid, "list_matches", min_score=101), "invalid_argument")


# ---- pools and candidates ----------------------------------------------------------------------------


def test_pool_creation_and_candidate_validation(env: BilateralMatchingEnv) -> None:
    sid = env.create_session("fernwald_data_pool")
    _err(
        env.call(sid, "create_pool", pool_id="fernwald", name="x", criteria={"skills": 1}), "invalid_argument"
    )
    _err(
        env.call(sid, "create_pool", pool_id="pool-a1", name="x", criteria={"skills": 0}), "invalid_argument"
    )
    _err(env.call(sid, "create_pool", pool_id="pool-a1", name="x", criteria={}), "invalid_argument")
    _err(
        env.call(sid, "create_pool", pool_id="pool-a1", name="x", criteria={"Skills!": 1}), "invalid_argument"
    )
    _err(env.call(sid, "create_pool", pool_id=PLATFORM, name="x", criteria={"skills": 1}), "invalid_argument")
    _ok(
        env.call(
            sid, "create_pool", pool_id="pool-a1", name="A", criteria={"skills": 1, "remote": 0.5}, top_k=1
        )
    )
    _err(env.call(sid, "run_matching", pool_id="pool-a1"), "invalid_argument")  # empty pool
    _err(
        env.call(sid, "add_candidate", pool_id="pool-a1", side="supply", candidate_id="J-305"),
        "invalid_argument",
    )
    _err(
        env.call(sid, "add_candidate", pool_id="pool-a1", side="supply", candidate_id="REF-002"),
        "missing_field",
    )
    _err(
        env.call(
            sid,
            "add_candidate",
            pool_id="pool-a1",
            side="supply",
            candidate_id="REF-002",
            name="Z",
            attributes={"skills": [{"x": 1}]},
        ),
        "invalid_argument",
    )
    _err(
        env.call(
            sid,
            "add_candidate",
            pool_id="pool-a1",
            side="supply",
            candidate_id="R-110",
            attributes={"skills": ["x"]},
        ),
        "invalid_argument",
    )
    got = _ok(env.call(sid, "add_candidate", pool_id="pool-a1", side="supply", candidate_id="R-110"))[
        "candidate"
    ]
    assert got["name"] == "Yuki Tanaka" and "kafka" in got["attributes"]["skills"]
    _err(
        env.call(sid, "add_candidate", pool_id="pool-a1", side="supply", candidate_id="R-110"),
        "invalid_argument",
    )
    job = _ok(
        env.call(
            sid,
            "add_candidate",
            pool_id="pool-a1",
            side="demand",
            candidate_id="REQ-001",
            name="Two analysts",
            attributes={"skills": ["sql"], "remote": True},
            openings=2,
        )
    )["candidate"]
    assert job["openings"] == 2


def test_pools_are_isolated(env: BilateralMatchingEnv) -> None:
    sid = env.create_session("platform_hiring_round")
    before = env.get_session_state(sid)["pools"]["pool-helio-onboarding"]
    _ok(env.call(sid, "run_matching", pool_id=PLATFORM))
    state = env.get_session_state(sid)
    assert state["pools"]["pool-helio-onboarding"] == before
    assert {m["pool_id"] for m in state["matches"].values()} == {PLATFORM}
    # the same person in two pools is scored with each pool's own criteria
    _ok(env.call(sid, "run_matching", pool_id="pool-helio-onboarding"))
    r103 = _ok(env.call(sid, "list_matches", supply_id="R-103"))["matches"]
    assert {m["pool_id"] for m in r103} == {"pool-helio-onboarding"}  # not in the platform top-3
    assert r103[0]["score"] == 100.0


def test_evaluator_rewards_reference_and_penalises_wrong_acceptance(env: BilateralMatchingEnv) -> None:
    for sc in BilateralMatchingEnv.scenarios().values():
        sid = env.create_session(sc.scenario_id)
        for step in sc.reference_solution:
            _ok(env.call(sid, step["tool"], **step["params"]))
        assert env.evaluate_session(sid)["overall_score"] == 1.0
    sid = env.create_session("platform_hiring_round")
    _ok(env.call(sid, "run_matching", pool_id=PLATFORM))
    _ok(env.call(sid, "accept_match", match_id="M-1004"))  # the withdrawn candidate
    _ok(env.call(sid, "run_matching", pool_id="pool-helio-onboarding"))
    dims = env.evaluate_session(sid)["dimensions"]
    assert dims["goal_state"]["score"] < 0.5 and "unexpected acceptance R-102" in dims["goal_state"]["reason"]
    assert dims["collateral"]["score"] == 0.0


def test_accepting_from_a_ranking_the_pool_outdated_is_stale(env: BilateralMatchingEnv) -> None:
    sid = env.create_session("onboarding_late_referral")
    first = _ok(env.call(sid, "run_matching", pool_id="pool-helio-onboarding"))["shortlists"]["J-203"]
    assert [m["supply_id"] for m in first] == ["R-103", "R-109"]
    greta = {
        "skills": ["java", "spring", "postgresql", "kafka", "kotlin"],
        "languages": ["german", "english"],
        "location": "Berlin",
        "years_experience": 5,
    }
    _ok(
        env.call(
            sid,
            "add_candidate",
            pool_id="pool-helio-onboarding",
            side="supply",
            candidate_id="REF-007",
            name="Greta Vogel",
            attributes=greta,
        )
    )
    out = env.call(sid, "accept_match", match_id=first[1]["match_id"])  # R-109 from the old ranking
    assert out["status"] == "ok" and out["warnings"][0]["category"] == "stale_information"
    dims = env.evaluate_session(sid)["dimensions"]
    assert dims["information_freshness"]["score"] == 0.5 and dims["goal_state"]["score"] < 1
    # a fresh ranking puts the referral second (88) after the unavailable candidate, with no warning
    sid = env.create_session("onboarding_late_referral")
    _ok(
        env.call(
            sid,
            "add_candidate",
            pool_id="pool-helio-onboarding",
            side="supply",
            candidate_id="REF-007",
            name="Greta Vogel",
            attributes=greta,
        )
    )
    fresh = _ok(env.call(sid, "run_matching", pool_id="pool-helio-onboarding"))["shortlists"]["J-203"]
    assert [(m["supply_id"], m["score"]) for m in fresh] == [("R-103", 100.0), ("REF-007", 88.0)]
    out = env.call(sid, "accept_match", match_id=fresh[1]["match_id"])
    assert out["status"] == "ok" and "warnings" not in out


def test_long_context_adds_directory_distractors(env: BilateralMatchingEnv) -> None:
    sc = BilateralMatchingEnv.scenario("fernwald_data_pool")
    sid = env.create_session(sc.scenario_id, long_context=True)
    python = _ok(env.call(sid, "list_directory", side="supply", skill="python"))
    assert any(c["candidate_id"].startswith("R-50") for c in python["candidates"])
    sql = _ok(
        env.call(sid, "list_directory", side="supply", skill="sql")
    )  # the task's selection is unchanged
    assert [c["candidate_id"] for c in sql["candidates"]] == ["R-110", "R-111", "R-112", "R-113", "R-114"]
    for step in sc.reference_solution:
        _ok(env.call(sid, step["tool"], **step["params"]))
    assert env.evaluate_session(sid)["overall_score"] == 1.0
