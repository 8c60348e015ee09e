"""Reference solution of smart_home_energy_cost (used by the auditor: must score 1.0)."""

import csv
import json
import os

with open("data/devices/devices.json", encoding="utf-8") as fh:
    watts = {d["device_id"]: d["power_watts"] for d in json.load(fh)["devices"]}
with open("data/electricity/rates.json", encoding="utf-8") as fh:
    rates = json.load(fh)["rates"]


def rate(hour):
    return next(r["rate_per_kwh"] for r in rates if r["start_hour"] <= hour < r["end_hour"])


with open("logs/usage_2026-06-14.csv", encoding="utf-8") as fh:
    sessions = {(r["device_id"], int(r["start_hour"]), int(r["end_hour"])) for r in csv.DictReader(fh)}
cost = {}
for device, start, end in sessions:
    if device in watts:
        cost[device] = cost.get(device, 0.0) + sum(watts[device] / 1000 * rate(h) for h in range(start, end))
per_device = {k: round(v, 2) for k, v in sorted(cost.items())}
os.makedirs("reports", exist_ok=True)
with open("reports/energy_cost_2026-06-14.json", "w", encoding="utf-8") as fh:
    json.dump({"per_device": per_device, "total": round(sum(per_device.values()), 2)}, fh, indent=2)
