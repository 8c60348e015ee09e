"""The task pipeline as resumable stages: chains → ``grounded`` (execute, verifier) → ``tasks`` (text).

A task is a :class:`~dataclaw.envcraft.runtime.task.ToolTask` (one row of ``tasks.jsonl``); its
``metadata`` here: chain and grounded ids, step count, write fields, the user-specified and tool-derived
values, distractors, the verifier's proof and the model.

A cross-environment task (``env`` = ``"a+b"``) runs in an :class:`~.composite.EnvGroup`: its state is
``{env: state}``, its tools and gold calls are ``env.tool``, and its verifier's paths start with ``/env``.
Replay it with :func:`replay_task`: a fresh session, ``restore_env_state(initial_state)``, the calls,
then :func:`dataclaw.envcraft.tasks.tool.verifier.evaluate` on the session state.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dataclaw.core.ids import child_id, root_id, stable_hash
from dataclaw.core.moved import keep_old_names
from dataclaw.envcraft.graph.sampling import ToolChain
from dataclaw.envcraft.quality.soundness import SoundnessSettings, run_soundness
from dataclaw.envcraft.runtime.task import ToolTask
from dataclaw.envcraft.tasks.tool.execute import GroundingError, GroundReason, ground_chain, run_calls
from dataclaw.envcraft.tasks.tool.initial import build_initial_state, build_verifier, distractors
from dataclaw.envcraft.tasks.tool.loading import record_env, task_env
from dataclaw.envcraft.tasks.tool.synth import SynthError, SynthReason, pick_persona
from dataclaw.envcraft.tasks.tool.verifier import evaluate
from dataclaw.pipeline.stage import Record, Resources, Result, Stage

DEFAULT_SOUNDNESS = SoundnessSettings()


def chain_record(chain: ToolChain, modules: dict[str, str] | None = None) -> Record:
    """A ``chains.jsonl`` record: deterministic id from the environments and steps."""
    parent = root_id("env", "+".join(chain.envs), list(chain.envs))
    rec = {"id": child_id(parent, "chain", list(chain.steps)), **chain.to_dict()}
    if modules:
        rec["env_modules"] = {e: modules[e] for e in chain.envs if e in modules}
    return rec


class GroundStage(Stage):
    """Chain → grounded chain: executed (with setup calls when it starts mid-workflow), S0 with added
    distractors, and a verifier proven on the gold and initial states and by the soundness suite (CPU, no
    model): a chain whose reward a policy games (doing nothing, collateral writes, a wrong last write, a
    random policy) is a reject naming that policy, before any model writes its text."""

    name: ClassVar[str] = "grounded"
    resources: ClassVar[Resources] = Resources.CPU

    def __init__(
        self,
        *,
        long_context: bool = False,
        distractors_per_entity: int = 1,
        soundness: SoundnessSettings | None = DEFAULT_SOUNDNESS,
    ) -> None:
        self.long_context = long_context
        self.per_entity = distractors_per_entity
        self.soundness = soundness  # None: the suite is not run here (tasks audit and export still run it)

    def process(self, item: Record) -> Result:
        envs = list(item["envs"])
        modules = item.get("env_modules") or {}
        try:
            env_cls = task_env(envs, modules)
        except Exception as exc:  # noqa: BLE001 - a package that does not load is this record's problem
            return self.reject(item, GroundReason.UNKNOWN_ENV, f"cannot load {'+'.join(envs)}: {exc}")
        seed = int(stable_hash(item["id"], 8), 16)
        try:
            grounded = ground_chain(env_cls, list(item["steps"]), seed, long_context=self.long_context)
            grounded = build_initial_state(env_cls, grounded, seed, per_entity=self.per_entity)
            verifier, check = build_verifier(grounded, env_cls)
        except (GroundingError, SynthError) as exc:
            return self.reject(item, exc.reason, str(exc))
        kinds = distractors(grounded, envs if len(envs) > 1 else None)
        if kinds and not any(k["distractors"] for k in kinds.values()):
            return self.reject(
                item, SynthReason.NO_DISTRACTORS, f"no same-kind distractor for {sorted(kinds)}"
            )
        where = {"env": envs[0], "env_module": env_cls.__module__.rsplit(".", 1)[0]}
        if len(envs) > 1:
            where = {
                "env": env_cls.name,
                "env_module": None,
                "envs": envs,
                "env_modules": {e: c.__module__.rsplit(".", 1)[0] for e, c in env_cls.members.items()},
            }
        record = {
            "id": child_id(item["id"], "grounded", grounded["scenario_id"]),
            "chain_id": item["id"],
            **where,
            **grounded,
            "verifier": verifier,
            "verifier_check": check,
            "distractors": kinds,
        }
        if self.soundness is not None:
            report = run_soundness(grounded_task(record), self.soundness, env_cls)
            record["soundness"] = report.to_record()
            if not report.passed:
                failed = [c["message"] for c in report.checks() if not c["passed"]]
                return self.reject(item, report.reasons[0], "; ".join(failed), soundness=record["soundness"])
        return [record]


def grounded_task(item: Record) -> ToolTask:
    """The task a grounded record becomes, without its text (what the soundness suite needs): its id is
    the grounded record's, which the suite seeds by, as it does the task made from it."""
    keys = ("env", "env_module", "envs", "env_modules", "scenario_id", "initial_state", "verifier")
    return ToolTask(
        id=item["id"],
        **{k: item[k] for k in keys if item.get(k) is not None},
        gold_chain=[{"tool": s["tool"], "params": s["params"]} for s in item["steps"]],
    )


class SynthStage(Stage):
    """Grounded chain → Task: persona, composite instruction and user turns from the model (ASYNC)."""

    name: ClassVar[str] = "tasks"
    resources: ClassVar[Resources] = Resources.ASYNC

    def __init__(
        self, model: str, cache: str | None = None, *, strict: bool = False, ledger: Any = None
    ) -> None:
        self.model_spec = model
        self.cache = cache
        self.strict = strict  # the model must state every user-specified value; the code adds none
        self.ledger = ledger  # a UsageLedger for the run's model calls (this stage runs in-process)
        self._model: Any = None
        self._matcher: Any = None

    def setup(self) -> None:
        from dataclaw.envcraft.tasks.tool.personas import PersonaMatcher
        from dataclaw.models import get_model

        if self._model is None:
            self._model = get_model(self.model_spec, cache=self.cache, ledger=self.ledger)
        if self._matcher is None:
            self._matcher = PersonaMatcher()

    async def aprocess(self, item: Record) -> Result:
        from dataclaw.envcraft.tasks.tool.personas import env_document
        from dataclaw.envcraft.tasks.tool.synth import write_text

        env_cls = record_env(item)
        doc = env_document(env_cls)
        persona = pick_persona(self._matcher, doc, item["id"])
        try:
            text = await write_text(self._model, item, persona, strict=self.strict)
        except SynthError as exc:
            return self.reject(item, exc.reason, str(exc))
        return [task_record(item, persona, text, self._model.model_id)]


def task_record(item: Record, persona: dict[str, Any], text: dict[str, Any], model_id: str) -> Record:
    """The ``tasks.jsonl`` row of a grounded chain with its persona and text."""
    group = {"envs": item["envs"], "env_modules": item["env_modules"]} if item.get("envs") else {}
    task = ToolTask(
        id=child_id(item["id"], "task", persona["id"]),
        env=item["env"],
        env_module=item["env_module"],
        **group,
        scenario_id=item["scenario_id"],
        persona=persona,
        instruction=text["instruction"],
        user_turns=text["user_turns"],
        initial_state=item["initial_state"],
        verifier=item["verifier"],
        gold_chain=[{"tool": s["tool"], "params": s["params"]} for s in item["steps"]],
        metadata={
            "chain_id": item["chain_id"],
            "grounded_id": item["id"],
            "n_steps": len(item["steps"]),
            "write_fields": item["write_fields"],
            "user_specified": text["user"],
            "tool_derived": text["derived"],
            "values_added_by_code": text.get("values_added", []),
            "text_tries": text.get("tries", {}),
            "distractors": item["distractors"],
            "verifier_check": item["verifier_check"],
            **({"soundness": item["soundness"]} if item.get("soundness") else {}),
            "model": model_id,
        },
    )
    return task.to_row()


def replay_task(task: ToolTask | Record, calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Run ``calls`` (default: the gold chain) from the task's initial state in a fresh session and
    score the end state with the task's verifier: ``{"score", "passed", "errors"}``."""
    task = ToolTask.of(task)
    calls = task.gold_chain if calls is None else calls
    results, final = run_calls(record_env(task), task.scenario_id, task.initial_state, calls)
    result = evaluate(task.verifier, final)
    result["errors"] = sum(r["status"] != "ok" for r in results)
    return result


def add_guard(task: ToolTask | Record, env_cls: Any = None) -> ToolTask:
    """A task made before guards existed, with the ``unchanged`` guard of its gold run added (the gold
    chain replayed from its initial state, one guard per member of a group; its other assertions kept
    as they are, so an assertion that pays for doing nothing still does: the soundness suite says so).
    A task that already has a guard is returned as it is."""
    from dataclaw.envcraft.tasks.tool.initial import env_allowance
    from dataclaw.envcraft.tasks.tool.verifier import GUARD_OPS, derive_guard, pointer

    task = ToolTask.of(task)
    if any(a.get("op") in GUARD_OPS for a in task.verifier.get("assertions", [])):
        return task
    env_cls = env_cls or record_env(task)
    _, initial = run_calls(env_cls, task.scenario_id, task.initial_state, [])
    _, final = run_calls(env_cls, task.scenario_id, task.initial_state, task.gold_chain)
    members = list(getattr(env_cls, "members", {}) or {})
    guards = [
        {**derive_guard(initial[e], final[e], env_allowance(env_cls, initial[e], e)), "path": pointer([e])}
        for e in members
    ] or [derive_guard(initial, final, env_allowance(env_cls, initial))]
    verifier = {**task.verifier, "assertions": [*task.verifier["assertions"], *guards]}
    return task.with_verifier(verifier)


keep_old_names(__name__, {"load_env": "dataclaw.envcraft.tasks.tool.loading"})
