"""The task pipeline as resumable stages: chains → ``grounded`` (execute, verifier) → ``tasks`` (text).

The Task record (one JSON object per line of ``tasks.jsonl``)::

    {"id", "env", "env_module", "scenario_id",
     "persona": {"id", "description", "similarity"},
     "instruction": composite request, "user_turns": [str, ...],
     "initial_state": full session state S0, "verifier": {"version": 1, "assertions": [...]},
     "gold_chain": [{"tool", "params"}, ...], "metadata": {...}}

Replay it with :func:`replay_task`: a fresh session, ``restore_env_state(initial_state)``, the calls,
then :func:`dataclaw.envcraft.tasks.verifier.evaluate` on the session state.
"""

from __future__ import annotations

import tempfile
from typing import Any, ClassVar

from dataclaw.core.ids import child_id, root_id, stable_hash
from dataclaw.envcraft.graph.sampling import ToolChain
from dataclaw.envcraft.tasks.execute import GroundingError, GroundReason, ground_chain
from dataclaw.envcraft.tasks.initial import build_verifier, distractors
from dataclaw.envcraft.tasks.synth import SynthError, SynthReason, pick_persona
from dataclaw.envcraft.tasks.verifier import evaluate
from dataclaw.pipeline.stage import Record, Resources, Result, Stage


def load_env(env: str, module: str | None = None) -> Any:
    """The Environment class of an archetype name or an importable env package."""
    from dataclaw.envcraft import archetypes
    from dataclaw.envcraft.runtime import load_env_package

    if env in archetypes.names():
        return archetypes.get(env).env_cls
    return load_env_package(module or env).env_cls


def chain_record(chain: ToolChain, modules: dict[str, str] | None = None) -> Record:
    """A ``chains.jsonl`` record: deterministic id from the environments and steps."""
    parent = root_id("env", "+".join(chain.envs), list(chain.envs))
    rec = {"id": child_id(parent, "chain", list(chain.steps)), **chain.to_dict()}
    if modules:
        rec["env_modules"] = {e: modules[e] for e in chain.envs if e in modules}
    return rec


class GroundStage(Stage):
    """Chain → grounded chain with a verifier proven on the gold and initial states (CPU, no model)."""

    name: ClassVar[str] = "grounded"
    resources: ClassVar[Resources] = Resources.CPU

    def process(self, item: Record) -> Result:
        if len(item["envs"]) != 1:
            return self.reject(
                item, GroundReason.CROSS_ENV, "cross-environment chains are sampled but not yet grounded"
            )
        env = item["envs"][0]
        try:
            env_cls = load_env(env, (item.get("env_modules") or {}).get(env))
        except Exception as exc:  # noqa: BLE001 - a package that does not load is this record's problem
            return self.reject(item, GroundReason.UNKNOWN_ENV, f"cannot load {env}: {exc}")
        seed = int(stable_hash(item["id"], 8), 16)
        try:
            grounded = ground_chain(env_cls, list(item["steps"]), seed)
            verifier, check = build_verifier(grounded)
        except (GroundingError, SynthError) as exc:
            return self.reject(item, exc.reason, str(exc))
        kinds = distractors(grounded["initial_state"], grounded["steps"])
        if kinds and not any(k["distractors"] for k in kinds.values()):
            return self.reject(
                item, SynthReason.NO_DISTRACTORS, f"no same-kind distractor for {sorted(kinds)}"
            )
        return [
            {
                "id": child_id(item["id"], "grounded", grounded["scenario_id"]),
                "chain_id": item["id"],
                "env": env,
                "env_module": env_cls.__module__.rsplit(".", 1)[0],
                **grounded,
                "verifier": verifier,
                "verifier_check": check,
                "distractors": kinds,
            }
        ]


class SynthStage(Stage):
    """Grounded chain → Task: persona, composite instruction and user turns from the model (ASYNC)."""

    name: ClassVar[str] = "tasks"
    resources: ClassVar[Resources] = Resources.ASYNC

    def __init__(self, model: str, cache: str | None = None) -> None:
        self.model_spec = model
        self.cache = cache
        self._model: Any = None
        self._matcher: Any = None

    def setup(self) -> None:
        from dataclaw.envcraft.tasks.personas import PersonaMatcher
        from dataclaw.models import get_model

        if self._model is None:
            self._model = get_model(self.model_spec, cache=self.cache)
        if self._matcher is None:
            self._matcher = PersonaMatcher()

    async def aprocess(self, item: Record) -> Result:
        from dataclaw.envcraft.tasks.personas import env_document
        from dataclaw.envcraft.tasks.synth import write_text

        env_cls = load_env(item["env"], item.get("env_module"))
        doc = env_document(env_cls)
        persona = pick_persona(self._matcher, doc, item["id"])
        try:
            text = await write_text(self._model, doc, item, persona)
        except SynthError as exc:
            return self.reject(item, exc.reason, str(exc))
        return [task_record(item, persona, text, self._model.model_id)]


def task_record(item: Record, persona: dict[str, Any], text: dict[str, Any], model_id: str) -> Record:
    return {
        "id": child_id(item["id"], "task", persona["id"]),
        "env": item["env"],
        "env_module": item["env_module"],
        "scenario_id": item["scenario_id"],
        "persona": persona,
        "instruction": text["instruction"],
        "user_turns": text["user_turns"],
        "initial_state": item["initial_state"],
        "verifier": item["verifier"],
        "gold_chain": [{"tool": s["tool"], "params": s["params"]} for s in item["steps"]],
        "metadata": {
            "chain_id": item["chain_id"],
            "grounded_id": item["id"],
            "n_steps": len(item["steps"]),
            "write_fields": item["write_fields"],
            "user_specified": text["user"],
            "tool_derived": text["derived"],
            "distractors": item["distractors"],
            "verifier_check": item["verifier_check"],
            "model": model_id,
        },
    }


def replay_task(task: Record, calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Run ``calls`` (default: the gold chain) from the task's initial state in a fresh session and
    score the end state with the task's verifier: ``{"score", "passed", "errors"}``."""
    env_cls = load_env(task["env"], task.get("env_module"))
    with tempfile.TemporaryDirectory(prefix="dataclaw-replay-") as root:
        env = env_cls(root)
        sid = env.create_session(task["scenario_id"], session_id="replay")
        env.restore_env_state(task["initial_state"])
        errors = 0
        for call in task["gold_chain"] if calls is None else calls:
            errors += env.call(sid, call["tool"], **call.get("params", {}))["status"] != "ok"
        result = evaluate(task["verifier"], env.get_session_state(sid))
    result["errors"] = errors
    return result
