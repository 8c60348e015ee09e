"""Error types. Exceptions are for bugs and for infrastructure that makes a whole run impossible;
per-record failures are :class:`Reject` records instead (failures are data)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class DataclawError(Exception):
    """An error a user can act on. ``str(err)`` is one clear line naming the input and the problem."""


class ConfigError(DataclawError):
    """Bad configuration, bad arguments or a bad input path."""


class MissingDependencyError(DataclawError):
    """A component needs an optional dependency that is not installed."""

    def __init__(self, component: str, package: str, extra: str) -> None:
        super().__init__(
            f"{component} needs the '{package}' package: install it with `pip install 'dataclaw[{extra}]'`"
        )


def require(module: str, component: str, extra: str) -> Any:
    """Import ``module`` or raise :class:`MissingDependencyError` with an install hint."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(component, module.split(".")[0], extra) from exc


class Reject(BaseModel):
    """One record that a stage could not turn into output, with a machine-readable reason."""

    id: str
    stage: str
    reason: str = Field(description="reason code: a value of the stage's reason enum")
    message: str
    detail: dict[str, Any] = Field(default_factory=dict)
