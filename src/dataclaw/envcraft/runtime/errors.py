"""Structured, agent-safe errors (EnvCraft Table 16).

Domain code raises :class:`EnvError` (usually through the helpers below); the runtime turns it into
``{"status": "error", "error": {"category", "message"}}``. Infrastructure failures become a generic message
with a short reference; the full detail (traceback, paths) goes only to the server-side log.
"""

from __future__ import annotations

import hashlib
import re
from enum import StrEnum
from typing import Any

LOGGER_NAME = "dataclaw.envcraft.runtime"

# Echoed user values are cut to this length so an error never becomes a dump.
_ECHO_MAX = 80
# An absolute path with at least two components (``/a/b``), not preceded by a word character.
_PATH_RE = re.compile(r"(?<![\w.])(?:[A-Za-z]:)?/(?:[\w.@+~-]+/)+[\w.@+~-]*")
_TRACEBACK_RE = re.compile(r"Traceback \(most recent call last\)|File \"[^\"]*\", line \d+")


class ErrorCategory(StrEnum):
    """Table 16 categories, plus ``invalid_argument`` and ``unknown_tool`` for schema-level failures and
    ``rule_violation`` for a declared business rule (a compiled package's rule language)."""

    MISSING_BINDING = "missing_binding"
    SESSION_NOT_FOUND = "session_not_found"
    LOCK_TIMEOUT = "lock_timeout"
    PERMISSION_DENIED = "permission_denied"
    INVALID_TRANSITION = "invalid_transition"
    MISSING_FIELD = "missing_field"
    INVALID_REFERENCE = "invalid_reference"
    STALE_INFORMATION = "stale_information"
    INFRASTRUCTURE = "infrastructure"
    INVALID_ARGUMENT = "invalid_argument"
    UNKNOWN_TOOL = "unknown_tool"
    RULE_VIOLATION = "rule_violation"
    """A business rule of the environment refused the change (the message names the rule)."""


# Categories an agent can act on by retrying the same call later.
RETRYABLE = frozenset({ErrorCategory.LOCK_TIMEOUT, ErrorCategory.INFRASTRUCTURE})


class EnvError(Exception):
    """An error whose ``message`` is safe to show to the agent. ``detail`` must be agent-safe too."""

    def __init__(self, category: ErrorCategory, message: str, **detail: Any) -> None:
        super().__init__(message)
        self.category = ErrorCategory(category)
        self.message = message
        self.detail = detail

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"category": str(self.category), "message": agent_safe(self.message)}
        if self.detail:
            out["detail"] = {k: _safe_value(v) for k, v in self.detail.items()}
        if self.category in RETRYABLE:
            out["retryable"] = True
        return out


def echo(value: Any) -> str:
    """A short, quoted rendering of a caller-supplied value for use inside an error message."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) > _ECHO_MAX:
        text = text[: _ECHO_MAX - 3] + "..."
    return f"'{text}'"


def agent_safe(text: str) -> str:
    """Scrub absolute paths and traceback fragments from a message (a last line of defence)."""
    text = _TRACEBACK_RE.sub("<internal>", text)
    return _PATH_RE.sub("<path>", text)


def _safe_value(value: Any) -> Any:
    if isinstance(value, str):
        return agent_safe(value)
    if isinstance(value, list | tuple):
        return [_safe_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _safe_value(v) for k, v in value.items()}
    return value


def infrastructure_error(exc: BaseException, *, context: str, ref_seed: str) -> EnvError:
    """Log ``exc`` with its traceback server-side; return a generic agent-safe error with a reference."""
    ref = hashlib.sha1(ref_seed.encode()).hexdigest()[:10]
    import logging  # only on the failure path

    logging.getLogger(LOGGER_NAME).error("infrastructure failure [ref %s] in %s", ref, context, exc_info=exc)
    return EnvError(
        ErrorCategory.INFRASTRUCTURE,
        f"The environment had an internal problem (ref {ref}). Retry the command; if it keeps failing, "
        "report the reference.",
    )


# ---- helpers for domain code: one per Table 16 row that domain code raises -------------------------


def invalid_reference(kind: str, ref: Any, valid: list[str] | None = None) -> EnvError:
    """A thread/document/entity id that does not exist."""
    msg = f"{kind} {echo(ref)} does not exist."
    if valid:
        shown = ", ".join(valid[:10]) + (", ..." if len(valid) > 10 else "")
        msg += f" Known {kind} ids: {shown}."
    return EnvError(ErrorCategory.INVALID_REFERENCE, msg, kind=kind)


def invalid_transition(kind: str, ref: str, current: str, requested: str, why: str) -> EnvError:
    """An entity cannot move from ``current`` to ``requested``; says why."""
    return EnvError(
        ErrorCategory.INVALID_TRANSITION,
        f"{kind} {ref} is '{current}' and cannot move to '{requested}': {why}",
        current=current,
        requested=requested,
    )


def permission_denied(account: str, action: str, entity: str) -> EnvError:
    """The current account lacks write permission on an entity."""
    return EnvError(
        ErrorCategory.PERMISSION_DENIED,
        f"Account '{account}' does not have permission to {action} {entity}.",
        account=account,
        action=action,
    )


def missing_field(name: str, requirement: str) -> EnvError:
    """A required field is absent; ``requirement`` says what it must contain."""
    return EnvError(
        ErrorCategory.MISSING_FIELD, f"Missing required field '{name}': {requirement}", field=name
    )


def invalid_argument(name: str, problem: str) -> EnvError:
    """A field is present but its value is not acceptable."""
    return EnvError(ErrorCategory.INVALID_ARGUMENT, f"Invalid value for '{name}': {problem}", field=name)


def rule_violation(rule_id: str, message: str, **detail: Any) -> EnvError:
    """A declared business rule refuses the change: ``<rule id>: <what the rule says and why it applies>``."""
    return EnvError(ErrorCategory.RULE_VIOLATION, f"{rule_id}: {message}", rule=rule_id, **detail)


def stale_warning(message: str, **detail: Any) -> dict[str, Any]:
    """A warning (not an error) that the agent acted on outdated information (Table 16, stale row).

    Return it in the tool result under ``"warnings"``; the runtime moves it into the action log, where the
    deterministic evaluator penalises it."""
    out: dict[str, Any] = {"category": str(ErrorCategory.STALE_INFORMATION), "message": message}
    if detail:
        out["detail"] = detail
    return out
