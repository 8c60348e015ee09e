"""``dataclaw.envcraft.envs``: what the ``env`` commands show and do, as functions a Python caller uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.envcraft import archetypes
from dataclaw.envcraft.envs import (
    archetype_rows,
    check_contract,
    describe_env,
    open_package,
    parse_tool_args,
    poke,
)


def test_every_archetype_has_a_row_with_its_tools_and_scenarios():
    rows = {r.name: r for r in archetype_rows()}
    assert list(rows) == archetypes.names()
    row = rows["temporal_scheduling"]
    assert row.tools > 0 and row.scenarios > 0 and "\n" not in row.description


def test_describe_names_the_bindings_tools_and_scenarios():
    d = describe_env("temporal_scheduling")
    assert d["name"] == "temporal_scheduling" and d["cli"] == f"python -m {d['module']} <command>"
    assert d["tools"]["schedule_event"] == "write" and d["scenarios"] and d["layout_problems"] == []
    assert all(b.endswith(("_SESSION_ID", "_STATE_ROOT", "_SCENARIO_ID")) for b in d["bindings"])


def test_tool_args_are_text_for_string_parameters_and_json_otherwise():
    spec = open_package("temporal_scheduling").env_cls.tools.get("find_availability")
    params = parse_tool_args(spec, ["calendar_id=42", "min_duration_minutes=30", "date=2025-01-01", "x=[1"])
    assert params == {"calendar_id": "42", "min_duration_minutes": 30, "date": "2025-01-01", "x": "[1"}
    with pytest.raises(ConfigError, match="expected key=value"):
        parse_tool_args(spec, ["calendar_id"])


def test_a_poke_session_persists_until_fresh(tmp_path: Path):
    first = poke("temporal_scheduling", "list-calendars", state_root=tmp_path, evaluate=True)
    assert first["status"] == "ok" and "evaluation" in first
    assert (tmp_path / "temporal_scheduling").is_dir()
    again = poke("temporal_scheduling", "list_calendars", [], state_root=tmp_path, fresh=True)
    assert again["status"] == "ok" and "evaluation" not in again


def test_the_contract_of_an_archetype_runs_in_process_and_passes():
    outcome = check_contract("temporal_scheduling")
    assert outcome.passed and outcome.checks and all(c.passed for c in outcome.checks)
    assert outcome.summary.startswith(f"{archetypes.get('temporal_scheduling').module}: ")
