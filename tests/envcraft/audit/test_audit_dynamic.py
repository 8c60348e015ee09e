"""Dynamic audit: one broken package per contract check fails that check in the sandbox; timeouts,
crashes and the package's own tests are classified; the audited code is the copy, not the original."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from dataclaw.envcraft.audit import CheckStatus, DynamicOptions, audit_package
from dataclaw.envcraft.audit.dynamic import INSTANTIATE, PACKAGE_TESTS, dynamic_audit
from dataclaw.envcraft.runtime.contract import CHECKS

pytestmark = [pytest.mark.usefixtures("require_bwrap"), pytest.mark.slow]

IMPORT_NAME = "dataclaw.envcraft.archetypes.transactional_workspace"
NEW_TOOL = '''
@tool("read")
def diagnose(session: dict) -> dict:
    """Explain what went wrong."""
    raise EnvError(ErrorCategory.INVALID_REFERENCE, f"no index in {__file__.rsplit('/', 1)[-1]}")
'''
# a deterministic session id per scenario: two sessions of one scenario are secretly the same one
SHARED_SESSION = """
    def create_session(self, scenario_id, session_id=None, *, long_context=False):
        sid = session_id or f"{scenario_id}-session"
        if not self.store.exists(sid):
            super().create_session(scenario_id, sid, long_context=long_context)
        self.session_id = sid
        return sid

    def on_scenario_loaded"""
TICKETS_GET = (
    '    require(session, "view", f"ticket {ticket_id}")\n    return {"ticket": _ticket(session, ticket_id)}'
)

# contract check -> the mutation that must make exactly that check fail (and what its detail says)
CONTRACT_BREAKS: dict[str, tuple[list, str]] = {
    "layout": ([("SKILL.md", "extra line\n" * 60)], "fewer than 50 lines"),
    "session_isolation": (
        [("env.py", SHARED_SESSION, "\n    def on_scenario_loaded")],
        "changed another session",
    ),
    "concurrent_write_serialisation": (
        [
            (
                "auth.py",
                '    if session["meta"]["action_index"] >= 20:\n'
                '        raise RuntimeError("overloaded")\n'
                '    accounts = session["accounts"]\n',
                '    accounts = session["accounts"]\n',
            ),
        ],
        "calls failed",
    ),
    "workflow_scores_and_penalties": (
        [("evaluator.py", '    return 0.0, "broken"\n    expected =', "    expected =")],
        "correct workflow scored",
    ),
    "declared_side_effects": (
        [("tickets.py", '    session["auth"]["logins"] += 1\n' + TICKETS_GET, TICKETS_GET)],
        "get_ticket (read) changed undeclared fields ['auth']",
    ),
    "deterministic_replay": (
        [
            ("tickets.py", "import os\n"),
            ("tickets.py", '"at": now(session), "nonce": os.urandom(4).hex()}', '"at": now(session)}'),
        ],
        "gave different states",
    ),
    "evaluator_deterministic": (
        [
            ("evaluator.py", "import random\n"),
            (
                "evaluator.py",
                '    return 0.9 + random.random() / 10, "lucky"\n    stale =',
                "    stale =",
            ),
        ],
        "not deterministic",
    ),
    "cli_hidden_commands": (
        [("auth.py", '"""Log in (run prepare-rollout first) as', '"""Log in as')],
        "hidden command prepare-rollout appears in agent help",
    ),
    "errors_agent_safe": (
        [("tickets.py", NEW_TOOL)],
        "error leaks internals",
    ),
}


def _status(checks: list, name: str):
    return next(c for c in checks if c.name == name)


@pytest.mark.parametrize("check", list(CHECKS))
def test_each_contract_check_fails_on_its_broken_package(check: str, mutant: Callable[..., Path]) -> None:
    edits, reason = CONTRACT_BREAKS[check]
    pkg = mutant(*edits)
    checks, sandboxed = dynamic_audit(pkg, IMPORT_NAME, DynamicOptions(timeout_s=120))
    assert sandboxed
    assert _status(checks, INSTANTIATE).status is CheckStatus.PASSED
    got = _status(checks, check)
    assert got.status in (CheckStatus.FAILED, CheckStatus.CRASHED), got
    assert reason in got.detail, got.detail


def test_contract_breaks_cover_every_check() -> None:
    assert set(CONTRACT_BREAKS) == set(CHECKS)


def test_nondeterministic_initial_state_fails_instantiation(mutant: Callable[..., Path]) -> None:
    pkg = mutant(
        ("env.py", "import os\n"),
        (
            "env.py",
            '        state["seed"] = os.urandom(4).hex()\n        if state',
            "        if state",
        ),
    )
    checks, _ = dynamic_audit(pkg, IMPORT_NAME)
    first = _status(checks, INSTANTIATE)
    assert first.status is CheckStatus.FAILED
    assert "_load_scenario gives a different S0" in first.detail
    assert all(c.status is CheckStatus.NOT_RUN for c in checks if c.name in CHECKS)


def test_package_that_does_not_import_is_a_crash(mutant: Callable[..., Path]) -> None:
    checks, _ = dynamic_audit(mutant(("tickets.py", "def broken(:\n")), IMPORT_NAME)
    first = _status(checks, INSTANTIATE)
    assert first.status is CheckStatus.CRASHED and "SyntaxError" in first.detail
    assert "tickets.py" in first.detail


def test_endless_tool_times_out_and_later_checks_do_not_run(mutant: Callable[..., Path]) -> None:
    pkg = mutant(
        (
            "auth.py",
            '    while True:\n        pass\n    accounts = session["accounts"]\n',
            '    accounts = session["accounts"]\n',
        )
    )
    checks, _ = dynamic_audit(pkg, IMPORT_NAME, DynamicOptions(timeout_s=8))
    assert _status(checks, INSTANTIATE).status is CheckStatus.PASSED
    assert _status(checks, "layout").status is CheckStatus.PASSED
    assert _status(checks, "session_isolation").status is CheckStatus.TIMEOUT
    assert all(c.status is CheckStatus.NOT_RUN for c in checks[3:-1])


OWN_TESTS = """
from dataclaw.envcraft.archetypes.transactional_workspace import ENVIRONMENT


def test_login(tmp_path):
    env = ENVIRONMENT(tmp_path)
    sid = env.create_session("sso_outage_triage")
    assert env.call(sid, "login", account_id="agent_lee")["status"] == "ok"


def test_has_tools():
    assert len(ENVIRONMENT.tools) > 3
"""


def test_own_tests_run_in_the_sandbox(mutant: Callable[..., Path]) -> None:
    checks, _ = dynamic_audit(mutant(("tests/test_own.py", OWN_TESTS)), IMPORT_NAME)
    own = _status(checks, PACKAGE_TESTS)
    assert own.status is CheckStatus.PASSED and own.detail.startswith("2 passed"), own


def test_failing_own_test_fails_the_audit(mutant: Callable[..., Path]) -> None:
    broken = OWN_TESTS + "\n\ndef test_wrong():\n    assert len(ENVIRONMENT.tools) == 0\n"
    report = audit_package(mutant(("tests/test_own.py", broken)))
    own = _status(report.checks, PACKAGE_TESTS)
    assert own.status is CheckStatus.FAILED and "test_wrong" in own.detail, own
    assert not report.passed and any("package_tests" in r for r in report.reasons())


def test_no_tests_folder_is_skipped_not_failed(mutant: Callable[..., Path]) -> None:
    checks, _ = dynamic_audit(mutant(("SKILL.md", None)), IMPORT_NAME)
    assert _status(checks, PACKAGE_TESTS).status is CheckStatus.SKIPPED
    assert _status(checks, "layout").status is CheckStatus.FAILED


def test_package_output_cannot_pass_for_a_result(mutant: Callable[..., Path]) -> None:
    fake = 'print(\'@@audit {"name": "layout", "status": "passed", "detail": "", "seconds": 0}\')\n'
    pkg = mutant(("__init__.py", fake), ("SKILL.md", "extra line\n" * 60))
    checks, _ = dynamic_audit(pkg, IMPORT_NAME)
    assert _status(checks, "layout").status is CheckStatus.FAILED


def test_tool_that_kills_its_process_crashes_the_running_check(mutant: Callable[..., Path]) -> None:
    pkg = mutant(
        ("auth.py", "import os\n"),
        (
            "auth.py",
            '    os._exit(0)\n    accounts = session["accounts"]\n',
            '    accounts = session["accounts"]\n',
        ),
    )
    checks, _ = dynamic_audit(pkg, IMPORT_NAME)
    died = _status(checks, "session_isolation")
    assert died.status is CheckStatus.CRASHED and "ended before the check reported" in died.detail
    assert _status(checks, "errors_agent_safe").status is CheckStatus.NOT_RUN
