"""Build the workspace of task logistics_manager_review (stdlib only, deterministic).

World data (orders, returns, return policy) comes from ClawForge logistics_envs (Apache-2.0); four return
requests, a superseded export and a duplicated record were added for this task.
"""

import json
import os

RETURNS = [
    {
        "return_id": "ret_001",
        "order_id": "ord_006",
        "customer_id": "c_customer_002",
        "reason": "Product defective - audio cutting out",
        "requested_at": "2026-06-12T10:00:00+00:00",
        "status": "approved",
        "refund_amount": 79.99,
    },
    {
        "return_id": "ret_002",
        "order_id": "ord_008",
        "customer_id": "c_customer_004",
        "reason": "Changed mind - no longer needed",
        "requested_at": "2026-06-10T14:30:00+00:00",
        "status": "received",
        "refund_amount": 89.99,
    },
    {
        "return_id": "ret_003",
        "order_id": "ord_003",
        "customer_id": "c_customer_003",
        "reason": "Wrong item received - ordered 27-inch, received 24-inch",
        "requested_at": "2026-06-14T09:15:00+00:00",
        "status": "pending_inspection",
        "refund_amount": 349.99,
    },
    {
        "return_id": "ret_004",
        "order_id": "ord_009",
        "customer_id": "c_customer_001",
        "reason": "Item not as described",
        "requested_at": "2026-06-11T16:45:00+00:00",
        "status": "rejected",
        "refund_amount": 45.99,
    },
    {
        "return_id": "ret_005",
        "order_id": "ord_001",
        "customer_id": "c_customer_001",
        "reason": "Cable defective - frayed wire",
        "requested_at": "2026-06-16T08:00:00+00:00",
        "status": "pending_review",
        "refund_amount": 25.98,
    },
    {
        "return_id": "ret_006",
        "order_id": "ord_004",
        "customer_id": "c_customer_001",
        "reason": "Arrived damaged - cracked casing",
        "requested_at": "2026-06-16T09:10:00+00:00",
        "status": "pending_review",
        "refund_amount": 129.99,
    },
    {
        "return_id": "ret_007",
        "order_id": "ord_010",
        "customer_id": "c_customer_003",
        "reason": "Ordered wrong size",
        "requested_at": "2026-06-16T09:40:00+00:00",
        "status": "pending_review",
        "refund_amount": 71.98,
    },
    {
        "return_id": "ret_008",
        "order_id": "ord_002",
        "customer_id": "c_customer_002",
        "reason": "Keyboard keys sticking",
        "requested_at": "2026-06-15T17:05:00+00:00",
        "status": "approved",
        "refund_amount": 149.99,
    },
    {
        "return_id": "ret_009",
        "order_id": "ord_005",
        "customer_id": "c_customer_004",
        "reason": "Duplicate order placed by mistake",
        "requested_at": "2026-06-15T13:30:00+00:00",
        "status": "closed",
        "refund_amount": 139.98,
    },
]

POLICY = """# LogiFlow Returns Processing Policy

## Return Request Submission

Customers may submit return requests within 30 days of delivery.

## Return Status Flow

requested -> pending_review -> approved/rejected
pending_inspection -> received -> inspected -> resolved (refund/exchange/rejected) -> closed

## Approval Criteria

### Auto-Approve (No Manager Review Required)
- Item confirmed defective
- Wrong item shipped
- Damaged in transit (with proof)
- Refund amount <= $100

### Requires Manager Approval
- Refund amount > $100
- Customer loyalty tier exceptions
- Replacement instead of refund requested
"""


def write(path, text):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def main():
    current = [*RETURNS[:3], dict(RETURNS[2]), *RETURNS[3:]]  # the sync wrote ret_003 twice
    write(
        "data/returns/returns_2026-06-16.json",
        json.dumps({"exported_at": "2026-06-16T10:00:00+00:00", "returns": current}, indent=2),
    )
    old = [dict(r) for r in RETURNS[:5]]
    old[1]["status"] = "pending_review"
    old[1]["refund_amount"] = 189.99
    old[0]["status"] = "pending_review"
    write(
        "data/returns/returns_2026-06-09_superseded.json",
        json.dumps({"exported_at": "2026-06-09T10:00:00+00:00", "returns": old}, indent=2),
    )
    write("data/attachments/return_policy.md", POLICY)
    write("data/README.txt", "Exports from the LogiFlow returns desk. Amounts in USD.\n")
    os.makedirs("reports", exist_ok=True)


if __name__ == "__main__":
    main()
