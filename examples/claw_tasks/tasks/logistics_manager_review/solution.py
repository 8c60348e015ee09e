"""Reference solution of logistics_manager_review (used by the auditor: must score 1.0)."""

import json
import os

with open("data/returns/returns_2026-06-16.json", encoding="utf-8") as fh:
    returns = json.load(fh)["returns"]
open_states = {"pending_review", "pending_inspection", "received", "inspected"}
chosen = {
    r["return_id"]: r["refund_amount"]
    for r in returns
    if r["status"] in open_states and r["refund_amount"] > 100
}
os.makedirs("reports", exist_ok=True)
with open("reports/manager_review.json", "w", encoding="utf-8") as fh:
    json.dump({"return_ids": sorted(chosen), "total_refund": round(sum(chosen.values()), 2)}, fh)
