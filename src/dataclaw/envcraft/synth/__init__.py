"""Environment synthesis (EnvCraft §3): scenario → E_spec/T_spec (validated, repaired) → archetype
retrieval. Generation, audit-driven self-healing and the library index build on these (not yet here).

    from dataclaw.envcraft.synth import SpecStage, scenario_record, expand_scenario, retrieve
"""

from dataclaw.envcraft.synth.compile import CompileError, CompileResult, compile_package
from dataclaw.envcraft.synth.expand import REPAIR_ROUNDS, SpecReason, SpecResult, expand_scenario
from dataclaw.envcraft.synth.retrieval import Retrieved, prompt_section, retrieve, score_all
from dataclaw.envcraft.synth.spec import (
    ESpec,
    Issue,
    IssueCode,
    ToolDecl,
    TSpec,
    check_e_spec,
    check_spec,
    check_t_spec,
    entities_schema,
    state_schema,
    t_spec_schema,
)
from dataclaw.envcraft.synth.stages import SpecStage, scenario_record

__all__ = [
    "REPAIR_ROUNDS",
    "CompileError",
    "CompileResult",
    "ESpec",
    "Issue",
    "IssueCode",
    "Retrieved",
    "SpecReason",
    "SpecResult",
    "SpecStage",
    "TSpec",
    "ToolDecl",
    "check_e_spec",
    "check_spec",
    "check_t_spec",
    "compile_package",
    "entities_schema",
    "expand_scenario",
    "prompt_section",
    "retrieve",
    "scenario_record",
    "score_all",
    "state_schema",
    "t_spec_schema",
]
