"""Fixtures: runs as the engines write them.

``data/quickstart/{tailor,envcraft}`` are the stage files, manifests and completion markers of a real
``dataclaw quickstart --out /tmp/qs_view`` (embedded model, 2026-12-02), trimmed (4 of the 99 ingest
rejects, 8 anchors, the 2 grounded chains the tasks came from). Source paths were written as
``@EXAMPLES@`` and point at this checkout's ``examples/``; the one materialised clip is written again
from the real episode's frames with the same lossless RGB H.264 writer ``tailor run`` uses.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.request import Request, urlopen

import pytest

from dataclaw.viewer import open_site
from dataclaw.viewer.server import make_server
from dataclaw.viewer.site import Site

DATA = Path(__file__).parent / "data" / "quickstart"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLIP_FRAMES = 30


def _write_clip(run: Path) -> None:
    from dataclaw.media.video import VideoReader
    from dataclaw.media.writers import write_clip

    art = json.loads((run / "artifacts.jsonl").read_text().splitlines()[0])
    stream = json.loads((run / "streams.jsonl").read_text().splitlines()[0])
    cam = stream["cameras"][art["source"]["camera"]]
    with VideoReader(cam["path"]) as reader:
        frames = reader.frames_at(list(range(CLIP_FRAMES)))
    write_clip(frames, run / art["path"], cam["fps"])


@pytest.fixture(scope="session")
def quickstart_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The quickstart runs, made once per session (copy it before changing anything)."""
    root = tmp_path_factory.mktemp("qs") / "quickstart"
    shutil.copytree(DATA, root)
    for path in root.rglob("*.json*"):
        path.write_text(path.read_text().replace("@EXAMPLES@", str(EXAMPLES)))
    _write_clip(root / "tailor")
    return root


@pytest.fixture
def quickstart(quickstart_template: Path, tmp_path: Path) -> Path:
    """A private copy of the quickstart runs (``quickstart/tailor``, ``quickstart/envcraft``)."""
    root = tmp_path / "quickstart"
    shutil.copytree(quickstart_template, root)
    return root


@pytest.fixture
def site(quickstart: Path, tmp_path: Path) -> Site:
    return open_site([quickstart], tmp_path / "cache")


@pytest.fixture
def keys(site: Site) -> dict[str, str]:
    """Run folder name (``tailor``, ``envcraft``) → its key in the site's URLs."""
    return {r.root.name: r.key for r in site.runs.values()}


class Served:
    """A running viewer server and a tiny HTTP client for it."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.server = make_server(site)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        import urllib.error

        req = Request(self.base + path.lstrip("/"), headers=headers or {})
        try:
            with urlopen(req, timeout=60) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers), err.read()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def served(site: Site) -> Iterator[Served]:
    s = Served(site)
    yield s
    s.close()


@pytest.fixture
def browser(tmp_path: Path):
    """Debian's headless chromium driven by Selenium through the system chromedriver (never downloaded;
    missing executables fail the test with the install hint)."""
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_exe = shutil.which("chromedriver")
    if chromium is None or driver_exe is None:
        pytest.fail(
            "chromium and chromedriver are missing: run scripts/install-system-deps.sh (Debian packages)"
        )
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000"):
        opts.add_argument(arg)
    opts.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    driver = webdriver.Chrome(service=Service(driver_exe), options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()
