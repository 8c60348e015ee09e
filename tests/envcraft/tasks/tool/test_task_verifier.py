"""The verifier interpreter and its derivation from a state diff."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataclaw.envcraft.tasks.tool.verifier import OPS, check_verifier, derive_verifier, evaluate, resolve

STATE = {
    "tickets": {
        "T-1": {"status": "open", "tags": ["vpn"], "title": "VPN drops"},
        "a/b": {"status": "closed", "tags": [], "title": "slash id"},
    },
    "log": [{"action": "create", "ticket_id": "T-1"}],
}


def _v(*assertions: dict) -> dict:
    return {"version": 1, "assertions": list(assertions)}


@pytest.mark.parametrize(
    ("assertion", "holds"),
    [
        ({"path": "/tickets/T-1/status", "op": "eq", "value": "open"}, True),
        ({"path": "/tickets/T-1/status", "op": "eq", "value": "closed"}, False),
        ({"path": "/tickets/a~1b/status", "op": "eq", "value": "closed"}, True),
        ({"path": "/tickets/T-9/status", "op": "ne", "value": "open"}, True),
        ({"path": "/tickets/T-9", "op": "absent"}, True),
        ({"path": "/tickets/T-1", "op": "exists"}, True),
        ({"path": "/tickets/T-1/title", "op": "contains", "value": "vpn"}, True),
        ({"path": "/tickets/T-1/tags", "op": "contains", "value": "vpn"}, True),
        ({"path": "/tickets", "op": "count_eq", "value": 2}, True),
        ({"path": "/log", "op": "count_gte", "value": 2}, False),
        ({"path": "/log/0/action", "op": "eq", "value": "create"}, True),
        ({"path": "/tickets", "op": "match", "value": {"status": "closed", "title": "slash id"}}, True),
        ({"path": "/log", "op": "match", "value": {"action": "delete"}}, False),
        ({"path": "/log", "op": "no_match", "value": {"action": "delete"}}, True),
    ],
)
def test_ops(assertion: dict, holds: bool) -> None:
    assert assertion["op"] in OPS
    assert evaluate(_v(assertion), STATE)["passed"] is holds


def test_score_is_the_fraction_that_holds() -> None:
    out = evaluate(
        _v(
            {"path": "/tickets/T-1/status", "op": "eq", "value": "open"},
            {"path": "/tickets/T-1/status", "op": "eq", "value": "closed"},
        ),
        STATE,
    )
    assert out == {"score": 0.5, "passed": False, "results": [True, False]}


def test_malformed_verifiers_score_zero_with_a_reason() -> None:
    assert evaluate({"version": 1, "assertions": []}, STATE)["error"] == "verifier has no assertions"
    bad = evaluate(_v({"path": "tickets", "op": "eq", "value": 1}), STATE)
    assert bad["score"] == 0.0 and "JSON pointer" in bad["error"]
    assert check_verifier(_v({"path": "/x", "op": "run_code"}))
    with pytest.raises(ValueError, match="JSON pointer"):
        resolve(STATE, "tickets")


def test_derive_skips_clock_and_generated_ids_and_untouched_fields() -> None:
    initial = {
        "tickets": {"T-1": {"status": "open", "updated_at": "2026-03-02T09:00:00+00:00", "version": 1}},
        "pools": {},
        "audit": [],
        "counters": {"next": 2},
        "other": {"x": 1},
    }
    final = {
        "tickets": {
            "T-1": {"status": "resolved", "updated_at": "2026-03-02T09:03:00+00:00", "version": 2},
            "T-2": {"ticket_id": "T-2", "title": "new", "created_at": "2026-03-02T09:04:00+00:00"},
        },
        "pools": {"pool-x": {"name": "X", "members": {"c1": {"score": 3}}}},
        "audit": [{"action": "resolve", "ticket_id": "T-1", "at": "2026-03-02T09:03:00+00:00"}],
        "counters": {"next": 3},
        "other": {"x": 2},
    }
    v = derive_verifier(initial, final, ["tickets", "pools", "audit", "counters"], named_ids=["pool-x"])
    got = {(a["path"], a["op"]): a.get("value") for a in v["assertions"]}
    assert got[("/tickets/T-1/status", "eq")] == "resolved"
    assert got[("/tickets", "match")] == {"title": "new"}  # found by content, not by generated id
    assert ("/pools/pool-x", "exists") in got and got[("/pools/pool-x/name", "eq")] == "X"
    assert got[("/audit", "match")] == {"action": "resolve", "ticket_id": "T-1"}
    assert not any(
        "updated_at" in p or "version" in p or p.startswith(("/counters", "/other")) for p, _ in got
    )
    assert evaluate(v, final)["score"] == 1.0
    assert evaluate(v, initial)["score"] == 0.0


def test_removed_entities_are_asserted_absent() -> None:
    v = derive_verifier({"t": {"a": {"s": 1}, "b": {"s": 2}}}, {"t": {"b": {"s": 2}}}, ["t"])
    assert v["assertions"] == [
        {"path": "/t/a", "op": "absent", "why": "removed"},
        {"path": "/t", "op": "count_eq", "value": 1, "why": "entity count"},
    ]


def test_a_create_then_delete_is_verified_by_the_entity_count() -> None:
    """A chain whose net effect on a collection is nil still pins its size: an agent that stops
    after the create (one entity too many) fails."""
    initial = {"rules": {"R-1": {"on": True}}, "log": []}
    final = {"rules": {"R-1": {"on": False}}, "log": [{"a": "create"}, {"a": "delete"}]}
    v = derive_verifier(initial, final, ["rules", "log"])
    assert {"path": "/rules", "op": "count_eq", "value": 1, "why": "entity count"} in v["assertions"]
    stopped_early = {"rules": {"R-1": {"on": False}, "R-2": {"on": True}}, "log": [{"a": "create"}]}
    assert evaluate(v, final)["passed"] and not evaluate(v, stopped_early)["passed"]


_scalar = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "open", "closed"]), st.booleans())
_entity = st.dictionaries(st.sampled_from(["status", "owner", "n", "tags", "note"]), _scalar, max_size=4)
_table = st.dictionaries(st.sampled_from(["X-1", "X-2", "X-3", "X-4"]), _entity, max_size=4)
_state = st.fixed_dictionaries(
    {"items": _table, "log": st.lists(_entity, max_size=4), "flag": _scalar, "untouched": _table}
)


@settings(max_examples=200, deadline=None)
@given(initial=_state, final=_state, named=st.lists(st.sampled_from(["X-1", "X-3"]), max_size=2))
def test_a_derived_verifier_always_passes_the_state_it_came_from(initial, final, named) -> None:
    v = derive_verifier(initial, final, ["items", "log", "flag"], named_ids=named)
    if v["assertions"]:
        assert evaluate(v, final)["score"] == 1.0
    assert not any(a["path"].startswith("/untouched") for a in v["assertions"])
