"""Mechanics of the human-agent interaction archetype: the pure analysis function (confidence, valence,
reveal and resolution rules), the patience bound and forced escalation, the three state layers,
deterministic mood-conditioned replies, hidden-persona protection, policy-checked adjustments, evaluation."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from dataclaw.envcraft.archetypes.human_agent_interaction import HumanAgentInteraction
from dataclaw.envcraft.archetypes.human_agent_interaction.analysis import analyze, mood
from dataclaw.envcraft.archetypes.human_agent_interaction.state import DEFAULT_STATE

LEX = DEFAULT_STATE["lexicon"]
INES = DEFAULT_STATE["personas"]["C-1042"]


@pytest.fixture
def desk(tmp_path: Path) -> HumanAgentInteraction:
    return HumanAgentInteraction(tmp_path)


def _ok(out: dict) -> dict:
    assert out["status"] == "ok", out
    return out["data"]


def _err(out: dict, category: str) -> str:
    assert out["status"] == "error" and out["error"]["category"] == category, out
    return out["error"]["message"]


def _ctx(**over: object) -> dict:
    base = {
        "confidence": 0.3,
        "valence": -0.2,
        "outstanding": ["outage_credit", "late_fee"],
        "confirmed": [],
        "revealed": [],
    }
    return base | over


def _say(desk: HumanAgentInteraction, sid: str, text: str, conv: str = "CONV-1") -> dict:
    return _ok(desk.call(sid, "send_message", conversation_id=conv, text=text))


def test_analysis_is_pure_and_keyword_driven() -> None:
    ctx = _ctx()
    frozen = copy.deepcopy(ctx)
    d = analyze("To confirm, you want the bill corrected?", ctx, INES, LEX, turn=1, patience=7)
    assert ctx == frozen  # a pure function of its inputs
    assert d["confidence"] == pytest.approx(0.15 + 0.05) and "confirmation" in d["signals"]
    wrong = analyze("To confirm, you want to cancel?", ctx, INES, LEX, turn=1, patience=7)
    assert (
        wrong["confidence"] == pytest.approx(-0.1 - 0.1)
        and "confirmation_of_wrong_intent" in wrong["signals"]
    )
    assert analyze("Sorry, what do you mean?", ctx, INES, LEX, 1, 7)["confidence"] == pytest.approx(-0.1)
    assert analyze("Sorry, what do you mean?", ctx, INES, LEX, 1, 7)["valence"] == pytest.approx(0.1)
    assert analyze("Hello.", ctx, INES, LEX, 1, 7) == {
        "confidence": 0.0,
        "valence": 0.0,
        "resolved": [],
        "revealed": [],
        "signals": [],
        "escalate": False,
    }


def test_reveal_and_resolution_rules() -> None:
    ctx = _ctx()
    assert analyze("Anything else?", ctx, INES, LEX, 1, 7)["revealed"] == [
        "outage_credit"
    ]  # open question: next
    assert analyze("About the late fee:", ctx, INES, LEX, 1, 7)["revealed"] == ["late_fee"]  # by topic
    claim = "I have credited 4.99 EUR for the outage and waived the late fee."
    assert analyze(claim, ctx, INES, LEX, 1, 7)["resolved"] == []  # nothing raised yet: no guessing
    raised = _ctx(revealed=["outage_credit"])
    d = analyze(claim, raised, INES, LEX, 1, 7)
    assert d["resolved"] == ["outage_credit"] and d["valence"] == pytest.approx(0.2)
    assert (
        analyze("The outage is fixed now.", raised, INES, LEX, 1, 7)["resolved"] == []
    )  # no resolution word


def test_patience_bound_sours_mood_then_forces_escalation() -> None:
    ctx = _ctx(valence=0.0)
    assert analyze("Hello.", ctx, INES, LEX, turn=7, patience=7)["valence"] == 0.0
    late = analyze("Hello.", ctx, INES, LEX, turn=8, patience=7)
    assert (
        late["valence"] == pytest.approx(-0.15) and "impatience" in late["signals"] and not late["escalate"]
    )
    assert late["revealed"] == ["outage_credit", "late_fee"] and "convergence" in late["signals"]  # forced
    raised = analyze("Hello.", _ctx(revealed=["outage_credit", "late_fee"]), INES, LEX, turn=8, patience=7)
    assert raised["revealed"] == [] and "convergence" not in raised["signals"]
    assert analyze("Hello.", ctx, INES, LEX, turn=10, patience=7)["escalate"]
    assert analyze("Hello.", _ctx(valence=-0.85), INES, LEX, turn=9, patience=7)["escalate"]
    assert not analyze("Hello.", _ctx(valence=-0.85, outstanding=[]), INES, LEX, turn=12, patience=7)[
        "escalate"
    ]
    assert [mood(v) for v in (-0.3, 0.0, 0.3)] == ["negative", "neutral", "positive"]


def test_three_layers_and_delta_reporting(desk: HumanAgentInteraction) -> None:
    sid = desk.create_session("march_bill_dispute")
    start = _ok(desk.call(sid, "start_session", customer_id="C-1042", channel="chat"))
    assert start["conversation"]["conversation_id"] == "CONV-1" and start["message"].startswith(
        "Hello. My March bill"
    )
    _err(desk.call(sid, "start_session", customer_id="C-1042", channel="phone"), "invalid_argument")
    _err(desk.call(sid, "start_session", customer_id="C-9999", channel="chat"), "invalid_reference")
    out = _say(desk, sid, "I'm sorry about the trouble. Could you tell me what looks wrong on the bill?")
    assert out["turn"] == 1 and out["context_delta"]["newly_raised"] == [
        "a credit for the 3-day outage in early March"
    ]
    assert (
        out["context_delta"]["valence"] == pytest.approx(0.1) and out["context_delta"]["trend"] == "improving"
    )
    state = desk.get_session_state(sid)
    assert state["conversations"]["CONV-1"]["turn_count"] == 1
    assert [(m["turn"], m["role"]) for m in state["histories"]["CONV-1"]] == [
        (0, "customer"),
        (1, "agent"),
        (1, "customer"),
    ]
    assert [p["turn"] for p in state["contexts"]["CONV-1"]["trajectory"]] == [0, 1]
    ctx = _ok(desk.call(sid, "get_context", conversation_id="CONV-1"))["context"]
    assert (
        ctx["raised_concerns"] == ["a credit for the 3-day outage in early March"] and ctx["valence"] == -0.1
    )
    assert len(_ok(desk.call(sid, "get_history", conversation_id="CONV-1", last=2))["messages"]) == 2


def test_hidden_persona_is_never_shown(desk: HumanAgentInteraction) -> None:
    sid = desk.create_session("retention_call")
    outs = [desk.call(sid, "start_session", customer_id="C-2210", channel="phone")]
    outs.append(desk.call(sid, "send_message", conversation_id="CONV-1", text="How can I help?"))
    outs += [
        desk.call(sid, t, conversation_id="CONV-1")
        for t in ("get_context", "get_history", "summarize_session")
    ]
    text = json.dumps(outs)
    for secret in ("reduce_cost", "latent", "patience", "keep_email", "lower_bill", "outstanding"):
        assert secret not in text, secret


def test_replies_are_deterministic_and_mood_conditioned(desk: HumanAgentInteraction) -> None:
    script = ["Hello Tomas.", "Would a cheaper plan help?", "Anything else?"]
    replies = []
    for _ in range(2):
        sid = desk.create_session("retention_call")
        _ok(desk.call(sid, "start_session", customer_id="C-2210", channel="phone"))
        replies.append([_say(desk, sid, t)["reply"] for t in script])
    assert replies[0] == replies[1]
    bank = DEFAULT_STATE["replies"]
    # confidence 0.2 < 0.25 and valence -0.4: the "confused" bank in the negative mood
    confused = [t.format(intent_hint="a lower monthly bill") for t in bank["confused"]["negative"]]
    assert replies[0][0] in confused
    reveal = DEFAULT_STATE["personas"]["C-2210"]["items"]["lower_bill"]["reveal"]
    assert reveal[1:] in replies[0][1]  # inside a negative-mood "reveal" template


def test_customer_escalates_past_patience(desk: HumanAgentInteraction) -> None:
    sid = desk.create_session("retention_call")
    _ok(desk.call(sid, "start_session", customer_id="C-2210", channel="phone"))  # patience 5 - 1 = 4
    outs = [_say(desk, sid, f"Let me check something ({i}).") for i in range(1, 8)]
    assert [o["status"] for o in outs] == ["active"] * 6 + ["escalated"]
    # turn 5 is the first past the bound: both hidden concerns come out at once, then nothing more
    assert len(outs[4]["context_delta"]["newly_raised"]) == 2 and "e-mail address" in outs[4]["reply"]
    assert all(not o["context_delta"]["newly_raised"] for o in outs[:4] + outs[5:])
    conv = desk.get_session_state(sid)["conversations"]["CONV-1"]
    assert conv["escalation"]["by"] == "customer" and conv["turn_count"] == 7
    _err(desk.call(sid, "send_message", conversation_id="CONV-1", text="Hello?"), "invalid_transition")
    summary = _ok(desk.call(sid, "summarize_session", conversation_id="CONV-1"))["summary"]
    assert summary["overall_trend"] == "deteriorating" and summary["deteriorating_turns"] == [5, 6, 7]
    ev = desk.evaluate_session(sid)
    assert ev["dimensions"]["customer_experience"]["score"] == 0.0 and ev["overall_score"] < 0.3


def test_context_overrides_are_limited_to_agent_variables(desk: HumanAgentInteraction) -> None:
    sid = desk.create_session("march_bill_dispute")
    _ok(desk.call(sid, "start_session", customer_id="C-1042", channel="chat"))
    before = desk.get_session_state(sid)["contexts"]
    for key in ("valence", "confidence", "outstanding", "latent_intent"):
        _err(desk.call(sid, "set_context", conversation_id="CONV-1", key=key, value="1"), "permission_denied")
    _err(
        desk.call(sid, "set_context", conversation_id="CONV-1", key="mood", value="happy"), "invalid_argument"
    )
    _err(
        desk.call(sid, "set_context", conversation_id="CONV-1", key="intent_hypothesis", value="refund"),
        "invalid_argument",
    )
    _err(desk.call(sid, "set_context", conversation_id="CONV-9", key="notes", value="x"), "invalid_reference")
    assert desk.get_session_state(sid)["contexts"] == before
    ctx = _ok(desk.call(sid, "set_context", conversation_id="CONV-1", key="priority", value="high"))[
        "context"
    ]
    assert ctx["priority"] == "high"


def test_adjustment_policies(desk: HumanAgentInteraction) -> None:
    sid = desk.create_session("march_bill_dispute")
    args = {"customer_id": "C-1042", "reason": "Outage OUT-311, three days"}
    _err(
        desk.call(sid, "apply_adjustment", kind="credit", outage_id="OUT-311", amount=4.99, **args),
        "permission_denied",
    )
    _ok(desk.call(sid, "start_session", customer_id="C-1042", channel="chat"))
    assert (
        _ok(desk.call(sid, "lookup_account", customer_id="C-1042"))["customer"]["outages"][0][
            "credit_allowed"
        ]
        == 4.99
    )
    assert "at most 4.99" in _err(
        desk.call(sid, "apply_adjustment", kind="credit", outage_id="OUT-311", amount=5.0, **args),
        "invalid_argument",
    )
    _err(
        desk.call(sid, "apply_adjustment", kind="credit", outage_id="OUT-999", amount=1.0, **args),
        "permission_denied",
    )
    _err(desk.call(sid, "apply_adjustment", kind="credit", **args), "missing_field")
    _err(
        desk.call(sid, "apply_adjustment", kind="fee_waiver", invoice_id="INV-7702", **args),
        "invalid_argument",
    )
    _err(desk.call(sid, "apply_adjustment", kind="plan_change", plan="Fibre 500", **args), "invalid_argument")
    _err(
        desk.call(sid, "apply_adjustment", kind="plan_change", plan="Fibre 9000", **args), "invalid_reference"
    )
    assert desk.get_session_state(sid)["adjustments"] == []
    adj = _ok(desk.call(sid, "apply_adjustment", kind="credit", outage_id="OUT-311", amount=4.99, **args))[
        "adjustment"
    ]
    assert adj["adjustment_id"] == "ADJ-1" and adj["conversation_id"] == "CONV-1"
    _err(
        desk.call(sid, "apply_adjustment", kind="credit", outage_id="OUT-311", amount=1.0, **args),
        "invalid_argument",
    )
    _ok(desk.call(sid, "apply_adjustment", kind="fee_waiver", invoice_id="INV-7781", **args))
    account = desk.get_session_state(sid)["customers"]["C-1042"]
    assert account["outages"][0]["credited"] and account["invoices"][0]["lines"][1]["waived"]
    _ok(desk.call(sid, "start_session", customer_id="C-3307", channel="email"))  # paid a week late
    msg = _err(
        desk.call(
            sid,
            "apply_adjustment",
            customer_id="C-3307",
            kind="fee_waiver",
            invoice_id="INV-7655",
            reason="Customer was in hospital",
        ),
        "permission_denied",
    )
    assert "after the due date" in msg


def test_close_guards_and_evaluation(desk: HumanAgentInteraction) -> None:
    sid = desk.create_session("march_bill_dispute")
    steps = desk.scenario("march_bill_dispute").reference_solution
    for step in steps[:5]:  # both concerns raised, nothing fixed yet
        _ok(desk.call(sid, step["tool"], **step["params"]))
    msg = _err(
        desk.call(sid, "close_session", conversation_id="CONV-1", outcome="resolved", note="All done here."),
        "invalid_transition",
    )
    assert "open concerns" in msg
    # an unbacked promise: the customer believes it, the evaluator does not
    _say(desk, sid, "I have credited 4.99 EUR for the outage and the late fee is waived.")
    _ok(
        desk.call(
            sid,
            "close_session",
            conversation_id="CONV-1",
            outcome="resolved",
            note="Credit and waiver promised.",
        )
    )
    _err(
        desk.call(
            sid, "escalate_session", conversation_id="CONV-1", team="supervisor", reason="Too late now"
        ),
        "invalid_transition",
    )
    ev = desk.evaluate_session(sid)["dimensions"]
    assert ev["concerns_resolved"]["score"] == 1.0 and ev["commitments_backed"]["score"] == 0.0
    assert ev["intent_identified"]["score"] == 1.0 and ev["policy_compliance"]["score"] < 1.0


def test_wrong_intent_lowers_confidence_and_score(desk: HumanAgentInteraction) -> None:
    sid = desk.create_session("retention_call")
    _ok(desk.call(sid, "start_session", customer_id="C-2210", channel="phone"))
    out = _say(desk, sid, "To confirm, you want to cancel your contract?")
    assert out["context_delta"]["confidence"] == pytest.approx(-0.2)
    _ok(
        desk.call(
            sid, "set_context", conversation_id="CONV-1", key="intent_hypothesis", value="cancel_service"
        )
    )
    _ok(
        desk.call(
            sid,
            "escalate_session",
            conversation_id="CONV-1",
            team="retention",
            reason="Customer wants to cancel",
        )
    )
    ev = desk.evaluate_session(sid)
    assert (
        ev["dimensions"]["intent_identified"]["score"] == 0.0 and ev["dimensions"]["outcome"]["score"] == 0.0
    )
    assert ev["overall_score"] < 0.4


def test_escalation_is_the_right_outcome_when_policy_forbids_the_fix(desk: HumanAgentInteraction) -> None:
    scenario = desk.scenario("hospital_late_fee")
    sid = desk.create_session("hospital_late_fee")
    for step in scenario.reference_solution:
        _ok(desk.call(sid, step["tool"], **step["params"]))
    conv = desk.get_session_state(sid)["conversations"]["CONV-1"]
    assert conv["status"] == "escalated" and conv["escalation"]["by"] == "agent"
    assert desk.evaluate_session(sid)["overall_score"] == 1.0
    # promising the waiver instead: the customer believes it, but nothing backs it and the wrong team gets it
    sid = desk.create_session("hospital_late_fee")
    for step in scenario.reference_solution[:4]:
        _ok(desk.call(sid, step["tool"], **step["params"]))
    _say(desk, sid, "Good news: the late fee is waived.")
    _ok(
        desk.call(
            sid, "escalate_session", conversation_id="CONV-1", team="supervisor", reason="Customer complained"
        )
    )
    ev = desk.evaluate_session(sid)["dimensions"]
    assert ev["concerns_resolved"]["score"] == 0.0 and ev["commitments_backed"]["score"] == 0.0
    assert ev["outcome"]["score"] == 0.0


def test_long_context_archives_past_conversations_in_all_three_layers(desk: HumanAgentInteraction) -> None:
    sid = desk.create_session("march_bill_dispute", long_context=True)
    state = desk.get_session_state(sid)
    archived = [c for c in state["conversations"].values() if c.get("archived")]
    assert len(archived) == 40 and all(c["conversation_id"] in state["histories"] for c in archived)
    assert max(c["started_at"] for c in archived) < state["meta"]["base_time"]
    assert len({(c["customer_id"], c["channel"]) for c in archived}) > 5  # templates vary per customer
    past = _ok(desk.call(sid, "list_conversations", customer_id="C-1042"))["conversations"]
    assert len(past) == 8 and all(c["status"] in ("resolved", "unresolved") for c in past)
    for step in desk.scenario("march_bill_dispute").reference_solution:
        _ok(desk.call(sid, step["tool"], **step["params"]))
    assert (
        desk.evaluate_session(sid)["overall_score"] == 1.0
    )  # archived contacts are not the conversation scored
    assert _ok(desk.call(sid, "list_conversations", status="active"))["count"] == 0
    archived_id = past[0]["conversation_id"]
    _err(desk.call(sid, "send_message", conversation_id=archived_id, text="Hi"), "invalid_transition")
