"""Environment synthesis end to end (EnvCraft §3, issue 13 item 7): scenarios → specifications →
packages (spec compilation and/or code generation) → static + sandboxed dynamic audit, with bounded
self-healing → a library folder with an index.

Layout of a library ``LIB/``::

    index.jsonl            one row per (scenario, path): see :func:`row`
    specs.jsonl            the SpecStage's records (resumable per scenario), rejects.jsonl, manifest.json
    envs/<path>/<name>/    packages that passed the audit
    failed/<path>/<name>/  packages that did not (kept for inspection, never dropped)
    model_cache.sqlite     every model answer (a rerun pays for no call twice)

An index row::

    {"id", "scenario_id", "scenario_name", "category", "source", "path": "compile" | "codegen",
     "env", "package" (relative to LIB, or null), "archetypes": [names retrieved], "spec_valid",
     "spec_issues": [issue codes the compiler tolerated], "rounds", "passed",
     "reasons": [{"code", "message"}], "tools", "scenarios", "calls",
     "usage": {"spec": {...}, "generation": {...}}, "tokens": {"prompt", "completion"}, "cost_usd",
     "seconds": wall seconds of the package step, "model"}

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
from dataclaw.envcraft.synth.expand import REPAIR_ROUNDS, SpecReason, expand_scenario
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
ENVS, FAILED, BUILD = "envs", "failed", ".build"
CACHE = "model_cache.sqlite"
BOUNDS: dict[str, SchemaLimits | None] = {"auto": None, "compact": COMPACT, "full": FULL}
SPEC_VERDICTS = (SpecReason.INVALID_SPEC.value, SpecReason.MODEL_ERROR.value)
"""SpecStage rejects that are a scenario's verdict (written to the index); any other (a crash) is retried
by the next run and gets no row yet."""


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
                    self._model, scenario, repair_rounds=self.repair_rounds, limits=BOUNDS[self.bounds]
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
    return {**base, **fields}


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


def _place(lib: Path, path: str, package: Path, passed: bool) -> Path:
    """Move a built package into ``envs/<path>/`` or ``failed/<path>/`` (replacing an older copy)."""
    dest = lib / (ENVS if passed else FAILED) / path / package.name
    for old in (lib / ENVS / path / package.name, lib / FAILED / path / package.name):
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
    placed = _place(lib, "compile", res.path, outcome.passed)
    shutil.rmtree(build, ignore_errors=True)
    return {
        **out,
        "env": res.env_name,
        "package": str(placed.relative_to(lib)),
        "passed": outcome.passed,
        "reasons": _reasons(outcome),
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
    out: dict[str, Any] = {
        "spec_valid": True,
        "rounds": outcome.rounds,
        "passed": bool(outcome.passed),
        "reasons": _reasons(outcome),
        "usage": {"generation": usage_of(meter)},
        "env": outcome.env_name or None,
    }
    if outcome.package is not None and Path(outcome.package).is_dir():
        placed = _place(lib, "codegen", Path(outcome.package), outcome.passed)
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


# ---- the run -------------------------------------------------------------------------------------------


@dataclass
class SynthConfig:
    model: str
    paths: tuple[str, ...] = ("compile",)
    repair_rounds: int = REPAIR_ROUNDS
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
            stage = LibrarySpecStage(
                config.model,
                str(lib / CACHE),
                bounds=config.bounds,
                repair_rounds=config.repair_rounds,
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


def library_packages(lib: Path) -> list[tuple[dict[str, Any], Path]]:
    """(row, package folder) of every passing package of a library, one per environment name (the first
    row in index order wins when two paths gave the same name)."""
    out: list[tuple[dict[str, Any], Path]] = []
    names: set[str] = set()
    for r in read_index(lib):
        if not r["passed"] or not r.get("package"):
            continue
        folder = Path(lib) / r["package"]
        if folder.is_dir() and r.get("env") not in names:
            names.add(r.get("env"))
            out.append((r, folder))
    return out


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Raw → passed per path, per archetype (the first retrieved) and in all, next to the paper's rate;
    failure reasons counted."""

    def rate(items: list[dict[str, Any]]) -> dict[str, Any]:
        n, k = len(items), sum(1 for r in items if r["passed"])
        return {"raw": n, "passed": k, "pass_rate": round(k / n, 3) if n else None}

    by_path: dict[str, list[dict[str, Any]]] = {}
    by_arch: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_path.setdefault(r["path"], []).append(r)
        if r.get("archetypes"):
            by_arch.setdefault(r["archetypes"][0], []).append(r)
    reasons = Counter(x["code"] for r in rows for x in r["reasons"] if not r["passed"])
    return {
        **rate(rows),
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
