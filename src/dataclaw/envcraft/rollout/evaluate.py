"""τ²-style evaluation of a finished rollout: its reward decomposed into named components.

Each rollout record carries ``reward_components: {name: {"score", "weight", "detail"}}`` next to
``reward`` (a component that could not be judged also has ``"error"``):

* ``db`` — the end state against the gold one: the task's own verifier (its assertions and its guard,
  derived from the gold chain's final state; τ²'s DB hash and env assertions for imported τ² tasks).
  Score 1.0 only when the verifier passes.
* ``actions`` — the required actions found in the trajectory, as τ²'s ``ActionEvaluator`` compares them:
  a gold action matches a call of the same tool whose arguments equal the gold ones on ``compare_args``
  (all the call's arguments when None). The required actions are τ²'s ``evaluation_criteria.actions``
  for an imported τ² task, else the **write** calls of the task's gold chain (reads are a route, not a
  requirement). Score 1.0 only when every one is found.
* ``communicate`` — every string of the task's communicate info appears (case-insensitively, commas
  ignored, as τ²'s ``CommunicateEvaluator``) in some assistant text.
* ``nl_assertions`` — a judge model (``--judge-model``) says, through a JSON schema, whether each
  natural-language assertion holds for the conversation. A judge that fails or whose answer does not
  grade every assertion exactly once is a ``judge_error``: score 0, never a pass.
* ``workplace`` — a claw task's ``verify_workplace.py`` score (its only component).

An environment that scores components itself puts them in its session state (``reward_components``: an
imported τ² domain runs τ²'s own DB check and env assertions in its sandboxed worker): those replace ours
of the same name, with the weights the environment gave them. ``actions`` (reads included) are always
scored here, from the transcript: the runtime does not replay reads into the state.

A component is **absent** when the task has nothing for it (no communicate info, no assertions, no
required action): absent is not 1.0. The reward follows the task's **reward basis**: τ²'s
``metadata.reward_basis`` (``DB`` → ``db``, ``ENV_ASSERTION`` → ``env_assertions``, ``ACTION`` → ``actions``,
``COMMUNICATE`` → ``communicate``, ``NL_ASSERTION`` → ``nl_assertions``) or our own ``["db"]``; the reward
is the product of the basis components' scores (τ²'s ``EvaluationType.ALL``), each with weight 1, and the
components outside the basis are recorded with weight 0. A basis component the task has no data for
counts 1 (τ²: "nothing to evaluate"); one that needs a judge when none is given counts 0 (``no_judge``).
Our default basis keeps
the verifier's binary reward — the one the soundness suite proved against doing nothing, harm and extra —
exactly as it was; ``actions`` and ``communicate`` are diagnostics there.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

DB, ENV_ASSERTIONS, ACTIONS, COMMUNICATE = "db", "env_assertions", "actions", "communicate"
NL_ASSERTIONS, WORKPLACE = "nl_assertions", "workplace"
COMPONENTS = (DB, ENV_ASSERTIONS, ACTIONS, COMMUNICATE, NL_ASSERTIONS, WORKPLACE)
DEFAULT_BASIS = (DB,)
"""Our tasks' reward basis: the verifier's end-state check alone (soundness-proven)."""
TAU2_BASIS = {
    "DB": DB,
    "ENV_ASSERTION": ENV_ASSERTIONS,
    "ACTION": ACTIONS,
    "COMMUNICATE": COMMUNICATE,
    "NL_ASSERTION": NL_ASSERTIONS,
}
"""τ²-bench's ``RewardType`` names → component names."""
JUDGE_ERROR = "judge_error"
NO_JUDGE = "no_judge"
JUDGE_MAX_TOKENS = 1024
_MAX_TRANSCRIPT_CHARS = 24_000


@dataclass(frozen=True)
class Criteria:
    """What a task asks of a rollout besides its end state, and the basis its reward is computed on."""

    actions: list[dict[str, Any]] = field(default_factory=list)
    """``{"name", "arguments", "compare_args"}`` per required action."""
    communicate: list[str] = field(default_factory=list)
    nl_assertions: list[str] = field(default_factory=list)
    basis: tuple[str, ...] = DEFAULT_BASIS
    scored_by_env: bool = False
    """The task comes from a set whose environment scores components itself (τ²: read from its state)."""


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value if str(v).strip()] if isinstance(value, list) else []


def basis_of(names: Any) -> tuple[str, ...]:
    """A task's reward basis as component names (τ²'s or ours), in order, without repeats; ours when none."""
    if not isinstance(names, list) or not names:
        return DEFAULT_BASIS
    out = [TAU2_BASIS.get(str(n), str(n).lower()) for n in names]
    return tuple(dict.fromkeys(n for n in out if n in COMPONENTS)) or DEFAULT_BASIS


def criteria_of(task: Any, writes: set[str] | None = None) -> Criteria:
    """The criteria of a tool task: τ²'s ``evaluation_criteria`` where the task was imported with them,
    else the gold chain's calls of ``writes`` (every call when ``writes`` is None) as required actions;
    communicate info and assertions from ``metadata`` (``communicate_info``, ``nl_assertions``)."""
    meta: Mapping[str, Any] = getattr(task, "metadata", None) or {}
    crit = meta.get("evaluation_criteria") if isinstance(meta.get("evaluation_criteria"), dict) else {}
    if isinstance(crit.get("actions"), list):
        actions = [
            {
                "name": str(a.get("name")),
                "arguments": dict(a.get("arguments") or {}),
                "compare_args": a.get("compare_args"),
            }
            for a in crit["actions"]
            if isinstance(a, dict) and a.get("name")
        ]
    else:
        actions = [
            {"name": str(c["tool"]), "arguments": dict(c.get("params") or {}), "compare_args": None}
            for c in getattr(task, "gold_chain", None) or []
            if writes is None or c.get("tool") in writes
        ]
    return Criteria(
        actions=actions,
        communicate=_strings(crit.get("communicate_info") or meta.get("communicate_info")),
        nl_assertions=_strings(crit.get("nl_assertions") or meta.get("nl_assertions")),
        basis=basis_of(meta.get("reward_basis")),
        scored_by_env=meta.get("source") == "tau2",
    )


def action_matches(action: Mapping[str, Any], tool: str, arguments: Any) -> bool:
    """τ²'s ``Action.compare_with_tool_call``: same tool, and the arguments equal on ``compare_args``
    (on the call's own argument names when None; an empty list compares nothing)."""
    if action["name"] != tool or not isinstance(arguments, dict):
        return False
    keys = arguments.keys() if action.get("compare_args") is None else action["compare_args"]
    if not keys:
        return True
    gold = action.get("arguments") or {}
    return {k: v for k, v in arguments.items() if k in keys} == {k: v for k, v in gold.items() if k in keys}


def actions_component(required: list[dict[str, Any]], calls: list[tuple[str, Any]]) -> dict[str, Any]:
    """``actions``: every required action found among ``calls`` (``(tool, arguments)``, in order)."""
    missing = [a for a in required if not any(action_matches(a, t, args) for t, args in calls)]
    found = len(required) - len(missing)
    detail = f"{found}/{len(required)} required actions found"
    if missing:
        detail += "; missing " + ", ".join(
            f"{a['name']}({json.dumps(a['arguments'], sort_keys=True, default=str)[:80]})"
            for a in missing[:3]
        )
    return {"score": 1.0 if not missing else 0.0, "detail": detail}


def assistant_texts(messages: list[dict[str, Any]]) -> list[str]:
    """What the agent said in plain text (its tool calls not included)."""
    out = []
    for m in messages:
        if m.get("role") != "assistant":
            continue
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        if isinstance(content, str) and content.strip():
            out.append(content)
    return out


def communicate_component(info: list[str], messages: list[dict[str, Any]]) -> dict[str, Any]:
    """``communicate``: τ²'s substring test of each info string in an assistant text (lower case, the
    text's commas removed)."""
    texts = [t.lower().replace(",", "") for t in assistant_texts(messages)]
    missing = [s for s in info if not any(s.lower() in t for t in texts)]
    detail = f"{len(info) - len(missing)}/{len(info)} communicated"
    if missing:
        detail += "; not said: " + ", ".join(repr(s[:60]) for s in missing[:3])
    return {"score": 1.0 if not missing else 0.0, "detail": detail}


def judge_schema(n: int) -> dict[str, Any]:
    """The judge's answer: one result per assertion (its index, a short reasoning, whether it is met)."""
    return {
        "type": "object",
        "properties": {
            "results": {
                "type": "array",
                "minItems": n,
                "maxItems": n,
                "items": {
                    "type": "object",
                    "properties": {
                        "index": {"type": "integer", "minimum": 1, "maximum": n},
                        "reasoning": {"type": "string", "maxLength": 600},
                        "met": {"type": "boolean"},
                    },
                    "required": ["index", "reasoning", "met"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["results"],
        "additionalProperties": False,
    }


JUDGE_PROMPT = """You grade a conversation between a customer-service agent and a user against expected
outcomes. Grade each expected outcome on its own: met is true only when the conversation shows the agent
satisfied it. Answer with one result per expected outcome: its number as index, a short reasoning, met."""


def _transcript(messages: list[dict[str, Any]]) -> str:
    lines = []
    for m in messages:
        role = m.get("role")
        if role == "system":
            continue
        text = m.get("content") if isinstance(m.get("content"), str) else ""
        calls = [
            f"{(c.get('function') or {}).get('name')}({(c.get('function') or {}).get('arguments')})"
            for c in m.get("tool_calls") or []
        ]
        line = f"{role}: {text}" + (f" [calls: {'; '.join(calls)}]" if calls else "")
        lines.append(line)
    out = "\n".join(lines)
    return out if len(out) <= _MAX_TRANSCRIPT_CHARS else "…" + out[-_MAX_TRANSCRIPT_CHARS:]


def read_verdicts(parsed: Any, n: int) -> list[tuple[bool, str]]:
    """The judge's answer as ``(met, reasoning)`` per assertion in order; ValueError when it does not grade
    each of the ``n`` assertions exactly once (nonsense is an error, never a pass)."""
    results = parsed.get("results") if isinstance(parsed, dict) else None
    if not isinstance(results, list) or len(results) != n:
        raise ValueError(f"expected {n} results, got {len(results) if isinstance(results, list) else 'none'}")
    by_index: dict[int, tuple[bool, str]] = {}
    for r in results:
        i, met = (r.get("index"), r.get("met")) if isinstance(r, dict) else (None, None)
        if not isinstance(i, int) or isinstance(i, bool) or not 1 <= i <= n or i in by_index:
            raise ValueError(f"result index {i!r} is not one of 1..{n} given once")
        if not isinstance(met, bool):
            raise ValueError(f"result {i}: met is {met!r}, not true or false")
        by_index[i] = (met, str(r.get("reasoning") or ""))
    return [by_index[i] for i in range(1, n + 1)]


async def nl_component(judge: Any, assertions: list[str], messages: list[dict[str, Any]]) -> dict[str, Any]:
    """``nl_assertions`` by ``judge`` (a dataclaw chat model): 1.0 when every assertion is met; a failed
    call or an answer that does not grade each assertion once is a ``judge_error`` scoring 0."""
    if judge is None:
        return {"score": 0.0, "detail": "no judge model given (--judge-model)", "error": NO_JUDGE}
    listed = "\n".join(f"{i}. {a}" for i, a in enumerate(assertions, 1))
    prompt = [
        {"role": "system", "content": JUDGE_PROMPT},
        {
            "role": "user",
            "content": f"Conversation:\n{_transcript(messages)}\n\nExpected outcomes:\n{listed}",
        },
    ]
    try:
        done = await judge.complete(
            prompt, schema=judge_schema(len(assertions)), temperature=0, max_tokens=JUDGE_MAX_TOKENS
        )
        verdicts = read_verdicts(done.parsed, len(assertions))
    except Exception as exc:  # noqa: BLE001 - a failed judge is recorded, the rollout keeps its other scores
        why = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        log.info("judge failed: %s", why)
        return {"score": 0.0, "detail": f"judge_error: {why}", "error": JUDGE_ERROR}
    unmet = [a for a, (met, _) in zip(assertions, verdicts, strict=True) if not met]
    detail = f"{len(assertions) - len(unmet)}/{len(assertions)} assertions met"
    if unmet:
        detail += "; unmet: " + ", ".join(repr(a[:60]) for a in unmet[:3])
    return {"score": 1.0 if not unmet else 0.0, "detail": detail}


def db_component(reward: float, detail: Mapping[str, Any]) -> dict[str, Any]:
    """``db``: the verifier's verdict on the end state (score 1.0 only when it passes)."""
    results = detail.get("results") or []
    frac = detail.get("fraction")
    text = f"{sum(bool(r) for r in results)}/{len(results)} verifier assertions hold"
    if frac is not None:
        text += f" (score {float(frac):.3f})"
    return {"score": 1.0 if reward >= 1.0 else 0.0, "detail": text}


def combine(
    components: dict[str, dict[str, Any]], basis: tuple[str, ...], weighted: frozenset[str] = frozenset()
) -> float:
    """The reward: the product of the scores of the components with a weight (a basis component the task
    has no data for is absent, i.e. 1: τ²'s "nothing to evaluate"). Sets each component's weight, 1 in the
    basis and 0 outside, except those in ``weighted`` (the environment's own, weighted already). When no
    component is left with a weight (a basis of components the task has no data for), ``db`` counts: a
    reward never rests on nothing, which every agent would earn."""
    reward = 1.0
    for name, comp in components.items():
        if name not in weighted:
            comp["weight"] = 1.0 if name in basis else 0.0
        if comp["weight"] > 0:
            reward *= float(comp["score"])
    if DB in components and not any(c["weight"] > 0 for c in components.values()):
        components[DB]["weight"] = 1.0
        reward = float(components[DB]["score"])
    return reward


async def evaluate_tool_rollout(
    criteria: Criteria,
    reward: float,
    detail: Mapping[str, Any],
    calls: list[tuple[str, Any]],
    messages: list[dict[str, Any]],
    judge: Any = None,
    env_components: Mapping[str, dict[str, Any]] | None = None,
) -> tuple[float, dict[str, dict[str, Any]]]:
    """``(reward, components)`` of a tool-task rollout from its verifier result (``reward``, ``detail``),
    its executed ``calls`` (environment tool names), its ``messages`` and the components the environment
    scored itself (``env_components``, which replace ours of the same name)."""
    comps: dict[str, dict[str, Any]] = {DB: db_component(reward, detail)}
    if criteria.actions:
        comps[ACTIONS] = actions_component(criteria.actions, calls)
    own = dict(env_components or {})
    comps.update(own)
    if criteria.communicate:
        comps[COMMUNICATE] = communicate_component(criteria.communicate, messages)
    if criteria.nl_assertions:
        comps[NL_ASSERTIONS] = await nl_component(judge, criteria.nl_assertions, messages)
    return round(combine(comps, criteria.basis, frozenset(own)), 6), comps


def trajectory_calls(steps: list[Any], names: Mapping[str, str] | None = None) -> list[tuple[str, Any]]:
    """``(environment tool name, arguments)`` of every call the environment executed (invalid calls —
    unknown tools, unparsable arguments — were never made)."""
    names = names or {}
    out = []
    for s in steps:
        get = s.get if isinstance(s, dict) else lambda k, s=s: getattr(s, k)
        if get("error_kind") == "invalid_call":
            continue
        out.append((names.get(get("tool"), get("tool")), get("arguments")))
    return out


async def env_components(harness: Any) -> dict[str, dict[str, Any]]:
    """The components the environment scored in its final session state (``reward_components``), in
    the agreed shape; {} when it has none or the state cannot be read."""
    try:
        state = await asyncio.to_thread(harness.env.get_session_state, harness.session_id)
    except Exception as exc:  # noqa: BLE001 - the verifier already scored this state: keep ours
        log.info("%s: no environment components (%s)", harness.task_id, exc)
        return {}
    comps = state.get("reward_components") if isinstance(state, dict) else None
    if not isinstance(comps, dict):
        return {}
    return {
        str(k): {
            "score": float(v.get("score") or 0.0),
            "weight": float(v.get("weight") or 0.0),
            "detail": str(v.get("detail") or ""),
        }
        for k, v in comps.items()
        if isinstance(v, dict)
    }


def write_tools(env_cls: Any) -> set[str] | None:
    """Names of the environment's tools that change state; None when its tools cannot be read."""
    try:
        return {spec.name for spec in env_cls.tools if getattr(spec, "side_effect", "write") == "write"}
    except Exception:  # noqa: BLE001 - no tool specs: every gold call is a required action
        return None


async def evaluate_rollout(harness: Any, traj: Any, judge: Any = None) -> None:
    """Set ``traj.reward`` and ``traj.reward_components`` from the verifier's result already on ``traj``
    (``reward``, ``score``): a claw task's one ``workplace`` component, a tool task's τ²-style ones."""
    from dataclaw.envcraft.rollout.harness import ToolTaskHarness

    if not isinstance(harness, ToolTaskHarness):
        total = traj.score.get("workplace_score") or {}
        text = f"verify_workplace.py: {total.get('total_score')} of {total.get('max_score', 100)}"
        traj.reward_components = {WORKPLACE: {"score": float(traj.reward), "weight": 1.0, "detail": text}}
        return
    criteria = criteria_of(harness.task, write_tools(harness._env_cls))
    calls = trajectory_calls(traj.steps, harness._names)
    own = await env_components(harness) if criteria.scored_by_env else {}
    traj.reward, traj.reward_components = await evaluate_tool_rollout(
        criteria, traj.reward, traj.score, calls, traj.messages, judge, own
    )
    traj.score["reward_basis"] = list(criteria.basis)


def suite_score(criteria: Criteria, verifier_score: float, calls: list[dict[str, Any]]) -> float:
    """What a policy of the soundness suite (:mod:`dataclaw.envcraft.quality.soundness`: calls from S0, no
    conversation) earns under the task's basis: the verifier's score, times the ``actions`` component when
    the basis has it (only the actions when the basis has no ``db``). Talk is not what the suite
    simulates: ``communicate`` and ``nl_assertions`` have their own gaming tests."""
    if ACTIONS not in criteria.basis or not criteria.actions:
        return verifier_score
    made = [(str(c["tool"]), c.get("params") or {}) for c in calls]
    found = float(actions_component(criteria.actions, made)["score"])
    return verifier_score * found if DB in criteria.basis else found


def component_summary(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per component over ``records``: rollouts that have it, its mean score, and judge errors."""
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        for name, comp in (r.get("reward_components") or {}).items():
            s = out.setdefault(name, {"rollouts": 0, "sum": 0.0, "errors": 0})
            s["rollouts"] += 1
            s["sum"] += float(comp.get("score") or 0.0)
            s["errors"] += bool(comp.get("error"))
    return {
        name: {"rollouts": s["rollouts"], "mean": round(s["sum"] / s["rollouts"], 4), "errors": s["errors"]}
        for name, s in sorted(out.items())
    }
