"""The compiler mechanics registry: one mechanic per archetype name, a duplicate refused, plug-ins through
the ``dataclaw.mechanics`` entry points."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.core.registry import Registry
from dataclaw.envcraft.synth.compile import MECHANICS, mechanic


def test_every_archetype_mechanic_is_registered() -> None:
    assert MECHANICS.names() == [
        "bilateral_matching",
        "cross_tool_pipeline",
        "event_triggering",
        "human_agent_interaction",
        "state_machine",
        "stream_processing",
        "temporal_scheduling",
        "transactional_workspace",
        "workflow_orchestration",
    ]


def test_a_second_mechanic_under_a_taken_name_is_refused() -> None:
    before = MECHANICS.get("state_machine")
    with pytest.raises(ConfigError, match=r"compiler mechanic name 'state_machine' is already registered"):
        mechanic("state_machine")(lambda plan: None)
    assert MECHANICS.get("state_machine") is before


def test_an_installed_entry_point_adds_a_mechanic(tmp_path: Path, monkeypatch, request) -> None:
    site = tmp_path / "site-packages"
    info = site / "dc_mech-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dc_mech\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[dataclaw.mechanics]\ngreenhouse = dc_mech_mod:greenhouse\n")
    (info / "RECORD").write_text("")
    (site / "dc_mech_mod.py").write_text("def greenhouse(plan):\n    plan.defaults.append('greenhouse')\n")
    monkeypatch.syspath_prepend(str(site))
    request.addfinalizer(lambda: sys.modules.pop("dc_mech_mod", None))
    reg: Registry[object] = Registry("compiler mechanic")  # a fresh one: the group of the kind
    assert reg.group == "dataclaw.mechanics"
    assert "greenhouse" in reg and reg.get("greenhouse").__module__ == "dc_mech_mod"  # type: ignore[attr-defined]
