"""The verifier interpreter and its derivation from a state diff."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dataclaw.envcraft.tasks.tool.verifier import (
    OPS,
    PreparedVerifier,
    check_verifier,
    derive_verifier,
    evaluate,
    resolve,
)

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
        ({"path": "/tickets", "op": "match_deep", "value": {"tags": ["vpn"], "title": "VPN drops"}}, True),
        ({"path": "/tickets", "op": "match_deep", "value": {"tags": ["vpn", "x"]}}, False),
        ({"path": "/tickets", "op": "match_deep", "value": {"tags": []}}, True),
        ({"path": "/tickets", "op": "match_deep", "value": {"tags": ["wifi"]}}, False),
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


def test_a_new_record_is_matched_on_its_nested_content_too() -> None:
    """A record a run creates (under a generated id) or appends is matched on everything any correct run
    reproduces, nested content included: a comment's body and flag, an event's payload. A wrong value
    there fails; clock values and generated ids at any depth are left out."""
    initial: dict = {"tickets": {}, "events": []}
    comment = {"comment_id": "C-7", "body": "export the logs", "internal": True, "at": "2026-03-02T09:05:00Z"}
    final = {
        "tickets": {"T-9": {"title": "VPN", "comments": [comment], "created_at": "2026-03-02T09:04:00Z"}},
        "events": [{"kind": "alert", "payload": {"host": "db1", "level": 3, "seen": ["2026-03-02T09:06Z"]}}],
    }
    v = derive_verifier(initial, final, ["tickets", "events"])
    got = {(a["path"], a["op"]): a.get("value") for a in v["assertions"]}
    assert got[("/tickets", "match_deep")] == {
        "title": "VPN",
        "comments": [{"body": "export the logs", "internal": True}],
    }
    assert got[("/events", "match_deep")] == {
        "kind": "alert",
        "payload": {"host": "db1", "level": 3},
    }
    assert evaluate(v, final)["score"] == 1.0
    # another correct run: other generated ids and clock values
    other = {
        "tickets": {"T-12": {**final["tickets"]["T-9"], "comments": [{**comment, "comment_id": "C-9"}]}},
        "events": final["events"],
    }
    assert evaluate(v, other)["score"] == 1.0
    flag = {
        **other,
        "tickets": {"T-12": {**other["tickets"]["T-12"], "comments": [{**comment, "internal": False}]}},
    }
    assert evaluate(v, flag)["score"] < 1.0
    payload = {**final, "events": [{"kind": "alert", "payload": {"host": "db1"}}]}
    assert evaluate(v, payload)["score"] < 1.0
    extra = {**other, "tickets": {"T-12": {**other["tickets"]["T-12"], "comments": [comment, comment]}}}
    assert evaluate(v, extra)["score"] < 1.0  # a list holds as many entries as the gold run left


def test_a_time_the_user_states_is_asserted_a_clock_time_is_not() -> None:
    """Scheduling at another time than asked is a wrong answer: a time under a parameter the user states
    (``start``) is part of the goal; the clock's own (``created_at``, an unstated ``due``) are not."""
    initial = {"events": {"E-1": {"start": "2026-04-16T09:00:00Z", "status": "confirmed"}}}
    final = {
        "events": {
            "E-1": {"start": "2026-04-16T11:00:00Z", "status": "confirmed"},
            "E-9": {
                "title": "fatigue test",
                "start": "2026-04-16T13:00:00Z",
                "due": "2026-04-17T00:00:00Z",
                "created_at": "2026-04-16T08:00:00Z",
            },
        }
    }
    stated = derive_verifier(initial, final, ["events"], user_keys=["start", "created_at"])
    got = {(a["path"], a["op"]): a.get("value") for a in stated["assertions"]}
    assert got[("/events/E-1/start", "eq")] == "2026-04-16T11:00:00Z"  # a reschedule, to the stated time
    assert got[("/events", "match")] == {"title": "fatigue test", "start": "2026-04-16T13:00:00Z"}
    wrong = {
        "events": {**final["events"], "E-9": {**final["events"]["E-9"], "start": "2026-04-16T05:00:00Z"}}
    }
    assert evaluate(stated, final)["score"] == 1.0 and evaluate(stated, wrong)["score"] < 1.0
    unstated = derive_verifier(initial, final, ["events"])
    assert [a["path"] for a in unstated["assertions"] if "start" in str(a)] == []  # as before: clock-like


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


# ---- the guard: nothing else changed -------------------------------------------------------------


def _guarded_pair() -> tuple[dict, dict]:
    initial = {
        "tickets": {
            "T-1": {"status": "open", "updated_at": "2026-03-02T09:00:00+00:00", "title": "VPN"},
            "T-2": {"status": "open", "updated_at": "2026-03-02T09:00:00+00:00", "title": "Mail"},
        },
        "audit_log": [{"op": "seed"}],
        "notes": [],
        "counters": {"next": 3},
        "auth": {"current_user": None},
        "actions": [],
        "meta": {"base_time": "2026-03-02T09:00:00+00:00", "action_index": 0},
        "session_id": "s",
    }
    final = json_copy(initial)
    final["tickets"]["T-1"].update(status="resolved", updated_at="2026-03-02T09:01:00+00:00")
    final["tickets"]["T-3"] = {"status": "open", "title": "new", "updated_at": "2026-03-02T09:02:00+00:00"}
    final["audit_log"].append({"op": "resolve"})
    final["counters"]["next"] = 4
    final["actions"] = [{"tool": "resolve"}]
    final["meta"]["action_index"] = 2
    return initial, final


def json_copy(value: dict) -> dict:
    import json

    return json.loads(json.dumps(value))


def _verifier() -> dict:
    from dataclaw.envcraft.tasks.tool.verifier import Allowance

    initial, final = _guarded_pair()
    allow = Allowance(counters=frozenset({"counters"}), logs=frozenset({"audit_log"}))
    return derive_verifier(initial, final, ["tickets", "audit_log", "counters"], guard=True, allow=allow)


def _apply(change) -> dict:
    _, final = _guarded_pair()
    change(final)
    return final


def test_a_guarded_verifier_passes_gold_and_another_run_of_the_same_work() -> None:
    v = _verifier()
    initial, final = _guarded_pair()
    assert [a["op"] for a in v["assertions"]][-1] == "unchanged" and not check_verifier(v)
    assert not [a for a in v["assertions"] if a.get("why") == "entity count"]
    assert evaluate(v, final)["passed"]
    assert evaluate(v, initial)["score"] == 0.0

    def other_run(s: dict) -> None:  # more calls: other clock values, a longer log, counters, actions
        s["tickets"]["T-1"]["updated_at"] = "2026-03-02T09:07:00+00:00"
        s["tickets"]["T-4"] = s["tickets"].pop("T-3")
        s["audit_log"] += [{"op": "read"}, {"op": "noop"}]
        s["counters"]["next"] = 9
        s["actions"] *= 5
        s["meta"]["action_index"] = 9
        s["session_id"] = "elsewhere"

    assert evaluate(v, _apply(other_run))["passed"]


@pytest.mark.parametrize(
    ("harm", "where"),
    [
        (lambda s: s["tickets"]["T-2"].update(status="cancelled"), "/tickets/T-2"),
        (lambda s: s["tickets"]["T-2"].update(updated_at="2026-03-02T10:00:00+00:00"), "/tickets/T-2"),
        (lambda s: s["tickets"]["T-1"].update(title="renamed"), "/tickets/T-1"),
        (lambda s: s["tickets"].pop("T-2"), "/tickets/T-2"),
        (lambda s: s["tickets"].update({"T-9": {"status": "open"}}), "/tickets (+1 records)"),
        (lambda s: s["audit_log"][0].update(op="forged"), "/audit_log"),
        (lambda s: s["notes"].append({"text": "spam"}), "/notes (+1 entries)"),
        (lambda s: s["auth"].update(current_user="admin"), "/auth"),
        (lambda s: s["meta"].update(base_time="2020-01-01T00:00:00+00:00"), "/meta"),
    ],
)
def test_the_guard_catches_every_collateral_change(harm, where) -> None:
    out = evaluate(_verifier(), _apply(harm))
    assert not out["passed"] and out["score"] == 0.5
    assert where in out["changed"]


HARMS = [
    lambda s: s["tickets"]["T-2"].update(status="cancelled"),
    lambda s: s["tickets"]["T-1"].update(title="renamed"),
    lambda s: s["tickets"].pop("T-2"),
    lambda s: s["tickets"].update({"T-9": {"status": "open"}}),
    lambda s: s["notes"].append({"text": "spam"}),
    lambda s: s["meta"].update(base_time="2020-01-01T00:00:00+00:00"),
    lambda s: None,
]


@pytest.mark.parametrize("harm", HARMS)
@pytest.mark.parametrize("start", ["gold", "initial", "half"])
def test_a_prepared_verifier_gives_every_state_the_score_evaluate_gives(harm, start) -> None:
    """The suite's prepared verifier skips the guard when no goal holds and stops a guard at its first
    finding: the score is the same number on gold, on the untouched state and on half the work, with
    and without a collateral change."""
    initial, final = _guarded_pair()
    v = _verifier()
    state = {"gold": final, "initial": initial, "half": {**final, "tickets": initial["tickets"]}}[start]
    state = json_copy(state)
    if start == "half":
        state["tickets"]["T-1"]["status"] = final["tickets"]["T-1"]["status"]
    harm(state)
    prepared = PreparedVerifier(v)
    want = evaluate(v, state)
    assert prepared.evaluate(state) == want
    assert prepared.score(state) == want["score"]
    assert PreparedVerifier({"version": 1, "assertions": []}).score(state) == 0.0


def test_a_verifier_without_a_guard_scores_as_before() -> None:
    initial, final = _guarded_pair()
    legacy = derive_verifier(initial, final, ["tickets", "audit_log", "counters"])
    assert "unchanged" not in {a["op"] for a in legacy["assertions"]}
    harmed = _apply(lambda s: s["tickets"]["T-2"].update(status="cancelled"))
    n = len(legacy["assertions"])
    assert evaluate(legacy, harmed) == {"score": 1.0, "passed": True, "results": [True] * n}


def test_malformed_guards_and_guard_only_verifiers_are_refused() -> None:
    guard = _verifier()["assertions"][-1]
    assert check_verifier(_v(guard)) == ["verifier has only guards: nothing says what must change"]
    goal = {"path": "/x", "op": "exists"}
    assert check_verifier(_v(goal, {"path": "", "op": "unchanged", "value": {}}))
    assert check_verifier(_v(goal, {**guard, "penalty": 0}))
    out = evaluate(_v(goal, {**guard, "value": {"units": {"/x": "0"}}}), {"x": 1})
    assert out["score"] == 0.5 and out["changed"] == ["/x"] and not out["passed"]


def test_the_allowance_comes_from_the_tools_declared_fields() -> None:
    from types import SimpleNamespace as Spec

    from dataclaw.envcraft import archetypes
    from dataclaw.envcraft.tasks.tool.verifier import allowance

    state = {"tickets": {"T-1": {}}, "audit_log": [], "messages": [], "counters": {"n": 1}, "auth": {"u": 0}}
    tools = [
        Spec(side_effect="write", state_fields_affected=("tickets", "audit_log", "counters")),
        Spec(side_effect="write", state_fields_affected=("messages", "counters")),  # a message is primary
        Spec(side_effect="write", state_fields_affected=("auth",)),
        Spec(side_effect="read", state_fields_affected=("notes",)),
    ]
    got = allowance(tools, state)
    assert got.logs == {"audit_log"} and got.counters == {"counters"}
    env = archetypes.get("workflow_orchestration").env_cls
    import tempfile

    e = env(tempfile.mkdtemp())
    s0 = e.get_session_state(e.create_session(sorted(env.scenarios())[0]))
    got = allowance(list(env.tools), s0)
    assert got.logs == {"execution_log", "deregistered"} and got.counters == {"counters"}
