"""Account tools: look up a customer's plan, invoices and outages, and apply policy-checked adjustments
(outage credits, late-fee waivers, plan changes) — the real actions behind what the agent promises."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from dataclaw.envcraft.runtime import (
    invalid_argument,
    invalid_reference,
    missing_field,
    now,
    permission_denied,
    tool,
)


def _customer(session: dict[str, Any], customer_id: str) -> dict[str, Any]:
    if customer_id not in session["customers"]:
        raise invalid_reference("customer", customer_id, sorted(session["customers"]))
    return session["customers"][customer_id]


def _active_conversation(session: dict[str, Any], customer_id: str) -> str:
    for conv in session["conversations"].values():
        if conv["customer_id"] == customer_id and conv["status"] == "active":
            return conv["conversation_id"]
    raise permission_denied(
        "support agent", "adjust", f"account {customer_id} without an active conversation with them"
    )


def entitlement(session: dict[str, Any], customer: dict[str, Any], outage: dict[str, Any]) -> float:
    """Policy: an outage credit is the plan's daily price (monthly / 30) times the outage days."""
    return round(session["plans"][customer["plan"]]["monthly_price"] / 30 * outage["days"], 2)


@tool("read", returns=["customer"])
def lookup_account(session: dict, customer_id: str) -> dict:
    """Show a customer's account: plan and price, contract end, e-mail, invoices (with lines) and outages
    (with the credit the policy allows).

    Args:
        customer_id: the customer, e.g. "C-1042".
    """
    c = _customer(session, customer_id)
    plan = session["plans"][c["plan"]]
    outages = [
        o | {"credit_allowed": 0.0 if o["credited"] else entitlement(session, c, o)} for o in c["outages"]
    ]
    return {
        "customer": {
            "customer_id": customer_id,
            **c,
            "monthly_price": plan["monthly_price"],
            "outages": outages,
            "plans_available": session["plans"],
        }
    }


def _credit(
    session: dict[str, Any], c: dict[str, Any], outage_id: str | None, amount: float | None, **_: Any
) -> dict:
    if outage_id is None or amount is None:
        raise missing_field("outage_id/amount", "a credit names the outage and the amount")
    outage = next((o for o in c["outages"] if o["outage_id"] == outage_id), None)
    if outage is None:
        raise permission_denied(
            "support agent",
            "credit",
            f"outage {outage_id}: policy allows credits only for outages recorded on this account",
        )
    if outage["credited"]:
        raise invalid_argument("outage_id", f"outage {outage_id} was already credited")
    allowed = entitlement(session, c, outage)
    if not 0 < amount <= allowed:
        raise invalid_argument(
            "amount",
            f"policy allows a credit of at most {allowed:.2f} for {outage['days']} day(s) on {c['plan']}",
        )
    outage["credited"] = True
    return {"outage_id": outage_id, "amount": round(amount, 2)}


def _fee_waiver(session: dict[str, Any], c: dict[str, Any], invoice_id: str | None, **_: Any) -> dict:
    if invoice_id is None:
        raise missing_field("invoice_id", "a fee waiver names the invoice carrying the late fee")
    invoice = next((i for i in c["invoices"] if i["invoice_id"] == invoice_id), None)
    if invoice is None:
        raise invalid_reference("invoice", invoice_id, [i["invoice_id"] for i in c["invoices"]])
    fee = next(
        (line for line in invoice["lines"] if line["kind"] == "late_fee" and not line.get("waived")), None
    )
    if fee is None:
        raise invalid_argument("invoice_id", f"{invoice_id} has no late fee left to waive")
    if invoice["paid_on"] is not None and invoice["paid_on"] > invoice["due"]:
        raise permission_denied(
            "support agent",
            "waive",
            f"the late fee on {invoice_id}: it was paid on {invoice['paid_on']}, after the due date "
            f"{invoice['due']} (a billing specialist must decide)",
        )
    fee["waived"] = True
    return {"invoice_id": invoice_id, "amount": fee["amount"]}


def _plan_change(session: dict[str, Any], c: dict[str, Any], plan: str | None, **_: Any) -> dict:
    if plan is None:
        raise missing_field("plan", "a plan change names the new plan")
    if plan not in session["plans"]:
        raise invalid_reference("plan", plan, list(session["plans"]))
    if plan == c["plan"]:
        raise invalid_argument("plan", f"the customer is already on {plan}")
    old, c["plan"] = c["plan"], plan
    return {"from": old, "to": plan, "monthly_price": session["plans"][plan]["monthly_price"]}


# each adjuster checks its policy before it changes the account; keyed by adjustment kind
ADJUSTERS: dict[str, Callable[..., dict[str, Any]]] = {
    "credit": _credit,
    "fee_waiver": _fee_waiver,
    "plan_change": _plan_change,
}


@tool("write", fields=["customers", "adjustments", "counters"], returns=["adjustment"])
def apply_adjustment(
    session: dict,
    customer_id: str,
    kind: Literal["credit", "fee_waiver", "plan_change"],
    reason: str,
    outage_id: str | None = None,
    amount: float | None = None,
    invoice_id: str | None = None,
    plan: str | None = None,
) -> dict:
    """Apply an account adjustment for the customer you are talking to, within policy: an outage credit
    (at most the plan's daily price times the outage days), a late-fee waiver (only if the invoice was paid
    by its due date) or a plan change.

    Args:
        customer_id: the customer (must have an active conversation).
        kind: the adjustment.
        reason: why, for the account record (at least 10 characters).
        outage_id: for a credit, the outage it compensates, e.g. "OUT-311".
        amount: for a credit, the amount in EUR.
        invoice_id: for a fee waiver, the invoice with the late fee.
        plan: for a plan change, the new plan, e.g. "Fibre 100".
    """
    c = _customer(session, customer_id)
    conversation_id = _active_conversation(session, customer_id)
    if len(reason.strip()) < 10:
        raise invalid_argument("reason", "write at least 10 characters")
    detail = ADJUSTERS[kind](session, c, outage_id=outage_id, amount=amount, invoice_id=invoice_id, plan=plan)
    number = session["counters"]["next_adjustment"]
    session["counters"]["next_adjustment"] = number + 1
    entry = {
        "adjustment_id": f"ADJ-{number}",
        "customer_id": customer_id,
        "conversation_id": conversation_id,
        "kind": kind,
        "reason": reason.strip(),
        "at": now(session),
        **detail,
    }
    session["adjustments"].append(entry)
    return {"adjustment": entry}
