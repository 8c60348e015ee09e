"""The entry point: :func:`compile_package` runs the steps in order (collections and world, declared
tools, archetype mechanics, the canonical floor, scenarios) and writes the package."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dataclaw.envcraft.synth.compile.emit import package_files, write_package
from dataclaw.envcraft.synth.compile.mapping import map_tool, mechanic_op
from dataclaw.envcraft.synth.compile.mechanics import MECHANICS
from dataclaw.envcraft.synth.compile.plan import (
    MARKER,
    MIN_SCENARIOS,
    CompileError,
    CompileResult,
    Param,
    Plan,
    ToolPlan,
)
from dataclaw.envcraft.synth.compile.rules import compile_rules, enforced, finish_rules
from dataclaw.envcraft.synth.compile.scenarios import build_scenario, rule_scenarios
from dataclaw.envcraft.synth.compile.tools import core_tools
from dataclaw.envcraft.synth.compile.world import build_collections, world_state
from dataclaw.envcraft.synth.retrieval import Retrieved
from dataclaw.envcraft.synth.spec import IDENT_RE, ESpec, IssueCode, ToolDecl, TSpec, check_spec

_FATAL = {IssueCode.BAD_IDENTIFIER, IssueCode.RESERVED_NAME, IssueCode.DUPLICATE_ID, IssueCode.SCHEMA}
_FATAL_PATH = re.compile(r"^(entities|state_fields)(\[\d+\](\.name|\.entity)?)?$")
"""Where a naming problem cannot be compiled around (entity and state field names); elsewhere (attributes,
statuses, records, scenarios, tools) the compiler skips or renames the part and records it."""


def package_name(env: str) -> str:
    name = env if IDENT_RE.match(env) else re.sub(r"[^a-z0-9_]", "_", env.lower()).strip("_") or "env"
    if not name[0].isalpha():
        name = "env_" + name
    if name in sys.stdlib_module_names or name in {"dataclaw", "tests", "support", "data"}:
        name += "_env"
    return name


def is_claw_scenario(scenario: Mapping[str, Any] | Any, claw: bool | None) -> bool:
    """``claw`` when given, else whether the scenario record (or a ``ScenarioSpec``) is claw-specific."""
    if claw is not None:
        return claw
    category = (
        scenario.get("category", "") if isinstance(scenario, Mapping) else getattr(scenario, "category", "")
    )
    return str(category).lower() in ("claw", "claw-specific", "claw_specific")


def compile_package(
    e_spec: ESpec,
    t_spec: TSpec,
    retrieved: Sequence[Retrieved],
    out: Path,
    *,
    scenario: Mapping[str, Any],
    claw: bool | None = None,
) -> CompileResult:
    """Compile a spec into an environment package folder ``out/<name>`` (``name`` is the spec's
    environment name, made a safe import name); an earlier compiled package there is replaced. Raises
    :class:`CompileError` for a spec whose names the runtime cannot use (bad identifiers, duplicates,
    reserved keys) or that declares no entity."""
    issues = check_spec(e_spec, t_spec)
    fatal = [i for i in issues if i.code in _FATAL and _FATAL_PATH.match(i.path)]
    if fatal:
        raise CompileError(
            f"{e_spec.environment_name}: spec cannot be compiled: " + "; ".join(i.line() for i in fatal[:5])
        )
    if not e_spec.entities:
        raise CompileError(f"{e_spec.environment_name}: spec declares no entity, nothing to compile")
    defaults = [f"spec issue tolerated: {i.line()}" for i in issues if i not in fatal]
    env = package_name(e_spec.environment_name)
    if env != e_spec.environment_name:
        defaults.append(f"package named {env!r} (not {e_spec.environment_name!r}: unsafe as an import name)")
    is_claw = is_claw_scenario(scenario, claw)
    colls = build_collections(e_spec, defaults)
    state = world_state(e_spec, colls, defaults)
    first = [e for sc in e_spec.scenarios for e in sc.entities]
    by_entity = {c.entity: c.name for c in colls.values()}
    primary = next((by_entity[e] for e in first if e in by_entity), next(iter(colls)))
    config: dict[str, Any] = {"env": env, "collections": {}, "tools": {}}
    plan = Plan(env, e_spec, colls, primary, state, config, defaults=defaults)
    for f in e_spec.state_fields:  # the spec's other state: kept, with empty values
        if f.name not in state:  # (a second collection of one entity stays an empty collection)
            state[f.name] = {"log": [], "counter": 0, "setting": {}, "collection": {}}[f.kind]
    logs = [f.name for f in e_spec.state_fields if f.kind == "log"]
    config["log"] = logs[0] if logs else plan.free("activity_log")
    state.setdefault(config["log"], [])
    config["counters"] = plan.free("id_counters")
    state[config["counters"]] = {}
    # T_spec tools first (their names win), then archetype mechanics, then the canonical floor
    unmapped: list[tuple[ToolDecl, str]] = []
    for decl in t_spec.tools:
        mapped, why = map_tool(plan, decl)
        if mapped is None:
            unmapped.append((decl, why))
        elif not plan.add_tool(mapped, canonical=False):
            plan.dropped.append((decl.name, "a tool of that name is already compiled"))
        else:
            plan.mapped[decl.name] = why
    compile_rules(plan)  # after the declared tools (their names win), before the mechanics
    names = [r.name for r in retrieved][:2]
    if not names:
        defaults.append("no archetype retrieved: core mechanics only")
    for name in names:
        if name in MECHANICS:
            MECHANICS.get(name)(plan)
            plan.mechanics.append(name)
    for decl, why in unmapped:  # a declared tool may name an archetype mechanic: it takes that tool over
        op = mechanic_op(plan, decl)
        if op is None:
            plan.dropped.append((decl.name, why))
        else:
            plan.mapped[decl.name] = op
    for c in colls.values():
        for t in core_tools(plan, c, True):
            plan.add_tool(t)
    if is_claw:
        plan.add_tool(
            ToolPlan(
                "bash",
                "bash",
                "read",
                "Run a bash command over the workspace: one JSON file per record (<collection>/<id>.json), "
                "the logs; edits there are discarded.",
                [Param("command", "str", "the bash command line")],
                returns=["output", "ok"],
                key=("bash",),
            )
        )
    plan.config["collections"] = {c.name: c.config() for c in colls.values()}
    # tools compiled before a mechanic added the events log fire events too: declare it
    for t in plan.tools.values():
        if t.side_effect == "write" and t.op in ("create", "update", "transition", "advance"):
            t.fields = plan.write_fields(t.cfg["collection"], *t.fields)
        plan.config["tools"][t.name] = {"op": t.op, **t.cfg}
    finish_rules(plan)
    specs = list(e_spec.scenarios)
    scenarios = [build_scenario(plan, sc, i, is_claw) for i, sc in enumerate(specs)]
    seen: set[str] = set()
    for k, s in enumerate(scenarios):
        if not IDENT_RE.match(s["scenario_id"]) or s["scenario_id"] in seen:
            defaults.append(
                f"scenario {s['scenario_id']!r} renamed scenario_{k + 1} (unusable or repeated id)"
            )
            s["scenario_id"] = f"scenario_{k + 1}"
        seen.add(s["scenario_id"])
    for s in rule_scenarios(plan, is_claw):  # goals the rules and relations make (several steps, a read)
        if s["scenario_id"] not in seen:
            seen.add(s["scenario_id"])
            scenarios.append(s)
    i = len(scenarios)
    while len(scenarios) < MIN_SCENARIOS:
        s = build_scenario(plan, None, i, is_claw)
        i += 1
        if s["scenario_id"] in {x["scenario_id"] for x in scenarios}:
            s["scenario_id"] += f"_{i}"
        scenarios.append(s)
        defaults.append(f"scenario {s['scenario_id']} added (the spec has {len(specs)})")
    plan.path_name = env
    folder = Path(out) / env
    write_package(folder, package_files(plan, scenarios, is_claw, names), plan, is_claw)
    result = CompileResult(
        path=folder,
        env_name=env,
        tools=list(plan.tools),
        scenarios=[s["scenario_id"] for s in scenarios],
        dropped=plan.dropped,
        archetypes=names,
        claw=is_claw,
        mechanics=plan.mechanics,
        defaults=defaults,
        mapped=plan.mapped,
        rules=enforced(plan),
    )
    (folder / MARKER).write_text(result.model_dump_json(indent=1, exclude={"path"}) + "\n", encoding="utf-8")
    return result
