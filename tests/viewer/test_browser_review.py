"""Review and trial comparison in a real browser (Debian's chromium + chromium-driver through Selenium):
keys on a served sample page → the run's verdict file → an export without the rejected sample; the static
export's verdicts downloaded and imported; a task's trials side by side. Screenshots go to the test's
folder (``tmp_path/screenshots``)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tests.viewer.conftest import Served
from tests.viewer.test_review import _more_samples

from dataclaw.cli.app import _run
from dataclaw.core.review import VERDICTS_FILE, read_reviews
from dataclaw.viewer import open_site

pytestmark = pytest.mark.slow


def _wait(fn, timeout: float = 30.0, step: float = 0.1):
    end = time.monotonic() + timeout
    while True:
        value = fn()
        if value or time.monotonic() > end:
            return value
        time.sleep(step)


def _press(b, keys: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(b).send_keys(keys).perform()


def _on(b, suffix: str) -> bool:
    return bool(
        _wait(
            lambda: (
                b.current_url.endswith(suffix)
                and b.execute_script("return document.readyState") == "complete"
            )
        )
    )


def test_keys_save_verdicts_and_the_export_leaves_the_rejected_sample_out(
    browser, quickstart: Path, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    shots = tmp_path / "screenshots"
    shots.mkdir()
    run = quickstart / "tailor"
    ids = _more_samples(run, 4)
    site = open_site([quickstart], tmp_path / "cache")
    key = next(r.key for r in site.runs.values() if r.root.name == "tailor")
    served = Served(site)
    b = browser
    try:
        b.get(f"{served.base}r/{key}/samples/0.html")
        assert b.find_element(By.CSS_SELECTOR, "section.review").is_displayed()
        b.save_screenshot(str(shots / "01-review-panel.png"))
        _press(b, "a")  # accept, then the next sample
        assert _on(b, f"/r/{key}/samples/1.html")
        _press(b, "r")
        assert _on(b, f"/r/{key}/samples/2.html")
        _press(b, "k")  # back to the rejected one: its page says so
        assert _on(b, f"/r/{key}/samples/1.html")
        assert b.find_element(By.CSS_SELECTOR, ".review-state").text == "rejected"
        _press(b, "n")
        b.switch_to.active_element.send_keys("the subtask names an object the clip does not show\n")
        assert _wait(lambda: "note saved" in b.find_element(By.CSS_SELECTOR, ".review-status").text)
        b.save_screenshot(str(shots / "02-rejected-with-note.png"))
        _press(b, "u")  # the next sample nobody decided on: 2
        assert _on(b, f"/r/{key}/samples/2.html")
        b.get(f"{served.base}r/{key}/index.html")
        block = b.find_element(By.CSS_SELECTOR, "section.agreement")
        assert "2 records with a verdict" in block.text and "50%" in block.text
        assert ids[1][-40:] in block.get_attribute("innerHTML") and "grounded_text" in block.text
        b.save_screenshot(str(shots / "03-overview-agreement.png"))
    finally:
        served.close()
    reviews = read_reviews(run)
    assert [reviews.decision(i) for i in ids] == ["accept", "reject", None, None]
    assert reviews.get(ids[1]).note.startswith("the subtask names")
    out = tmp_path / "export"
    assert _run(["tailor", "export", str(run), "-f", "jsonl", "-o", str(out), "--no-verify"]) == 0
    kept = [json.loads(x)["id"] for x in (out / "samples.jsonl").read_text().splitlines()]
    assert kept == [ids[0], ids[2], ids[3]]


def test_static_export_downloads_verdicts_that_import_into_the_run(
    browser, quickstart: Path, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    run = quickstart / "tailor"
    ids = _more_samples(run, 3)
    site_dir = tmp_path / "site"
    assert _run(["view", str(run), "--export", str(site_dir), "--cache-dir", str(tmp_path / "c")]) == 0
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    b = browser
    b.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    b.get((site_dir / "r" / "0" / "samples" / "0.html").as_uri())
    _press(b, "r")
    assert _on(b, "/samples/1.html")
    _press(b, "a")
    assert _on(b, "/samples/2.html")
    _press(b, "k")
    assert _on(b, "/samples/1.html")
    assert b.find_element(By.CSS_SELECTOR, ".review-state").text == "accepted"  # kept in this browser
    b.get((site_dir / "r" / "0" / "samples" / "0.html").as_uri())
    _press(b, "u")  # from disk: walks past the samples this browser decided on
    assert _on(b, "/samples/2.html")
    b.get((site_dir / "r" / "0" / "samples" / "1.html").as_uri())
    button = b.find_element(By.CSS_SELECTOR, "button.review-download")
    assert button.text == "download verdicts (2)"
    button.click()
    got = _wait(lambda: [p for p in downloads.glob("*.jsonl")])
    assert got, "the browser wrote no verdicts file"
    lines = [json.loads(x) for x in got[0].read_text().splitlines()]
    assert [(v["id"], v["verdict"]) for v in lines] == [(ids[0], "reject"), (ids[1], "accept")]
    assert not (run / VERDICTS_FILE).exists()  # the static pages never write into the run
    assert _run(["view", "--import-verdicts", str(got[0]), str(run)]) == 0
    reviews = read_reviews(run)
    assert [reviews.decision(i) for i in ids] == ["reject", "accept", None]


def test_trials_side_by_side_mark_the_first_divergence(browser, quickstart: Path, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    run = quickstart / "envcraft"
    rollouts = [json.loads(x) for x in (run / "rollouts.jsonl").read_text().splitlines()]
    base = next(r for r in rollouts if r["steps"])
    trials = []
    for k, reward in enumerate((1.0, 0.0)):
        steps = [dict(s) for s in base["steps"]]
        if k:
            steps = steps[:2]  # the second trial stops after two calls
        trials.append(
            {**base, "id": f"{base['task_id']}/rollout-s{k}", "sample": k, "steps": steps, "reward": reward}
        )
    others = [r for r in rollouts if r["task_id"] != base["task_id"]]
    (run / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [*others, *trials]))
    site = open_site([run], tmp_path / "cache")
    served = Served(site)
    b = browser
    try:
        pos = next(iter(site.runs.values())).index("tasks").find(base["task_id"])
        b.get(f"{served.base}r/0/tasks/{pos}.html")
        b.find_element(By.CSS_SELECTOR, "p.trials-link a").click()
        assert _on(b, f"/r/0/trials/{len(others)}.html")
        row = b.find_element(By.CSS_SELECTOR, "table.trials tr.diverge")
        assert row.is_displayed() and row.find_element(By.TAG_NAME, "th").text == "3"
        assert "no call" in row.text
        assert "a trial made no call there" in b.find_element(By.CSS_SELECTOR, ".divergence").text
        assert "pass^1 = 0.5 · pass^2 = 0" in b.find_element(By.CSS_SELECTOR, ".passk").text
        b.save_screenshot(str(tmp_path / "trials.png"))
    finally:
        served.close()
