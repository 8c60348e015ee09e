"""The workspace's disk quota: how much a run may add to its workspace, measured by the supervisor.

The workspace is an ordinary host directory (bind-mounted), so no filesystem quota applies to it; the
per-file limit (RLIMIT_FSIZE) alone would let a program fill the host disk with many files. The supervisor
therefore measures the workspace while the program runs — a walk of its tree, charging every entry at least
one 512-byte block, so floods of empty files count too — and kills the process tree once it has grown past
``Limits.disk_mb``. The walk is cheap for the small workspaces tasks use; for large ones the polling interval
grows with the walk's cost (at most a few percent of one core).
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from dataclaw.sandbox.types import Limits

MIN_INTERVAL_S = 0.05
MAX_INTERVAL_S = 2.0
ENTRY_BYTES = 512


def usage(root: Path | str) -> int:
    """Bytes charged for everything under ``root`` (symlinks not followed, hard links counted once)."""
    total, seen = 0, set()
    stack = [os.fspath(root)]
    while stack:
        try:
            it = os.scandir(stack.pop())
        except OSError:  # vanished or unreadable while the program runs
            continue
        with it:
            for entry in it:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
                    key = (st.st_dev, st.st_ino)
                    if key in seen:
                        continue
                    seen.add(key)
                size = st.st_blocks * 512
                if stat.S_ISREG(st.st_mode):
                    size = max(size, st.st_size)
                total += max(size, ENTRY_BYTES)
                if stat.S_ISDIR(st.st_mode):
                    stack.append(entry.path)
    return total


class DiskWatch:
    """How much a workspace grew since the watch began; ``due()``/``check()`` pace the supervisor's polls."""

    def __init__(self, root: Path, limits: Limits) -> None:
        self.root = root
        self.quota = limits.disk_mb << 20
        self.base = usage(root)
        self.interval = MIN_INTERVAL_S
        self.next_at = time.monotonic() + self.interval
        self.exceeded = False

    def due(self, now: float) -> bool:
        return now >= self.next_at

    def check(self) -> bool:
        """Measure now; True (and ``exceeded`` set) once the workspace grew past the quota."""
        t0 = time.monotonic()
        grown = usage(self.root) - self.base
        took = time.monotonic() - t0
        self.interval = min(MAX_INTERVAL_S, max(MIN_INTERVAL_S, 25 * took))
        self.next_at = time.monotonic() + self.interval
        self.exceeded = self.exceeded or grown > self.quota
        return self.exceeded
