"""Fixtures: small limits so hostile programs hit them fast, a fresh uid per test to check leftovers."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

from dataclaw.sandbox import Limits, SandboxPolicy, sandbox_available
from dataclaw.sandbox.runner import UID_BASE, UID_SPAN

SMALL = Limits(cpu_s=2, memory_mb=256, file_size_mb=10, open_files=64, processes=32, wall_s=20, tmp_mb=32)


@pytest.fixture
def limits() -> Limits:
    return SMALL


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def uid() -> int:
    """A uid no other test uses, so 'nothing survives' can be checked by uid on the host."""
    return UID_BASE + secrets.randbelow(UID_SPAN)


@pytest.fixture
def policy(uid: int) -> SandboxPolicy:
    return SandboxPolicy(uid=uid)


@pytest.fixture
def require_bwrap() -> None:
    """Skip (with the reason) where bubblewrap cannot run; the refusal path is tested separately."""
    avail = sandbox_available()
    if not avail:
        pytest.skip(avail.reason)


@pytest.fixture
def survivors(uid: int):
    """Callable listing host processes still running as this test's sandbox uid."""
    return lambda: processes_of(uid)


def processes_of(uid: int) -> list[int]:
    """Live host pids whose real uid is ``uid`` (zombies are already dead; vanished ones are skipped)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
        except OSError:
            continue
        if fields.get("State", "").split()[:1] in (["Z"], ["X"]):
            continue
        if int(fields.get("Uid", "-1 ").split()[0]) == uid:
            found.append(int(name))
    return found
