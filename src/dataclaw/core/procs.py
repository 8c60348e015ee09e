"""Processes that die with their parent: pool workers and the tools they run (tesseract, ffmpeg …).

Linux's ``PR_SET_PDEATHSIG`` asks the kernel to signal a process when its parent dies, however the
parent dies (SIGKILL included), so a killed run leaves no worker or subprocess behind. Elsewhere the
calls are no-ops.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl  # type: ignore[no-any-return]
    except (OSError, AttributeError):
        return None


_prctl = _load_prctl()  # resolved here, so the child side of a fork only makes the call


def die_with_parent(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent dies; False where unsupported."""
    if _prctl is None:
        return False
    return _prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0


def child_dies_with_parent() -> None:
    """``preexec_fn`` for ``subprocess``: the child is SIGKILLed when the process that started it dies."""
    if _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
