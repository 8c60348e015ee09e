"""The soundness suite of a tool task: its reward proven against doing nothing, doing harm and doing extra.

Six policies run from the task's initial state S0 in one session of its environment, each scored by the
task's own verifier (:func:`dataclaw.envcraft.tasks.tool.verifier.evaluate`):

* ``gold`` — the gold chain: must score 1.0 (and pass).
* ``untouched`` — no call at all: must score at most ``untouched_max`` (0 by default).
* ``collateral`` — the gold chain, then **one** write the environment accepts on a record the task never
  names (a write tool whose id parameter names such a record, its other parameters chosen as grounding
  chooses them); only writes that change the state beyond the runtime's bookkeeping, counters and logs
  count. Each must score at most ``1 - collateral_margin``.
* ``wrong_last_write`` — the gold chain with its last write given another record (an id of the same
  kind) or another allowed value (an enum member, a boolean's other value, a value the state holds under
  that name), tried for every parameter before any is tried twice: each such call that succeeds and ends
  somewhere else than gold must score below ``pass_threshold``.
* ``skip_write`` — the gold chain less one of its writes, each write in turn: must score below
  ``pass_threshold``. A write the verifier cannot tell was made (steps that cancel out, such as a rule
  created then deleted; a value the record already holds; nested content the verifier does not read)
  pays a policy for skipping the user's request.
* ``random`` — ``random_episodes`` seeded episodes of ``random_steps`` calls of random tools (reads and
  writes) with plausible parameters: the mean score must be at most ``random_max_mean``.

A task that fails any is a reject whose reason names the policy that gamed it (:class:`SoundnessReason`);
the figures (:class:`SoundnessReport`) are stored with the task's audit record. ``dataclaw tasks audit``
runs the suite for every tool task, and ``dataclaw tasks export`` refuses a task that fails it.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

import orjson

from dataclaw.core.errors import ConfigError
from dataclaw.envcraft.rollout.evaluate import criteria_of, suite_score
from dataclaw.envcraft.runtime.task import ToolTask


class Policy(StrEnum):
    """The policies of the suite, in the order it runs them."""

    GOLD = "gold"
    UNTOUCHED = "untouched"
    COLLATERAL = "collateral"
    WRONG_LAST_WRITE = "wrong_last_write"
    SKIP_WRITE = "skip_write"
    RANDOM = "random"


class SoundnessReason(StrEnum):
    """Why a task fails the suite: the policy that gamed its verifier (or the gold chain that fails it)."""

    GOLD_FAILS = "gold_fails"
    GAMED_BY_UNTOUCHED = "gamed_by_untouched"
    GAMED_BY_COLLATERAL = "gamed_by_collateral"
    GAMED_BY_WRONG_LAST_WRITE = "gamed_by_wrong_last_write"
    GAMED_BY_SKIP_WRITE = "gamed_by_skip_write"
    GAMED_BY_RANDOM = "gamed_by_random"
    SUITE_ERROR = "soundness_error"


REASONS: dict[Policy, SoundnessReason] = {
    Policy.GOLD: SoundnessReason.GOLD_FAILS,
    Policy.UNTOUCHED: SoundnessReason.GAMED_BY_UNTOUCHED,
    Policy.COLLATERAL: SoundnessReason.GAMED_BY_COLLATERAL,
    Policy.WRONG_LAST_WRITE: SoundnessReason.GAMED_BY_WRONG_LAST_WRITE,
    Policy.SKIP_WRITE: SoundnessReason.GAMED_BY_SKIP_WRITE,
    Policy.RANDOM: SoundnessReason.GAMED_BY_RANDOM,
}


class SoundnessSettingsError(ConfigError, ValueError):
    """A setting out of its range (one line for the user: which setting, what it got)."""


@dataclass(frozen=True)
class SoundnessSettings:
    """What the suite demands and how much it tries (every figure a user may set)."""

    pass_threshold: float = field(
        default=1.0,
        metadata={"help": "Soundness: a score at or above this passes."},
    )
    untouched_max: float = field(
        default=0.0, metadata={"help": "Soundness: the most the untouched initial state may score."}
    )
    collateral_margin: float = field(
        default=0.25,
        metadata={"help": "Soundness: gold + a collateral write must score at most 1 - this margin."},
    )
    max_collateral: int = field(
        default=8, metadata={"help": "Soundness: collateral writes tried per task at most (seeded sample)."}
    )
    max_wrong: int = field(
        default=3,
        metadata={
            "help": "Soundness: wrong last writes tried at most (raised to one per parameter of the write)."
        },
    )
    max_skip: int = field(
        default=8, metadata={"help": "Soundness: gold writes left out one at a time, at most."}
    )
    random_episodes: int = field(default=8, metadata={"help": "Soundness: seeded random episodes per task."})
    random_steps: int = field(
        default=0, metadata={"help": "Soundness: calls per random episode (0: twice the gold chain, >= 4)."}
    )
    random_max_mean: float = field(
        default=0.1, metadata={"help": "Soundness: the most a random policy may score on average."}
    )
    seed: int = field(default=0, metadata={"help": "Soundness: seed of the sampled writes and episodes."})

    def __post_init__(self) -> None:
        if not 0 < self.pass_threshold <= 1:
            raise SoundnessSettingsError(f"pass_threshold must be in (0, 1], got {self.pass_threshold}")
        if not 0 < self.collateral_margin <= 1:
            raise SoundnessSettingsError(f"collateral_margin must be in (0, 1], got {self.collateral_margin}")
        for name in ("untouched_max", "random_max_mean"):
            if not 0 <= getattr(self, name) < self.pass_threshold:
                raise SoundnessSettingsError(
                    f"{name} must be in [0, pass_threshold), got {getattr(self, name)}"
                )
        for name in ("max_collateral", "max_wrong", "max_skip", "random_episodes", "random_steps"):
            if getattr(self, name) < 0:
                raise SoundnessSettingsError(f"{name} must be >= 0")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Figure:
    """One policy's result: ``score`` (gold, untouched: the score; collateral, wrong: the highest;
    random: the mean), ``runs`` scored, whether it is sound, and the worst case in words."""

    policy: str
    score: float | None
    runs: int
    ok: bool
    detail: str = ""


@dataclass
class SoundnessReport:
    """The suite's verdict on one task."""

    task_id: str
    figures: list[Figure] = field(default_factory=list)
    error: str | None = None
    trials: list[Trial] = field(default_factory=list)  # every scored run (not stored with the audit)
    # what it cost (not stored with the audit: a rerun differs): tool calls made, including the gold
    # run and the tries that were refused or changed nothing; seconds per policy (setup under "setup")
    calls: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.error is None and all(f.ok for f in self.figures)

    @property
    def reasons(self) -> list[SoundnessReason]:
        if self.error is not None:
            return [SoundnessReason.SUITE_ERROR]
        return [REASONS[Policy(f.policy)] for f in self.figures if not f.ok]

    def to_record(self) -> dict[str, Any]:
        """The figures as stored with the task's audit record (``soundness``)."""
        out: dict[str, Any] = {
            "passed": self.passed,
            "reasons": [str(r) for r in self.reasons],
            "figures": {str(f.policy): {"score": f.score, "runs": f.runs, "ok": f.ok} for f in self.figures},
        }
        if self.error:
            out["error"] = self.error
        return out

    def checks(self) -> list[dict[str, Any]]:
        """One audit check per policy (``soundness:<policy>``), failed ones with the policy's reason."""
        if self.error is not None:
            reason = str(SoundnessReason.SUITE_ERROR)
            return [{"name": "soundness", "passed": False, "reason": reason, "message": self.error}]
        return [
            {
                "name": f"soundness:{f.policy}",
                "passed": f.ok,
                "reason": None if f.ok else str(REASONS[Policy(f.policy)]),
                "message": "" if f.ok else f.detail,
            }
            for f in self.figures
        ]


class _Session:
    """One session of the task's environment, restored to any state before each run of calls."""

    def __init__(self, env_cls: Any, scenario_id: str) -> None:
        self.env = env_cls(memory=True)  # in-process sessions need no files (a worker keeps its own)
        self.sid = self.env.create_session(scenario_id, session_id="soundness")
        self.calls = 0  # tool calls made (what the suite costs, with the states it scores)

    def run(self, state: dict[str, Any], calls: list[dict[str, Any]]) -> tuple[list[dict], dict[str, Any]]:
        """``calls`` from ``state`` (one round trip to an environment in a worker)."""
        self.calls += len(calls)
        return self.env.run_from(state, calls)

    def call(self, tool: str, params: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        return self.env.call(self.sid, tool, **params)


def _plain(value: Any, allow: Any) -> Any:
    """A state without what a write may legitimately change besides records: the runtime's bookkeeping,
    counters, and what logs appended (their length)."""
    from dataclaw.envcraft.tasks.tool.verifier import RUNTIME_ALLOWED

    if not isinstance(value, dict):
        return value
    tops = {p[1:] for p in RUNTIME_ALLOWED if "/" not in p[1:]}
    out = {k: v for k, v in value.items() if k not in tops and k not in allow.counters}
    if isinstance(out.get("meta"), dict):
        out["meta"] = {k: v for k, v in out["meta"].items() if k != "action_index"}
    for log in allow.logs:
        out.pop(log, None)
    return out


class _Views:
    """The task's state as one environment or as a group of several (``{env: state}``)."""

    def __init__(self, env_cls: Any, initial: dict[str, Any]) -> None:
        from dataclaw.envcraft.tasks.tool.initial import env_allowance

        self.members = list(getattr(env_cls, "members", {}) or {})
        self.allow = {
            e: env_allowance(env_cls, initial[e] if e else initial, e or None) for e in self.members or [""]
        }

    def plain(self, state: dict[str, Any]) -> Any:
        if not self.members:
            return _plain(state, self.allow[""])
        return {e: _plain(state.get(e), self.allow[e]) for e in self.members}

    def states(self, state: dict[str, Any]) -> list[dict[str, Any]]:
        return [state[e] for e in self.members] if self.members else [state]


def _named(task: ToolTask, initial: dict[str, Any], gold_final: dict[str, Any], views: _Views) -> set[str]:
    """What the task names: every string in its gold chain's parameters, and the records it creates."""
    out: set[str] = set()

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.add(v)
        elif isinstance(v, list | tuple):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)

    for call in task.gold_chain:
        walk(call.get("params") or {})
    from dataclaw.envcraft.tasks.tool.initial import collections

    for before, after in zip(views.states(initial), views.states(gold_final), strict=True):
        for name, coll in collections(after).items():
            out.update(k for k in coll if k not in (before.get(name) or {}))
    return out


def _outside(state: dict[str, Any], named: set[str], views: _Views) -> Any:
    """The state without the records the task names (and without bookkeeping, counters and logs)."""
    from dataclaw.envcraft.tasks.tool.initial import collections

    def cut(one: Any) -> Any:
        if not isinstance(one, dict):
            return one
        colls = collections(one)
        out = dict(one)
        for k in colls:
            out[k] = {i: r for i, r in one[k].items() if i not in named}
        return out

    plain = views.plain(state)
    return {e: cut(v) for e, v in plain.items()} if views.members else cut(plain)


def _unnamed_ids(state: dict[str, Any], named: set[str], views: _Views) -> set[str]:
    from dataclaw.envcraft.tasks.tool.initial import collections

    return {
        k for s in views.states(state) for coll in collections(s).values() for k in coll if k not in named
    }


class _Scorer:
    """The task's verifier's score on a state, remembered by the state's content: the policies often end
    in the same state (a random episode of refused calls ends in S0)."""

    def __init__(self, task: ToolTask) -> None:
        from dataclaw.envcraft.tasks.tool.verifier import PreparedVerifier

        self.verifier = PreparedVerifier(task.verifier)
        self.seen: dict[bytes, float] = {}

    def __call__(self, state: dict[str, Any]) -> float:
        key = hashlib.blake2b(orjson.dumps(state, option=orjson.OPT_SORT_KEYS), digest_size=16).digest()
        if key not in self.seen:
            self.seen[key] = self.verifier.score(state)
        return self.seen[key]


def _references(env_cls: Any) -> tuple[Any, Any]:
    """The literals of the environment's reference solutions (by tool and parameter, by name)."""
    from dataclaw.envcraft.tasks.tool.execute import Values, reference_values

    try:
        return reference_values(env_cls)
    except Exception:  # noqa: BLE001 - an environment without reference solutions: no literals
        return {}, Values()


def _fill(spec: Any, src: Any, rng: random.Random, fixed: dict[str, Any], prefer: float = 0.0) -> dict | None:
    """Parameters for ``spec`` as grounding chooses them, with ``fixed`` ones set; None when a required
    one has no value."""
    from dataclaw.envcraft.tasks.tool.execute import choose_param

    params = dict(fixed)
    for p in spec.params:
        if p.name in params:
            continue
        choice = choose_param(spec, p, src, rng, prefer)
        if choice is None:
            if p.required:
                return None
            continue
        params[p.name] = choice[0]
    return params


def _valid(spec: Any, params: dict[str, Any]) -> bool:
    """Whether ``params`` pass the tool's own parameter check (names, required, types, enums): the first
    thing the runtime does with a call, and the same whatever the state."""
    from dataclaw.envcraft.runtime.errors import EnvError

    try:
        spec.validate(params)
    except EnvError:
        return False
    return True


def _id_params(spec: Any) -> list[Any]:
    from dataclaw.envcraft.graph.tool_graph import id_kind

    return [p for p in spec.params if id_kind(p.name) and p.schema.get("type") == "string"]


_ABSENT = object()


def _hashable(v: Any) -> Any:
    return (
        v if isinstance(v, str | int | float | bool) or v is None else "json:" + json.dumps(v, sort_keys=True)
    )


def _unhashable(v: Any) -> Any:
    return json.loads(v[5:]) if isinstance(v, str) and v.startswith("json:") else v


@dataclass
class Trial:
    """One scored run of a policy: the calls from the task's initial state S0 and the score they reached,
    so the same runs can be replayed through an export or a served environment and compared."""

    policy: str
    calls: list[dict[str, Any]]
    score: float


class _Suite:
    """The policies of one task, sharing one in-memory session, one scorer and the values they draw
    parameters from (harvested once: walking the whole state is the costliest step there is)."""

    def __init__(self, task: ToolTask, env_cls: Any, settings: SoundnessSettings) -> None:
        self.task, self.env_cls, self.settings = task, env_cls, settings
        # seeded by the grounded record a task was made from: the suite run when the chain was grounded
        # and the one the audit runs on the task draw the same writes and episodes
        self.key = task.metadata.get("grounded_id") or task.id
        self.sess = _Session(env_cls, task.scenario_id)
        _, self.initial = self.sess.run(task.initial_state, [])
        self.views = _Views(env_cls, self.initial)
        self.results, self.gold_final = self.sess.run(self.initial, task.gold_chain)
        self.score = _Scorer(task)
        # the reward as the task's basis composes it (ours: the verifier's score alone)
        self.criteria = criteria_of(task, {s.name for s in env_cls.tools if s.side_effect == "write"})
        self.refs = _references(env_cls)
        self.rng = random.Random(f"{settings.seed}:{self.key}")
        self.trials: list[Trial] = []
        self._start: Any = None

    def writes(self) -> list[int]:
        """The positions of the gold chain's writes."""
        tools = self.env_cls.tools
        chain = self.task.gold_chain
        return [i for i, c in enumerate(chain) if c["tool"] in tools and tools.get(c["tool"]).modifies_state]

    def start_values(self) -> Any:
        """What S0 holds, by key (for wrong values and random parameters)."""
        if self._start is None:
            from dataclaw.envcraft.tasks.tool.execute import harvest

            self._start = harvest(self.initial)
        return self._start

    def sources(self, values: Any, outputs: list[Any] = ()) -> Any:
        from dataclaw.envcraft.tasks.tool.execute import _Sources

        return _Sources(values, self.refs[0], self.refs[1], list(outputs), set())

    def scored(self, policy: Policy, calls: list[dict[str, Any]], state: dict[str, Any]) -> float:
        got = suite_score(self.criteria, float(self.score(state)), calls)
        self.trials.append(Trial(str(policy), [dict(c) for c in calls], got))
        return got

    def gold(self) -> Figure:
        gold = self.score.verifier.evaluate(self.gold_final)
        got = suite_score(self.criteria, float(gold["score"]), self.task.gold_chain)
        self.trials.append(Trial(str(Policy.GOLD), list(self.task.gold_chain), got))
        errors = sum(r.get("status") != "ok" for r in self.results)
        ok = bool(gold["passed"]) and got >= self.settings.pass_threshold and errors == 0
        detail = f"gold scores {got:.3f}" + (f" ({errors} calls failed)" if errors else "")
        return Figure(Policy.GOLD, round(got, 4), 1, ok, detail)

    def untouched(self) -> Figure:
        got = self.scored(Policy.UNTOUCHED, [], self.initial)
        ok = got <= self.settings.untouched_max + 1e-9
        return Figure(Policy.UNTOUCHED, round(got, 4), 1, ok, f"the untouched initial state scores {got:.3f}")

    def collateral(self) -> Figure:
        """Gold, then one write the environment accepts on a record the task never names."""
        from dataclaw.envcraft.tasks.tool.execute import harvest

        settings, views, rng = self.settings, self.views, self.rng
        if settings.max_collateral == 0:
            return Figure(Policy.COLLATERAL, None, 0, True, "not tried (max_collateral 0)")
        named = _named(self.task, self.initial, self.gold_final, views)
        unnamed = _unnamed_ids(self.gold_final, named, views)
        values = harvest(self.gold_final)
        candidates = [
            (spec, p.name, v)
            for spec in self.env_cls.tools
            if spec.side_effect == "write"
            for p in _id_params(spec)
            for v in values.lookup(p.name)
            if isinstance(v, str) and v in unnamed
        ]
        rng.shuffle(candidates)
        src = self.sources(values)
        base = views.plain(self.gold_final)
        outside = _outside(self.gold_final, named, views)
        worst: tuple[float, str] | None = None
        runs = 0
        for spec, pname, value in candidates[: settings.max_collateral * 4]:
            if runs >= settings.max_collateral:
                break
            params = _fill(spec, src, rng, {pname: value})
            if params is None or not _valid(spec, params):
                continue  # refused before it runs, whatever the state: nothing to run
            call = {"tool": spec.name, "params": params}
            (result,), after = self.sess.run(self.gold_final, [call])
            if result.get("status") != "ok" or views.plain(after) == base:
                continue  # refused, or a write that changed nothing a task could care about
            if _outside(after, named, views) == outside:
                continue  # it changed only records the task names: a wrong write there, not collateral
            runs += 1
            got = self.scored(Policy.COLLATERAL, [*self.task.gold_chain, call], after)
            if worst is None or got > worst[0]:
                worst = (got, f"{spec.name}({pname}={value!r})")
        if worst is None:
            return Figure(Policy.COLLATERAL, None, 0, True, "no collateral write accepted")
        limit = 1.0 - settings.collateral_margin
        ok = worst[0] <= limit + 1e-9
        detail = f"gold + {worst[1]} scores {worst[0]:.3f}" + ("" if ok else f" (> {limit:.3f})")
        return Figure(Policy.COLLATERAL, round(worst[0], 4), runs, ok, detail)

    def wrong_last_write(self) -> Figure:
        """The gold chain with its last write given another record or another allowed value."""
        settings, env_cls, chain = self.settings, self.env_cls, self.task.gold_chain
        writes = self.writes()
        if not writes:
            return Figure(Policy.WRONG_LAST_WRITE, None, 0, True, "the gold chain has no write")
        if settings.max_wrong == 0:
            return Figure(Policy.WRONG_LAST_WRITE, None, 0, True, "not tried (max_wrong 0)")
        k = writes[-1]
        _, before = self.sess.run(self.initial, chain[:k])
        spec = env_cls.tools.get(chain[k]["tool"])
        params = dict(chain[k].get("params") or {})
        values = self.start_values()
        by_param: list[list[tuple[str, Any]]] = []
        for p in spec.params:
            given = params.get(p.name, _ABSENT)
            # a parameter the gold call leaves out is tried at its other closed values only (an enum
            # member, a flag set): a value that is the tool's default ends as gold and is not counted
            pool = list(p.schema.get("enum") or [])
            if p.schema.get("type") == "boolean" or isinstance(given, bool):
                pool += [True, False]
            if given is not _ABSENT:
                pool += values.lookup(p.name)
            current = _hashable(given) if given is not _ABSENT else _ABSENT
            others = [v for v in dict.fromkeys(map(_hashable, pool)) if v != current]
            self.rng.shuffle(others)
            if others:
                by_param.append([(p.name, _unhashable(v)) for v in others])
        self.rng.shuffle(by_param)
        base = self.views.plain(self.gold_final)
        worst: tuple[float, str] | None = None
        runs = 0
        tried = [0] * len(by_param)  # values tried per parameter (at most 8 each)

        def counted(i: int) -> bool:
            """Try parameter ``i``'s next values until one ends elsewhere than gold: scored, True."""
            nonlocal worst, runs
            while tried[i] < min(len(by_param[i]), 8):
                name, value = by_param[i][tried[i]]
                tried[i] += 1
                call = {"tool": spec.name, "params": {**params, name: value}}
                results, after = self.sess.run(before, [call, *chain[k + 1 :]])
                if results[0].get("status") != "ok" or self.views.plain(after) == base:
                    continue  # refused, or the same end state as gold (not a wrong write)
                runs += 1
                got = self.scored(Policy.WRONG_LAST_WRITE, [*chain[:k], call, *chain[k + 1 :]], after)
                if worst is None or got > worst[0]:
                    worst = (got, f"{spec.name}({name}={value!r})")
                return True
            return False

        # every parameter gets a wrong value that counts before any gets a second: three tries drawn
        # from one pool went to ids and never to the flag beside them; then more up to max_wrong
        for i in range(len(by_param)):
            counted(i)
        while runs < settings.max_wrong:
            if not any([counted(i) for i in range(len(by_param)) if runs < settings.max_wrong]):
                break
        if worst is None:
            return Figure(Policy.WRONG_LAST_WRITE, None, 0, True, "no other record or value accepted")
        ok = worst[0] < settings.pass_threshold
        detail = f"gold with last write {worst[1]} scores {worst[0]:.3f}"
        return Figure(Policy.WRONG_LAST_WRITE, round(worst[0], 4), runs, ok, detail)

    def skip_write(self) -> Figure:
        """The gold chain less one write, each in turn (up to ``max_skip``): a task whose verifier pays
        that run cannot see whether the write was made."""
        settings, chain = self.settings, self.task.gold_chain
        writes = self.writes()
        if not writes:
            return Figure(Policy.SKIP_WRITE, None, 0, True, "the gold chain has no write")
        if settings.max_skip == 0:
            return Figure(Policy.SKIP_WRITE, None, 0, True, "not tried (max_skip 0)")
        worst = (-1.0, "")
        for k in writes[: settings.max_skip]:
            calls = [*chain[:k], *chain[k + 1 :]]
            _, after = self.sess.run(self.initial, calls)
            got = self.scored(Policy.SKIP_WRITE, calls, after)
            if got > worst[0]:
                worst = (got, f"call {k + 1} ({chain[k]['tool']})")
        ok = worst[0] < settings.pass_threshold
        detail = f"gold without {worst[1]} scores {worst[0]:.3f}"
        return Figure(Policy.SKIP_WRITE, round(worst[0], 4), min(len(writes), settings.max_skip), ok, detail)

    def random(self) -> Figure:
        """Seeded episodes of random calls whose parameters come from S0, the references and what the
        last three writes returned (what a policy has seen). A mean that passes but lies within a factor
        two of the limit is not yet a verdict: the sample grows fourfold and the larger one decides (an
        estimate from a few episodes near the limit passes a guessable task by luck about half the time)."""
        settings = self.settings
        scores = [self._episode(i) for i in range(settings.random_episodes)]
        if not scores:
            return Figure(Policy.RANDOM, None, 0, True, "no episode")
        limit = settings.random_max_mean + 1e-9
        if settings.random_max_mean / 2 < sum(scores) / len(scores) <= limit:
            scores += [self._episode(i) for i in range(len(scores), 4 * len(scores))]
        mean = sum(scores) / len(scores)
        ok = mean <= limit
        detail = f"mean {mean:.3f} over {len(scores)} episodes (max {max(scores):.3f})"
        return Figure(Policy.RANDOM, round(mean, 4), len(scores), ok, detail)

    def _episode(self, episode: int) -> float:
        from dataclaw.envcraft.tasks.tool.execute import harvest

        settings, sess = self.settings, self.sess
        tools = list(self.env_cls.tools)
        steps = settings.random_steps or max(4, 2 * len(self.task.gold_chain))
        rng = random.Random(f"{settings.seed}:{self.key}:random:{episode}")
        sess.run(self.initial, [])
        outputs: list[Any] = []
        calls: list[dict[str, Any]] = []
        for _ in range(steps):
            spec = rng.choice(tools)
            params = _fill(spec, self.sources(self.start_values(), outputs[-3:]), rng, {}, prefer=0.5)
            if params is None:
                continue
            calls.append({"tool": spec.name, "params": params})
            result = sess.call(spec.name, params)
            if result.get("status") == "ok" and spec.modifies_state:
                # a read shows S0 (harvested already) or what earlier writes returned
                outputs.append(harvest(result.get("data")))
        return self.scored(Policy.RANDOM, calls, sess.env.get_session_state(sess.sid))


def run_soundness(
    task: ToolTask | dict[str, Any], settings: SoundnessSettings | None = None, env_cls: Any = None
) -> SoundnessReport:
    """The suite on one tool task (its environment loaded as replay loads it unless ``env_cls`` is
    given). Never raises for the task's own problems: an environment that cannot run it is the report's
    ``error`` (reason ``soundness_error``). ``report.trials`` keeps every scored run."""
    from dataclaw.envcraft.tasks.tool.loading import record_env

    settings = settings or SoundnessSettings()
    task = ToolTask.of(task)
    report = SoundnessReport(task.id)
    clock = time.perf_counter()
    suite: _Suite | None = None
    try:
        suite = _Suite(task, env_cls or record_env(task), settings)
        report.trials = suite.trials
        report.seconds["setup"] = time.perf_counter() - clock
        policies = (
            suite.gold,
            suite.untouched,
            suite.collateral,
            suite.wrong_last_write,
            suite.skip_write,
            suite.random,
        )
        for policy in policies:
            clock = time.perf_counter()
            report.figures.append(policy())
            report.seconds[str(report.figures[-1].policy)] = time.perf_counter() - clock
    except Exception as exc:  # noqa: BLE001 - failures are data: the task is reported, the run goes on
        report.error = f"the soundness suite could not run: {type(exc).__name__}: {str(exc)[:200]}"
    report.calls = suite.sess.calls if suite is not None else 0
    return report


def summarize(reports: list[SoundnessReport]) -> dict[str, Any]:
    """Tasks per policy that gamed them (and that passed), for a run's summary."""
    from collections import Counter

    gamed = Counter(str(r) for rep in reports for r in rep.reasons)
    return {
        "tasks": len(reports),
        "passed": sum(rep.passed for rep in reports),
        "reasons": {str(r): gamed.get(str(r), 0) for r in SoundnessReason},
    }
