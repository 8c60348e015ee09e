"""Viewer latency on a large run: time to first byte of the overview (with its statistics: headline
figures, funnel, per-field plots of the kept records) and of a sample page.

Generates a Tailor run of ``--samples`` samples (default 100,000; each a real quickstart sample with its
own id, intent and domain, plus its artifact record, 10% rejects and completion markers) through the
record store, opens it in the viewer (the one-time line-offset index is timed and reported), serves
it, and measures time to first byte over HTTP: the overview, and sample pages spread over the file.
The baseline, in the same run, is reading and parsing the run's ``manifest.json``. Target (issues 19,
29): p50 TTFB <= 200 ms for each judged page, statistics on. A filtered list page (one intent, a later
page) is reported, not judged; so is what gathering the statistics adds to the one-time index (the same
run indexed again with no statistics registered).

Pages are a table (:data:`PAGES`: name → URL of the k-th request, judged or not): another figure is
one more row.

Review by keyboard (issue 29): in Debian's chromium (Selenium), ``--review`` samples (default 100) are
reviewed with the keys a reviewer uses — ``a`` / ``r`` saves the verdict (a POST into the run's verdict
file) and opens the next sample. Each page switch is measured in the browser, from the key's event to
the next page's DOMContentLoaded (Navigation Timing; Selenium's own latency is not in it); target: every
switch <= 100 ms. The baseline, in the same browser, is the same switch without a verdict (``j``, the
next sample). The verdict file must then hold exactly the verdicts given. Prints one JSON line; exits 1
on a miss.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dataclaw.core.store import RunStore
from dataclaw.media.writers import write_clip
from dataclaw.viewer import open_site, stats
from dataclaw.viewer.server import make_server

TARGET_MS = 200.0
FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "viewer" / "data" / "quickstart" / "tailor"
INTENTS = [
    ("describe_current_subtask", "embodied"),
    ("robot_fault_recovery", "embodied"),
    ("video_generation_segment", "aigc"),
    ("gui_next_action", "gui"),
    ("lecture_qa", "education"),
]


def make_run(root: Path, n: int) -> None:
    """A run of ``n`` samples written through the store, shaped like the quickstart's records."""
    sample = json.loads((FIXTURE / "samples.jsonl").read_text().splitlines()[0])
    art = json.loads((FIXTURE / "artifacts.jsonl").read_text().splitlines()[0])
    stream = json.loads((FIXTURE / "streams.jsonl").read_text().splitlines()[0])
    frames = (np.arange(64 * 48 * 3, dtype=np.uint32).reshape(48, 64, 3) % 251).astype(np.uint8)
    clip = "media/clip.mp4"
    write_clip([frames] * 10, root / clip, 30.0)
    with RunStore(root, command="bench_viewer") as store:
        store.stage("streams").append(stream)
        samples, arts, done = store.stage("samples"), store.stage("artifacts"), store.done("validated")
        for i in range(n):
            intent, domain = INTENTS[i % len(INTENTS)]
            sid = f"{stream['id']}/cand-{i:06d}/sample-{intent}-{i:08x}"
            aid = f"{sid}/clip-observation-{i:08x}"
            samples.append(
                {
                    **sample,
                    "id": sid,
                    "intent": intent,
                    "domain": domain,
                    "media": [
                        {"artifact_id": aid, "kind": "video", "role": "observation", "placeholder": None}
                    ],
                }
            )
            arts.append({**art, "id": aid, "sample_id": sid, "path": clip})
            done.append({"id": f"{sid}-resp", "outputs": 1})
            if i % 10 == 0:
                from dataclaw.core.errors import Reject

                store.reject(
                    Reject(
                        id=f"{sid}-resp-x", stage="validated", reason="frames_out_of_order", message=f"n {i}"
                    )
                )
                done.append({"id": f"{sid}-resp-x", "reject": "frames_out_of_order"})
        store.update_manifest(command="bench_viewer", config={"samples": n})


PAGES: dict[str, tuple[Callable[[int, int], str], bool]] = {
    "overview": (lambda n, k: "/r/0/index.html", True),
    "sample": (lambda n, k: f"/r/0/samples/{(k * 7919 * 13) % n}.html", True),
    "filtered_list": (lambda n, k: f"/r/0/samples/p{k + 2}.html?intent=gui_next_action", False),
}
"""Page name → (URL of the k-th request of a run of n samples, judged against the target)."""


def index_without_stats(root: Path, cache: Path) -> float:
    """Seconds to index the run with no statistics registered (the baseline of what they add)."""
    saved = dict(stats.FIELDS), dict(stats.USAGE_STAGES)
    stats.FIELDS.clear()
    stats.USAGE_STAGES.clear()
    try:
        t0 = time.perf_counter()
        open_site([root], cache)
        return time.perf_counter() - t0
    finally:
        stats.FIELDS.update(saved[0])
        stats.USAGE_STAGES.update(saved[1])


def ttfb_ms(port: int, path: str, must: bytes = b"") -> float:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    t0 = time.perf_counter()
    conn.request("GET", path)
    resp = conn.getresponse()  # returns once the status line (the first bytes) arrived
    first = (time.perf_counter() - t0) * 1000
    body = resp.read()
    conn.close()
    if resp.status != 200 or not body:
        raise SystemExit(f"bench_viewer: GET {path} answered {resp.status}")
    if must not in body:
        raise SystemExit(f"bench_viewer: GET {path} lacks {must.decode()!r}")
    return first


SWITCH_TARGET_MS = 100.0
_STAMP_KEY = (
    "document.addEventListener('keydown', () => sessionStorage.setItem('bench.key',"
    " String(performance.timeOrigin + performance.now())), true)"
)
_SWITCH_MS = (
    "const nav = performance.getEntriesByType('navigation')[0];"
    "const key = Number(sessionStorage.getItem('bench.key'));"
    "return nav && nav.domContentLoadedEventEnd > 0 && key"
    " ? [performance.timeOrigin + nav.domContentLoadedEventEnd - key, performance.timeOrigin - key] : null"
)


def review_by_keyboard(base: str, run: Path, count: int) -> dict[str, object]:
    """Review ``count`` samples in chromium by keyboard (accept, every fifth rejected); the page-switch
    times measured in the browser, and a check that the run's verdict file holds what was pressed."""
    import shutil

    from dataclaw.core.review import VERDICTS_FILE, read_reviews

    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.action_chains import ActionChains
    except ImportError:
        return {"review_error": "selenium is not installed"}
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_exe = shutil.which("chromedriver")
    if chromium is None or driver_exe is None:
        return {"review_error": "chromium / chromedriver missing (scripts/install-system-deps.sh)"}
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000"):
        opts.add_argument(arg)
    profile = tempfile.TemporaryDirectory(prefix="bench_viewer_chromium_")
    opts.add_argument(f"--user-data-dir={profile.name}")
    driver = webdriver.Chrome(service=Service(driver_exe), options=opts)
    (run / VERDICTS_FILE).unlink(missing_ok=True)  # a kept run (--keep) starts its review afresh
    switches: list[float] = []
    saves: list[float] = []  # key → navigation start: the verdict's POST and its answer
    plain: list[float] = []
    pressed: list[str] = []
    try:
        driver.get(f"{base}r/0/samples/0.html")

        def switch(key: str, want: str) -> list[float] | None:
            driver.execute_script(_STAMP_KEY)
            ActionChains(driver).send_keys(key).perform()
            end = time.monotonic() + 30
            while time.monotonic() < end:
                got = driver.execute_script(_SWITCH_MS) if driver.current_url.endswith(want) else None
                if got:
                    return [float(x) for x in got]
                time.sleep(0.005)
            return None

        for i in range(count):
            key = "r" if i % 5 == 4 else "a"
            got = switch(key, f"/r/0/samples/{i + 1}.html")
            if not got:
                return {"review_error": f"sample {i}: key {key!r} did not open the next sample"}
            pressed.append(key)
            switches.append(got[0])
            saves.append(got[1])
        for i in range(count, 2 * count):  # the baseline: the same page switch with no verdict (key j)
            got = switch("j", f"/r/0/samples/{i + 1}.html")
            if not got:
                return {"review_error": f"sample {i}: key 'j' did not open the next sample"}
            plain.append(got[0])
    finally:
        driver.quit()
        profile.cleanup()
    reviews = read_reviews(run)
    decided = [r.decision for r in reviews.by_id.values()]  # in the order first written
    want_decisions = ["accept" if k == "a" else "reject" for k in pressed]
    return {
        "review_samples": count,
        "review_switch_ms_p50": round(statistics.median(switches), 1),
        "review_switch_ms_p95": round(float(np.percentile(switches, 95)), 1),
        "review_switch_ms_max": round(max(switches), 1),
        "review_save_ms_p50": round(statistics.median(saves), 1),
        "plain_switch_ms_p50": round(statistics.median(plain), 1),
        "plain_switch_ms_max": round(max(plain), 1),
        "review_vs_plain_p50": round(statistics.median(switches) / max(statistics.median(plain), 1e-3), 2),
        "review_total_s": round(sum(switches) / 1000, 2),
        "review_switch_target_ms": SWITCH_TARGET_MS,
        "review_verdicts_match": decided == want_decisions and not reviews.problems,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=9)
    parser.add_argument("--keep", type=Path, default=None, help="Write the run here and keep it.")
    parser.add_argument("--review", type=int, default=100, help="Samples reviewed by keyboard (0: skip).")
    args = parser.parse_args()
    tmp = tempfile.TemporaryDirectory(prefix="bench_viewer_")
    root = args.keep or Path(tmp.name) / "run"
    t0 = time.perf_counter()
    if not (root / "samples.jsonl").is_file():
        make_run(root, args.samples)
    gen_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    site = open_site([root], Path(tmp.name) / "cache")
    index_s = time.perf_counter() - t0
    no_stats_s = index_without_stats(root, Path(tmp.name) / "cache")
    server = make_server(site)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    n = len(site.runs["0"].index("samples"))
    # the overview must carry its statistics: the headline and the field plots of the kept samples
    must = {"overview": b'data-stat="samples.frames per sample"'}
    cold = {name: ttfb_ms(port, url(n, 0), must.get(name, b"")) for name, (url, _) in PAGES.items()}
    times: dict[str, list[float]] = {name: [] for name in ["manifest", *PAGES]}
    for k in range(args.requests):
        t = time.perf_counter()
        json.loads((root / "manifest.json").read_bytes())
        times["manifest"].append((time.perf_counter() - t) * 1000)
        for name, (url, _) in PAGES.items():
            times[name].append(ttfb_ms(port, url(n, k + 1), must.get(name, b"")))
    review = review_by_keyboard(f"http://127.0.0.1:{port}/", root, args.review) if args.review else {}
    server.shutdown()
    p50 = {name: round(statistics.median(xs), 2) for name, xs in times.items()}
    size = sum(f.stat().st_size for f in root.glob("*.jsonl"))
    result: dict[str, object] = {
        "bench": "viewer",
        "samples": n,
        "jsonl_mb": round(size / 1e6, 1),
        "generate_s": round(gen_s, 1),
        "index_s": round(index_s, 2),
        "index_s_without_stats": round(no_stats_s, 2),
        "manifest_read_ms_p50": p50["manifest"],
    }
    for name in PAGES:
        result[f"{name}_ttfb_ms_p50"] = p50[name]
        result[f"{name}_ttfb_ms_cold"] = round(cold[name], 2)
        result[f"{name}_vs_manifest"] = round(p50[name] / max(p50["manifest"], 1e-3), 1)
    judged = [name for name, (_, judge) in PAGES.items() if judge]
    result.update(target_ms=TARGET_MS, judged=judged, load=os.getloadavg()[0])
    result["ok"] = all(p50[name] <= TARGET_MS for name in judged)
    if args.review:
        result.update(review)
        result["ok"] = bool(
            result["ok"]
            and "review_error" not in review
            and float(review["review_switch_ms_max"]) <= SWITCH_TARGET_MS  # type: ignore[arg-type]
            and review["review_verdicts_match"]
        )
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
