"""Specification expansion as a resumable stage: scenario records → ``specs.jsonl`` (or rejects).

Input records come from :func:`scenario_record` (id derived from the scenario's content, so an edited
scenario is a new record and a rerun skips the ones already expanded). A spec record::

    {"id", "scenario_id", "scenario": {...}, "e_spec": {...}, "t_spec": [C.3 tool, ...],
     "archetypes": [{"name", "number", "score", "matched", "pinned", "fallback", "reference_files"}],
     "repairs", "calls", "history": [{"part", "call", "issues"}], "model",
     "meaning": {"passed", "coverage", "missing", "codes", "issues", ...} (:mod:`.meaning`)}

A valid spec that fails the meaning gates after its meaning repair is still a record: its ``meaning`` says
so, and the library counts it apart from the passing ones.

A scenario whose spec is still invalid after the repair rounds is a reject (``invalid_spec``) whose
detail holds the issues (code, path, message) and the history; an unreachable model is ``model_error``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dataclaw.core.ids import child_id, root_id
from dataclaw.envcraft.scenarios import ScenarioSpec
from dataclaw.envcraft.synth.expand import (
    MEANING_ROUNDS,
    REPAIR_ROUNDS,
    SpecReason,
    SpecResult,
    expand_scenario,
)
from dataclaw.envcraft.synth.retrieval import retrieve
from dataclaw.models import ModelError
from dataclaw.pipeline.stage import Record, Resources, Result, Stage


def scenario_record(scenario: ScenarioSpec) -> Record:
    """The stage's input record for one scenario (``source`` included: it says where it came from)."""
    body = {**scenario.model_dump(mode="json"), "source": scenario.source}
    return {"id": root_id("scenario", scenario.id, body), "scenario": body}


def spec_record(item: Record, scenario: ScenarioSpec, result: SpecResult, model_id: str) -> Record:
    if result.e_spec is None or result.t_spec is None:
        raise ValueError(f"spec_record: the spec of {scenario.id} is incomplete")
    found = retrieve(result.e_spec, result.t_spec, scenario)
    return {
        "id": child_id(item["id"], "spec", model_id),
        "scenario_id": scenario.id,
        "scenario": item["scenario"],
        "e_spec": result.e_spec.model_dump(mode="json"),
        "t_spec": [t.unified_schema() for t in result.t_spec.tools],
        "archetypes": [r.to_dict() for r in found],
        "repairs": result.repairs,
        "calls": result.calls,
        "history": result.history,
        "model": model_id,
        "meaning": result.meaning.to_dict() if result.meaning is not None else None,
    }


class SpecStage(Stage):
    """Scenario → E_spec + T_spec, validated and repaired, with the retrieved archetypes (ASYNC)."""

    name: ClassVar[str] = "specs"
    resources: ClassVar[Resources] = Resources.ASYNC

    def __init__(
        self,
        model: str,
        cache: str | None = None,
        *,
        repair_rounds: int = REPAIR_ROUNDS,
        meaning_rounds: int = MEANING_ROUNDS,
        ledger: Any = None,
    ) -> None:
        self.model_spec = model
        self.cache = cache
        self.repair_rounds = repair_rounds
        self.meaning_rounds = meaning_rounds
        self.ledger = ledger
        self._model: Any = None

    def setup(self) -> None:
        from dataclaw.models import get_model

        if self._model is None:
            self._model = get_model(self.model_spec, cache=self.cache, ledger=self.ledger)

    async def aprocess(self, item: Record) -> Result:
        scenario = ScenarioSpec.model_validate(item["scenario"])
        try:
            result = await expand_scenario(
                self._model, scenario, repair_rounds=self.repair_rounds, meaning_rounds=self.meaning_rounds
            )
        except ModelError as exc:
            return self.reject(item, SpecReason.MODEL_ERROR, str(exc), scenario_id=scenario.id)
        if not result.valid:
            issues = [i.model_dump(mode="json") for i in result.issues]
            codes = ", ".join(sorted({i.code.value for i in result.issues}))
            return self.reject(
                item,
                SpecReason.INVALID_SPEC,
                f"{scenario.id}: spec still invalid after {result.repairs} repair round(s): {codes}",
                scenario_id=scenario.id,
                issues=issues,
                repairs=result.repairs,
                calls=result.calls,
                history=result.history,
                meaning=result.meaning.to_dict() if result.meaning is not None else None,
            )
        return [spec_record(item, scenario, result, self._model.model_id)]
