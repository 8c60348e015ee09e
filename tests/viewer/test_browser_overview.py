"""The overview in a real browser (Debian's chromium + chromium-driver, driven by Selenium): the headline
figures the page shows equal the stage files' counts, the headline is above the fold, the plots and the
tool graph's labels are drawn inside their SVGs, an EnvCraft run made by the CLI names its command, runs
side by side mark their differences, and the static export shows the same figures from disk."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from dataclaw.core.store import RunStore
from dataclaw.viewer import open_site
from dataclaw.viewer.export import export_site
from viewer.conftest import Served
from viewer.test_overview import truth

pytestmark = pytest.mark.slow

FIGURES_JS = (
    "return Array.from(document.querySelectorAll('.headline [data-figure]')).map(e =>"
    " [e.dataset.figure, e.dataset.value, e.querySelector('.v').innerText])"
)


def _check_figures(b, root: Path) -> dict[str, str]:
    shown = {key: (value, text) for key, value, text in b.execute_script(FIGURES_JS)}
    want = truth(root)
    assert set(want) <= set(shown), set(want) - set(shown)
    for key, value in want.items():
        assert float(shown[key][0]) == pytest.approx(value, abs=1e-4), key
        if key.endswith(".yield") or key.endswith(".pass_rate"):
            assert shown[key][1] == f"{100 * value:.1f}%", key
        elif isinstance(value, int):
            assert shown[key][1] == f"{value:,}", key
    return {k: v[1] for k, v in shown.items()}


def test_overview_figures_match_the_stage_files_in_chromium(
    browser, quickstart: Path, tmp_path: Path
) -> None:
    b = browser
    shots = tmp_path / "screenshots"
    shots.mkdir()
    chains = tmp_path / "chains"
    cli = Path(sys.executable).with_name("dataclaw")
    made = subprocess.run(
        [str(cli), "tasks", "sample", "--out", str(chains), "--env", "temporal_scheduling", "-n", "5"],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    site = open_site([quickstart, chains], tmp_path / "cache")
    keys = {r.root.name: r.key for r in site.runs.values()}
    served = Served(site)
    try:
        for name in ("tailor", "envcraft"):
            b.get(served.base + f"r/{keys[name]}/index.html")
            _check_figures(b, quickstart / name)
            # the headline answers first: on screen without scrolling, before the funnel
            top = b.execute_script(
                "return document.querySelector('.headline').getBoundingClientRect().bottom"
            )
            funnel = b.execute_script(
                "return document.querySelector('svg.funnel').getBoundingClientRect().top"
            )
            assert top < b.execute_script("return window.innerHeight") and top < funnel
            # reject reasons: one bar per stage and reason, its count the store's
            bars = b.execute_script(
                "return Array.from(document.querySelectorAll('svg.reasons rect'))"
                ".map(r => [r.dataset.label, Number(r.dataset.count), r.getBBox().width])"
            )
            want = Counter(f"{r['stage']}: {r['reason']}" for r in RunStore(quickstart / name).rejects())
            assert {label: n for label, n, _ in bars} == dict(want)
            assert all(width > 0 for _, _, width in bars)
            # the field plots are drawn: bars with a height
            plots = b.execute_script(
                "return Array.from(document.querySelectorAll('.stat svg rect'))"
                ".filter(r => r.getBBox().height > 0).length"
            )
            assert plots > 0
            b.save_screenshot(str(shots / f"overview-{name}.png"))

        # an EnvCraft run made by the CLI names the command that made it
        b.get(served.base + f"r/{keys['chains']}/index.html")
        command = b.find_element("css selector", "[data-figure=command]").text
        assert command.startswith("dataclaw tasks sample --out") and "temporal_scheduling" in command
        n_chains = sum(1 for _ in RunStore(chains).records("chains"))
        assert dict(_check_figures(b, chains))["chains.kept"] == str(n_chains)

        # the tool graph: every label inside the drawing (it was cut at the left edge)
        b.get(served.base + f"r/{keys['envcraft']}/envs/temporal_scheduling.html")
        outside = b.execute_script(
            "const s = document.querySelector('svg.toolgraph'); const v = s.viewBox.baseVal;"
            "return Array.from(s.querySelectorAll('text')).map(t => [t.textContent, t.getBBox()])"
            ".filter(([_, r]) => r.x < v.x || r.x + r.width > v.x + v.width).map(([n]) => n)"
        )
        assert outside == []
        b.save_screenshot(str(shots / "toolgraph.png"))

        # runs side by side: figures that differ are marked, the same ones are not
        b.get(served.base + "compare.html")
        rows = b.execute_script(
            "return Object.fromEntries(Array.from(document.querySelectorAll('table.compare tr[data-figure]'))"
            ".map(r => [r.dataset.figure, r.querySelectorAll('td.diff').length]))"
        )
        assert rows["run.rejects"] > 0  # tailor 6, envcraft 2, chains 0
        assert rows["tailor_run.kept"] == 0  # only the Tailor run has it: greyed, not a difference
        b.save_screenshot(str(shots / "compare.png"))
    finally:
        served.close()

    # the static export shows the same figures, from disk
    out = tmp_path / "site"
    export_site(open_site([quickstart / "tailor"], tmp_path / "cache2"), out)
    b.get((out / "index.html").as_uri())
    _check_figures(b, quickstart / "tailor")
    assert b.execute_script("return document.querySelectorAll('.stat svg').length") > 0
