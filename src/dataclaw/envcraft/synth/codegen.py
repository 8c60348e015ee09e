"""Code generation (EnvCraft §3.2, the paper's path): a model writes an environment package from a spec.

The prompt unifies the three inputs of §3.2 — the retrieved interaction archetypes (P_proto: their B.3
blueprint text and reference code), E_spec and T_spec — with the runtime contract (C.1 adapted: the
infrastructure the paper asks every package to write again, session store, locks, CLI and error mapping,
is ``dataclaw.envcraft.runtime``, so the model writes only domain logic). The answer is constrained to the
C.2 output form (files with roles: domain modules, the Environment class, the evaluator, the repository,
world data, scenarios, README, SKILL.md < 50 lines, the package's own tests); :mod:`.heal` writes it
(infrastructure and unsafe files taken out, the ``__init__``/``__main__`` skeleton written by us), audits
it and repairs it with the findings for at most ``repair_rounds`` rounds.

    model = get_model("openai:gpt-5")
    outcome = await generate_package(model, spec_record, Path("LIB"))   # LIB/<environment name>/
    outcome.passed, outcome.reasons, outcome.rounds, outcome.calls, outcome.tokens
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError
from dataclaw.envcraft.audit import DynamicOptions
from dataclaw.envcraft.audit.rules import RULES
from dataclaw.envcraft.scenarios import blueprint
from dataclaw.envcraft.synth.compile.package import is_claw_scenario, package_name
from dataclaw.envcraft.synth.heal import (
    DEFAULT_OPTIONS,
    REPAIR_ROUNDS,
    SYSTEM,
    SynthOutcome,
    SynthReason,
    _retry_note,
    answer_schema,
    apply_answer,
    ask,
    heal_loop,
    reason,
)
from dataclaw.envcraft.synth.retrieval import FALLBACK, Retrieved, prompt_section

RUNTIME_README = Path(__file__).resolve().parents[1] / "runtime" / "README.md"
REFERENCE_CHARS = 26_000
"""Reference code quoted per retrieved archetype, at most (files in :data:`REFERENCE_ORDER`, cut to fit)."""
REFERENCE_ORDER = ("env.py", "state.py", "evaluator.py")
"""Reference files quoted first (the rest of the package's modules follow, then SKILL.md)."""

OUTPUT_TASK = """Write the package as JSON in the output schema:
- "environment_name": "{env}".
- "documentation": README.md (task domain, session model, trainer bootstrap with `python -m {env}
  prepare-rollout --scenario-id ID --state-root DIR --show-bindings`, the agent-visible commands, how to
  stress-test it with `dataclaw env audit`).
- "skill_md": SKILL.md, fewer than 50 lines: the workflow, the preferred tools, the critical rules.
- "files": every other file, each with its path relative to the package folder and its role:
  environment_class (env.py: the Environment subclass), domain_module (one module of @tool functions per
  domain), evaluator (evaluator.py: EVALUATOR = Evaluator() with weighted dimensions; mark each dimension
  that measures the scenario's goal with goal=True, e.g. @EVALUATOR.dimension("goal_state", 0.5, "...",
  goal=True): the others are then paid only in proportion to goal progress, so doing nothing and a
  destructive move score 0), repository
  (state.py: reads data/ once and builds DEFAULT_STATE; the only module that reads files), helper (other
  pure modules), data_scenario (data/scenarios/<scenario_id>.json, at least two, each with a
  reference_solution that scores >= 0.9 and at least one with forbidden_actions the evaluator penalises),
  data_accounts / data_contacts / data_attachment / data_artifact (world data under data/), test (the
  package's own pytest tests under tests/: session isolation, concurrent writes, a correct workflow scores
  high, stale or forbidden actions are penalised, trainer commands hidden from the agent).
- "evaluator": the dimensions (name, weight, description); "concurrency_test": the scenarios and
  assertions the tests cover.
Rules: the package is importable as `{env}`; modules import each other relatively (`from . import
tickets`, `from .state import DEFAULT_STATE`) and tests import it as `from {env} import ENVIRONMENT`.
Do not write __init__.py or __main__.py: dataclaw writes them (__init__ exports your Environment subclass
as ENVIRONMENT; __main__ runs the runtime CLI). Never write session storage, file locks, CLI parsing or
error mapping: they come from dataclaw.envcraft.runtime, and files with role store or cli are discarded.
Implement every tool of T_spec with its name, parameters and side effect."""

CLAW_TASK = """This is a claw-specific scenario (the agent also has a bash tool in its harness): SKILL.md
must be real workflow guidance for this domain — which commands and tools to use in which order, what to
check before acting, what never to do."""


def _retrieved(spec: dict[str, Any]) -> list[Retrieved]:
    """The archetypes of a spec record (``archetypes[].name``) as retrieval results; the reference package
    when the record names none."""
    out = []
    for a in spec.get("archetypes") or []:
        name = a.get("name") if isinstance(a, dict) else str(a)
        if not name:
            continue
        out.append(
            Retrieved(
                blueprint(name),
                int(a.get("score", 0)) if isinstance(a, dict) else 0,
                tuple(a.get("matched", ())) if isinstance(a, dict) else (),
                pinned=bool(a.get("pinned", False)) if isinstance(a, dict) else False,
                fallback=bool(a.get("fallback", False)) if isinstance(a, dict) else False,
            )
        )
    return out[:2] or [Retrieved(blueprint(FALLBACK), 0, (), fallback=True)]


def reference_code(retrieved: Retrieved, budget: int = REFERENCE_CHARS) -> str:
    """The archetype's reference files as the prompt quotes them (``env.py``, ``state.py``, ``evaluator.py``
    first, then its domain modules and SKILL.md), cut to ``budget`` characters."""
    files = retrieved.reference_files()
    order = {n: i for i, n in enumerate(REFERENCE_ORDER)}
    files = sorted(
        (p for p in files if p.name != "README.md"),
        key=lambda p: (order.get(p.name, len(order)), p.suffix == ".md", p.name),
    )
    blocks = []
    left = budget
    for p in files:
        text = p.read_text(encoding="utf-8")
        if len(text) > left:
            text = text[: max(left, 0)] + "\n# … (cut here)"
        left -= len(text)
        fence = "python" if p.suffix == ".py" else "markdown"
        blocks.append(f"### archetypes/{retrieved.name}/{p.name}\n```{fence}\n{text.rstrip()}\n```")
        if left <= 0:
            break
    return "\n\n".join(blocks)


def generation_messages(spec: dict[str, Any], env_name: str) -> list[dict[str, str]]:
    """The generation prompt for a spec record (as SpecStage writes it): scenario, E_spec, T_spec, the
    retrieved archetypes (blueprint and reference code), the runtime contract, the audit rules, the task."""
    scenario = spec.get("scenario") or {}
    retrieved = _retrieved(spec)
    rules = "\n".join(f"- {r.id} {r.name}: {r.summary}" for _, r in RULES.items())
    refs = "\n\n".join(reference_code(r) for r in retrieved)
    task = OUTPUT_TASK.format(env=env_name)
    if is_claw_scenario(scenario, None):
        task += "\n" + CLAW_TASK
    body = (
        f"# Environment `{env_name}`\n"
        f"Scenario: {scenario.get('name', env_name)} ({scenario.get('category', '')}). "
        f"{scenario.get('description', '')}\n\n"
        f"## Environment specification (E_spec)\n```json\n{json.dumps(spec['e_spec'], indent=1)}\n```\n\n"
        f"## Tool specification (T_spec, unified tool schema)\n"
        f"```json\n{json.dumps(spec['t_spec'], indent=1)}\n```\n\n"
        f"## Interaction archetypes (P_proto)\n{prompt_section(retrieved)}\n\n"
        f"## Reference implementations\n{refs}\n\n"
        f"## Runtime contract\n{RUNTIME_README.read_text(encoding='utf-8')}\n\n"
        f"## Audit (static rules; then the package runs in a sandbox: every scenario from S0, the contract "
        f"suite, its own tests)\n{rules}\n\n"
        f"## Task\n{task}"
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": body}]


def env_name_of(spec: dict[str, Any]) -> str:
    """The package (and import) name: the spec's environment name made a safe identifier."""
    e = spec.get("e_spec") or {}
    return package_name(str(e.get("environment_name") or spec.get("scenario_id") or "env"))


def _step(round_: int, failure: dict[str, Any] | None) -> dict[str, Any]:
    return {"step": "generate", "round": round_, **({"codes": [failure["code"]]} if failure else {})}


async def generate_package(
    model: Any,
    spec: dict[str, Any],
    out_dir: Path,
    *,
    repair_rounds: int = REPAIR_ROUNDS,
    options: DynamicOptions | None = None,
) -> SynthOutcome:
    """Generate ``out_dir/<environment name>`` from a spec record, audit it, and self-heal it for at most
    ``repair_rounds`` rounds (an answer that is not the output schema uses a round too). Never raises for a
    bad answer or a bad package: the outcome says why it failed. Raises for a fatal model error, for no
    model, for a folder there that code generation did not write, and when the sandbox is unavailable."""
    outcome = SynthOutcome(
        path="codegen", package=None, passed=False, rounds=0, reasons=[], calls=0, audit=None
    )
    if not isinstance(spec.get("e_spec"), dict) or not isinstance(spec.get("t_spec"), list):
        why = "the spec record has no e_spec/t_spec to generate from"
        outcome.reasons = [reason(SynthReason.INVALID_SPEC, why)]
        return outcome
    if model is None:
        raise ConfigError("code generation needs a model (give --model, or use the compile path)")
    env_name = env_name_of(spec)
    outcome.env_name = env_name
    folder = Path(out_dir).resolve() / env_name
    messages = generation_messages(spec, env_name)
    answer, failure = await ask(model, messages, answer_schema(), outcome)
    outcome.history.append(_step(0, failure))
    while failure is not None:
        outcome.reasons = [failure]
        if failure["code"] == SynthReason.MODEL_ERROR or outcome.rounds >= repair_rounds:
            return outcome
        outcome.rounds += 1
        messages = _retry_note(messages, failure)
        answer, failure = await ask(model, messages, answer_schema(), outcome)
        outcome.history.append(_step(outcome.rounds, failure))
    assert answer is not None
    applied = apply_answer(
        folder, answer, env_name, fresh=True, claw=is_claw_scenario(spec.get("scenario") or {}, None)
    )
    outcome.package = folder
    outcome.stripped += applied.stripped
    return await heal_loop(
        model,
        folder,
        outcome,
        repair_rounds=repair_rounds,
        context={"spec": spec, "path": "codegen"},
        options=options or DEFAULT_OPTIONS,
    )
