"""The contract test-suite: passes on good packages, and fails — naming the check — on broken ones."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from dataclaw.envcraft import archetypes
from dataclaw.envcraft.runtime.contract import CHECKS, run_contract

COUNTER_DIR = Path(__file__).parent / "fixtures" / "counter_env"


@pytest.mark.parametrize("name", archetypes.names())
def test_archetype_passes_contract(name: str) -> None:
    report = run_contract(archetypes.get(name))
    assert report.passed, report.summary()
    assert {c.name for c in report.checks} == set(CHECKS)


def test_counter_fixture_passes_contract() -> None:
    report = run_contract(COUNTER_DIR)
    assert report.passed, report.summary()


def _broken_copy(tmp_path: Path, name: str, patch: str) -> Path:
    """A copy of the counter fixture under a new package name with ``patch`` appended to env.py."""
    dst = tmp_path / name
    shutil.copytree(COUNTER_DIR, dst)
    env_py = dst / "env.py"
    env_py.write_text(env_py.read_text() + "\n" + textwrap.dedent(patch))
    return dst


def test_read_tool_that_mutates_fails_side_effect_check(tmp_path: Path) -> None:
    pkg = _broken_copy(
        tmp_path,
        "broken_reader",
        '''
        @tool("read")
        def sneaky(session: dict) -> dict:
            """Looks harmless."""
            session["counter"]["value"] += 1
            return {}

        CounterEnv.tools.add(sneaky.__envcraft_tool__)
        CounterEnv.DEFAULT_STATE = dict(DEFAULT_STATE)
        ''',
    )
    scen = pkg / "data" / "scenarios" / "reach_three.json"
    scen.write_text(
        scen.read_text().replace('{"tool": "get_counter", "params": {}}', '{"tool": "sneaky", "params": {}}')
    )
    report = run_contract(pkg, only=["declared_side_effects"])
    assert not report.passed and "sneaky (read) changed undeclared fields ['counter']" in report.summary()


def test_leaky_errors_and_nondeterminism_are_caught(tmp_path: Path) -> None:
    pkg = _broken_copy(
        tmp_path,
        "broken_leaky",
        '''
        import time as _time

        @tool("write", fields=["counter"])
        def stamp(session: dict) -> dict:
            """Stamps with the wall clock (forbidden)."""
            session["counter"]["stamp"] = _time.time_ns()
            return {}

        @tool("read")
        def leak(session: dict) -> dict:
            """Leaks an implementation detail in a domain error."""
            raise EnvError(ErrorCategory.INVALID_REFERENCE, "lookup failed in env.py")

        CounterEnv.tools.add(stamp.__envcraft_tool__)
        CounterEnv.tools.add(leak.__envcraft_tool__)
        ''',
    )
    scen = pkg / "data" / "scenarios" / "reach_three.json"
    scen.write_text(
        scen.read_text().replace('{"tool": "get_counter", "params": {}}', '{"tool": "stamp", "params": {}}')
    )
    report = run_contract(pkg, only=["deterministic_replay", "errors_agent_safe"])
    failed = {c.name for c in report.failures()}
    assert failed == {"deterministic_replay", "errors_agent_safe"}, report.summary()


def test_missing_layout_pieces_are_reported(tmp_path: Path) -> None:
    dst = tmp_path / "broken_layout"
    shutil.copytree(COUNTER_DIR, dst)
    (dst / "SKILL.md").write_text("line\n" * 60)
    (dst / "README.md").unlink()
    report = run_contract(dst, only=["layout"])
    assert "missing README.md" in report.summary() and "fewer than 50 lines" in report.summary()
