"""Build the workspace of task smart_home_energy_cost (stdlib only, deterministic).

Devices and time-of-use rates come from ClawForge smart_home_envs (Apache-2.0); the usage log, with a
re-uploaded session and a decommissioned device, was written for this task.
"""

import csv
import json
import os

DEVICES = [
    {
        "device_id": "ac_living",
        "name": "Living Room AC",
        "type": "air_conditioner",
        "location": "living_room",
        "power_watts": 1200,
    },
    {
        "device_id": "ac_bedroom",
        "name": "Bedroom AC",
        "type": "air_conditioner",
        "location": "bedroom",
        "power_watts": 900,
    },
    {
        "device_id": "humidifier_bedroom",
        "name": "Bedroom Humidifier",
        "type": "humidifier",
        "location": "bedroom",
        "power_watts": 300,
    },
    {
        "device_id": "humidifier_living",
        "name": "Living Room Humidifier",
        "type": "humidifier",
        "location": "living_room",
        "power_watts": 350,
    },
    {
        "device_id": "plug_tv",
        "name": "TV Smart Plug",
        "type": "smart_plug",
        "location": "living_room",
        "power_watts": 150,
    },
    {
        "device_id": "plug_lamp",
        "name": "Floor Lamp Smart Plug",
        "type": "smart_plug",
        "location": "living_room",
        "power_watts": 60,
    },
    {
        "device_id": "plug_desk",
        "name": "Desk Setup Smart Plug",
        "type": "smart_plug",
        "location": "study_room",
        "power_watts": 200,
    },
]

RATES = [
    {"period": "off_peak", "start_hour": 0, "end_hour": 7, "rate_per_kwh": 0.08, "label": "Off-Peak"},
    {"period": "mid_peak", "start_hour": 7, "end_hour": 11, "rate_per_kwh": 0.12, "label": "Mid-Peak"},
    {"period": "peak", "start_hour": 11, "end_hour": 17, "rate_per_kwh": 0.18, "label": "Peak"},
    {"period": "high_peak", "start_hour": 17, "end_hour": 21, "rate_per_kwh": 0.22, "label": "High-Peak"},
    {
        "period": "mid_peak_evening",
        "start_hour": 21,
        "end_hour": 24,
        "rate_per_kwh": 0.12,
        "label": "Mid-Peak",
    },
]

# device_id, start_hour, end_hour
USAGE = [
    ("ac_bedroom", 0, 6),
    ("humidifier_bedroom", 0, 8),
    ("ac_living", 13, 19),
    ("ac_living", 13, 19),  # re-uploaded session
    ("plug_tv", 19, 23),
    ("plug_lamp", 18, 23),
    ("ac_garage", 12, 16),  # decommissioned in May, no longer in the device list
    ("plug_desk", 9, 12),
    ("ac_bedroom", 22, 24),
]


def main():
    os.makedirs("data/devices", exist_ok=True)
    os.makedirs("data/electricity", exist_ok=True)
    os.makedirs("logs", exist_ok=True)
    os.makedirs("reports", exist_ok=True)
    with open("data/devices/devices.json", "w", encoding="utf-8") as fh:
        json.dump({"devices": DEVICES}, fh, indent=2)
    with open("data/electricity/rates.json", "w", encoding="utf-8") as fh:
        json.dump({"currency": "USD", "rates": RATES}, fh, indent=2)
    with open("logs/usage_2026-06-14.csv", "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["device_id", "start_hour", "end_hour"])
        w.writerows(USAGE)
    with open("logs/usage_2026-06-13.csv", "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["device_id", "start_hour", "end_hour"])
        w.writerows([("ac_living", 10, 20), ("plug_tv", 18, 22)])


if __name__ == "__main__":
    main()
