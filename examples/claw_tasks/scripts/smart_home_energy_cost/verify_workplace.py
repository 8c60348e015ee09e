"""Score task smart_home_energy_cost: reports/energy_cost_2026-06-14.json (stdlib only, deterministic)."""

import json
import os
import sys

EXPECTED = {
    "ac_bedroom": 0.65,
    "ac_living": 1.39,
    "humidifier_bedroom": 0.20,
    "plug_desk": 0.08,
    "plug_lamp": 0.05,
    "plug_tv": 0.10,
}
# the sum of the rounded costs; summing before rounding gives one cent more, which is accepted too
EXPECTED_TOTAL = 2.47
DECOMMISSIONED = "ac_garage"


def number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    details = []

    def item(name, max_score, score, reason):
        details.append(
            {
                "item": name,
                "score": round(score, 2),
                "max_score": max_score,
                "passed": score >= max_score,
                "reason": reason,
            }
        )

    path = os.path.join(root, "reports", "energy_cost_2026-06-14.json")
    data = None
    if os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except ValueError:
            data = None
    item("report is a JSON object", 5, 5 if isinstance(data, dict) else 0, "the report parses")
    data = data if isinstance(data, dict) else {}
    per = data.get("per_device")
    per = per if isinstance(per, dict) else {}
    item("every device that ran", 20, 20 if set(EXPECTED) <= set(per) else 0, "all six devices present")
    clean = bool(per) and set(per) <= set(EXPECTED)
    item(
        "no decommissioned or idle devices",
        15,
        15 if clean else 0,
        DECOMMISSIONED + " and idle ones left out",
    )
    right = sum(1 for k, v in EXPECTED.items() if number(per.get(k)) and abs(per[k] - v) < 0.005)
    item("per-device costs", 45, 45 * right / len(EXPECTED), f"{right} of {len(EXPECTED)} costs correct")
    total = data.get("total")
    ok = number(total) and abs(total - EXPECTED_TOTAL) < 0.0105
    item("total cost", 15, 15 if ok else 0, "sum of the per-device costs")
    score = round(sum(d["score"] for d in details), 2)
    with open(os.path.join(root, "workplace_score.json"), "w", encoding="utf-8") as fh:
        json.dump({"total_score": score, "details": details}, fh, indent=2)


if __name__ == "__main__":
    main()
