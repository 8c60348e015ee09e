"""``pyast.parse`` from many threads while the garbage collector runs finalizers: CPython 3.11's own
``ast.parse`` fails at random there (``SystemError: AST constructor recursion depth mismatch``; seen in
CI as a claw audit's ``audit_error`` and a rollout's setup error)."""

from __future__ import annotations

import threading
import time

from dataclaw.core import pyast

BODY = "    return [[(x, {'k': [i for i in range(3)]}) for _ in y] for y in x]"
SOURCE = "\n".join(f"def f{i}(x):\n{BODY}" for i in range(80))


class Finalized:
    def __del__(self) -> None:  # Python code run by the collector: a thread switch can happen here
        sum(range(200))


def test_parses_from_many_threads_with_finalizers_running_never_fail() -> None:
    stop = threading.Event()
    errors: list[str] = []

    def garbage() -> None:
        while not stop.is_set():
            for _ in range(200):
                a, b = Finalized(), Finalized()
                a.other, b.other = b, a  # cycles: freed by the collector, which runs __del__
            time.sleep(0)

    def parse() -> None:
        for _ in range(100):
            try:
                pyast.parse(SOURCE)
            except SystemError as exc:
                errors.append(str(exc))
                return

    makers = [threading.Thread(target=garbage) for _ in range(2)]
    parsers = [threading.Thread(target=parse) for _ in range(6)]
    for t in [*makers, *parsers]:
        t.start()
    for t in parsers:
        t.join()
    stop.set()
    for t in makers:
        t.join()
    assert errors == []
