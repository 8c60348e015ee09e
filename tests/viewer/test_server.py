"""The HTTP server: pages, static assets, Range requests, previews, and nothing outside a run."""

from __future__ import annotations

import os
import re

import av
import pytest


def test_pages_and_static_assets_are_served(served, keys) -> None:
    status, headers, body = served.get("/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    for asset in ("static/viewer.css", "static/viewer.js"):
        assert f'href="{asset}"' in body.decode() or f'src="{asset}"' in body.decode()
        status, _, data = served.get(asset)
        assert status == 200 and data
    status, _, body = served.get(f"r/{keys['tailor']}/samples/p1.html?intent=describe_current_subtask")
    assert status == 200 and b"1 records match" in body
    assert served.get(f"r/{keys['tailor']}/samples/99.html")[0] == 404
    assert served.get("r/9/index.html")[0] == 404
    assert served.get("static/../run.py")[0] == 404


def test_no_page_references_a_network_asset(served, keys) -> None:
    for path in (
        "/",
        f"r/{keys['tailor']}/samples/0.html",
        f"r/{keys['envcraft']}/envs/temporal_scheduling.html",
    ):
        html = served.get(path)[2].decode()
        assert not re.search(r'(src|href)="(https?:)?//', html), path


def _clip_path(site, keys) -> str:
    run = site.runs[keys["tailor"]]
    return run.index("artifacts").get(0)["path"]


def test_clips_are_served_with_range_requests(served, site, keys) -> None:
    rel = _clip_path(site, keys)
    size = (site.runs[keys["tailor"]].root / rel).stat().st_size
    url = f"r/{keys['tailor']}/file/{rel}"
    status, headers, body = served.get(url)
    assert status == 200 and len(body) == size and headers["Accept-Ranges"] == "bytes"
    status, headers, body = served.get(url, {"Range": "bytes=100-199"})
    assert status == 206 and len(body) == 100 and headers["Content-Range"] == f"bytes 100-199/{size}"
    assert body == (site.runs[keys["tailor"]].root / rel).read_bytes()[100:200]
    status, headers, body = served.get(url, {"Range": "bytes=-10"})
    assert status == 206 and len(body) == 10
    status, headers, _ = served.get(url, {"Range": f"bytes={size}-"})
    assert status == 416 and headers["Content-Range"] == f"bytes */{size}"


def test_a_lossless_clip_gets_a_browser_playable_preview(served, site, keys, tmp_path) -> None:
    rel = _clip_path(site, keys)
    with av.open(str(site.runs[keys["tailor"]].root / rel)) as c:
        assert c.streams.video[0].codec_context.pix_fmt == "gbrp"  # lossless RGB: browsers refuse it
    status, headers, body = served.get(f"r/{keys['tailor']}/preview/{rel}", {"Range": "bytes=0-"})
    assert status == 206 and headers["Content-Type"] == "video/mp4"
    out = tmp_path / "preview.mp4"
    out.write_bytes(body)
    with av.open(str(out)) as c:
        ctx = c.streams.video[0].codec_context
        assert (ctx.name, ctx.pix_fmt) == ("h264", "yuv420p")
        assert sum(1 for _ in c.decode(video=0)) == 30  # every frame of the clip
    # made once: the second request is the cached file
    previews = list((tmp_path / "cache" / "previews").iterdir())
    assert len(previews) == 1
    mtime = previews[0].stat().st_mtime_ns
    assert served.get(f"r/{keys['tailor']}/preview/{rel}")[0] == 200
    assert previews[0].stat().st_mtime_ns == mtime


def test_thumbnails_are_jpegs_of_the_stream_frames(served, site, keys) -> None:
    html = served.get(f"r/{keys['tailor']}/samples/0.html")[2].decode()
    src = re.search(r'<figure><img loading=lazy src="([^"]+)"', html).group(1)
    status, headers, body = served.get(src.replace("../", ""))
    assert status == 200 and headers["Content-Type"] == "image/jpeg" and body[:2] == b"\xff\xd8"


@pytest.mark.parametrize(
    "rel",
    [
        "../../../../etc/passwd",
        "..%2F..%2F..%2Fetc%2Fpasswd",
        "media/../../envcraft/manifest.json",
        "/etc/passwd",
    ],
)
def test_paths_outside_the_run_are_never_served(served, keys, rel) -> None:
    status, _, body = served.get(f"r/{keys['tailor']}/file/{rel}")
    assert status in (403, 404)
    assert b"root:" not in body and b"producers" not in body


def test_a_symlink_out_of_the_run_is_refused(served, site, keys, tmp_path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    run = site.runs[keys["tailor"]].root
    os.symlink(secret, run / "media" / "link.txt")
    os.symlink(tmp_path, run / "media" / "dirlink")
    for rel in ("media/link.txt", "media/dirlink/secret.txt"):
        status, _, body = served.get(f"r/{keys['tailor']}/file/{rel}")
        assert status == 403 and b"top secret" not in body
        assert b"outside the run" in body
    # a symlink that stays inside the run is fine
    os.symlink(run / "manifest.json", run / "media" / "inside.json")
    assert served.get(f"r/{keys['tailor']}/file/media/inside.json")[0] == 200
