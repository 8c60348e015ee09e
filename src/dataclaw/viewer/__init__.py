"""The viewer: look at any run directory of either engine, served locally or exported as static HTML.

``open_site(paths)`` discovers and indexes the runs; :mod:`dataclaw.viewer.server` serves the pages,
:func:`dataclaw.viewer.export.export_site` writes them to a folder that opens from disk.
"""

from __future__ import annotations

import os
from pathlib import Path

from dataclaw.viewer.media import MediaCache
from dataclaw.viewer.run import Run, discover
from dataclaw.viewer.site import Site


def default_cache_dir() -> Path:
    """Where previews and thumbnails are cached (never inside a run)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dataclaw" / "viewer"


def open_site(paths: list[Path], cache_dir: Path | None = None) -> Site:
    """Discover the runs under ``paths``, index their stage files, and return the site of their pages."""
    return Site(discover(paths), MediaCache(cache_dir or default_cache_dir()))


__all__ = ["Run", "Site", "default_cache_dir", "discover", "open_site"]
