"""Deterministic validation after synthesis (paper A.3.4, B.2.1): the validator registry and contract in
:mod:`.base`, the structural checks in :mod:`.structural`, the quality checks in :mod:`.quality`, and the
validate stage in :mod:`.stage`."""

from dataclaw.tailor.intents.prompt import prompt_template
from dataclaw.tailor.records import sample_id
from dataclaw.tailor.validation.base import (
    VALIDATORS,
    Failure,
    ValidationIssue,
    Validator,
    get_validator,
    register_validator,
    run_validator,
    validator_names,
    values_at,
)
from dataclaw.tailor.validation.stage import VALIDATED, ValidateStage, validate_output, without_range_enums
from dataclaw.tailor.validation.structural import (
    check_fragments_contiguous,
    check_frame_indices,
    check_grounded_actions,
    check_grounded_text,
    check_inside,
    check_min_words,
    check_ordered,
    check_permutation,
    check_placeholders,
    check_positive_duration,
    check_schema_valid,
    content_words,
)

__all__ = [
    "VALIDATED",
    "VALIDATORS",
    "Failure",
    "ValidateStage",
    "ValidationIssue",
    "Validator",
    "check_fragments_contiguous",
    "check_frame_indices",
    "check_grounded_actions",
    "check_grounded_text",
    "check_inside",
    "check_min_words",
    "check_ordered",
    "check_permutation",
    "check_placeholders",
    "check_positive_duration",
    "check_schema_valid",
    "content_words",
    "get_validator",
    "prompt_template",
    "register_validator",
    "run_validator",
    "sample_id",
    "validate_output",
    "validator_names",
    "values_at",
    "without_range_enums",
]
