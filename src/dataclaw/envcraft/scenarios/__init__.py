"""Scenario catalogue (EnvCraft B.2) and archetype blueprints (B.3, each archetype folder's
``archetype.yaml``), both shipped as data.

from dataclaw.envcraft.scenarios import load_catalogue
catalogue = load_catalogue(["my_scenarios/"])      # 83 built-ins + the user's YAML files
catalogue.get("scheduling_reminders").description
"""

from dataclaw.envcraft.scenarios.blueprints import Blueprint, blueprint, blueprints
from dataclaw.envcraft.scenarios.catalogue import (
    Catalogue,
    Category,
    ScenarioFileError,
    ScenarioSpec,
    builtin_scenarios,
    load_catalogue,
    read_scenario_file,
)

__all__ = [
    "Blueprint",
    "Catalogue",
    "Category",
    "ScenarioFileError",
    "ScenarioSpec",
    "blueprint",
    "blueprints",
    "builtin_scenarios",
    "load_catalogue",
    "read_scenario_file",
]
