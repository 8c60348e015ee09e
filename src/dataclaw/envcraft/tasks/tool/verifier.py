"""Deterministic state verifiers as data (EnvCraft §2.1 ``V``, §4.2), and the pure interpreter that runs them.

A verifier is JSON: ``{"version": 1, "assertions": [{"path", "op", "value"?, "why"?}, ...]}``. ``path`` is
an RFC 6901 JSON pointer into the environment's session state (``/tickets/T-1001/status``); ``op`` is one
of :data:`OPS`. The score is the fraction of assertions that hold; a task is solved at 1.0. It checks the
post-execution state, never the action trace, and has no code to sandbox, so it runs anywhere.

:func:`derive_verifier` builds one from the diff between a task's initial state and the state after the
gold chain, restricted to the state fields the chain's write tools declare; values that depend on how
many actions were taken (timestamps, versions, counter-generated ids) are left out so any correct
solution passes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

VERIFIER_VERSION = 1
# state keys maintained by the runtime or by counters: never evidence of the user's intent
SKIP_FIELDS = frozenset({"actions", "meta", "session_id", "scenario_id", "created_at", "counters"})
_VOLATILE_KEY = re.compile(r"(^|_)(at|time|timestamp|version|revision|updated|created|index|seq)$")
_ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")
_MISSING = object()


def pointer(parts: Iterable[str]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def resolve(state: Any, path: str) -> Any:
    """The value at JSON pointer ``path`` or :data:`_MISSING`."""
    if path in ("", "/"):
        return state
    if not path.startswith("/"):
        raise ValueError(f"verifier path {path!r} must be a JSON pointer starting with '/'")
    cur = state
    for raw in path[1:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(cur, dict):
            if key not in cur:
                return _MISSING
            cur = cur[key]
        elif isinstance(cur, list):
            if not key.isdigit() or int(key) >= len(cur):
                return _MISSING
            cur = cur[int(key)]
        else:
            return _MISSING
    return cur


def _items(container: Any) -> list[Any]:
    if isinstance(container, dict):
        return list(container.values())
    return list(container) if isinstance(container, list) else []


def _matches(item: Any, subset: dict[str, Any]) -> bool:
    return isinstance(item, dict) and all(item.get(k, _MISSING) == v for k, v in subset.items())


def _contains(actual: Any, expected: Any) -> bool:
    if isinstance(actual, str) and isinstance(expected, str):
        return expected.lower() in actual.lower()
    if isinstance(actual, list | dict):
        return expected in actual
    return False


def _count(actual: Any) -> int | None:
    return len(actual) if isinstance(actual, list | dict) else None


OPS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": lambda a, v: a is not _MISSING and a == v,
    "ne": lambda a, v: a != v,
    "exists": lambda a, v: a is not _MISSING,
    "absent": lambda a, v: a is _MISSING,
    "contains": lambda a, v: a is not _MISSING and _contains(a, v),
    "count_eq": lambda a, v: _count(a) == v,
    "count_gte": lambda a, v: (_count(a) or 0) >= v,
    "match": lambda a, v: any(_matches(item, v) for item in _items(a)),
    "no_match": lambda a, v: not any(_matches(item, v) for item in _items(a)),
}


def check_verifier(verifier: Any) -> list[str]:
    """Problems with a verifier's shape (empty list: well-formed)."""
    if not isinstance(verifier, dict) or verifier.get("version") != VERIFIER_VERSION:
        return [f"verifier must be an object with version {VERIFIER_VERSION}"]
    problems = []
    assertions = verifier.get("assertions")
    if not isinstance(assertions, list) or not assertions:
        return ["verifier has no assertions"]
    for i, a in enumerate(assertions):
        if not isinstance(a, dict) or a.get("op") not in OPS:
            problems.append(f"assertion {i}: op must be one of {', '.join(OPS)}")
        elif not isinstance(a.get("path"), str) or not (a["path"] == "" or a["path"].startswith("/")):
            problems.append(f"assertion {i}: path must be a JSON pointer")
        elif a["op"] in ("match", "no_match") and not isinstance(a.get("value"), dict):
            problems.append(f"assertion {i}: {a['op']} needs an object value")
    return problems


def evaluate(verifier: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    """Run ``verifier`` on ``state``: ``{"score", "passed", "results": [bool, ...]}``. A malformed
    verifier scores 0.0 with ``error`` set (a verifier failure is never an agent success)."""
    problems = check_verifier(verifier)
    if problems:
        return {"score": 0.0, "passed": False, "results": [], "error": problems[0]}
    results = [bool(OPS[a["op"]](resolve(state, a["path"]), a.get("value"))) for a in verifier["assertions"]]
    score = sum(results) / len(results)
    return {"score": score, "passed": score == 1.0, "results": results}


def _volatile(key: str, value: Any) -> bool:
    return bool(_VOLATILE_KEY.search(key)) or (isinstance(value, str) and bool(_ISO_TIME.match(value)))


def _stable_fields(
    entity: dict[str, Any], known: frozenset[str], exclude_value: Any = _MISSING
) -> dict[str, Any]:
    """Scalar fields of a new entity that any correct solution reproduces: no clock values, and no ids
    the run generated (an id-like value that the initial state and the user never named)."""

    def generated(k: str, v: Any) -> bool:
        return (k == "id" or k.endswith("_id")) and isinstance(v, str) and v not in known

    return {
        k: v
        for k, v in entity.items()
        if isinstance(v, str | int | float | bool)
        and not _volatile(k, v)
        and v != exclude_value
        and not generated(k, v)
    }


def _scalars(value: Any, out: set[str]) -> set[str]:
    if isinstance(value, dict):
        out.update(k for k in value)
        for v in value.values():
            _scalars(v, out)
    elif isinstance(value, list):
        for v in value:
            _scalars(v, out)
    elif isinstance(value, str):
        out.add(value)
    return out


def _diff(a: Any, b: Any, path: list[str], out: list[dict[str, Any]], known: frozenset[str]) -> None:
    if a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in b:
            if key in a:
                if not _volatile(key, b[key]):
                    _diff(a[key], b[key], [*path, key], out, known)
            elif isinstance(b[key], dict) and key in known:  # an id the user chose: its path is stable
                out.append({"path": pointer([*path, key]), "op": "exists", "why": "created"})
                _diff({}, b[key], [*path, key], out, known)
            elif isinstance(b[key], dict):  # a generated id: find the entity by its content instead
                fields = _stable_fields(b[key], known, exclude_value=key)
                if fields:
                    out.append({"path": pointer(path), "op": "match", "value": fields, "why": "created"})
            elif not _volatile(key, b[key]):
                out.append({"path": pointer([*path, key]), "op": "eq", "value": b[key], "why": "set"})
        for key in a:
            if key not in b:
                out.append({"path": pointer([*path, key]), "op": "absent", "why": "removed"})
        return
    if isinstance(b, dict):  # a dict appeared where there was none (or a scalar): compare its fields
        _diff({}, b, path, out, known)
        return
    if isinstance(a, list) and isinstance(b, list) and all(isinstance(x, dict) for x in b):
        new = [x for x in b if x not in a]
        if len(b) > len(a):
            out.append({"path": pointer(path), "op": "count_gte", "value": len(b), "why": "appended"})
        for item in new:
            fields = _stable_fields(item, known)
            if fields:
                out.append({"path": pointer(path), "op": "match", "value": fields, "why": "appended"})
        return
    out.append({"path": pointer(path), "op": "eq", "value": b, "why": "changed"})


def entity_collection(value: Any) -> bool:
    """A collection of entities keyed by id (``{"T-1": {...}}``); an empty dict counts."""
    return isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())


def derive_verifier(
    initial: dict[str, Any],
    final: dict[str, Any],
    fields: Iterable[str],
    *,
    named_ids: Iterable[str] = (),
    max_assertions: int = 40,
) -> dict[str, Any]:
    """A verifier from the ``initial`` → ``final`` diff over the top-level state ``fields`` (the chain's
    write tools' declared fields, minus runtime bookkeeping). ``named_ids``: ids the user states (a new
    entity under such a key is asserted at its path; others are found by content)."""
    out: list[dict[str, Any]] = []
    # values an agent can know without the gold run: what the initial state holds and the user names
    known = frozenset(_scalars(initial, set(named_ids)))
    for f in sorted(set(fields) - SKIP_FIELDS):
        a, b = initial.get(f), final.get(f)
        _diff(a, b, [f], out, known)
        # no entity made or removed beyond the gold run's
        if a != b and entity_collection(a) and entity_collection(b):
            out.append({"path": pointer([f]), "op": "count_eq", "value": len(b), "why": "entity count"})
    # keep the strongest evidence first: entity-level changes, then logs
    order = {"changed": 0, "set": 0, "created": 1, "removed": 1, "entity count": 2, "appended": 2}
    out.sort(key=lambda x: order.get(x.get("why", ""), 3))
    return {"version": VERIFIER_VERSION, "assertions": out[:max_assertions]}
