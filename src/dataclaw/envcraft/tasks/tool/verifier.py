"""Deterministic state verifiers as data (EnvCraft §2.1 ``V``, §4.2), and the pure interpreter that runs them.

A verifier is JSON: ``{"version": 1, "assertions": [{"path", "op", "value"?, "why"?}, ...]}``. ``path`` is
an RFC 6901 JSON pointer into the environment's session state (``/tickets/T-1001/status``); ``op`` is one
of :data:`OPS`. The score is the fraction of assertions that hold; a task is solved at 1.0. It checks the
post-execution state, never the action trace, and has no code to sandbox, so it runs anywhere.

:func:`derive_verifier` builds one from the diff between a task's initial state and the state after the
gold chain, restricted to the state fields the chain's write tools declare; values that depend on how
many actions were taken (timestamps, versions, counter-generated ids) are left out so any correct
solution passes.

**Nothing else changed: the guard.** Those assertions say what must change; one ``unchanged`` assertion
(a *guard*, :func:`derive_guard`) says that nothing else did. Its ``value`` holds a content digest of every
*unit* of the state the gold run leaves alone (each record of a collection keyed by id, each other
top-level field, the entries a list held at the start), with the leaves the gold run changed cut out
(``strip``: the other assertions check those, or they are clock values); a collection may gain only as
many new keys as the gold run created (``collections``). What the guard never compares is explicit and
listed in the assertion (``allow``): the runtime's own bookkeeping (:data:`RUNTIME_ALLOWED`: the action log,
the clock, the session id), *counters* and *logs* — found from the tools' declared
``state_fields_affected`` (:func:`allowance`), not by name: a log is a list every write tool that
declares it declares next to a record collection (so an entry in it is the trace of a write judged on
the records themselves); it may grow (``grow``), but the entries it held stay. A counter is a map of
integers every declaring tool declares next to what it counts.

Score: the fraction of the other (*goal*) assertions that hold, multiplied by ``1 - penalty`` for each
guard that fails (``penalty`` is stored in the guard, 0.5 when derived): the gold chain plus a write to
a record the task never names scores ``0.5`` and never passes, doing nothing scores ``0``. A verifier
without a guard (every task made before guards existed) scores exactly as before.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

VERIFIER_VERSION = 1
# state keys maintained by the runtime or by counters: never evidence of the user's intent
SKIP_FIELDS = frozenset({"actions", "meta", "session_id", "scenario_id", "created_at", "counters"})
_VOLATILE_KEY = re.compile(r"(^|_)(at|time|timestamp|version|revision|updated|created|index|seq)$")
_ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")
_MISSING = object()

RUNTIME_ALLOWED = ("/actions", "/meta/action_index", "/session_id")
"""What the runtime itself changes on every call (``Environment.call`` logs the call in ``actions`` and
advances the clock's ``meta.action_index``; restoring a state rebinds ``session_id``): never guarded."""
MATCH_OPS = frozenset({"match", "no_match", "match_deep"})
"""Assertions whose value is an object an item of a collection must (or must not) hold."""
GUARD_OPS = frozenset({"unchanged"})
"""Assertions that do not score by holding but cost when they fail (see :func:`evaluate`)."""
DEFAULT_GUARD_PENALTY = 0.5
"""The share of the score a failed guard takes away when :func:`derive_guard` makes it."""


def pointer(parts: Iterable[str]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def resolve(state: Any, path: str) -> Any:
    """The value at JSON pointer ``path`` or :data:`_MISSING`."""
    if path in ("", "/"):
        return state
    if not path.startswith("/"):
        raise ValueError(f"verifier path {path!r} must be a JSON pointer starting with '/'")
    return _walk(state, [raw.replace("~1", "/").replace("~0", "~") for raw in path[1:].split("/")])


def _walk(cur: Any, parts: Iterable[str]) -> Any:
    """The value under the unescaped pointer ``parts`` or :data:`_MISSING`."""
    for key in parts:
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


def _holds(actual: Any, expected: Any) -> bool:
    """``expected`` is a deep subset of ``actual``: an object's listed keys hold recursively, a list has
    as many entries, each held by a distinct entry of ``actual`` (order free), any other value is equal."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and _holds(actual[k], v) for k, v in expected.items()
        )
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return False
        free = list(actual)
        for want in expected:
            hit = next((i for i, got in enumerate(free) if _holds(got, want)), None)
            if hit is None:
                return False
            free.pop(hit)
        return True
    return actual == expected


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
    # ``match`` with nested content: an item holding ``v`` as a deep subset (:func:`_holds`)
    "match_deep": lambda a, v: any(_holds(item, v) for item in _items(a)),
    "unchanged": lambda a, v: not changed_units(a, v),
}


# ---- the guard: nothing else changed ------------------------------------------------------------------


def digest(value: Any) -> str:
    """A short content hash of a JSON value (canonical JSON: sorted keys, no spaces); ``"absent"`` for a
    value that is not there."""
    if value is _MISSING:
        return "absent"
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _same(value: Any, expected: str) -> bool:
    """``digest(value) == expected``, tried first over orjson's canonical text (several times faster; the
    same text as :func:`digest`'s for almost every value), then over :func:`digest`'s own where they differ
    (float spellings, NaN, huge ints), so the verdict is always :func:`digest`'s."""
    if value is not _MISSING:
        try:
            text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except (TypeError, orjson.JSONEncodeError):
            text = b""
        if text and hashlib.sha256(text).hexdigest()[:16] == expected:
            return True
    return digest(value) == expected


def _split(path: str) -> list[str]:
    return [] if path in ("", "/") else [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _strip_tree(paths: Iterable[str]) -> dict[str, Any]:
    """JSON pointers as a nested dict whose leaves are ``None`` (cut here), for :func:`_cut`."""
    tree: dict[str, Any] = {}
    for path in paths:
        node = tree
        parts = _split(path)
        for part in parts[:-1]:
            nxt = node.setdefault(part, {})
            if nxt is None:
                break
            node = nxt
        else:
            if parts:
                node[parts[-1]] = None
    return tree


def _cut(value: Any, tree: dict[str, Any] | None) -> Any:
    """``value`` without the leaves of ``tree`` (a copy only where something is cut)."""
    if not tree or not isinstance(value, dict):
        return value
    out = {}
    for k, v in value.items():
        if k in tree:
            sub = tree[k]
            if sub is None:
                continue
            out[k] = _cut(v, sub)
        else:
            out[k] = v
    return out


def _subtree(tree: dict[str, Any], parts: list[str]) -> dict[str, Any] | None:
    node: Any = tree
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            return {}
        node = node[part]
        if node is None:
            return None
    return node


def changed_units(state: Any, spec: Any) -> list[str]:
    """The units of ``state`` (the guard's subtree) a guard's ``spec`` finds changed: a record or field
    whose digest differs (or is gone), a collection with more new keys than allowed, a list longer than
    allowed. Empty: nothing else changed. A malformed spec is one finding, never an exception."""
    if not isinstance(spec, Mapping) or not isinstance(spec.get("units"), Mapping):
        return ["<malformed guard>"]
    return _Guard(spec).changed(state)


class _Guard:
    """One guard's spec prepared once for many states: each unit's pointer split, its cut tree found,
    and the collections' known keys listed (what :func:`changed_units` would redo per state)."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        tree = _strip_tree(spec.get("strip") or [])
        lists = spec.get("lists") or {}
        self.bad = next((p for p in spec["units"] if p not in ("", "/") and not p.startswith("/")), None)
        # (path, parts, list rule, cut tree, expected digest, verdict): a unit cut whole compares a
        # constant, so its verdict is decided here; any other unit's (None) on each state
        self.units: list[tuple[str, list[str], Any, Any, str, bool | None]] = []
        for path, expected in spec["units"].items():
            parts = _split(path)
            sub = _subtree(tree, parts)
            verdict = None if sub is not None else not _same("<stripped>", expected)
            self.units.append((path, parts, lists.get(path), sub, expected, verdict))
        self.collections: list[tuple[str, list[str], set[str], int]] = []
        for path, new in (spec.get("collections") or {}).items():
            prefix = path + "/"
            tails = [p[len(prefix) :] for p in spec["units"] if p.startswith(prefix)]
            kept = {t.replace("~1", "/").replace("~0", "~") for t in tails if "/" not in t}
            self.collections.append((path, _split(path), kept, int(new)))
        self.lists = [(path, _split(path), rule.get("max")) for path, rule in lists.items()]

    def changed(self, state: Any, first: bool = False) -> list[str]:
        """The findings on ``state`` (``first``: stop at the first changed unit; a score needs only
        whether there is a finding)."""
        if state is _MISSING or not isinstance(state, dict):
            return ["<no state>"]
        if self.bad is not None:
            raise ValueError(f"verifier path {self.bad!r} must be a JSON pointer starting with '/'")
        out: list[str] = []
        for path, parts, rule, sub, expected, stale in self.units:
            if stale is None:
                value = _walk(state, parts)
                if rule is not None and isinstance(value, list):
                    value = value[: rule["keep"]]
                stale = not _same(_cut(value, sub), expected)
            if stale:
                out.append(path)
                if first:
                    return out
        for path, parts, kept, new in self.collections:
            coll = _walk(state, parts)
            if not isinstance(coll, dict):
                out.append(path)
            elif (extra := sum(1 for k in coll if k not in kept)) > new:
                out.append(f"{path} (+{extra - new} records)")
        for path, parts, limit in self.lists:
            value = _walk(state, parts)
            if isinstance(value, list) and limit is not None and len(value) > int(limit):
                out.append(f"{path} (+{len(value) - int(limit)} entries)")
        return out


@dataclass(frozen=True)
class Allowance:
    """What a guard never compares beyond the runtime's bookkeeping: ``counters`` (top-level maps of
    integers the tools maintain) and ``logs`` (top-level lists that may grow); both found from the
    tools' declared fields by :func:`allowance`."""

    counters: frozenset[str] = field(default_factory=frozenset)
    logs: frozenset[str] = field(default_factory=frozenset)


def allowance(tools: Iterable[Any], state: Mapping[str, Any]) -> Allowance:
    """The counters and logs of an environment, from its write tools' ``state_fields_affected`` and the
    shapes in ``state`` (its initial state): a **log** is a list that every write tool declaring it
    declares together with a record collection; a **counter** is a map of integers that every write
    tool declaring it declares together with a record collection or a list (what it counts)."""
    declared: dict[str, list[set[str]]] = {}
    for spec in tools:
        if getattr(spec, "side_effect", "write") != "write":
            continue
        fields = set(getattr(spec, "state_fields_affected", ()) or ())
        for f in fields:
            declared.setdefault(f, []).append(fields - {f})

    def collection(f: str) -> bool:
        v = state.get(f)
        return isinstance(v, dict) and bool(v) and entity_collection(v)

    def integers(f: str) -> bool:
        v = state.get(f)
        return (
            isinstance(v, dict)
            and bool(v)
            and all(isinstance(x, int) and not isinstance(x, bool) for x in v.values())
        )

    logs, counters = set(), set()
    for f, others in declared.items():
        if isinstance(state.get(f), list) and all(any(collection(o) for o in rest) for rest in others):
            logs.add(f)
        elif integers(f) and all(
            any(collection(o) or isinstance(state.get(o), list) for o in rest) for rest in others
        ):
            counters.add(f)
    return Allowance(frozenset(counters), frozenset(logs))


def _changed_leaves(a: Any, b: Any, path: list[str], out: list[str]) -> None:
    """JSON pointers of every leaf where ``a`` and ``b`` differ (dicts recursively; a list or scalar
    that differs, a key added or removed, is one leaf)."""
    if a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a.keys() | b.keys():
            if key not in a or key not in b:
                out.append(pointer([*path, key]))
            else:
                _changed_leaves(a[key], b[key], [*path, key], out)
        return
    out.append(pointer(path))


def derive_guard(
    initial: dict[str, Any],
    final: dict[str, Any],
    allow: Allowance | None = None,
    *,
    penalty: float = DEFAULT_GUARD_PENALTY,
) -> dict[str, Any]:
    """The ``unchanged`` assertion for a task whose gold run goes ``initial`` → ``final``: every unit of
    the state the gold run leaves alone must keep its content (see the module docstring)."""
    allow = allow or Allowance()
    skipped = {p for p in RUNTIME_ALLOWED if "/" not in p[1:]}
    changed: list[str] = []
    for key in sorted(initial.keys() | final.keys()):
        if pointer([key]) in skipped or key in allow.counters:
            continue
        a, b = initial.get(key, _MISSING), final.get(key, _MISSING)
        if a is _MISSING or b is _MISSING:
            changed.append(pointer([key]))
            continue
        if isinstance(a, list) and isinstance(b, list) and b[: len(a)] == a:
            continue  # appended to (or untouched): its first entries are a unit below, its length capped
        _changed_leaves(a, b, [key], changed)
    strip = sorted({*changed, *(p for p in RUNTIME_ALLOWED if "/" in p[1:])})
    tree = _strip_tree(strip)
    units: dict[str, str] = {}
    collections: dict[str, int] = {}
    lists: dict[str, dict[str, Any]] = {}
    for key in sorted(initial):
        top = pointer([key])
        if top in skipped or key in allow.counters or _subtree(tree, [key]) is None:
            continue
        a, b = initial[key], final.get(key)
        if isinstance(a, list) and isinstance(b, list):
            grows = key in allow.logs
            if b[: len(a)] != a:
                continue  # rewritten in place by the gold run: the goal assertions' business
            lists[top] = {"keep": len(a), "max": None if grows else len(b)}
            units[top] = digest(a)
        elif isinstance(b, dict) and entity_collection(a) and entity_collection(b) and (a or b):
            for rid in sorted(a):
                if rid in b and _subtree(tree, [key, rid]) is not None:
                    path = pointer([key, rid])
                    units[path] = digest(_cut(b[rid], _subtree(tree, [key, rid])))
            collections[top] = sum(1 for rid in b if rid not in a)
        else:
            units[top] = digest(_cut(b, _subtree(tree, [key])))
    value = {
        "allow": sorted(
            [*RUNTIME_ALLOWED, *(pointer([c]) for c in allow.counters)]
            + [pointer([g]) + " (may grow)" for g in allow.logs]
        ),
        "strip": strip,
        "units": units,
        "collections": collections,
        "lists": lists,
    }
    return {"path": "", "op": "unchanged", "value": value, "penalty": penalty, "why": "nothing else changed"}


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
        elif a["op"] in MATCH_OPS and not isinstance(a.get("value"), dict):
            problems.append(f"assertion {i}: {a['op']} needs an object value")
        elif a["op"] in GUARD_OPS and not (
            isinstance(a.get("value"), dict) and isinstance(a["value"].get("units"), dict)
        ):
            problems.append(f"assertion {i}: {a['op']} needs an object value with units")
        elif a["op"] in GUARD_OPS and not _penalty_ok(a.get("penalty", 1.0)):
            problems.append(f"assertion {i}: penalty must be a number in (0, 1]")
    if not problems and all(isinstance(a, dict) and a.get("op") in GUARD_OPS for a in assertions):
        problems.append("verifier has only guards: nothing says what must change")
    return problems


def _penalty_ok(p: Any) -> bool:
    return isinstance(p, int | float) and not isinstance(p, bool) and 0 < p <= 1


def evaluate(verifier: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    """Run ``verifier`` on ``state``: ``{"score", "passed", "results": [bool, ...]}``. A malformed
    verifier scores 0.0 with ``error`` set (a verifier failure is never an agent success)."""
    return PreparedVerifier(verifier).evaluate(state)


class PreparedVerifier:
    """A verifier checked and its guards prepared once, to run on many states (the soundness suite
    scores a task's verifier on some twenty states): :meth:`evaluate` is :func:`evaluate`'s result,
    :meth:`score` the same score with only the work a score needs."""

    def __init__(self, verifier: dict[str, Any]) -> None:
        problems = check_verifier(verifier)
        self.error = problems[0] if problems else None
        self.assertions: list[dict[str, Any]] = [] if problems else verifier["assertions"]
        self.guards = {i: _Guard(a["value"]) for i, a in enumerate(self.assertions) if a["op"] in GUARD_OPS}

    def evaluate(self, state: dict[str, Any]) -> dict[str, Any]:
        if self.error is not None:
            return {"score": 0.0, "passed": False, "results": [], "error": self.error}
        results: list[bool] = []
        changed: list[str] = []
        factors: list[float] = []
        for i, a in enumerate(self.assertions):
            actual = resolve(state, a["path"])
            if i in self.guards:  # the guard's findings are its result: computed once, kept for `changed`
                found = self.guards[i].changed(actual)
                results.append(not found)
                if found:
                    factors.append(1.0 - float(a.get("penalty", 1.0)))
                    prefix = a["path"] if a["path"] not in ("", "/") else ""
                    changed += [prefix + p for p in found]
            else:
                results.append(bool(OPS[a["op"]](actual, a.get("value"))))
        goals = [r for i, r in enumerate(results) if i not in self.guards]
        score = sum(goals) / len(goals)
        for factor in factors:
            score *= factor
        out: dict[str, Any] = {"score": score, "passed": score == 1.0 and all(results), "results": results}
        if changed:
            out["changed"] = changed
        return out

    def score(self, state: dict[str, Any]) -> float:
        """``evaluate(state)["score"]``, the same number: no guard is read when no goal holds (the
        score is 0 whatever they find), and a guard stops at its first finding (one costs the same)."""
        if self.error is not None:
            return 0.0
        goals = [
            bool(OPS[a["op"]](resolve(state, a["path"]), a.get("value")))
            for i, a in enumerate(self.assertions)
            if i not in self.guards
        ]
        score = sum(goals) / len(goals)
        if not score:
            return score
        for i, guard in self.guards.items():
            if guard.changed(resolve(state, self.assertions[i]["path"]), first=True):
                score *= 1.0 - float(self.assertions[i].get("penalty", 1.0))
        return score


def _volatile(key: str, value: Any, user_keys: frozenset[str] = frozenset()) -> bool:
    """A clock value no other correct run reproduces: a key named like one (``updated_at``), or a time
    under a key the user does not state (a time the user states — an event's ``start`` — is the task)."""
    if _VOLATILE_KEY.search(key):
        return True
    return isinstance(value, str) and bool(_ISO_TIME.match(value)) and key not in user_keys


def _stable_fields(
    entity: dict[str, Any],
    known: frozenset[str],
    exclude_value: Any = _MISSING,
    user_keys: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """The content of a new entity that any correct solution reproduces, nested content included: no
    clock values, and no ids the run generated (an id-like value that the initial state and the user
    never named)."""

    def generated(k: str, v: Any) -> bool:
        return (k == "id" or k.endswith("_id")) and isinstance(v, str) and v not in known

    out: dict[str, Any] = {}
    for k, v in entity.items():
        if v == exclude_value or _volatile(k, v, user_keys) or generated(k, v):
            continue
        if isinstance(v, str | int | float | bool):
            out[k] = v
        elif isinstance(v, dict):
            out[k] = _stable_fields(v, known, user_keys=user_keys)
        elif isinstance(v, list) and not any(isinstance(x, str) and _ISO_TIME.match(x) for x in v):
            # a list is matched entry for entry (as many entries); one holding clock values is not
            out[k] = [_stable_fields(x, known, user_keys=user_keys) if isinstance(x, dict) else x for x in v]
    return out


def _match(path: list[str], fields: dict[str, Any], why: str) -> dict[str, Any]:
    """The assertion that a created or appended entity is there: ``match`` on scalar fields, or
    ``match_deep`` where its content nests (a comment's flags, an event's payload must hold too)."""
    flat = all(isinstance(v, str | int | float | bool) for v in fields.values())
    return {"path": pointer(path), "op": "match" if flat else "match_deep", "value": fields, "why": why}


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


def _diff(
    a: Any,
    b: Any,
    path: list[str],
    out: list[dict[str, Any]],
    known: frozenset[str],
    user_keys: frozenset[str] = frozenset(),
) -> None:
    if a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in b:
            if key in a:
                if not _volatile(key, b[key], user_keys):
                    _diff(a[key], b[key], [*path, key], out, known, user_keys)
            elif isinstance(b[key], dict) and key in known:  # an id the user chose: its path is stable
                out.append({"path": pointer([*path, key]), "op": "exists", "why": "created"})
                _diff({}, b[key], [*path, key], out, known, user_keys)
            elif isinstance(b[key], dict):  # a generated id: find the entity by its content instead
                fields = _stable_fields(b[key], known, exclude_value=key, user_keys=user_keys)
                if fields:
                    out.append(_match(path, fields, "created"))
            elif not _volatile(key, b[key], user_keys):
                out.append({"path": pointer([*path, key]), "op": "eq", "value": b[key], "why": "set"})
        for key in a:
            if key not in b:
                out.append({"path": pointer([*path, key]), "op": "absent", "why": "removed"})
        return
    if isinstance(b, dict):  # a dict appeared where there was none (or a scalar): compare its fields
        _diff({}, b, path, out, known, user_keys)
        return
    if isinstance(a, list) and isinstance(b, list) and all(isinstance(x, dict) for x in b):
        new = [x for x in b if x not in a]
        if len(b) > len(a):
            out.append({"path": pointer(path), "op": "count_gte", "value": len(b), "why": "appended"})
        for item in new:
            fields = _stable_fields(item, known, user_keys=user_keys)
            if fields:
                out.append(_match(path, fields, "appended"))
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
    user_keys: Iterable[str] = (),
    max_assertions: int = 40,
    guard: bool = False,
    allow: Allowance | None = None,
) -> dict[str, Any]:
    """A verifier from the ``initial`` → ``final`` diff over the top-level state ``fields`` (the chain's
    write tools' declared fields, minus runtime bookkeeping). ``named_ids``: ids the user states (a new
    entity under such a key is asserted at its path; others are found by content). ``user_keys``: the
    parameters whose values the user states (a time under such a key is asserted, not skipped as a clock
    value: scheduling at another time than asked is wrong). ``guard``: add the
    ``unchanged`` guard over the whole state (:func:`derive_guard`, ``allow`` its counters and logs); it
    then also caps the entity counts and list lengths, so the count assertions (an entity count holds on
    the untouched state when the gold run only edits records; a log length next to a matched entry holds
    after any write) are left out."""
    out: list[dict[str, Any]] = []
    # values an agent can know without the gold run: what the initial state holds and the user names
    known = frozenset(_scalars(initial, set(named_ids)))
    stated = frozenset(user_keys)
    for f in sorted(set(fields) - SKIP_FIELDS):
        a, b = initial.get(f), final.get(f)
        _diff(a, b, [f], out, known, stated)
        # no entity made or removed beyond the gold run's
        if a != b and entity_collection(a) and entity_collection(b):
            out.append({"path": pointer([f]), "op": "count_eq", "value": len(b), "why": "entity count"})
    # keep the strongest evidence first: entity-level changes, then logs
    order = {"changed": 0, "set": 0, "created": 1, "removed": 1, "entity count": 2, "appended": 2}
    out.sort(key=lambda x: order.get(x.get("why", ""), 3))
    if not guard:
        return {"version": VERIFIER_VERSION, "assertions": out[:max_assertions]}
    # a count any write satisfies (entity counts, log lengths next to the entry they must hold) pays a
    # policy for doing anything: the guard caps the counts, the entry is matched by content
    matched = {a["path"] for a in out if a["op"] in MATCH_OPS}
    goals = [
        a
        for a in out
        if a.get("why") != "entity count" and not (a["op"] == "count_gte" and a["path"] in matched)
    ][:max_assertions]
    return {"version": VERIFIER_VERSION, "assertions": [*goals, derive_guard(initial, final, allow)]}
