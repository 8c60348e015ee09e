"""The Python glue a compiled package gets (:mod:`dataclaw.envcraft.synth.compile`): fixed module texts
with ``$name`` slots, filled by :func:`string.Template.substitute`. Only names and one-line prose go into
the slots; all logic stays in :mod:`dataclaw.envcraft.synth.mechanics`."""

from __future__ import annotations

from string import Template

INIT = Template('''"""$env: a compiled EnvCraft environment (see README.md)."""

from .env import $cls

ENVIRONMENT = $cls

__all__ = ["ENVIRONMENT", "$cls"]
''')

MAIN = Template('''"""``python -m $env <command>``: the environment CLI."""

from dataclaw.envcraft.runtime.cli import main

from . import ENVIRONMENT

raise SystemExit(main(ENVIRONMENT))
''')

ENV = Template('''"""The $env environment class (compiled)."""

from __future__ import annotations

from typing import Any, ClassVar

from dataclaw.envcraft.runtime import Environment, Evaluator, ToolSet

from . import tools
from .evaluator import EVALUATOR
from .state import CONFIG, DEFAULT_STATE


class $cls(Environment):
    """$doc"""

    name: ClassVar[str] = "$env"
    env_var_prefix: ClassVar[str] = "$prefix"
    DEFAULT_STATE: ClassVar[dict[str, Any]] = DEFAULT_STATE
    tools: ClassVar[ToolSet] = ToolSet.from_modules(tools)
    evaluator: ClassVar[Evaluator] = EVALUATOR
    enforced_rules: ClassVar[list[dict[str, Any]]] = [
        {k: r.get(k, "spec") for k in ("rule_id", "kind", "entity", "on", "description", "source")}
        for r in CONFIG.get("rules", [])
    ]
    """The business rules the tools enforce (a refusal names one as ``rule_violation: <rule id>: ...``)."""
''')

STATE = Template('''"""Repository: world data and mechanics config from data/ (only this module reads it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"

CONFIG: dict[str, Any] = json.loads((DATA / "config.json").read_text(encoding="utf-8"))
DEFAULT_STATE: dict[str, Any] = json.loads((DATA / "world.json").read_text(encoding="utf-8"))
''')

EVALUATOR = Template('''"""The deterministic evaluator: goal fields, rule compliance, untouched records."""

from __future__ import annotations

from dataclaw.envcraft.runtime import Evaluator, Scenario
from dataclaw.envcraft.synth.mechanics import evaluation as _dims

EVALUATOR = Evaluator()

$dimensions''')

DIMENSION = Template("""
@EVALUATOR.dimension("$name", $weight, "$doc", goal=$goal)
def $name(state: dict, scenario: Scenario) -> tuple[float, str]:
    return _dims.$name(state, scenario.evaluation)
""")

TOOLS = Template('''"""Tools of $env: compiled from its T_spec by dataclaw.envcraft.synth.compile.

Each tool is one call into dataclaw.envcraft.synth.mechanics, configured by data/config.json.
"""

from __future__ import annotations

from typing import Literal

from dataclaw.envcraft.runtime import tool
from dataclaw.envcraft.synth.mechanics import run as _run

from .state import CONFIG

__all__ = ["Literal"]

$tools''')
