"""``dataclaw view --export``: static pages that open from disk; the CLI's errors."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import av

from dataclaw.cli.app import _run


def test_export_writes_every_page_with_links_that_resolve_on_disk(quickstart: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    assert _run(["view", str(quickstart), "--export", str(out), "--cache-dir", str(tmp_path / "c")]) == 0
    pages = list(out.rglob("*.html"))
    assert len(pages) > 40
    assert (out / "static" / "viewer.css").is_file()
    broken = []
    for page in pages:
        html = page.read_text()
        for link in re.findall(r'(?:href|src)="([^"]+)"', html):
            url = urlsplit(link)
            if url.scheme == "file":
                target = Path(unquote(url.path))
            elif url.scheme:
                broken.append((page, link))
                continue
            else:
                target = (page.parent / unquote(url.path)).resolve()
            if not target.exists():
                broken.append((page.relative_to(out), link))
    assert broken == []
    # the sample's clip: a preview copied into the export, H.264 yuv420p
    sample = next(p for p in out.glob("r/*/samples/0.html"))
    src = re.search(r'<video class=clip controls preload=metadata src="([^"]+)"', sample.read_text()).group(1)
    with av.open(str((sample.parent / src).resolve())) as c:
        assert c.streams.video[0].codec_context.pix_fmt == "yuv420p"
    assert "filters and search need" in (out / "r" / "0" / "rollouts" / "p1.html").read_text()


def test_view_of_a_missing_folder_is_one_line_and_exit_1(tmp_path: Path, capsys) -> None:
    assert _run(["view", str(tmp_path / "nope"), "--export", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "no such run directory" in err and "Traceback" not in err
