"""Initial state S0 and verifier V of a task (EnvCraft §2.1, §4.2 "Intent-to-Environment Construction").

S0 holds the entities the gold chain needs (the scenario state, plus what the grounding's setup calls
made) and plausible *distractors*: near-duplicates of the entities the chain touches, added here.

* An entity the user names by id gets a copy of itself under another id: the same content, so only the
  id tells them apart (an agent that searches by name instead of using the id can pick the wrong one).
* An entity the agent must find (a tool-derived id) gets a copy of a same-kind *sibling* under a new
  id: whatever description identifies the right entity still identifies exactly one.

The gold chain is replayed on the augmented state; when a step fails or a tool-derived value is no
longer in the output it came from, the distractors are dropped (the task keeps the plain state). The
verifier derived from S0 → gold final state also guards that nothing else changed (every added
distractor and every other record keeps its content: the ``unchanged`` guard of :mod:`.verifier`),
and it is proven: the gold final state scores 1.0, the untouched S0 scores < 1.0.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from dataclaw.envcraft.runtime.state import jsoncopy
from dataclaw.envcraft.tasks.tool.composite import SEP
from dataclaw.envcraft.tasks.tool.execute import TAIL_NUMBER, TOOL, USER, harvest, next_free, run_calls
from dataclaw.envcraft.tasks.tool.synth import SynthError, SynthReason, classify
from dataclaw.envcraft.tasks.tool.verifier import (
    GUARD_OPS,
    VERIFIER_VERSION,
    Allowance,
    allowance,
    derive_verifier,
    entity_collection,
    evaluate,
    pointer,
    resolve,
)

_RESERVED = frozenset({"actions", "meta", "counters", "session_id", "scenario_id", "created_at"})


def collections(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Top-level dicts of records keyed by id (``tickets: {"T-1001": {...}}``): where entities live."""
    return {k: v for k, v in state.items() if k not in _RESERVED and v and entity_collection(v)}


def needed_entities(state: dict[str, Any], steps: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """``(collection, id) → source`` for every entity of S0 a chain parameter names by id (``user``
    when the user states the id, ``tool`` when the agent has to find it)."""
    where = {key: name for name, coll in collections(state).items() for key in coll}
    out: dict[tuple[str, str], str] = {}
    for st in steps:
        for param, value in st["params"].items():
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, str) and v in where:
                    source = st["sources"].get(param)
                    key = (where[v], v)
                    if out.get(key) != USER:  # named by the user anywhere: the user knows it
                        out[key] = USER if source == USER else TOOL
    return out


def _fresh_id(template: str, taken: set[str], floor: int, rng: random.Random) -> str | None:
    """An unused id in the template's format (``T-1001`` → ``T-1047``), well above ``floor`` so the
    environment's own counters never hand it out; None for ids without a numeric tail."""
    m = TAIL_NUMBER.match(template)
    if not m:
        return None
    prefix, digits = m.groups()
    same = [int(n.group(2)) for t in taken if (n := TAIL_NUMBER.match(t)) and n.group(1) == prefix]
    return next_free(template, max([*same, floor, int(digits)]) + rng.randint(20, 80), taken)


def add_distractors(
    state: dict[str, Any],
    steps: list[dict[str, Any]],
    rng: random.Random,
    per_entity: int = 1,
    limit: int = 4,
) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """A copy of ``state`` with near-duplicate distractors and the list of what was added
    (``{collection, id, copy_of, reason}``)."""
    out = jsoncopy(state)
    counters = [v for v in (state.get("counters") or {}).values() if isinstance(v, int)]
    floor = max(counters, default=0)
    taken = {k for coll in collections(state).values() for k in coll} | {
        str(s) for s in harvest(state).by_key.get("id", [])
    }
    needed = needed_entities(state, steps)
    added: list[dict[str, str]] = []
    for (name, eid), source in sorted(needed.items()):
        coll = out[name]
        if source == USER:
            templates = [eid]
        else:
            templates = sorted(k for k in state[name] if (name, k) not in needed)
            rng.shuffle(templates)
        for template in templates[:per_entity]:
            new = _fresh_id(template, taken, floor, rng)
            if new is None or len(added) >= limit:
                continue
            record = jsoncopy(state[name][template])
            for k, v in record.items():
                if v == template and (k == "id" or k.endswith("_id")):
                    record[k] = new
            coll[new] = record
            taken.add(new)
            reason = "same content, another id" if source == USER else "copy of a same-kind sibling"
            added.append({"collection": name, "id": new, "copy_of": template, "reason": reason})
    return out, added


def replay_gold(
    env_cls: Any, scenario_id: str, initial: dict[str, Any], steps: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
    """The gold calls run from ``initial``: (steps with their new outputs, final state), or None when a
    call fails or a tool-derived value is no longer in the output it was taken from."""
    results, final = run_calls(env_cls, scenario_id, initial, steps, session_id="ground")
    if any(r["status"] != "ok" for r in results):
        return None
    out = [{**st, "output": r["data"]} for st, r in zip(steps, results, strict=True)]
    for st in out:
        for param, j in st.get("derived_from", {}).items():
            seen = [v for vs in harvest(out[j]["output"]).by_key.values() for v in vs]
            value = st["params"][param]
            if value not in seen and not (isinstance(value, list) and all(v in seen for v in value)):
                return None
    return out, final


def _views(
    state: dict[str, Any], steps: list[dict[str, Any]], members: list[str] | None
) -> list[tuple[str | None, dict[str, Any], list[dict[str, Any]]]]:
    """``(env, that env's state, its steps)``: one view for an environment, one per member of a group."""
    if not members:
        return [(None, state, steps)]
    return [(e, state[e], [st for st in steps if st["tool"].startswith(e + SEP)]) for e in members]


def build_initial_state(
    env_cls: Any, grounded: dict[str, Any], seed: int, *, per_entity: int = 1, limit: int = 4
) -> dict[str, Any]:
    """``grounded`` with S0 augmented by distractors (``initial_state``, ``steps`` outputs and
    ``final_state`` from the replay on it) and ``added_distractors``; unchanged when none fit."""
    rng = random.Random(seed)
    members = list(getattr(env_cls, "members", {})) or None
    state = jsoncopy(grounded["initial_state"])
    added: list[dict[str, str]] = []
    for env, sub, steps in _views(grounded["initial_state"], grounded["steps"], members):
        new, more = add_distractors(sub, steps, rng, per_entity, limit - len(added))
        if env is None:
            state = new
        else:
            state[env] = new
        added += [{"env": env, **a} if env else a for a in more]
    if not added:
        return {**grounded, "added_distractors": []}
    replay = replay_gold(env_cls, grounded["scenario_id"], state, grounded["steps"])
    if replay is None:
        return {**grounded, "added_distractors": []}
    steps, final = replay
    return {
        **grounded,
        "initial_state": state,
        "steps": steps,
        "final_state": final,
        "added_distractors": added,
    }


def _entity_path(d: dict[str, str]) -> list[str]:
    return [d["env"], d["collection"], d["id"]] if d.get("env") else [d["collection"], d["id"]]


def distractors(grounded: dict[str, Any], members: list[str] | None = None) -> dict[str, dict[str, int]]:
    """Per collection the chain names (``env/collection`` in a group): entities it needs, same-kind
    entities that are not needed (distractors an agent must not confuse with the right one), and how
    many of those were added."""
    out = {}
    for env, state, steps in _views(grounded["initial_state"], grounded["steps"], members):
        needed = needed_entities(state, steps)
        for name in sorted({c for c, _ in needed}):
            ids = {k for c, k in needed if c == name}
            where = (env, name) if env else (name,)
            out["/".join(where)] = {
                "needed": len(ids),
                "distractors": len(set(state[name]) - ids),
                "added": sum(
                    1 for a in grounded.get("added_distractors", []) if tuple(_entity_path(a)[:-1]) == where
                ),
            }
    return out


def env_allowance(env_cls: Any, state: dict[str, Any], env: str | None = None) -> Allowance:
    """The counters and logs a guard leaves free in ``env_cls`` (member ``env`` of a group), from its
    tools' declared state fields (:func:`~.verifier.allowance`); none when the class has no tool specs."""
    members = getattr(env_cls, "members", None)
    cls = members[env] if env and members else env_cls
    tools = getattr(cls, "tools", None)
    if tools is None:
        return Allowance()
    return allowance(list(tools), state)


def derive(
    grounded: dict[str, Any],
    named: list[str],
    env_cls: Any = None,
    guard: bool = True,
    user_keys: Iterable[str] = (),
) -> dict[str, Any]:
    """The state-diff verifier with its guard (nothing else changed, :func:`~.verifier.derive_guard`);
    a group's ``env/field`` write fields are derived per environment and their paths prefixed with
    ``/env``, with one guard per member environment (also the members the chain never calls)."""
    initial, final, fields = grounded["initial_state"], grounded["final_state"], grounded["write_fields"]
    by_env: dict[str, list[str]] = {}
    for f in fields:
        env, _, local = f.rpartition("/")
        by_env.setdefault(env, []).append(local)
    members = list(getattr(env_cls, "members", {}) or {}) or [e for e in by_env if e]
    if list(by_env) == [""]:
        allow = env_allowance(env_cls, initial) if guard else None
        return derive_verifier(
            initial, final, fields, named_ids=named, user_keys=user_keys, guard=guard, allow=allow
        )
    assertions = []
    for env in dict.fromkeys([*by_env, *members]):
        local = by_env.get(env, [])
        allow = env_allowance(env_cls, initial[env], env) if guard else None
        part = derive_verifier(
            initial[env], final[env], local, named_ids=named, user_keys=user_keys, guard=guard, allow=allow
        )
        assertions += [{**a, "path": pointer([env]) + a["path"]} for a in part["assertions"]]
    return {"version": VERIFIER_VERSION, "assertions": assertions}


def build_verifier(
    grounded: dict[str, Any], env_cls: Any = None, *, guard: bool = True
) -> tuple[dict[str, Any], dict[str, float]]:
    """Derive the verifier and prove it: gold final state → 1.0, untouched initial state → < 1.0. With
    ``guard`` (the default) it carries the ``unchanged`` guard, which also keeps the added distractors
    as they were; without, each untouched distractor gets its own ``eq`` assertion (tasks made before
    guards existed). ``env_cls`` names the counters and logs the guard leaves free."""
    user, _ = classify(grounded["steps"])
    named = [r["value"] for r in user if isinstance(r["value"], str)]
    initial, final = grounded["initial_state"], grounded["final_state"]
    verifier = derive(grounded, named, env_cls, guard, user_keys=[r["param"] for r in user])
    if not [a for a in verifier["assertions"] if a["op"] not in GUARD_OPS]:
        raise SynthError(SynthReason.VERIFIER_EMPTY, "the chain changed none of its declared state fields")
    for d in [] if guard else grounded.get("added_distractors", []):
        where = _entity_path(d)
        before, after = resolve(initial, pointer(where)), resolve(final, pointer(where))
        if after == before:
            path = pointer(where)
            verifier["assertions"].append({"path": path, "op": "eq", "value": before, "why": "distractor"})
    gold = evaluate(verifier, final)["score"]
    start = evaluate(verifier, initial)["score"]
    if gold != 1.0:
        raise SynthError(SynthReason.VERIFIER_GOLD_FAILS, f"gold state scores {gold:.3f}, not 1.0")
    if start >= 1.0:
        raise SynthError(SynthReason.VERIFIER_TRIVIAL, "the untouched initial state already passes")
    return verifier, {"gold": gold, "initial": start}
