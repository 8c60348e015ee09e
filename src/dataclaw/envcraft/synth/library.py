"""Environment synthesis end to end (EnvCraft §3, issue 13 item 7): scenarios → specifications →
packages (spec compilation and/or code generation) → static + sandboxed dynamic audit, with bounded
self-healing → a library folder with an index.

Layout of a library ``LIB/``::

    index.jsonl            one row per (scenario, path): see :func:`row`
    specs.jsonl            the SpecStage's records (resumable per scenario), rejects.jsonl, manifest.json
    envs/<path>/<name>/    passing packages: valid spec, meaning gates, audit and soundness all passed
    floor/<path>/<name>/   floor packages: compiled from a spec still invalid after repair and audited, for
                           smoke tests only (never counted as passing)
    failed/<path>/<name>/  packages that failed a gate (kept for inspection, never dropped)
    model_cache.sqlite     every model answer (a rerun pays for no call twice)

An index row::

    {"id", "scenario_id", "scenario_name", "category", "source", "path": "compile" | "codegen",
     "env", "package" (relative to LIB, or null), "archetypes": [names retrieved], "spec_valid",
     "spec_issues": [issue codes the compiler tolerated], "rounds",
     "status": "passing" | "floor" | "failed", "passed" (status == passing),
     "gates": {"spec", "meaning", "audit", "soundness": true | false | null (not reached)},
     "meaning": the meaning report (or null), "soundness": {sampled, grounded, sound, reasons},
     "entities", "rules" (enforced rules, null when the package reports none), "chains3",
     "reasons": [{"code", "message"}], "tools", "scenarios", "calls",
     "usage": {"spec": {...}, "generation": {...}}, "tokens": {"prompt", "completion"}, "cost_usd",
     "seconds": wall seconds of the package step, "model"}

An environment *passes* only when every gate passed: its spec is valid, it passes the meaning gates
(:func:`.meaning.check_spec_meaning`), the static + sandboxed audit, and the soundness suite over a small
seeded sample of chains grounded into tool tasks in it (:func:`soundness_sample`). A spec still invalid
after repair may still compile and pass the audit: that is a *floor* environment, counted and listed apart,
never in the pass rate.

A row is written once (its id comes from the scenario's content and the path), so a rerun skips what the
index holds and resumes the rest. Bad input is a row too: an unknown scenario id, an empty description,
a spec the model never got into the schema, a spec the compiler cannot use, a package that imports
forbidden modules or hangs at import (the audit classifies it) — each with a reason code
(:class:`LibraryReason`, or the audit's :class:`.heal.SynthReason`) and a message; the run goes on.
A crash (a bug) is no row: it goes to ``rejects.jsonl`` and the next run retries it. Generated code
runs only in the sandbox: the audit and every later use of a library package go through the env worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError, Reject
from dataclaw.core.ids import child_id, root_id, stable_hash
from dataclaw.core.store import RunStore
from dataclaw.envcraft.scenarios import Catalogue, Category, ScenarioSpec
from dataclaw.envcraft.synth.expand import MEANING_ROUNDS, REPAIR_ROUNDS, SpecReason, expand_scenario
from dataclaw.envcraft.synth.spec import COMPACT, FULL, SchemaLimits
from dataclaw.envcraft.synth.stages import SpecStage, scenario_record, spec_record
from dataclaw.models import ModelError, UsageLedger
from dataclaw.pipeline.stage import Record, Result

PATHS = ("compile", "codegen")
"""The generation paths: ``compile`` (deterministic spec compiler) and ``codegen`` (the model writes the
domain code, the paper's path)."""
PAPER_RAW, PAPER_PASSED = 324, 139
"""EnvCraft Table 2: environments generated and kept after auditing (42.9%)."""
INDEX = "index"
ENVS, FLOOR, FAILED, BUILD = "envs", "floor", "failed", ".build"
CACHE = "model_cache.sqlite"
BOUNDS: dict[str, SchemaLimits | None] = {"auto": None, "compact": COMPACT, "full": FULL}
SPEC_VERDICTS = (SpecReason.INVALID_SPEC.value, SpecReason.MODEL_ERROR.value)
"""SpecStage rejects that are a scenario's verdict (written to the index); any other (a crash) is retried
by the next run and gets no row yet."""


class EnvStatus(StrEnum):
    """What a (scenario, path) gave: a ``passing`` environment (every gate passed), a ``floor`` one (an
    invalid spec compiled and audited, for smoke tests only, never in the pass rate), or ``failed``."""

    PASSING = "passing"
    FLOOR = "floor"
    FAILED = "failed"


FOLDER_OF = {EnvStatus.PASSING: ENVS, EnvStatus.FLOOR: FLOOR, EnvStatus.FAILED: FAILED}
GATES = ("spec", "meaning", "audit", "soundness")
"""The gates of a passing environment, in the order they are judged."""
SOUNDNESS_TASKS = 3
"""Tool tasks the soundness gate grounds in an environment (distinct seeded chains of 2-4 steps)."""
SOUNDNESS_STEPS = (3, 4)
"""Chain lengths of the sample: a one- or two-call task is one a random policy often completes (the suite
rejects it as gamed_by_random whatever the environment), so the gate asks for tasks of several steps."""
SOUNDNESS_TRIES = 40
"""Chain walks tried to find them."""
SOUND_SHARE = 0.5
"""Share of the grounded sample whose soundness suite must pass (at least one task in all): the task
pipeline rejects a gamed task, so an environment passes when most of its tasks survive, not when one does."""


class LibraryReason(StrEnum):
    """Why a (scenario, path) gave no passing package, before or around the package step. A package that
    was built but failed carries the audit's and the healing loop's codes (:class:`.heal.SynthReason`:
    ``static_audit``, ``check_failed``, ``timeout``, ``sandbox_violation``, ``not_output_schema``, …)."""

    UNKNOWN_SCENARIO = "unknown_scenario"
    EMPTY_DESCRIPTION = "empty_description"
    INVALID_SPEC = "invalid_spec"
    """The model's spec is unusable: not in the schema, or still invalid after the repairs (the compiler
    still builds from a spec whose names are usable; code generation needs a valid one)."""
    MODEL_ERROR = "model_error"
    COMPILE_ERROR = "compile_error"
    """The spec names things the runtime cannot use (bad identifiers, duplicates, no entity)."""
    GENERATION_FAILED = "generation_failed"
    FLOOR = "floor"
    """Compiled and audited from a spec still invalid after repair: a floor environment, not passing."""
    MEANING = "meaning"
    """The spec is well-formed but not about its scenario (the meaning gates' issues follow)."""
    UNSOUND = "unsound"
    """Tool tasks grounded in the environment are gamed (the soundness suite's policies name how)."""
    NO_TASK = "no_task"
    """No sampled chain of the environment grounded into a tool task, so its soundness is unproven."""
    INTERNAL_ERROR = "internal_error"


# ---- per-scenario usage ------------------------------------------------------------------------------

_METER: contextvars.ContextVar[UsageLedger | None] = contextvars.ContextVar("library_meter", default=None)


class ScopedLedger(UsageLedger):
    """The run's ledger that also counts each call in the ledger of the work in progress (a context
    variable: one per scenario, even with many in flight), so every index row carries its own tokens."""

    def __init__(self, parent: UsageLedger | None = None) -> None:
        super().__init__()
        self.parent = parent

    def _each(self) -> Iterator[UsageLedger]:
        for ledger in (self.parent, _METER.get()):
            if ledger is not None:
                yield ledger

    def record(self, model: str, usage: Any, **kw: Any) -> None:
        super().record(model, usage, **kw)
        for ledger in self._each():
            ledger.record(model, usage, **kw)

    def record_error(self, model: str, error: BaseException, *, latency_s: float) -> None:
        super().record_error(model, error, latency_s=latency_s)
        for ledger in self._each():
            ledger.record_error(model, error, latency_s=latency_s)

    def record_downgrade(self, model: str, capability: str, reason: str) -> None:
        super().record_downgrade(model, capability, reason)
        for ledger in self._each():
            ledger.record_downgrade(model, capability, reason)


@contextlib.contextmanager
def metered() -> Iterator[UsageLedger]:
    """A fresh ledger that counts the model calls made inside the block (this task or thread only)."""
    meter = UsageLedger()
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


def usage_of(ledger: UsageLedger | None) -> dict[str, Any]:
    """Calls, cache hits, tokens and cost of a ledger, as an index row keeps them."""
    t = ledger.totals() if ledger is not None else None
    return {
        "calls": t.calls if t else 0,
        "cache_hits": t.cache_hits if t else 0,
        "prompt_tokens": t.prompt_tokens if t else 0,
        "completion_tokens": t.completion_tokens if t else 0,
        "cost_usd": round(t.cost_usd, 6) if t else 0.0,
    }


class LibrarySpecStage(SpecStage):
    """:class:`SpecStage` for a library: each record (and reject) also carries the usage of its own calls,
    and an invalid spec's reject keeps the parts that parsed, so the compiler can still build the floor
    environment from them (it tolerates issues that do not break names). A model that cannot be reached
    at all stops the run (a rerun retries) instead of rejecting every scenario. ``bounds``: the spec
    schema bounds, ``compact`` (small models), ``full`` or ``auto`` (compact for ``local:`` models)."""

    def __init__(self, model: str, cache: str | None = None, *, bounds: str = "auto", **kw: Any) -> None:
        super().__init__(model, cache, **kw)
        if bounds not in BOUNDS:
            raise ConfigError(f"--spec-bounds must be one of {', '.join(BOUNDS)}, not {bounds!r}")
        self.bounds = bounds

    def setup(self) -> None:
        from dataclaw.models import get_model

        if self._model is None:
            self._model = get_model(self.model_spec, cache=self.cache, ledger=ScopedLedger(self.ledger))

    async def aprocess(self, item: Record) -> Result:
        scenario = ScenarioSpec.model_validate(item["scenario"])
        with metered() as meter:
            try:
                result = await expand_scenario(
                    self._model,
                    scenario,
                    repair_rounds=self.repair_rounds,
                    meaning_rounds=self.meaning_rounds,
                    limits=BOUNDS[self.bounds],
                )
            except ModelError as exc:
                if getattr(exc, "fatal", False):
                    raise
                return self.reject(
                    item, SpecReason.MODEL_ERROR, str(exc), scenario_id=scenario.id, usage=usage_of(meter)
                )
        if result.valid:
            return [{**spec_record(item, scenario, result, self._model.model_id), "usage": usage_of(meter)}]
        from dataclaw.envcraft.synth.retrieval import retrieve

        codes = ", ".join(sorted({i.code.value for i in result.issues}))
        found = retrieve(result.e_spec, result.t_spec, scenario) if result.e_spec is not None else []
        return self.reject(
            item,
            SpecReason.INVALID_SPEC,
            f"{scenario.id}: spec still invalid after {result.repairs} repair round(s): {codes}",
            scenario_id=scenario.id,
            issues=[i.model_dump(mode="json") for i in result.issues],
            repairs=result.repairs,
            calls=result.calls,
            history=result.history,
            e_spec=result.e_spec.model_dump(mode="json") if result.e_spec is not None else None,
            t_spec=[t.unified_schema() for t in result.t_spec.tools] if result.t_spec is not None else [],
            archetypes=[r.to_dict() for r in found],
            meaning=result.meaning.to_dict() if result.meaning is not None else None,
            usage=usage_of(meter),
        )


# ---- requests: what to synthesise --------------------------------------------------------------------


def description_scenario(description: str) -> ScenarioSpec:
    """A ``--description`` as a user scenario (id ``user_<hash>``, general tool-use, no pins)."""
    text = " ".join(description.split())
    words = text.split()
    name = " ".join(words[:6]) + ("…" if len(words) > 6 else "")
    return ScenarioSpec(
        id=f"user_{stable_hash(text, 10)}",
        category=Category.GENERAL,
        name=name,
        description=text,
        source="--description",
    )


@dataclass
class Requests:
    """The scenarios to synthesise, plus the rows of requests that name none (bad input)."""

    scenarios: list[ScenarioSpec] = field(default_factory=list)
    bad: list[dict[str, Any]] = field(default_factory=list)


def resolve_requests(
    catalogue: Catalogue,
    ids: Iterable[str] = (),
    *,
    all_: bool = False,
    descriptions: Iterable[str] = (),
    paths: Iterable[str] = PATHS,
) -> Requests:
    """Scenarios from catalogue ids, the whole catalogue and/or descriptions; an unknown id or an empty
    description becomes a failed row per path (the others still run)."""
    out = Requests()
    seen: set[str] = set()

    def add(s: ScenarioSpec) -> None:
        if s.id not in seen:
            seen.add(s.id)
            out.scenarios.append(s)

    for s in catalogue if all_ else ():
        add(s)
    for sid in ids:
        try:
            add(catalogue.get(sid))
        except ConfigError as exc:
            rid = root_id("scenario", sid or "unnamed", {"unknown": sid})
            for p in paths:
                out.bad.append(_bad_row(rid, sid, p, LibraryReason.UNKNOWN_SCENARIO, str(exc)))
    for text in descriptions:
        if not text.strip():
            rid = root_id("scenario", "description", {"description": ""})
            why = "the --description is empty: say in a sentence or two what the environment must model"
            for p in paths:
                out.bad.append(_bad_row(rid, "", p, LibraryReason.EMPTY_DESCRIPTION, why))
            continue
        add(description_scenario(text))
    return out


def _bad_row(rid: str, sid: str, path: str, code: LibraryReason, message: str) -> dict[str, Any]:
    return row(
        row_id(rid, path), {"id": sid, "name": "", "category": "", "source": "request"}, path,
        passed=False, reasons=[{"code": code.value, "message": message}],
    )  # fmt: skip


# ---- rows ----------------------------------------------------------------------------------------------


def row_id(scenario_record_id: str, path: str) -> str:
    return child_id(scenario_record_id, "env", path, path)


def row(rid: str, scenario: dict[str, Any], path: str, **fields: Any) -> dict[str, Any]:
    """An index row with every key present (defaults for what a failure never reached)."""
    usage = fields.pop("usage", {})
    spec_u, gen_u = usage.get("spec") or usage_of(None), usage.get("generation") or usage_of(None)
    base: dict[str, Any] = {
        "id": rid,
        "scenario_id": scenario.get("id", ""),
        "scenario_name": scenario.get("name", ""),
        "category": scenario.get("category", ""),
        "source": scenario.get("source", ""),
        "path": path,
        "env": None,
        "package": None,
        "archetypes": [],
        "spec_valid": False,
        "spec_issues": [],
        "spec_fixes": [],
        "rounds": 0,
        "passed": False,
        "status": EnvStatus.FAILED.value,
        "gates": dict.fromkeys(GATES),
        "meaning": None,
        "soundness": None,
        "entities": None,
        "rules": None,
        "chains3": None,
        "reasons": [],
        "tools": None,
        "scenarios": None,
        "calls": spec_u["calls"] + gen_u["calls"],
        "usage": {"spec": spec_u, "generation": gen_u},
        "tokens": {
            "prompt": spec_u["prompt_tokens"] + gen_u["prompt_tokens"],
            "completion": spec_u["completion_tokens"] + gen_u["completion_tokens"],
        },
        "cost_usd": round(spec_u["cost_usd"] + gen_u["cost_usd"], 6),
        "seconds": 0.0,
        "model": "",
    }
    out = {**base, **fields}
    if "status" not in fields:  # rows that predate the gates (and imported rows): passed or not
        out["status"] = (EnvStatus.PASSING if out["passed"] else EnvStatus.FAILED).value
    out["passed"] = out["status"] == EnvStatus.PASSING
    return out


def status_of(r: dict[str, Any]) -> str:
    """A row's status; rows written before statuses existed: ``floor`` for an invalid spec that passed
    the audit (what they then called passed), else passing or failed."""
    if r.get("status"):
        return str(r["status"])
    if r.get("passed") and r.get("spec_valid") is False:
        return EnvStatus.FLOOR.value
    return (EnvStatus.PASSING if r.get("passed") else EnvStatus.FAILED).value


# ---- one (scenario, path) ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """Everything one package step needs (picklable: it may run on a Ray worker)."""

    lib: str
    scenario_item: dict[str, Any]
    path: str
    model: str
    spec: dict[str, Any] | None
    """The spec record, or the SpecStage's reject (``{"reason", "message", "detail"}``)."""
    repair_rounds: int = REPAIR_ROUNDS
    unsafe: bool = False
    timeout_s: float = 300.0


def _place(lib: Path, path: str, package: Path, status: EnvStatus) -> Path:
    """Move a built package into ``envs/``, ``floor/`` or ``failed/<path>/`` by its status (replacing an
    older copy wherever it was)."""
    dest = lib / FOLDER_OF[status] / path / package.name
    for folder in FOLDER_OF.values():
        old = lib / folder / path / package.name
        if old.exists():
            shutil.rmtree(old)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(package), dest)
    return dest


def _spec_failure(reject: dict[str, Any]) -> str:
    """The SpecStage's message plus its first issues, spelled out (code at path: message)."""
    issues = (reject.get("detail") or {}).get("issues") or []
    lines = [f"{i['code']} at {i['path']}: {i['message']}" for i in issues[:3]]
    return "; ".join([reject.get("message") or "no specification", *lines])[:2000]


def _spec_parts(spec: dict[str, Any]) -> tuple[Any, Any, list[str], bool]:
    """(E_spec, T_spec, spec issue codes, valid) from a spec record or an invalid-spec reject."""
    from dataclaw.envcraft.synth.spec import ESpec, TSpec

    valid = "e_spec" in spec
    body = spec if valid else spec.get("detail", {})
    e = ESpec.model_validate(body["e_spec"])
    t = TSpec.model_validate({"tools": body.get("t_spec") or []})
    codes = sorted({i["code"] for i in body.get("issues", [])}) if not valid else []
    return e, t, codes, valid


def run_job(job: Job) -> dict[str, Any]:
    """One (scenario, path): package built, audited (healed for codegen), placed; its index row."""
    lib = Path(job.lib)
    item = job.scenario_item
    scenario = item["scenario"]
    rid = row_id(item["id"], job.path)
    spec = job.spec or {}
    spec_usage = spec.get("usage") or spec.get("detail", {}).get("usage") or usage_of(None)
    common: dict[str, Any] = {"usage": {"spec": spec_usage}, "model": job.model}
    archetypes = spec.get("archetypes") or spec.get("detail", {}).get("archetypes") or []
    common["archetypes"] = [a["name"] for a in archetypes]
    if "e_spec" not in spec and not (spec.get("detail") or {}).get("e_spec"):
        reason = spec.get("reason", LibraryReason.INVALID_SPEC.value)
        code = LibraryReason.MODEL_ERROR if reason == SpecReason.MODEL_ERROR else LibraryReason.INVALID_SPEC
        msg = _spec_failure(spec)
        return row(rid, scenario, job.path, reasons=[{"code": code.value, "message": msg}], **common)
    t0 = time.perf_counter()
    try:
        out = (_compile if job.path == "compile" else _codegen)(job, lib, scenario, spec)
    except Exception as exc:  # noqa: BLE001 - one scenario's bug is its row, the run goes on
        out = {
            "reasons": [
                {"code": LibraryReason.INTERNAL_ERROR.value, "message": f"{type(exc).__name__}: {exc}"}
            ]
        }
    usage = {**common.pop("usage"), **out.pop("usage", {})}
    return row(
        rid, scenario, job.path, usage=usage, seconds=round(time.perf_counter() - t0, 3), **{**common, **out}
    )


def floor_spec(e: Any) -> tuple[Any, list[str]]:
    """An invalid E_spec made compilable where the fix is unambiguous, for the floor environment: a
    non-collection state field that repeats a collection's name is dropped (small models echo the
    collection as a counter of the same name; the collection keeps the name). Returns the spec and what
    was changed (recorded in the row's ``spec_fixes``)."""
    collections = {f.name for f in e.state_fields if f.kind == "collection"}
    kept, fixes, seen = [], [], set()
    for f in e.state_fields:
        if f.kind != "collection" and f.name in collections:
            fixes.append(f"state field {f.name!r} ({f.kind}) dropped: the name of a collection")
            continue
        if f.kind == "collection" and f.name in seen:
            kept.append(f)  # two collections of one name: left for the compiler to refuse
            continue
        seen.add(f.name)
        kept.append(f)
    return (e.model_copy(update={"state_fields": kept}) if fixes else e), fixes


# ---- the gates -------------------------------------------------------------------------------------------


def meaning_of(spec: dict[str, Any], scenario: dict[str, Any]) -> dict[str, Any] | None:
    """The meaning gates' report on a spec record or invalid-spec reject (the record's own ``meaning``
    when the spec stage wrote one), as a dict; None when the gates are not installed."""
    given = spec.get("meaning") or (spec.get("detail") or {}).get("meaning")
    if isinstance(given, dict):
        return given
    try:
        from dataclaw.envcraft.synth.meaning import check_spec_meaning
    except ImportError:
        return None
    report = check_spec_meaning(spec, str(scenario.get("description", "")), env_name=scenario.get("id", ""))
    return report.to_dict()


def chains_of_three(graph: Any) -> int:
    """Distinct 3-step chains a sampler can walk in a tool graph: tool paths a → b → c over its edges
    (no step to itself) that end on a write tool, as :class:`~dataclaw.envcraft.graph.ChainSampler`
    ends every chain."""
    tools = set(graph.tools())
    g = graph.graph
    succ = {n: [m for m in g.successors(n) if m in tools and m != n] for n in tools}
    writes = {n for n in tools if graph.is_write(n)}
    return sum(1 for a in tools for b in succ[a] for c in succ[b] if c in writes)


def enforced_rules(env_cls: Any) -> int | None:
    """How many rules the environment enforces, when its package says (``enforced_rules`` of its
    Environment class, as compiled rule-language packages expose them); None when it does not say."""
    rules = getattr(env_cls, "enforced_rules", None)
    if rules is None:
        return None
    return len(rules() if callable(rules) else rules)


def soundness_sample(
    env_cls: Any, graph: Any, package: str, *, tasks: int = SOUNDNESS_TASKS, seed: int = 0
) -> dict[str, Any]:
    """The soundness gate: up to ``tasks`` distinct seeded chains (2-4 steps) grounded into tool tasks in
    the environment (S0 with distractors, a whole-state verifier), each run through the soundness suite
    (:func:`~dataclaw.envcraft.quality.soundness.run_soundness`). Passes when at least one task is sound
    and at least :data:`SOUND_SHARE` of the grounded ones are; ``reasons`` counts the policies that gamed
    the others."""
    import random

    from dataclaw.envcraft.graph import ChainSampler
    from dataclaw.envcraft.quality.soundness import run_soundness
    from dataclaw.envcraft.runtime.task import ToolTask
    from dataclaw.envcraft.tasks import GroundingError, ground_chain
    from dataclaw.envcraft.tasks.tool.initial import build_initial_state, build_verifier
    from dataclaw.envcraft.tasks.tool.synth import SynthError

    out: dict[str, Any] = {"sampled": 0, "grounded": 0, "sound": 0, "reasons": {}, "passed": False}
    try:
        sampler = ChainSampler([graph])
    except ConfigError as exc:  # no write tool: no chain can end
        return {**out, "error": str(exc)}
    rng, seen, reasons = random.Random(seed), set(), Counter()
    for n in range(SOUNDNESS_TRIES):
        chain = sampler.walk(graph.env, rng, *SOUNDNESS_STEPS)
        if chain is None or chain.steps in seen:
            continue
        seen.add(chain.steps)
        try:
            g = build_initial_state(env_cls, ground_chain(env_cls, list(chain.steps), seed=n), seed=n)
            verifier, _ = build_verifier(g, env_cls)
        except (GroundingError, SynthError):
            continue
        task = ToolTask(
            id=f"soundness/{graph.env}/{n}", env=graph.env, env_module=package, scenario_id=g["scenario_id"],
            initial_state=g["initial_state"], verifier=verifier,
            gold_chain=[{"tool": s["tool"], "params": s["params"]} for s in g["steps"]],
        )  # fmt: skip
        report = run_soundness(task, env_cls=env_cls)
        out["grounded"] += 1
        out["sound"] += report.passed
        reasons.update(str(r) for r in report.reasons)
        if out["grounded"] >= tasks:
            break
    out["sampled"], out["reasons"] = len(seen), dict(reasons)
    out["passed"] = out["sound"] > 0 and out["sound"] >= SOUND_SHARE * out["grounded"]
    return out


def probe_package(folder: Path, *, soundness: bool) -> dict[str, Any]:
    """What a package that passed the audit offers, measured in its sandboxed env worker: distinct 3-step
    chains, enforced rules (when it says), and with ``soundness`` the soundness sample."""
    from dataclaw.envcraft.graph import build_tool_graph
    from dataclaw.envcraft.worker import open_environment

    handle = open_environment(folder)
    try:
        graph = build_tool_graph(handle.env_cls)
        out: dict[str, Any] = {"chains3": chains_of_three(graph), "rules": enforced_rules(handle.env_cls)}
        if soundness:
            out["soundness"] = soundness_sample(handle.env_cls, graph, str(folder))
        return out
    finally:
        handle.close()


def judge(
    *, valid: bool, meaning: dict[str, Any] | None, audit: bool, probe: Any, spec_codes: list[str]
) -> tuple[EnvStatus, dict[str, bool | None], list[dict[str, str]], dict[str, Any]]:
    """The gates in order (spec, meaning, audit, soundness) → (status, gates, reasons, probe figures).
    ``probe(soundness)`` measures the package and runs only for a package the audit passed; the soundness
    suite runs only when every earlier gate passed. A failed gate's reason names it; a floor environment
    (an invalid spec whose package passed the audit) says so."""
    gates: dict[str, bool | None] = dict.fromkeys(GATES)
    gates["spec"], gates["audit"] = valid, audit
    gates["meaning"] = None if meaning is None else bool(meaning.get("passed"))
    reasons: list[dict[str, str]] = []
    if meaning is not None and not meaning.get("passed"):
        issues = meaning.get("issues") or []
        lines = "; ".join(f"{i.get('code')}: {i.get('message')}" for i in issues[:4])
        reasons.append({"code": LibraryReason.MEANING.value, "message": lines or "meaning gates failed"})
    figures: dict[str, Any] = {}
    if audit:
        figures = probe(valid and gates["meaning"] is not False)
        sound = figures.get("soundness")
        if sound is not None:
            gates["soundness"] = bool(sound["passed"])
            if not sound["grounded"]:
                why = sound.get("error") or f"none of {sound['sampled']} sampled chains grounded into a task"
                reasons.append({"code": LibraryReason.NO_TASK.value, "message": why})
            elif not sound["passed"]:
                gamed = ", ".join(f"{k} ({v})" for k, v in sorted(sound["reasons"].items()))
                msg = f"{sound['grounded'] - sound['sound']} of {sound['grounded']} tool tasks gamed: {gamed}"
                reasons.append({"code": LibraryReason.UNSOUND.value, "message": msg})
    if not valid:
        why = f"spec still invalid after repair ({', '.join(spec_codes) or 'unusable'})"
        if audit:
            why += ": compiled as a floor environment, for smoke tests only"
        reasons.insert(0, {"code": (LibraryReason.FLOOR if audit else LibraryReason.INVALID_SPEC).value,
                           "message": why})  # fmt: skip
    if all(gates[g] is not False for g in GATES) and gates["audit"] and gates["soundness"]:
        return EnvStatus.PASSING, gates, [], figures
    return (EnvStatus.FLOOR if not valid and audit else EnvStatus.FAILED), gates, reasons, figures


def _compile(job: Job, lib: Path, scenario: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """Spec compilation (no model call), then the audit. An invalid spec still compiles when its names
    are usable (the floor environment); the issues it carried are listed in ``spec_issues``."""
    from dataclaw.envcraft.synth.compile import CompileError, compile_package
    from dataclaw.envcraft.synth.heal import audit_and_heal
    from dataclaw.envcraft.synth.retrieval import retrieve

    e, t, codes, valid = _spec_parts(spec)
    fixes: list[str] = []
    if not valid:
        e, fixes = floor_spec(e)
    sc = ScenarioSpec.model_validate(scenario)
    found = retrieve(e, t, sc)
    out: dict[str, Any] = {"spec_valid": valid, "spec_issues": codes, "archetypes": [r.name for r in found]}
    if fixes:
        out["spec_fixes"] = fixes
    build = lib / BUILD / "compile" / sc.id
    build.mkdir(parents=True, exist_ok=True)
    try:
        res = compile_package(e, t, found, build, scenario=scenario)
    except CompileError as exc:
        return {**out, "reasons": [{"code": LibraryReason.COMPILE_ERROR.value, "message": str(exc)}]}
    outcome = asyncio.run(
        audit_and_heal(None, res.path, context={"path": "compile", "spec": spec}, options=_options(job))
    )
    meaning = meaning_of(spec, scenario)
    status, gates, reasons, figures = judge(
        valid=valid, meaning=meaning, audit=bool(outcome.passed), spec_codes=codes,
        probe=lambda sound: probe_package(res.path, soundness=sound),
    )  # fmt: skip
    placed = _place(lib, "compile", res.path, status)
    shutil.rmtree(build, ignore_errors=True)
    return {
        **out,
        "env": res.env_name,
        "package": str(placed.relative_to(lib)),
        "status": status.value,
        "gates": gates,
        "meaning": meaning,
        "entities": len(e.entities),
        **figures,
        "reasons": reasons + _reasons(outcome),
        "tools": len(res.tools),
        "scenarios": len(res.scenarios),
    }


def _options(job: Job) -> Any:
    from dataclaw.envcraft.audit import DynamicOptions

    return DynamicOptions(timeout_s=job.timeout_s, tests_timeout_s=job.timeout_s, unsafe=job.unsafe)


def _reasons(outcome: Any) -> list[dict[str, str]]:
    """The outcome's reasons as index rows keep them (code and message; heal.SynthReason codes)."""
    if outcome.passed:
        return []
    out = [{"code": str(r.get("code", "")), "message": str(r.get("message", ""))} for r in outcome.reasons]
    return out or [{"code": LibraryReason.GENERATION_FAILED.value, "message": "failed without a reason"}]


def _codegen(job: Job, lib: Path, scenario: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """Code generation with audit-driven self-healing (``synth.heal.generate_package``): only from a
    valid spec (the model writes the code from it)."""
    if "e_spec" not in spec:
        detail = spec.get("detail", {})
        codes = sorted({i["code"] for i in detail.get("issues", [])})
        msg = _spec_failure(spec)
        return {"spec_issues": codes, "reasons": [{"code": LibraryReason.INVALID_SPEC.value, "message": msg}]}
    from dataclaw.envcraft.synth.codegen import generate_package
    from dataclaw.models import get_model

    build = lib / BUILD / "codegen" / spec["scenario_id"]
    if build.exists():
        shutil.rmtree(build)
    build.mkdir(parents=True)
    meter = UsageLedger()
    model = get_model(job.model, cache=lib / CACHE, ledger=meter)
    try:
        outcome = asyncio.run(
            generate_package(model, spec, build, repair_rounds=job.repair_rounds, options=_options(job))
        )
    except ModelError as exc:
        reason = {"code": LibraryReason.MODEL_ERROR.value, "message": str(exc)}
        return {"spec_valid": True, "reasons": [reason], "usage": {"generation": usage_of(meter)}}
    built = outcome.package is not None and Path(outcome.package).is_dir()
    meaning = meaning_of(spec, scenario)
    status, gates, reasons, figures = judge(
        valid=True, meaning=meaning, audit=bool(outcome.passed and built), spec_codes=[],
        probe=lambda sound: probe_package(Path(outcome.package), soundness=sound),
    )  # fmt: skip
    out: dict[str, Any] = {
        "spec_valid": True,
        "rounds": outcome.rounds,
        "status": status.value,
        "gates": gates,
        "meaning": meaning,
        "entities": len((spec.get("e_spec") or {}).get("entities") or []),
        **figures,
        "reasons": reasons + _reasons(outcome),
        "usage": {"generation": usage_of(meter)},
        "env": outcome.env_name or None,
    }
    if built:
        placed = _place(lib, "codegen", Path(outcome.package), status)
        out["package"] = str(placed.relative_to(lib))
        out["tools"], out["scenarios"] = _counts(placed)
    shutil.rmtree(build, ignore_errors=True)
    return out


def _counts(folder: Path) -> tuple[int | None, int | None]:
    """Tools and scenarios of a package, from its files (``@tool`` definitions, ``data/scenarios``)."""
    from dataclaw.envcraft.audit.package import is_tool_def, read_package

    with contextlib.suppress(Exception):
        pkg = read_package(folder)
        tools = sum(1 for m in pkg.code_modules() for n in m.tree.body if is_tool_def(n, m) is not None)
        scen = folder / "data" / "scenarios"
        n_scen = len(list(scen.glob("*.json"))) if scen.is_dir() else None
        return tools, n_scen
    return None, None


# ---- know before the run -------------------------------------------------------------------------------

CONTEXT_KEYS = ("max_model_len", "context_length", "context_window", "max_context_length")
"""Where an OpenAI-compatible server's ``/models`` entry may say the model's context (vLLM and SGLang:
``max_model_len``); a server that says none is not refused."""
CHARS_PER_TOKEN = 4.0
"""Characters per token where no tokenizer is at hand (a served model): a low estimate for JSON and
code, so a refusal on it is never a close call."""
MESSAGE_OVERHEAD = 8
"""Tokens a chat template adds per message, at most, counted on top of the contents."""


@dataclass(frozen=True)
class PromptFit:
    """One synthesis path's prompt against the model's context: ``prompt`` tokens (``exact``: counted by
    the model's own tokenizer, else estimated from characters) of the smallest prompt the path sends
    (``at_least``) or its largest (a repair, with the previous answer), and the model's ``context``."""

    path: str
    prompt: int
    context: int
    exact: bool
    at_least: bool = True

    @property
    def fits(self) -> bool:
        return self.prompt < self.context

    def line(self, model: str) -> str:
        """The one-line refusal: the path, the prompt size and the context length."""
        size = f"{'' if self.exact else '≈'}{self.prompt:,} tokens"
        size = f"at least {size}" if self.at_least else f"up to {size}"
        hint = {
            "codegen": "use --path compile, or a model with a longer context",
            "repair": "use --repair-rounds 0, or a model with a longer context",
        }.get(self.path, "use a model with a longer context")
        return (
            f"the {self.path} path cannot run on {model}: its prompt is {size}, more than the model's "
            f"context of {self.context:,} tokens; {hint}"
        )


def context_length(model: Any) -> int | None:
    """The model's context in tokens, where the model layer knows it: an embedded model's ``n_ctx``; an
    OpenAI-compatible server's ``/models`` entry when it says (``max_model_len``…). None when unknown."""
    backend = getattr(model, "backend", model)
    n_ctx = getattr(backend, "n_ctx", None)
    if isinstance(n_ctx, int) and n_ctx > 0:
        return n_ctx
    base = getattr(backend, "base_url", None)
    if not isinstance(base, str):
        return None
    import urllib.request

    req = urllib.request.Request(
        f"{base}/models", headers={"Authorization": f"Bearer {getattr(backend, 'api_key', '')}"}
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            listed = json.loads(resp.read().decode("utf-8", errors="replace")).get("data") or []
    except Exception:  # noqa: BLE001 - a server that does not say is not refused
        return None
    name = getattr(backend, "model_name", "")
    entries = [e for e in listed if isinstance(e, dict)]
    mine = [e for e in entries if e.get("id") == name] or (entries if len(entries) == 1 else [])
    for entry in mine:
        for key in CONTEXT_KEYS:
            value = entry.get(key)
            if isinstance(value, int) and value > 0:
                return value
    return None


def _token_counter(model: Any) -> tuple[Callable[[list[dict[str, str]]], int], bool]:
    """Count a prompt's tokens: with the embedded model's own tokenizer when there is one (the model the
    run loads anyway; its vocabulary alone when it runs in a child process), else estimated from
    characters. Returns (counter, exact)."""
    backend = getattr(model, "backend", model)
    tokenize = None
    with contextlib.suppress(Exception):  # no tokenizer at hand: estimate
        if getattr(backend, "isolated", None) is None and callable(getattr(backend, "load", None)):
            tokenize = backend.load().llama.tokenize
        elif isinstance(getattr(backend, "path", None), Path):
            import llama_cpp
            from llama_cpp._utils import suppress_stdout_stderr

            with suppress_stdout_stderr(disable=False):
                tokenize = llama_cpp.Llama(
                    model_path=str(backend.path), vocab_only=True, verbose=False
                ).tokenize
    if tokenize is not None:
        count = tokenize

        def exact(messages: list[dict[str, str]]) -> int:
            body = sum(len(count(m["content"].encode(), add_bos=False)) for m in messages)
            return body + MESSAGE_OVERHEAD * len(messages)

        return exact, True

    def estimate(messages: list[dict[str, str]]) -> int:
        chars = sum(len(m["content"]) for m in messages)
        return int(chars / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD * len(messages)

    return estimate, False


def path_prompts(
    scenarios: list[ScenarioSpec], paths: Iterable[str], repair_rounds: int
) -> dict[str, tuple[list[list[dict[str, str]]], bool, int]]:
    """The prompts each synthesis path sends, as built before any call: ``spec`` (each scenario's first
    spec call), ``repair`` (that call with the most issues a repair shows, plus the previous answer at
    its full token budget) and ``codegen`` (the generation prompt of an empty spec over the reference
    archetype: every real one is longer). Values: (messages per scenario, at_least, tokens to add)."""
    from dataclaw.envcraft.synth.expand import E_SPEC_TOKENS, MAX_ISSUES_SHOWN, entities_prompt
    from dataclaw.envcraft.synth.spec import Issue, IssueCode

    out = {"spec": ([entities_prompt(s, None, []) for s in scenarios], True, 0)}
    if repair_rounds > 0:
        issue = Issue(
            code=IssueCode.SCHEMA, path="$", message="not JSON of the requested schema: " + "x" * 160
        )
        prompts = [entities_prompt(s, "", [issue] * MAX_ISSUES_SHOWN) for s in scenarios]
        out["repair"] = (prompts, False, E_SPEC_TOKENS)
    if "codegen" in paths:
        from dataclaw.envcraft.synth.codegen import generation_messages

        empty = {"e_spec": {}, "t_spec": [], "archetypes": []}
        prompts = [
            generation_messages({**empty, "scenario": s.model_dump(mode="json")}, s.id) for s in scenarios
        ]
        out["codegen"] = (prompts, True, 0)
    return out


def check_context(
    model: Any, scenarios: list[ScenarioSpec], paths: Iterable[str], repair_rounds: int
) -> None:
    """Know before the run: refuse, in one line naming the path, its prompt size and the model's context,
    a synthesis path whose prompt the model cannot read. Nothing is refused when the context is unknown."""
    context = context_length(model)
    if context is None or not scenarios:
        return
    count, exact = _token_counter(model)
    model_id = getattr(model, "model_id", "the model")
    for path, (prompts, at_least, extra) in path_prompts(scenarios, paths, repair_rounds).items():
        fit = PromptFit(path, max(count(m) for m in prompts) + extra, context, exact, at_least)
        if not fit.fits:
            raise ConfigError(fit.line(model_id))


# ---- the run -------------------------------------------------------------------------------------------


@dataclass
class SynthConfig:
    model: str
    paths: tuple[str, ...] = ("compile",)
    repair_rounds: int = REPAIR_ROUNDS
    meaning_rounds: int = MEANING_ROUNDS  # asks to fix a valid spec the meaning gates fail (kept if better)
    bounds: str = "auto"
    workers: int = 1
    concurrency: int = 4
    unsafe: bool = False
    timeout_s: float = 300.0


def synthesize(
    lib: Path,
    requests: Requests,
    config: SynthConfig,
    *,
    progress: Callable[[str, int, int], None] | None = None,
    ledger: UsageLedger | None = None,
) -> list[dict[str, Any]]:
    """Synthesise the requested scenarios into ``lib``; returns the index rows of this request (those
    written now and those a previous run wrote). Resumable: rows already in the index are skipped."""
    from dataclaw.pipeline import run_stage
    from dataclaw.pipeline.registry import make_executor

    if config.bounds not in BOUNDS:
        raise ConfigError(f"--spec-bounds must be one of {', '.join(BOUNDS)}, not {config.bounds!r}")
    for p in config.paths:
        if p not in PATHS:
            raise ConfigError(f"unknown --path {p!r}; use compile, codegen or both")
    lib.mkdir(parents=True, exist_ok=True)
    ledger = ledger if ledger is not None else UsageLedger()
    with RunStore(lib, command="env synth") as store:
        index = store.stage(INDEX)
        for bad in requests.bad:
            index.append(bad)
        items = [scenario_record(s) for s in requests.scenarios]
        wanted = {(it["id"], p): row_id(it["id"], p) for it in items for p in config.paths}
        todo_items = [it for it in items if any(wanted[(it["id"], p)] not in index for p in config.paths)]
        if todo_items:
            from dataclaw.models import get_model

            todo = [ScenarioSpec.model_validate(it["scenario"]) for it in todo_items]
            check_context(get_model(config.model), todo, config.paths, config.repair_rounds)
            stage = LibrarySpecStage(
                config.model,
                str(lib / CACHE),
                bounds=config.bounds,
                repair_rounds=config.repair_rounds,
                meaning_rounds=config.meaning_rounds,
                ledger=ledger,
            )
            bar = (lambda d, t: progress("specs", d, t)) if progress else None
            run_stage(stage, todo_items, store, make_executor(concurrency=config.concurrency), bar)
        specs = _specs_by_item(store, [it["id"] for it in todo_items])
        retry = {i for i, s in specs.items() if s.get("reason") not in (None, *SPEC_VERDICTS)}
        jobs = [
            Job(str(lib), it, p, config.model, specs.get(it["id"]), config.repair_rounds, config.unsafe,
                config.timeout_s)
            for it in todo_items for p in config.paths
            if wanted[(it["id"], p)] not in index and it["id"] in specs and it["id"] not in retry
        ]  # fmt: skip
        done = 0
        if progress:
            progress("packages", 0, len(jobs))
        workers = max(1, min(config.workers, len(jobs) or 1))
        retried: list[dict[str, Any]] = []
        for _job, r in make_executor(workers=workers).calls(run_job, jobs, workers):
            if any(x["code"] == LibraryReason.INTERNAL_ERROR for x in r["reasons"]):
                # a bug, not a verdict: kept in rejects.jsonl, no index row, so the next run retries it
                why = r["reasons"][0]["message"]
                store.reject(
                    Reject(id=r["id"], stage=INDEX, reason=LibraryReason.INTERNAL_ERROR, message=why)
                )
                retried.append(r)
            else:
                index.append(r)
            done += 1
            if progress:
                progress("packages", done, len(jobs))
        shutil.rmtree(lib / BUILD, ignore_errors=True)
        if ledger.models():
            ledger.save(store)
        ids = {*(r["id"] for r in requests.bad), *wanted.values()}
        rows = [r for r in store.records(INDEX) if r["id"] in ids] + retried
        store.update_manifest(library=summarize(list(store.records(INDEX))))
    return rows


def _specs_by_item(store: RunStore, item_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Scenario record id → its spec record, or its SpecStage reject (``reason``, ``message``, ``detail``)."""
    wanted = set(item_ids)
    out: dict[str, dict[str, Any]] = {}
    for rej in store.rejects("specs"):
        if rej["record_id"] in wanted:
            out[rej["record_id"]] = rej
    for rec in store.records("specs"):
        parent = rec["id"].rsplit("/", 1)[0]
        if parent in wanted:
            out[parent] = rec
    return out


# ---- reading a library ---------------------------------------------------------------------------------


def read_index(lib: Path) -> list[dict[str, Any]]:
    """The index rows of a library (a ConfigError when ``lib`` is not one)."""
    path = Path(lib) / f"{INDEX}.jsonl"
    if not path.is_file():
        raise ConfigError(
            f"{lib} is not an environment library (no index.jsonl): make one with dataclaw env synth"
        )
    with RunStore(lib) as store:
        return list(store.records(INDEX))


def library_packages(lib: Path, *, floor: bool = False) -> list[tuple[dict[str, Any], Path]]:
    """(row, package folder) of every passing package of a library (with ``floor``, the floor packages
    too: for smoke tests, never for training data), one per environment name (the first row in index
    order wins when two paths gave the same name)."""
    wanted = {EnvStatus.PASSING.value, *([EnvStatus.FLOOR.value] if floor else [])}
    out: list[tuple[dict[str, Any], Path]] = []
    names: set[str] = set()
    for r in read_index(lib):
        if status_of(r) not in wanted or not r.get("package"):
            continue
        folder = Path(lib) / r["package"]
        if folder.is_dir() and r.get("env") not in names:
            names.add(r.get("env"))
            out.append((r, folder))
    return out


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Raw → passed per path, per archetype (the first retrieved) and in all, next to the paper's rate;
    floor environments counted apart (never in ``passed`` nor the rate); each gate's passed/failed/not
    reached counts; failure reasons counted."""

    def rate(items: list[dict[str, Any]]) -> dict[str, Any]:
        status = Counter(status_of(r) for r in items)
        n, k = len(items), status[EnvStatus.PASSING]
        return {
            "raw": n,
            "passed": k,
            "floor": status[EnvStatus.FLOOR],
            "failed": status[EnvStatus.FAILED],
            "pass_rate": round(k / n, 3) if n else None,
        }

    gates: dict[str, dict[str, int]] = {}
    for g in GATES:
        seen = Counter((r.get("gates") or {}).get(g) for r in rows)
        gates[g] = {"passed": seen[True], "failed": seen[False], "not_reached": seen[None]}

    by_path: dict[str, list[dict[str, Any]]] = {}
    by_arch: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_path.setdefault(r["path"], []).append(r)
        if r.get("archetypes"):
            by_arch.setdefault(r["archetypes"][0], []).append(r)
    reasons = Counter(x["code"] for r in rows for x in r["reasons"] if status_of(r) != EnvStatus.PASSING)
    return {
        **rate(rows),
        "gates": gates,
        "paper": {"raw": PAPER_RAW, "passed": PAPER_PASSED, "pass_rate": round(PAPER_PASSED / PAPER_RAW, 3)},
        "per_path": {k: rate(v) for k, v in sorted(by_path.items())},
        "per_archetype": {k: rate(v) for k, v in sorted(by_arch.items())},
        "reasons": dict(reasons.most_common()),
        **_totals(rows),
    }


def _totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Tokens and cost over rows, a scenario's spec counted once (its rows for both paths share it)."""
    spec = {r["scenario_id"]: r["usage"]["spec"] for r in rows}
    parts = [*spec.values(), *(r["usage"]["generation"] for r in rows)]
    return {
        "tokens": {
            "prompt": sum(u["prompt_tokens"] for u in parts),
            "completion": sum(u["completion_tokens"] for u in parts),
        },
        "cost_usd": round(sum(u["cost_usd"] for u in parts), 6),
    }


def index_json(rows: list[dict[str, Any]]) -> str:
    return "\n".join(json.dumps(r, ensure_ascii=False) for r in rows)
