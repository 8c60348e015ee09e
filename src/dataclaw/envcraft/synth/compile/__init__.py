"""Spec compilation (EnvCraft §3.2, issue 13 item 4): a validated E_spec/T_spec → an environment package on
the runtime contract, deterministically, with no model-written Python.

The compiler configures generic mechanics (:mod:`dataclaw.envcraft.synth.mechanics`) instead of writing
logic: entities and their fields become state collections; a status attribute becomes a guarded
lifecycle (forward edges in declared order, cancel-like statuses reachable from every open one, final
records read-only); each retrieved archetype adds its mechanics (:data:`MECHANICS`: draft/commit,
pipeline stages and reports, user confirmation before gated moves, event triggers, available transitions,
time slots, bilateral matching, stream acknowledgement). T_spec tools are mapped onto operations by their
verb, target collection and parameters; a tool that maps onto nothing is dropped with a reason. Every
collection gets the canonical tools (``list_X``, ``get_X``, ``search_X``, ``create_X``, ``update_X``,
``set_X_status``) the declared ones do not already provide, so a package has at least :data:`MIN_TOOLS`.
Spec scenarios become runtime scenarios (at least :data:`MIN_SCENARIOS`, filled when the spec has
fewer) with a goal derived from the scoring rules when one reads ``<record>.<field> == <value>`` and from
the lifecycle otherwise, a reference solution and forbidden actions. Claw scenarios (catalogue category
``claw`` or ``claw=True``) get the claw bash tool over the session's records and a SKILL.md of workflow
guidance. Everything filled in is listed in ``CompileResult.defaults``.

The package written is data (``data/config.json``, ``data/world.json``, ``data/scenarios/*.json``) plus thin
generated glue: ``tools.py`` (typed, documented ``@tool`` functions whose body is one ``run(...)`` call),
``state.py``, ``env.py``, ``evaluator.py``, ``__init__.py``, ``__main__.py``, README.md and SKILL.md.

Modules, in the order a compilation runs: :mod:`.plan` (the package model: collections, tools, the plan),
:mod:`.world` (spec → collections and world state), :mod:`.mapping` (T_spec tools → operations),
:mod:`.rules` (the rule language's business rules → guards the tools enforce),
:mod:`.mechanics` (what each retrieved archetype adds), :mod:`.tools` (the canonical tools),
:mod:`.scenarios` (goals, reference solutions, forbidden actions), :mod:`.emit` (the files written) and
:mod:`.package` (:func:`compile_package`, the entry point).
"""

from dataclaw.core.moved import keep_old_names
from dataclaw.envcraft.synth.compile.mechanics import MECHANICS, Mechanic, mechanic
from dataclaw.envcraft.synth.compile.package import compile_package, is_claw_scenario, package_name
from dataclaw.envcraft.synth.compile.plan import (
    MARKER,
    MIN_SCENARIOS,
    MIN_TOOLS,
    CompileError,
    CompileResult,
    Plan,
)

__all__ = [
    "MARKER",
    "MECHANICS",
    "MIN_SCENARIOS",
    "MIN_TOOLS",
    "CompileError",
    "CompileResult",
    "Mechanic",
    "Plan",
    "compile_package",
    "is_claw_scenario",
    "mechanic",
    "package_name",
]

# names that moved out of this module in 0.x, readable here for one release
keep_old_names(
    __name__,
    {
        "Collection": "dataclaw.envcraft.synth.compile.plan",
        "Param": "dataclaw.envcraft.synth.compile.plan",
        "ToolPlan": "dataclaw.envcraft.synth.compile.plan",
        "MAX_TOOL_NAME": "dataclaw.envcraft.synth.compile.plan",
        "DEFAULT_BASE_TIME": "dataclaw.envcraft.synth.compile.scenarios",
        "DEFAULT_LIFECYCLE": "dataclaw.envcraft.synth.compile.world",
        "MIN_MOVABLE": "dataclaw.envcraft.synth.compile.world",
        "MIN_RECORDS": "dataclaw.envcraft.synth.compile.world",
    },
)
