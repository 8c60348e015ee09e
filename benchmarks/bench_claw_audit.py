"""Claw task audit throughput: tasks/s of ``dataclaw tasks audit`` on 200 generated four-file tasks, at
``--workers 1`` and ``--workers 2`` in one run.

The tasks are generated into a temp dir in the four-file layout of EnvCraft C.5 (``tasks/<id>.yaml``,
``tasks/prompts/<id>.md``, ``tasks/<id>/env_builder.py``, ``scripts/<id>/verify_workplace.py`` writing
``workplace_score.json``), like tasks made elsewhere: no reference solution. Each is a small, sound
spreadsheet chore (an order export with re-exported duplicate lines and a cancelled order; per-customer
totals to a JSON report) with its own data, so each audit really runs the builder twice and the verifier
twice in the sandbox. The console script runs as a user runs it, into a fresh run directory per worker
count; the time is the whole command's wall clock (start-up included).

Target (issue 12): >= 4 tasks/s at 2 workers on 2 cores, so a 35k-candidate set audits in under 3 h on one
small machine. The generated tasks are sound, so every one must pass: a task flagged here is a false alarm
(and would make the timing measure early exits). Prints one JSON line; exits 1 on a miss, 2 when no sandbox.
The rate is wall-clock on this machine: run it on a quiet one (the load average at start and end is
printed; with other work on the two cores the audit gets only its share of them).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from dataclaw.sandbox import sandbox_available

TARGET_TASKS_PER_S = 4.0
SHOPS = ("a bike shop", "a tea importer", "a print studio", "a garden centre", "a board-game cafe")
NAMES = ("Alex", "Sam", "Robin", "Kim", "Jo")

YAML = """id: {tid}
name: Customer totals from an order export (set {n})
prompt: tasks/prompts/{tid}.md
asset: {tid}
domain: retail
runtime:
  max_turns: 24
  timeout_s: 300
tools: [bash, read, write, edit, ls, grep, finish]
"""

PROMPT = """Hi,

I run {shop} and need last week's numbers per customer before I send statements. The till exported every
order line to `data/orders.csv` (order id, customer id, quantity, unit price in dollars, status). Two
things to watch: the export re-sends some lines, so the same order line can appear twice (count it once),
and orders marked `cancelled` were never paid, so leave them out.

Please save the result as `reports/customer_totals.json`: an object with `per_customer` (customer id ->
what they spent, in dollars, rounded to cents; only customers with at least one paid order) and
`grand_total` (the sum of those, rounded to cents).

Thanks,
{name}
"""

BUILDER = '''"""Build the workspace of task {tid}: an order export with duplicate lines (stdlib only)."""

import csv
import os
import random

rng = random.Random({seed})
customers = ["C-%03d" % rng.randrange(100, 999) for _ in range({customers})]
rows = []
for n in range({orders}):
    status = "cancelled" if rng.random() < 0.1 else "paid"
    rows.append(["O-%05d" % (10000 + n), rng.choice(customers), rng.randint(1, 5),
                 "%.2f" % rng.uniform(2, 60), status])
rows += [rows[i] for i in rng.sample(range(len(rows)), 4)]  # the export re-sends some lines
os.makedirs("data", exist_ok=True)
with open(os.path.join("data", "orders.csv"), "w", newline="", encoding="utf-8") as fh:
    out = csv.writer(fh)
    out.writerow(["order_id", "customer_id", "quantity", "unit_price", "status"])
    out.writerows(rows)
with open(os.path.join("data", "README.txt"), "w", encoding="utf-8") as fh:
    fh.write("Weekly export from the till. Prices in dollars, tax included.\\n")
'''

VERIFIER = '''"""Score task {tid}: reports/customer_totals.json against the order export (stdlib only)."""

import csv
import json
import os
import sys


def expected(root):
    seen, totals = set(), {{}}
    with open(os.path.join(root, "data", "orders.csv"), encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            key = tuple(row.values())
            if key in seen or row["status"] != "paid":
                continue
            seen.add(key)
            cost = int(row["quantity"]) * float(row["unit_price"])
            totals[row["customer_id"]] = totals.get(row["customer_id"], 0.0) + cost
    return {{k: round(v, 2) for k, v in totals.items()}}


def number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    want = expected(root)
    details = []

    def item(name, max_score, score):
        details.append({{"item": name, "score": round(score, 2), "max_score": max_score,
                        "passed": score >= max_score}})

    path = os.path.join(root, "reports", "customer_totals.json")
    data = None
    if os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except ValueError:
            data = None
    item("report is a JSON object", 10, 10 if isinstance(data, dict) else 0)
    data = data if isinstance(data, dict) else {{}}
    per = data.get("per_customer")
    per = per if isinstance(per, dict) else {{}}
    item("exactly the paying customers", 30, 30 if per and set(per) == set(want) else 0)
    right = sum(1 for k, v in want.items() if number(per.get(k)) and abs(per[k] - v) < 0.005)
    item("per-customer totals", 40, 40 * right / max(len(want), 1))
    total = data.get("grand_total")
    ok = number(total) and abs(total - round(sum(want.values()), 2)) < 0.0105
    item("grand total", 20, 20 if ok else 0)
    score = round(sum(d["score"] for d in details), 2)
    with open(os.path.join(root, "workplace_score.json"), "w", encoding="utf-8") as fh:
        json.dump({{"total_score": score, "details": details}}, fh, indent=2)


if __name__ == "__main__":
    main()
'''


def generate(root: Path, n: int) -> list[str]:
    """``n`` sound claw tasks in the four-file layout under ``root``; returns their ids."""
    ids = []
    for i in range(n):
        tid = f"bench_orders_{i:03d}"
        rng = random.Random(i)
        files = {
            f"tasks/{tid}.yaml": YAML.format(tid=tid, n=i),
            f"tasks/prompts/{tid}.md": PROMPT.format(shop=rng.choice(SHOPS), name=rng.choice(NAMES)),
            f"tasks/{tid}/env_builder.py": BUILDER.format(
                tid=tid, seed=1000 + i, customers=rng.randint(4, 9), orders=rng.randint(30, 80)
            ),
            f"scripts/{tid}/verify_workplace.py": VERIFIER.format(tid=tid),
        }
        for rel, text in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        ids.append(tid)
    return ids


def audit(tasks: Path, run: Path, workers: int) -> dict[str, object]:
    """One ``dataclaw tasks audit`` as a user runs it; wall seconds and what the reports say."""
    exe = shutil.which("dataclaw", path=str(Path(sys.executable).parent)) or "dataclaw"
    cmd = [exe, "tasks", "audit", str(tasks), "--out", str(run), "--workers", str(workers)]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"tasks audit failed ({res.returncode}): {res.stderr.strip()[-500:]}")
    reports = [json.loads(x) for x in (run / "code_audit.jsonl").read_text().splitlines() if x.strip()]
    reasons = Counter(str(c["reason"]) for r in reports for c in r["checks"] if not c["passed"])
    return {"wall_s": round(wall, 2), "audited": len(reports), "passed": sum(r["passed"] for r in reports),
            "failed_reasons": dict(reasons)}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--workers", default="1,2", help="Worker counts to measure, comma-separated.")
    opts = parser.parse_args()
    avail = sandbox_available()
    if not avail:
        print(json.dumps({"bench": "claw_audit", "error": avail.reason}))
        return 2
    counts = [int(w) for w in opts.workers.split(",")]
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-claw-audit-") as tmp:
        root = Path(tmp) / "tasks"
        generate(root, opts.tasks)
        results = {w: audit(root, Path(tmp) / f"run-w{w}", w) for w in counts}
    rate = {str(w): round(opts.tasks / r["wall_s"], 2) for w, r in results.items()}  # type: ignore[operator]
    sound = all(r["audited"] == opts.tasks and r["passed"] == opts.tasks for r in results.values())
    at2 = rate.get("2")
    result = {
        "bench": "claw_audit",
        "tasks": opts.tasks,
        "tasks_per_s": rate,
        "wall_s": {str(w): r["wall_s"] for w, r in results.items()},
        "speedup_2_vs_1": round(at2 / rate["1"], 2) if at2 and "1" in rate else None,
        "passed": {str(w): r["passed"] for w, r in results.items()},
        "failed_reasons": {str(w): r["failed_reasons"] for w, r in results.items() if r["failed_reasons"]},
        "load_avg_1m": {"start": round(load_start, 2), "end": round(os.getloadavg()[0], 2)},
        "cpus": os.cpu_count(),
        "target_tasks_per_s_at_2_workers": TARGET_TASKS_PER_S,
        "ok": bool(sound and at2 is not None and at2 >= TARGET_TASKS_PER_S),
    }
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
