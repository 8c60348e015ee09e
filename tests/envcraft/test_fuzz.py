"""Hypothesis fuzz of every tool of every archetype (and the runtime's counter fixture) with random and
invalid arguments: zero uncaught exceptions, zero leaked tracebacks or paths, state always consistent.

Generic over the archetype registry: a new archetype folder is fuzzed without editing this file."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dataclaw.envcraft import archetypes
from dataclaw.envcraft.runtime import EnvPackage, ErrorCategory, load_env_package
from dataclaw.envcraft.runtime.contract import leaks
from dataclaw.envcraft.runtime.state import jsoncopy

COUNTER_DIR = Path(__file__).parent / "fixtures" / "counter_env"
PACKAGES = [*archetypes.names(), str(COUNTER_DIR)]
CATEGORIES = {str(c) for c in ErrorCategory}
DELIBERATE_CRASHES = {"crash"}  # the counter fixture's bug-on-purpose tool

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(["", " ", "../../etc/passwd", "/tmp/x/y", "T-1001", "\x00", "a" * 500, "💥", "null"]),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def _valid(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    simple = {
        "string": st.text(max_size=30),
        "integer": st.integers(-5, 300),
        "number": st.floats(-1e6, 1e6),
        "boolean": st.booleans(),
        "object": st.dictionaries(st.text(max_size=8), json_scalars, max_size=3),
    }
    if kind == "array":
        return st.lists(_valid(schema.get("items", {})), max_size=4)
    return simple.get(kind, json_values)


def _known_values(pkg: EnvPackage) -> dict[str, list[Any]]:
    """Values the scenarios use per parameter name (real ids make calls reach deeper code paths)."""
    out: dict[str, list[Any]] = {}
    for sc in pkg.env_cls.scenarios().values():
        for step in sc.reference_solution + sc.forbidden_actions:
            for k, v in step.get("params", {}).items():
                out.setdefault(k, []).append(v)
    return out


def _call_strategy(pkg: EnvPackage) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    known = _known_values(pkg)
    per_tool = []
    for spec in pkg.env_cls.tools:
        fields = {}
        for p in spec.params:
            options = [_valid(p.schema), json_values]
            if known.get(p.name):
                options.insert(0, st.sampled_from(known[p.name]))
            fields[p.name] = st.one_of(*options)
        params = st.fixed_dictionaries({}, optional=fields)
        extra = st.dictionaries(
            st.sampled_from(["bogus", "session_id", "tool", "__class__"]), json_values, max_size=1
        )
        per_tool.append(
            st.tuples(
                st.just(spec.name), st.one_of(params, st.builds(lambda a, b: {**a, **b}, params, extra))
            )
        )
    per_tool.append(st.tuples(st.sampled_from(["", "nope", "../x", "login\n"]), st.just({})))
    return st.one_of(*per_tool)


@pytest.mark.parametrize("ref", PACKAGES, ids=lambda r: Path(r).name)
def test_fuzz_every_tool(ref: str) -> None:
    pkg = archetypes.get(ref) if ref in archetypes.names() else load_env_package(Path(ref))
    scenarios = list(pkg.env_cls.scenarios().values())
    root = Path(tempfile.mkdtemp(prefix="envcraft-fuzz-"))
    env = pkg.env_cls(root)
    secrets = (str(root), str(pkg.path), str(Path(__file__).parent))

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        scenario=st.sampled_from(scenarios),
        prelude=st.integers(0, 3),
        calls=st.lists(_call_strategy(pkg), min_size=1, max_size=8),
    )
    def run(scenario: Any, prelude: int, calls: list[tuple[str, dict[str, Any]]]) -> None:
        sid = env.create_session(scenario.scenario_id)
        steps = [(s["tool"], s.get("params", {})) for s in scenario.reference_solution[:prelude]] + calls
        for i, (tool, params) in enumerate(steps):
            out = env.call(sid, tool, **params)
            assert isinstance(out, dict) and out.get("status") in ("ok", "error"), out
            text = json.dumps(out, default=str)
            if out["status"] == "error":
                assert out["error"]["category"] in CATEGORIES and out["error"]["message"]
                crashed = out["error"]["category"] == "infrastructure"
                assert not crashed or tool in DELIBERATE_CRASHES, f"tool crashed: {tool}({params})"
                found = leaks(json.dumps(out["error"]), *secrets, echoed=json.dumps(params, default=str))
                assert not found, (tool, params, found, out)
            else:
                assert json.loads(text) == out  # results are plain JSON
            state = env.get_session_state(sid)
            assert len(state["actions"]) == i + 1 == state["meta"]["action_index"]
        assert jsoncopy(state) == state
        env.delete_session(sid)

    run()
