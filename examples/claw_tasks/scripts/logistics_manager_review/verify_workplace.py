"""Score task logistics_manager_review: reports/manager_review.json (stdlib only, deterministic)."""

import json
import os
import sys

EXPECTED_IDS = ["ret_003", "ret_006"]
EXPECTED_TOTAL = 479.98


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    details = []

    def item(name, max_score, ok, reason):
        details.append(
            {
                "item": name,
                "score": max_score if ok else 0,
                "max_score": max_score,
                "passed": bool(ok),
                "reason": reason,
            }
        )

    path = os.path.join(root, "reports", "manager_review.json")
    data = None
    if os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except ValueError:
            data = None
    item("report is a JSON object", 10, isinstance(data, dict), "reports/manager_review.json parsed")
    data = data if isinstance(data, dict) else {}
    ids = data.get("return_ids")
    ids = ids if isinstance(ids, list) else []
    item("needed requests listed", 40, set(EXPECTED_IDS) <= set(ids), "every request over the threshold")
    item(
        "no extra requests", 25, bool(ids) and set(ids) <= set(EXPECTED_IDS), "no closed/approved/small ones"
    )
    item("sorted and unique", 5, bool(ids) and ids == sorted(set(ids)), "sorted, duplicates merged")
    total = data.get("total_refund")
    ok = (
        isinstance(total, (int, float))
        and not isinstance(total, bool)
        and abs(total - EXPECTED_TOTAL) < 0.005
    )
    item("total refund", 20, ok, "sum of the listed refunds")
    score = sum(d["score"] for d in details)
    with open(os.path.join(root, "workplace_score.json"), "w", encoding="utf-8") as fh:
        json.dump({"total_score": score, "details": details}, fh, indent=2)


if __name__ == "__main__":
    main()
