"""Initial state S0 and verifier V of a task (EnvCraft §2.1, §4.2 "Intent-to-Environment Construction")."""

from __future__ import annotations

from typing import Any

from dataclaw.envcraft.graph.tool_graph import id_kind
from dataclaw.envcraft.tasks.execute import harvest
from dataclaw.envcraft.tasks.synth import SynthError, SynthReason, classify
from dataclaw.envcraft.tasks.verifier import derive_verifier, evaluate


def distractors(initial: dict[str, Any], steps: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per entity kind the chain names: how many entities it needs and how many same-kind distractors
    the initial state holds (entities an agent must not confuse with the right one)."""
    values = harvest(initial)
    needed: dict[str, set[Any]] = {}
    for st in steps:
        for name, value in st["params"].items():
            kind = id_kind(name)
            if kind and isinstance(value, str | int):
                needed.setdefault(kind, set()).add(value)
    out = {}
    for kind, ids in sorted(needed.items()):
        pool = [v for v in values.lookup(f"{kind}_id") if isinstance(v, str | int)]
        out[kind] = {"needed": len(ids), "distractors": len(set(pool) - ids)}
    return out


def build_verifier(grounded: dict[str, Any]) -> tuple[dict[str, Any], dict[str, float]]:
    """Derive the verifier and prove it: gold final state → 1.0, untouched initial state → < 1.0."""
    user, _ = classify(grounded["steps"])
    named = [r["value"] for r in user if isinstance(r["value"], str)]
    verifier = derive_verifier(
        grounded["initial_state"], grounded["final_state"], grounded["write_fields"], named_ids=named
    )
    if not verifier["assertions"]:
        raise SynthError(SynthReason.VERIFIER_EMPTY, "the chain changed none of its declared state fields")
    gold = evaluate(verifier, grounded["final_state"])["score"]
    initial = evaluate(verifier, grounded["initial_state"])["score"]
    if gold != 1.0:
        raise SynthError(SynthReason.VERIFIER_GOLD_FAILS, f"gold state scores {gold:.3f}, not 1.0")
    if initial >= 1.0:
        raise SynthError(SynthReason.VERIFIER_TRIVIAL, "the untouched initial state already passes")
    return verifier, {"gold": gold, "initial": initial}
