"""Ground a sampled tool chain: execute it in a real session of its environment (EnvCraft §4.2 input).

Parameter values come from what exists: ids and field values in the scenario state (the user could name
them: *user-specified*), outputs of earlier steps in the chain (*tool-derived*: the agent has to discover
them), literals of the environment's own reference solutions, enum members and defaults. A step that
errors is retried with other choices from a snapshot; a chain whose step keeps failing is rejected, so a
grounded chain is a run that really succeeded, with the initial and final states it went through.
"""

from __future__ import annotations

import functools
import random
import re
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from dataclaw.envcraft.graph.tool_graph import id_kind
from dataclaw.envcraft.runtime.state import jsoncopy
from dataclaw.envcraft.runtime.tools import ToolSpec, check_value

USER, TOOL, DEFAULT = "user", "tool", "default"
_MAX_VALUES = 200
_SKIP_KEYS = frozenset({"actions", "meta", "session_id", "scenario_id", "created_at"})


class GroundReason(StrEnum):
    """Why a chain could not be grounded."""

    UNKNOWN_ENV = "unknown_env"
    UNKNOWN_TOOL = "unknown_tool"
    NO_SCENARIO = "no_scenario"
    UNFILLABLE_PARAM = "unfillable_param"
    STEP_ERROR = "step_error"


class GroundingError(Exception):
    def __init__(self, reason: GroundReason, message: str, tool: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.tool = tool  # the step's tool, when one step is to blame


@dataclass
class Values:
    """Values by key name, harvested from a state or tool output (``ticket_id`` → [...])."""

    by_key: dict[str, list[Any]] = field(default_factory=lambda: defaultdict(list))
    # lookups remembered until the next value is added (a state's values are looked up many times)
    _found: dict[str, list[Any]] = field(default_factory=dict, repr=False, compare=False)

    def add(self, key: str, value: Any) -> None:
        bucket = self.by_key[key]
        if len(bucket) < _MAX_VALUES and value not in bucket:
            bucket.append(value)
            self._found.clear()

    def lookup(self, name: str) -> list[Any]:
        """Values under ``name`` or a key ending in ``_<name>`` (``article_id`` ← ``kb_article_id``)."""
        found = self._found.get(name)
        if found is None:
            found = list(self.by_key.get(name, []))
            for key, vals in self.by_key.items():
                if key != name and key.endswith("_" + name):
                    found.extend(v for v in vals if v not in found)
            self._found[name] = found
        return list(found)


def harvest(value: Any, into: Values | None = None, key: str = "", depth: int = 0) -> Values:
    """Collect scalar values by their key; the keys of a dict of records count as ``<singular>_id``."""
    from dataclaw.envcraft.graph.tool_graph import singular

    out = into if into is not None else Values()
    if depth > 6:
        return out
    if isinstance(value, dict):
        if key and value and all(isinstance(v, dict) for v in value.values()):
            for k in value:
                out.add(f"{singular(key)}_id", k)
        for k, v in value.items():
            if depth == 0 and k in _SKIP_KEYS:
                continue
            harvest(v, out, k, depth + 1)
    elif isinstance(value, list):
        for item in value[:_MAX_VALUES]:
            harvest(item, out, key, depth + 1)
        if key and all(isinstance(x, str | int) for x in value):
            out.add(key, value)  # a whole list (e.g. capabilities) for list-typed parameters
    elif key and isinstance(value, str | int | float | bool) and value is not None:
        out.add(key, value)
    return out


def reference_values(env_cls: Any) -> tuple[dict[tuple[str, str], list[Any]], Values]:
    """Literals of the environment's reference solutions: by (tool, param) and by param name."""
    by_tool: dict[tuple[str, str], list[Any]] = defaultdict(list)
    by_name = Values()
    for sc in env_cls.scenarios().values():
        for step in sc.reference_solution:
            for k, v in (step.get("params") or {}).items():
                if v not in by_tool[(step["tool"], k)]:
                    by_tool[(step["tool"], k)].append(v)
                by_name.add(k, v)
    return by_tool, by_name


@dataclass
class _Sources:
    state: Values
    ref_tool: dict[tuple[str, str], list[Any]]
    ref_name: Values
    outputs: list[Values]  # one per executed step
    user_values: set[str]


def _fits(values: list[Any], schema: dict[str, Any]) -> list[Any]:
    return [v for v in values if check_value(v, schema) is None]


def _as_list(values: list[Any], schema: dict[str, Any], rng: random.Random) -> list[Any]:
    """Scalars that fit an array's item schema, wrapped as 1–2 element lists."""
    items = _fits([v for v in values if not isinstance(v, list)], schema.get("items", {}))
    if not items:
        return []
    return [rng.sample(items, min(len(items), rng.randint(1, 2)))]


def choose_param(
    spec: ToolSpec, p: Any, src: _Sources, rng: random.Random, prefer_derived: float
) -> tuple[Any, str, int | None] | None:
    """(value, source, step it came from) for one parameter, or None to leave it out."""
    names = [p.name]
    kind = id_kind(p.name)
    if kind and p.name.endswith("_ids"):
        names.append(f"{kind}_id")
    array = p.schema.get("type") == "array"

    def pick(values: list[Any]) -> list[Any]:
        fit = _fits(values, p.schema)
        return fit or (_as_list(values, p.schema, rng) if array else [])

    for i in range(len(src.outputs) - 1, -1, -1):  # the latest output that holds a fitting value
        derived = pick([v for n in names for v in src.outputs[i].lookup(n)])
        if derived and (kind or array) and rng.random() < prefer_derived:
            value = rng.choice(derived)
            source = USER if _key(value) in src.user_values else TOOL
            return value, source, i
    if not p.required and rng.random() < 0.8:
        return None
    from_state = [v for n in names for v in src.state.lookup(n)] if (kind or "enum" not in p.schema) else []
    from_ref = src.ref_tool.get((spec.name, p.name), [])
    # an id may name an existing entity (state) or a new one a create tool makes (reference literals)
    pools = [from_state + from_ref, p.schema.get("enum", []), src.ref_name.lookup(p.name)]
    if not kind:  # a free-text or numeric field: the tool's own reference literals are the most fitting
        pools.insert(0, from_ref)
    for pool in pools:
        fit = pick(pool)
        if fit:
            return rng.choice(fit), USER, None
    return None


def _key(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def ground_chain(
    env_cls: Any,
    steps: list[str],
    seed: int,
    *,
    scenario_id: str | None = None,
    max_scenarios: int = 3,
    attempts: int = 6,
    prefer_derived: float = 0.85,
    setup_budget: int = 2,
    long_context: bool = False,
) -> dict[str, Any]:
    """Execute ``steps`` in a fresh in-process session of ``env_cls`` (the given scenario, else up to
    ``max_scenarios`` scenarios in a seeded order until one works); return the grounded chain
    ``{scenario_id, long_context, setup, steps: [{tool, side_effect, params, sources, derived_from,
    output}], initial_state, final_state, write_fields}`` or raise the last :class:`GroundingError`.

    A chain that starts mid-workflow (a step needs an entity or a login the scenario lacks) gets up to
    ``setup_budget`` *setup* calls first: write tools that precede the failing tool in the tool graph,
    run with the same parameter choices. Their effect is part of the task's initial state S0 (the
    entities the execution path needs, made by the environment's own tools so its invariants hold)."""
    missing = [s for s in steps if s not in env_cls.tools]
    if missing:
        raise GroundingError(GroundReason.UNKNOWN_TOOL, f"{env_cls.name} has no tool {', '.join(missing)}")
    rng = random.Random(seed)
    scenarios = sorted(env_cls.scenarios())
    if not scenarios:
        raise GroundingError(GroundReason.NO_SCENARIO, f"{env_cls.name} has no scenarios")
    order = [scenario_id] if scenario_id else rng.sample(scenarios, min(max_scenarios, len(scenarios)))
    error: GroundingError | None = None
    for sc in order:
        try:
            return _ground_in(
                env_cls, steps, sc, rng, _Tries(attempts, prefer_derived, setup_budget), long_context
            )
        except GroundingError as exc:
            error = exc
    assert error is not None
    raise error


@dataclass(frozen=True)
class _Tries:
    attempts: int
    prefer: float
    setup_budget: int


def _ground_in(
    env_cls: Any, steps: list[str], scenario_id: str, rng: random.Random, tries: _Tries, long_context: bool
) -> dict[str, Any]:
    ref_tool, ref_name = reference_values(env_cls)
    with tempfile.TemporaryDirectory(prefix="dataclaw-ground-") as root:
        env = env_cls(root)
        sid = env.create_session(scenario_id, session_id="ground", long_context=long_context)
        setup: list[dict[str, Any]] = []
        while True:
            initial = env.get_session_state(sid)
            src = _Sources(harvest(initial), ref_tool, ref_name, [], set())
            try:
                out_steps = [
                    _run_step(env, sid, n, tool, src, rng, tries.attempts, tries.prefer)
                    for n, tool in enumerate(steps)
                ]
                break
            except GroundingError as exc:
                env.restore_env_state(initial)
                if exc.tool is None or len(setup) >= tries.setup_budget:
                    raise
                used = {s["tool"] for s in setup}
                step = _setup_step(env, sid, exc.tool or "", used, (ref_tool, ref_name), rng, tries)
                if step is None:
                    raise
                setup.append(step)
        final = env.get_session_state(sid)
    fields = sorted({f for s in steps for f in env_cls.tools.get(s).state_fields_affected})
    return {
        "scenario_id": scenario_id,
        "long_context": long_context,
        "setup": setup,
        "steps": out_steps,
        "initial_state": jsoncopy(initial),
        "final_state": jsoncopy(final),
        "write_fields": fields,
    }


def _setup_step(
    env: Any,
    sid: str,
    failing: str,
    used: set[str],
    ref: tuple[dict[tuple[str, str], list[Any]], Values],
    rng: random.Random,
    tries: _Tries,
) -> dict[str, Any] | None:
    """One write tool run successfully on the current state before the chain: a predecessor of
    ``failing`` in the tool graph (strongest edges first), else a tool that opens one of the
    environment's reference solutions (a login, a session start); at most four candidates; or None."""
    graph = _tool_graph(type(env)).graph
    preds = sorted(
        graph.predecessors(failing) if failing in graph else [],
        key=lambda p: (-float(graph.edges[p, failing].get("weight", 1.0)), p),
    )
    openers = [
        sc.reference_solution[0]["tool"]
        for _, sc in sorted(type(env).scenarios().items())
        if sc.reference_solution
    ]
    candidates = [
        t
        for t in dict.fromkeys([*preds[:3], *openers])
        if t not in used and t != failing and t in env.tools and env.tools.get(t).side_effect == "write"
    ]
    for tool in candidates[:4]:
        state = env.get_session_state(sid)
        src = _Sources(harvest(state), ref[0], ref[1], [], set())
        try:
            step = _run_step(env, sid, -1, tool, src, rng, tries.attempts, tries.prefer)
        except GroundingError:
            continue
        return {"tool": tool, "params": step["params"]}
    return None


TAIL_NUMBER = re.compile(r"^(.*?)(\d+)$")
_SEPARATORS = ("-", "_", ".", "")


def next_free(template: str, start: int, taken: set[str]) -> str | None:
    """The first id in ``template``'s format (its prefix, its zero-padded number width) numbered from
    ``start`` that is not in ``taken``; None for a template without a numeric tail."""
    m = TAIL_NUMBER.match(template)
    if not m:
        return None
    prefix, digits = m.groups()
    for number in range(start, start + 1000):
        candidate = f"{prefix}{number:0{len(digits)}d}"
        if candidate not in taken:
            return candidate
    return None


def fresh_names(
    error: dict[str, Any], params: dict[str, Any], state: dict[str, Any], attempt: int = 0
) -> dict[str, str]:
    """For an "already exists" error: a new value for each string parameter the message quotes, unused
    in ``state`` (``R-104`` → ``R-105``; ``incidents`` → ``incidents-2``, then ``incidents_2``,
    ``incidents.2``, ``incidents2`` on later attempts, since an environment may accept only one
    format), so a create step names a new entity instead of colliding with one the scenario has."""
    sep = _SEPARATORS[attempt % len(_SEPARATORS)]
    message = str(error.get("message", ""))
    if "already" not in message.lower():
        return {}
    taken = {str(v) for vs in harvest(state).by_key.values() for v in vs if isinstance(v, str | int)}
    out = {}
    for name, value in params.items():
        if not isinstance(value, str) or len(value) < 2 or value not in message:
            continue
        m = TAIL_NUMBER.match(value)
        new = (
            next_free(value, int(m.group(2)) + 1, taken)
            if m
            else next((c for n in range(2, 1000) if (c := f"{value}{sep}{n}") not in taken), None)
        )
        if new is not None:
            out[name] = new
    return out


def run_calls(
    env_cls: Any,
    scenario_id: str,
    initial: dict[str, Any],
    calls: list[dict[str, Any]],
    session_id: str = "replay",
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``calls`` (``{tool, params}``) run in a fresh session restored to ``initial``: each call's result
    envelope and the final state (the replay both the S0 builder and task replay use)."""
    with tempfile.TemporaryDirectory(prefix="dataclaw-replay-") as root:
        env = env_cls(root)
        sid = env.create_session(scenario_id, session_id=session_id)
        env.restore_env_state(initial)
        results = [env.call(sid, c["tool"], **c.get("params", {})) for c in calls]
        return results, env.get_session_state(sid)


@functools.cache
def _tool_graph(env_cls: Any) -> Any:
    from dataclaw.envcraft.graph.tool_graph import build_tool_graph

    return build_tool_graph(env_cls)


def _run_step(
    env: Any, sid: str, n: int, tool: str, src: _Sources, rng: random.Random, attempts: int, prefer: float
) -> dict[str, Any]:
    """Choose parameters and call one tool; a failed try is undone and retried with other choices."""
    spec = env.tools.get(tool)
    before = env.get_session_state(sid)
    fresh: dict[str, Any] = {}  # parameters whose chosen value already exists: a new name instead
    collision: tuple[dict[str, Any], dict[str, Any]] | None = None
    for attempt in range(attempts):
        params, sources, derived = {}, {}, {}
        for p in spec.params:
            choice = (
                (fresh[p.name], USER, None) if p.name in fresh else choose_param(spec, p, src, rng, prefer)
            )
            if choice is None:
                if p.required:
                    raise GroundingError(
                        GroundReason.UNFILLABLE_PARAM,
                        f"step {n} {tool}: no value for required parameter {p.name!r}",
                        tool,
                    )
                continue
            params[p.name], sources[p.name], derived[p.name] = choice
        result = env.call(sid, tool, **params)
        if result["status"] == "ok":
            break
        env.restore_env_state(before)  # the failed try leaves no trace in the gold run
        if "already" in str(result["error"].get("message", "")).lower():
            collision = (result["error"], params)
        if collision is not None:  # a new name each try, in the next format, until one is accepted
            fresh = fresh_names(*collision, before, attempt)
        if attempt == attempts - 1:
            err = result["error"]
            raise GroundingError(
                GroundReason.STEP_ERROR,
                f"step {n} {tool} failed {attempts}x: {err.get('category')}: {err.get('message')}",
                tool,
            )
    for name, source in sources.items():
        if source == USER:
            src.user_values.add(_key(params[name]))
    src.outputs.append(harvest(result["data"]))
    return {
        "tool": tool,
        "side_effect": spec.side_effect,
        "params": params,
        "sources": sources,
        "derived_from": {k: v for k, v in derived.items() if v is not None},
        "output": result["data"],
    }
