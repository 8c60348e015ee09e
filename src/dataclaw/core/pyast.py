"""``ast.parse`` that is safe to call from many threads at once.

CPython 3.11 converts a parsed tree to ``ast`` objects with a recursion-depth counter shared by all
threads; two conversions interleaving (dataclaw parses builders, verifiers, graders and tool sources from
audit, rollout and import threads) fail at random with ``SystemError: AST constructor recursion depth
mismatch`` (CPython gh-106905). Every parse in dataclaw goes through :func:`parse`, one at a time.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str | bytes, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """:func:`ast.parse`, serialised across threads (the parse itself takes microseconds to milliseconds)."""
    with _LOCK:
        return ast.parse(source, filename=filename, mode=mode)
