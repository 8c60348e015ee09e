"""Specification expansion (EnvCraft §3.1): a model turns a scenario into E_spec, then T_spec.

Three JSON-schema-constrained calls, each constrained by what the one before declared: the entities
(``entities``), then the rest of E_spec (``state``: state fields, rules, world data, scenarios; every
entity reference an enum of the declared entities), then T_spec (``tools``; ``state_fields_affected`` an
enum of the declared state fields). A weak model thus cannot break most references; code validates all of
them anyway (:func:`~.spec.check_e_spec`, :func:`~.spec.check_t_spec`). An invalid part is sent back with
its issues for repair, in order, at most ``repair_rounds`` repair calls in all (default 2).
What is still invalid after that is an invalid :class:`SpecResult` with its issues (a reject, never an
exception). A valid part is then judged by the meaning gates (:mod:`.meaning`: entity names, rules, tools
that perform the description's operations, coverage); with ``meaning_rounds`` it is sent back once more,
naming the gates' findings and the description's words the spec does not use, and the new answer is kept
only when it is valid and fails fewer gates. The final spec's :class:`~.meaning.MeaningReport` is
``SpecResult.meaning`` (a spec that still fails is kept, with its report: the library counts it apart).
Prompts are short and list only what the schema cannot say, so the embedded SmolLM2-135M
can follow them. First answers are greedy, repairs sampled with a seed derived from the scenario and the
call, so reruns and the response cache agree.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import ValidationError

from dataclaw.core.ids import stable_hash
from dataclaw.envcraft.scenarios import ScenarioSpec
from dataclaw.envcraft.synth.meaning import (
    MIN_COVERAGE,
    MeaningCode,
    MeaningIssue,
    MeaningReport,
    check_spec_meaning,
)
from dataclaw.envcraft.synth.spec import (
    COMPACT,
    FULL,
    ESpec,
    Issue,
    IssueCode,
    SchemaLimits,
    TSpec,
    answer_to_spec,
    answer_to_tools,
    check_e_spec,
    check_t_spec,
    entities_schema,
    state_schema,
    t_spec_schema,
)
from dataclaw.models import ModelError, ModelOutputError

REPAIR_ROUNDS = 2
MEANING_ROUNDS = 1
"""Meaning repairs the spec stages ask for, apart from the ``repair_rounds`` (which keep the spec valid)."""
E_SPEC_TOKENS = 1200
"""Token budget of each E_spec call (entities, state)."""
T_SPEC_TOKENS = 1200
REPAIR_TEMPERATURE = 0.7
"""Repairs are sampled (seeded from the scenario and the call, so reruns and the cache agree): a greedy
weak model tends to give its broken answer again."""
FREQUENCY_PENALTY = 0.3
"""Damps the loops small models fall into inside long JSON strings."""
MAX_ISSUES_SHOWN = 8
"""Issues listed in a repair prompt (the first ones; a weak model cannot use more)."""

Findings = Sequence[Issue | MeaningIssue]
"""What a repair prompt lists: validation issues, or (once valid) meaning findings; each has ``line()``."""

SYSTEM = "You design simulated tool environments for training AI agents. Answer with JSON only."

ENTITIES_TASK = """List the entities of this environment as JSON: the record types it stores, each with
different snake_case attributes (name and type) and an id_field that repeats one attribute name, e.g.
attributes ticket_id, title, status with id_field ticket_id."""

STATE_TASK = """Write the rest of the environment specification as JSON:
- collections: the state field holding each entity's records (e.g. tickets for ticket).
- other_state: logs, counters or settings the environment keeps.
- business_rules: rules that decide which changes are valid.
- world_data.records: example records; their fields use the entity's attributes.
- scenarios: tasks with an ISO base_time, the entities used, gold_facts and scoring_rules (weight > 0)."""

T_TASK = """Write the tools an agent calls in this environment, as JSON.
- "read" tools change nothing: modifies_state false, state_fields_affected empty.
- "write" tools change state: modifies_state true, state_fields_affected names the fields they change.
- At least one read tool and one write tool. Names and parameters are snake_case; say which
  parameters are required."""


class SpecReason(StrEnum):
    """Why a scenario did not become a specification."""

    INVALID_SPEC = "invalid_spec"
    """Still invalid after the repair rounds (the issues are in the reject's detail)."""
    MODEL_ERROR = "model_error"
    """The model could not be asked (unreachable, refused the request, replay miss)."""


@dataclass
class SpecResult:
    """The outcome of one expansion: the parts (when they parsed), the remaining issues and the history."""

    scenario_id: str
    e_spec: ESpec | None = None
    t_spec: TSpec | None = None
    issues: list[Issue] = field(default_factory=list)
    repairs: int = 0
    calls: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    meaning: MeaningReport | None = None
    """The meaning gates' report on the final spec (None when not even the entities parsed)."""
    meaning_repairs: int = 0

    @property
    def valid(self) -> bool:
        return self.e_spec is not None and self.t_spec is not None and not self.issues


def limits_for(model_id: str) -> SchemaLimits:
    """The schema bounds for a model: compact for the embedded ``local:`` models (a small model fills every
    bound, so the worst case must fit its budget), full for served models."""
    return COMPACT if model_id.startswith("local:") else FULL


def _scenario_line(scenario: ScenarioSpec) -> str:
    return f"Scenario: {scenario.name} ({scenario.category.value}). {scenario.description}"


def _messages(body: str, previous: str | None, issues: Findings) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": body + _repair(previous, issues)},
    ]


def entities_prompt(scenario: ScenarioSpec, previous: str | None, issues: Findings) -> list[dict[str, str]]:
    """Messages asking for the entities (or, with ``issues``, for their repair)."""
    return _messages(f"{_scenario_line(scenario)}\n\n{ENTITIES_TASK}", previous, issues)


def _entity_summary(spec: ESpec) -> str:
    return "\n".join(
        f"- {e.name} (id {e.id_field}): {', '.join(a.name for a in e.attributes)}" for e in spec.entities
    )


def state_prompt(
    scenario: ScenarioSpec, spec: ESpec, previous: str | None, issues: Findings
) -> list[dict[str, str]]:
    """Messages asking for the rest of E_spec over ``spec``'s entities (or for its repair)."""
    body = f"{_scenario_line(scenario)}\n\nEntities:\n{_entity_summary(spec)}\n\n{STATE_TASK}"
    return _messages(body, previous, issues)


def _state_summary(spec: ESpec) -> str:
    entities = {e.name: e for e in spec.entities}
    lines = []
    for f in spec.state_fields:
        ent = entities.get(f.entity)
        attrs = f": {', '.join(a.name for a in ent.attributes)}" if ent is not None else ""
        what = f"{f.kind} of {f.entity}{attrs}" if f.entity else f.kind
        lines.append(f"- {f.name} ({what})")
    return "\n".join(lines)


def t_prompt(
    scenario: ScenarioSpec, spec: ESpec, previous: str | None, issues: Findings
) -> list[dict[str, str]]:
    """Messages asking for T_spec over ``spec``'s state (or, with ``issues``, for its repair)."""
    body = f"{_scenario_line(scenario)}\n\nState fields:\n{_state_summary(spec)}\n\n{T_TASK}"
    return _messages(body, previous, issues)


def _repair(previous: str | None, issues: Findings) -> str:
    if not issues:
        return ""
    shown = "\n".join(f"- {i.line()}" for i in issues[:MAX_ISSUES_SHOWN])
    more = f"\n- and {len(issues) - MAX_ISSUES_SHOWN} more" if len(issues) > MAX_ISSUES_SHOWN else ""
    before = (
        f"\n\nYour previous answer:\n{previous}" if previous else "\n\nYour previous answer was unusable."
    )
    return f"{before}\n\nFix these problems and answer with the whole corrected JSON:\n{shown}{more}"


def _schema_issue(exc: Exception) -> Issue:
    """The answer did not parse or fit the schema. The model's own name is cut from the message: the
    repair prompt must not depend on which backend answered (recordings replay under another name)."""
    text = " ".join(str(exc).split())
    model = getattr(exc, "model", "")
    if model and text.startswith(f"model {model} "):
        text = text[len(f"model {model} ") :]
    return Issue(code=IssueCode.SCHEMA, path="$", message=f"not JSON of the requested schema: {text[:200]}")


async def _ask(
    model: Any, messages: list[dict[str, str]], schema: dict[str, Any], max_tokens: int, seed: int | None
) -> tuple[dict[str, Any] | None, Issue | None]:
    """One constrained call, greedy, or sampled with ``seed``: (parsed answer, None) or (None, the schema
    issue). ModelError other than a bad answer propagates (the caller makes it a model_error reject)."""
    params: dict[str, Any] = {"temperature": 0.0}
    if seed is not None:
        params = {"temperature": REPAIR_TEMPERATURE, "seed": seed}
    try:
        done = await model.complete(
            messages, schema=schema, max_tokens=max_tokens, frequency_penalty=FREQUENCY_PENALTY, **params
        )
    except ModelOutputError as exc:
        return None, _schema_issue(exc)
    return done.parsed, None


def _as_e_spec(scenario: ScenarioSpec, *answers: dict[str, Any]) -> ESpec:
    """E_spec from the answers; the framework owns the name and the task description (the scenario's)."""
    merged: dict[str, Any] = {}
    for answer in answers:
        merged.update(answer_to_spec(answer))
    return ESpec.model_validate(
        {**merged, "environment_name": scenario.id, "task_description": scenario.description}
    )


_ENTITY_PATHS = ("entities", "domains")


def _entity_issues(issues: list[Issue]) -> list[Issue]:
    """The issues the entities answer itself must fix (an entity no state field stores is the state's)."""
    return [i for i in issues if i.path.startswith(_ENTITY_PATHS) and i.code is not IssueCode.UNSTORED_ENTITY]


def _meaning_findings(report: MeaningReport, found: list[MeaningIssue]) -> list[MeaningIssue]:
    """A part's meaning findings as its repair prompt lists them, plus the description's words the spec
    does not use yet (the coverage finding names them itself)."""
    out = list(found)
    if report.missing and not any(i.code == MeaningCode.LOW_COVERAGE for i in found):
        words = ", ".join(report.missing[:12])
        out.append(
            MeaningIssue(
                code="uncovered_words",
                message=f"words of the scenario the spec does not use yet: {words}",
                path="coverage",
            )
        )
    return out


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


async def expand_scenario(
    model: Any,
    scenario: ScenarioSpec,
    *,
    repair_rounds: int = REPAIR_ROUNDS,
    e_tokens: int = E_SPEC_TOKENS,
    t_tokens: int = T_SPEC_TOKENS,
    limits: SchemaLimits | None = None,
    meaning_rounds: int = 0,
    min_coverage: float = MIN_COVERAGE,
) -> SpecResult:
    """Expand ``scenario`` into a validated (E_spec, T_spec), repairing at most ``repair_rounds`` times
    (``limits``: schema bounds, default :func:`limits_for` the model), then at most ``meaning_rounds``
    times for the meaning gates (``min_coverage``: their coverage threshold).

    Raises :class:`~dataclaw.models.ModelError` only when the model cannot be asked at all."""
    result = SpecResult(scenario_id=scenario.id)
    limits = limits or limits_for(getattr(model, "model_id", ""))
    meaning_off = meaning_rounds <= 0

    def judge(e: ESpec, t: TSpec | None) -> MeaningReport:
        spec = {
            "e_spec": e.model_dump(mode="json"),
            "t_spec": [x.unified_schema() for x in t.tools] if t is not None else [],
        }
        return check_spec_meaning(spec, scenario.description, env_name=scenario.id, min_coverage=min_coverage)

    async def part(
        name: str,
        messages: list[dict[str, str]],
        schema: dict[str, Any],
        tokens: int,
        build,
        check,
        meaning: list[str] | None = None,
    ):
        """One call: (answer, parsed part, issues); a schema or validation failure is a SCHEMA issue."""
        repair = bool(result.history) and result.history[-1]["part"] == name
        seed = int(stable_hash([scenario.id, name, result.calls], 8), 16) % 2**31 if repair else None
        answer, issue = await _ask(model, messages, schema, tokens, seed)
        result.calls += 1
        parsed: Any = None
        issues = [issue] if issue else []
        if answer is not None:
            try:
                parsed = build(answer)
            except (ValidationError, ValueError) as exc:  # ValidationError is a ValueError; both named
                issues = [_schema_issue(exc)]
        if parsed is not None:
            issues = check(parsed)
        step: dict[str, Any] = {
            "part": name,
            "call": result.calls,
            "issues": sorted({i.code for i in issues}),
        }
        if meaning is not None:
            step["meaning"] = meaning
        result.history.append(step)
        return answer, parsed, issues

    async def repaired(name: str, prompt, schema: dict[str, Any], tokens: int, build, check, spec_of=None):
        """The part asked, then repaired while it has issues and repair rounds are left; once valid, sent
        back for its meaning findings while meaning rounds are left (``spec_of``: the parsed part as the
        (E_spec, T_spec or None) the gates judge)."""
        nonlocal meaning_off
        answer, parsed, issues = await part(name, prompt(None, []), schema, tokens, build, check)
        while issues and result.repairs < repair_rounds:
            result.repairs += 1
            prev = _compact(answer) if answer is not None else None
            answer, parsed, issues = await part(name, prompt(prev, issues), schema, tokens, build, check)
        while not issues and parsed is not None and spec_of is not None and not meaning_off:
            if result.meaning_repairs >= meaning_rounds:
                break
            report = judge(*spec_of(parsed))
            found = report.for_part(name)
            if not found:
                break
            result.meaning_repairs += 1
            codes = sorted({i.code for i in found})
            shown = _meaning_findings(report, found)
            try:
                new = await part(
                    name, prompt(_compact(answer), shown), schema, tokens, build, check, meaning=codes
                )
            except (
                ModelError
            ) as exc:  # the valid answer stands; a model that cannot answer is not asked again
                if getattr(exc, "fatal", False):
                    raise
                meaning_off = True
                result.history.append(
                    {"part": name, "call": result.calls, "meaning": codes, "error": str(exc)[:200]}
                )
                break
            if not new[2] and new[1] is not None and len(judge(*spec_of(new[1])).for_part(name)) < len(found):
                answer, parsed = new[0], new[1]
        return answer, parsed, issues

    def entities_only(spec: ESpec) -> list[Issue]:
        return _entity_issues(check_e_spec(spec))

    async def steps() -> None:
        """The three parts in order, each over what the one before declared; stops at an invalid one."""
        ent_answer, ents, issues = await repaired(
            "entities",
            lambda prev, iss: entities_prompt(scenario, prev, iss),
            entities_schema(limits),
            e_tokens,
            lambda a: _as_e_spec(scenario, a),
            entities_only,
            lambda e: (e, None),
        )
        if issues or ents is None:
            result.e_spec, result.issues = ents, issues
            return
        _, e_spec, issues = await repaired(
            "state",
            lambda prev, iss: state_prompt(scenario, ents, prev, iss),
            state_schema({e.name: [a.name for a in e.attributes] for e in ents.entities}, limits),
            e_tokens,
            lambda a: _as_e_spec(scenario, ent_answer, a),
            check_e_spec,
            lambda e: (e, None),
        )
        result.e_spec = e_spec
        if issues or e_spec is None:
            result.issues = issues
            return
        _, t_spec, issues = await repaired(
            "tools",
            lambda prev, iss: t_prompt(scenario, e_spec, prev, iss),
            t_spec_schema([f.name for f in e_spec.state_fields], limits),
            t_tokens,
            lambda a: TSpec.model_validate(answer_to_tools(a)),
            lambda t: check_t_spec(t, e_spec),
            lambda t: (e_spec, t),
        )
        result.t_spec, result.issues = t_spec, issues

    await steps()
    if result.e_spec is not None:
        result.meaning = judge(result.e_spec, result.t_spec)
    return result
