"""Agent-safe error text (Table 16): categories, scrubbing, echo truncation."""

from __future__ import annotations

import json

from dataclaw.envcraft.runtime import EnvError, ErrorCategory, invalid_reference, invalid_transition
from dataclaw.envcraft.runtime.errors import agent_safe, echo


def test_agent_safe_scrubs_paths_and_traceback_fragments() -> None:
    text = 'Traceback (most recent call last): File "/srv/app/x.py", line 3 at /var/lib/state/s1/session.json'
    safe = agent_safe(text)
    assert "/srv" not in safe and "/var/lib" not in safe and "Traceback" not in safe and "line 3" not in safe
    assert agent_safe("status open/closed, ratio 1/2") == "status open/closed, ratio 1/2"


def test_to_dict_scrubs_message_and_detail_and_marks_retryable() -> None:
    err = EnvError(ErrorCategory.LOCK_TIMEOUT, "busy at /tmp/root/s/.lock", where="/tmp/root/s")
    d = err.to_dict()
    assert d["category"] == "lock_timeout" and "/tmp" not in str(d) and d["retryable"] is True
    assert "retryable" not in EnvError(ErrorCategory.MISSING_FIELD, "x").to_dict()


def test_domain_helpers_help_the_agent_correct_itself() -> None:
    e = invalid_reference("ticket", "T-9", [f"T-{i}" for i in range(12)])
    assert (
        e.category == "invalid_reference"
        and "'T-9'" in e.message
        and "T-0" in e.message
        and "..." in e.message
    )
    e = invalid_transition("ticket", "T-1", "closed", "open", "closed tickets are final")
    assert (
        "'closed'" in e.message
        and "'open'" in e.message
        and e.detail == {"current": "closed", "requested": "open"}
    )


def test_echo_truncates_long_values() -> None:
    assert len(echo("x" * 500)) <= 82 and echo(3) == "'3'"


def test_leak_check_ignores_the_callers_own_echoed_input():
    from dataclaw.envcraft.runtime.contract import leaks

    message = "unknown machine '{'.py': None}'"
    assert leaks(message) == [".py"]
    assert leaks(message, echoed=json.dumps({"machine_id": {".py": None}})) == []
    assert leaks('File "/work/x.py", line 3', echoed="{}")  # real internals are still caught
