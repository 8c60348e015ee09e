"""Rich progress bars for long work; silent when output is not a terminal."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

console = Console(stderr=True)


@contextmanager
def progress_bar(description: str) -> Iterator[Callable[[int, int], None]]:
    """Yield ``update(done, total)`` that drives one bar labelled ``description``."""
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
        disable=not console.is_terminal,
    ) as prog:
        task = prog.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            prog.update(task, completed=done, total=total)

        yield update


Update = Callable[[int, int], None]
"""``update(done, total)``: what a progress display takes from a running stage."""
ProgressFactory = Callable[[str], AbstractContextManager[Any]]
"""``progress(label)``: a context yielding an :data:`Update` for one bar (e.g. :func:`progress_bar`)."""


def progress_for(progress: ProgressFactory | None, label: str) -> AbstractContextManager[Any]:
    """``progress(label)``, or a context that yields no ``update`` when there is no progress display (what
    an engine's flow uses, so a Python caller may pass none and the CLI passes :func:`progress_bar`)."""
    return progress(label) if progress is not None else nullcontext(None)
