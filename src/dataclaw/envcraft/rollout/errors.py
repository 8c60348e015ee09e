"""Named rollout errors, one per boundary, and the ``boundary`` context manager (verifiers-style).

A bad rollout is data, not a crash: whatever escapes the model call, a tool, the verifier or the clock is
converted at its boundary into one :class:`RolloutError` subclass, recorded once on the trajectory, and
never cancels sibling rollouts. Classification is by the boundary and the exception *type*, never by
matching the message text.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import Any


class Boundary(StrEnum):
    """Where a rollout failed."""

    SETUP = "setup"
    MODEL = "model"
    TOOL = "tool"
    VERIFIER = "verifier"
    TIMEOUT = "timeout"


class RolloutError(Exception):
    """A failure that ends one rollout. ``boundary`` says where; ``what`` says doing what."""

    boundary: Boundary = Boundary.TOOL

    def __init__(self, what: str, cause: BaseException | None = None) -> None:
        self.what = what
        self.cause_type = type(cause).__name__ if cause is not None else None
        detail = f": {type(cause).__name__}: {cause}" if cause is not None else ""
        super().__init__(f"{self.boundary} failure while {what}{detail}")

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as it is (a harness on a Ray actor raises it on the driver): the message is kept, not
        rebuilt from ``args`` by ``__init__``."""
        return (_restore, (type(self), self.args, self.__dict__))

    def to_dict(self) -> dict[str, Any]:
        return {
            "boundary": str(self.boundary),
            "error": type(self).__name__,
            "what": self.what,
            "cause": self.cause_type,
            "message": str(self)[:500],
        }


def _restore(cls: type[RolloutError], args: tuple[Any, ...], state: dict[str, Any]) -> RolloutError:
    exc = cls.__new__(cls)
    exc.args = args
    exc.__dict__.update(state)
    return exc


class SetupError(RolloutError):
    """The task could not be instantiated (builder crashed, session not created): a data defect."""

    boundary = Boundary.SETUP


class ModelCallError(RolloutError):
    """The model could not be reached or its answer was unusable (e.g. malformed tool arguments)."""

    boundary = Boundary.MODEL


class ToolInfraError(RolloutError):
    """An unrecoverable environment failure (agent-facing tool errors stay in the trajectory instead)."""

    boundary = Boundary.TOOL


class VerifierError(RolloutError):
    """The verifier crashed, timed out or wrote a malformed score: a data defect, not an agent failure."""

    boundary = Boundary.VERIFIER


class RolloutTimeout(RolloutError):
    """The rollout ran past its wall-clock budget."""

    boundary = Boundary.TIMEOUT


@contextmanager
def boundary(error_cls: type[RolloutError], what: str) -> Iterator[None]:
    """Convert anything raised inside into ``error_cls(what)``; a RolloutError passes through unchanged
    (it was already classified at an inner boundary). Cancellation is never swallowed."""
    try:
        yield
    except RolloutError:
        raise
    except Exception as exc:
        raise error_cls(what, exc) from exc
