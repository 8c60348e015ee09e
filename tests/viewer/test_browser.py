"""Real browser: Debian's chromium + chromium-driver (scripts/install-system-deps.sh), driven by Selenium.

Follows the links a user follows — overview → a sample → its clip plays; a task → its trajectory — and
screenshots each page into the test's folder (``tmp_path/screenshots``, kept as CI artifacts).
Chromium is never downloaded: the test uses the system executables and fails when they are missing.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _wait(fn, timeout: float = 45.0, step: float = 0.25):
    end = time.monotonic() + timeout
    while True:
        value = fn()
        if value or time.monotonic() > end:
            return value
        time.sleep(step)


def test_overview_sample_clip_plays_and_task_to_trajectory(browser, served, keys, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    shots = tmp_path / "screenshots"
    shots.mkdir()
    b = browser
    b.get(served.base)
    b.save_screenshot(str(shots / "01-runs.png"))
    b.find_element(By.CSS_SELECTOR, f'a[href="r/{keys["tailor"]}/index.html"]').click()
    assert b.find_element(By.CSS_SELECTOR, "svg.funnel").is_displayed()
    assert "missing_placeholder" in b.page_source
    b.save_screenshot(str(shots / "02-tailor-overview.png"))

    b.find_element(By.CSS_SELECTOR, 'a[href$="/samples/p1.html"]').click()
    b.find_element(By.CSS_SELECTOR, "table.list td a").click()
    assert "describe_current_subtask" in b.page_source
    state = _wait(
        lambda: b.execute_script(
            "const v = document.querySelector('video.clip');"
            "return v && v.readyState >= 1 ? [v.readyState, v.duration, v.currentSrc, v.error] : null"
        )
    )
    assert state is not None, b.execute_script(
        "const v = document.querySelector('video.clip');"
        "return v ? [v.readyState, v.networkState, v.currentSrc, v.error && v.error.code,"
        " v.error && v.error.message]"
        " : document.body.innerText.slice(0, 800)"
    )
    ready, duration, src, error = state
    assert ready >= 1 and error is None and "/preview/" in src
    assert duration == pytest.approx(1.0, abs=0.1)  # 30 frames at 30 fps
    played = b.execute_async_script(
        "const done = arguments[arguments.length - 1]; const v = document.querySelector('video.clip');"
        "v.muted = true;"
        "v.play().then(() => setTimeout(() => done(v.currentTime), 500)).catch(e => done(String(e)))"
    )
    assert isinstance(played, float | int) and played > 0, played
    b.save_screenshot(str(shots / "03-sample.png"))

    b.get(served.base + f"r/{keys['envcraft']}/index.html")
    b.save_screenshot(str(shots / "04-envcraft-overview.png"))
    b.find_element(By.CSS_SELECTOR, 'a[href$="/tasks/p1.html"]').click()
    b.find_element(By.CSS_SELECTOR, "table.list td a").click()
    assert "User turns" in b.page_source and "gold chain scores" in b.page_source
    b.save_screenshot(str(shots / "05-task.png"))
    b.find_element(By.CSS_SELECTOR, "ul.children a").click()
    assert "Trajectories:" in b.title and "Conversation" in b.page_source
    b.save_screenshot(str(shots / "06-trajectory.png"))
    b.get(served.base + f"r/{keys['envcraft']}/envs/temporal_scheduling.html")
    assert b.find_element(By.CSS_SELECTOR, "svg.toolgraph").is_displayed()
    b.save_screenshot(str(shots / "07-environment.png"))
    assert len(list(shots.glob("*.png"))) == 7
