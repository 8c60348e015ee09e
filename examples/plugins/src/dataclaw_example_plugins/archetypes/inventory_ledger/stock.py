"""Stock tools: look at the items and the ledger, adjust a quantity with a reason."""

from __future__ import annotations

from typing import Any, Literal

from dataclaw.envcraft.runtime import invalid_argument, invalid_reference, now, tool

Reason = Literal["received", "sold", "damaged", "count_correction"]


def _item(session: dict[str, Any], sku: str) -> dict[str, Any]:
    if sku not in session["items"]:
        raise invalid_reference("item", sku, sorted(session["items"]))
    return session["items"][sku]


@tool("read", returns=["items"])
def list_stock(session: dict, location: str | None = None) -> dict:
    """List every item with its quantity, optionally only those kept at one location.

    Args:
        location: only items kept here (e.g. "shelf-a", "cold-room").
    """
    items = [i for i in session["items"].values() if location in (None, i["location"])]
    return {"items": sorted(items, key=lambda i: i["sku"])}


@tool("read", returns=["item", "ledger"])
def get_item(session: dict, sku: str) -> dict:
    """Show one item and the ledger entries that changed it.

    Args:
        sku: the item's stock-keeping unit, e.g. "SKU-OAT".
    """
    item = _item(session, sku)
    return {"item": item, "ledger": [e for e in session["ledger"] if e["sku"] == sku]}


@tool("write", fields=["items", "ledger"], returns=["item", "entry"])
def adjust_stock(session: dict, sku: str, delta: int, reason: Reason, note: str) -> dict:
    """Change an item's quantity by ``delta`` and record why in the ledger.

    Args:
        sku: the item to adjust.
        delta: units to add (positive) or remove (negative); never zero.
        reason: received (a delivery), sold, damaged (written off) or count_correction (a shelf count).
        note: what happened, for the ledger (a delivery number, the count that was made).
    """
    item = _item(session, sku)
    if delta == 0:
        raise invalid_argument("delta", "must not be zero: an adjustment changes the quantity")
    if not note.strip():
        raise invalid_argument("note", "must say what happened")
    if item["quantity"] + delta < 0:
        have = item["quantity"]
        raise invalid_argument("delta", f"{sku} holds {have}: {delta} would leave {have + delta}, below zero")
    item["quantity"] += delta
    entry = {
        "index": len(session["ledger"]),
        "sku": sku,
        "delta": delta,
        "reason": reason,
        "note": note.strip(),
        "at": now(session),
    }
    session["ledger"].append(entry)
    return {"item": item, "entry": entry}
