"""The validate stage (paper A.3.4): a response record → a :class:`~dataclaw.tailor.records.Sample` in
``validated.jsonl``, or a reject named after its most severe failure (:mod:`.severity`), every failure kept
in the reject's ``detail.failures``.

The intent's schema is checked first (later checks assume the shape), then every validator the intent
lists, then the per-request bounds of the schema that was sent.
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

from dataclaw.core.errors import ConfigError
from dataclaw.core.ids import stable_hash
from dataclaw.pipeline.stage import Record, Resources, Result, Stage
from dataclaw.tailor.intents.base import Intent, TemplateError
from dataclaw.tailor.intents.prompt import prompt_template
from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.records import build_sample
from dataclaw.tailor.validation.base import Failure, ValidationIssue, run_validator
from dataclaw.tailor.validation.grounding import grounding_status
from dataclaw.tailor.validation.severity import by_severity, headline, reject_message

VALIDATED = "validated"
"""Validated samples, before materialisation (which publishes the final ``samples.jsonl``)."""


def validate_output(
    output: Any, ctx: dict[str, Any], steps: list[tuple[str, dict[str, Any]]], schema: dict[str, Any],
    sent_schema: dict[str, Any] | None = None,
) -> list[Failure]:  # fmt: skip
    """All failures of ``output``: the intent's schema first (later checks assume the shape), then every
    listed validator, then the per-request bounds of the schema that was sent (``sent_schema``), so a
    freeze frame outside the observation range is reported as that, not as a schema bound. (An output
    valid under the stricter sent schema is valid under the intent's, so that check is skipped then.)"""
    sent = without_range_enums(sent_schema) if sent_schema is not None and sent_schema != schema else None
    sent_fails = run_validator("schema", output, {**ctx, "schema": sent}, {}) if sent is not None else None
    if sent_fails is None or sent_fails:
        fails = run_validator("schema", output, {**ctx, "schema": schema}, {})
        if fails:
            return fails
    out: list[Failure] = []
    for name, params in steps:
        if name != "schema":
            out.extend(run_validator(name, output, ctx, params))
    return out or list(sent_fails or [])


def check_answer(
    intent: Intent, output: Any, ctx: dict[str, Any], sent_schema: dict[str, Any] | None = None
) -> list[Failure]:
    """Every failure of one answer under ``intent`` (what the validate stage rejects on): ``unparsable``
    when there is no JSON object, else :func:`validate_output` with the intent's validators and the prompt
    template in the context. Synthesis calls it too, to choose among generations and to re-ask."""
    if output is None:
        return [Failure(ValidationIssue.UNPARSABLE, "the model's answer is not JSON", "parse")]
    steps = [(s.name, s.params) for s in intent.validators]
    ctx = {**ctx, "prompt_template": prompt_template(intent)}
    return validate_output(output, ctx, steps, intent.output_schema, sent_schema)


@cache
def _gates_digest() -> str:
    """A digest of the built-in validators' source: a gate added or changed within one release makes
    recorded verdicts stale, so a resumed run checks its answers again instead of reusing verdicts the
    new gate never saw."""
    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def check_version(intent: Intent, sent_schema: dict[str, Any] | None) -> str:
    """What :func:`check_answer`'s verdict on an answer depends on besides the answer and its context: the
    intent's schema and validators, the schema sent, dataclaw's version and the validators' own code.
    Synthesis records its verdict on the answer it keeps under this key; the validate stage reuses it only
    when the key is the same."""
    from dataclaw import __version__

    steps = [(s.name, s.params) for s in intent.validators]
    parts = [__version__, _gates_digest(), intent.id, steps, intent.output_schema, sent_schema]
    return stable_hash(parts, 16)


def recorded_failures(item: Record, intent: Intent) -> list[Failure] | None:
    """The failures synthesis recorded for the kept answer (``checks``), when they were computed by
    :func:`check_answer` under the same :func:`check_version`; else None (check again)."""
    checks = item.get("checks")
    if not isinstance(checks, dict) or checks.get("version") != check_version(intent, item.get("schema")):
        return None
    try:
        return [
            Failure(ValidationIssue(f["reason"]), f["message"], f.get("validator", ""), f.get("span"))
            for f in checks.get("failures") or []
        ]
    except (KeyError, TypeError, ValueError):
        return None


def without_range_enums(schema: Any) -> Any:
    """``schema`` without enums that only spell out an integer ``minimum..maximum`` range (added for
    grammar decoders; the bounds say the same and check in O(1) instead of O(range))."""
    if isinstance(schema, list):
        return [without_range_enums(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: without_range_enums(v) for k, v in schema.items() if k != "enum"}
    enum, lo, hi = schema.get("enum"), schema.get("minimum"), schema.get("maximum")
    if enum is not None and not (
        isinstance(lo, int) and isinstance(hi, int) and enum == list(range(lo, hi + 1))
    ):
        out["enum"] = enum
    return out


class ValidateStage(Stage):
    """Response record → :class:`Sample` record (``samples.jsonl``) or a reject with a ValidationIssue."""

    name: ClassVar[str] = VALIDATED
    resources: ClassVar[Resources] = Resources.CPU

    def __init__(self, intents: Any = None, extra_intent_files: list[str] | None = None) -> None:
        self.extra_intent_files = list(extra_intent_files or [])
        self._catalog = intents

    def setup(self) -> None:
        if self._catalog is None:
            catalog = IntentCatalog.builtin()
            for path in self.extra_intent_files:
                catalog.resolve(path)
            self._catalog = catalog

    def process(self, item: Record) -> Result:
        if self._catalog is None:
            self.setup()
        try:
            intent = self._catalog.get(item["intent"])
            ctx = item["context"]
        except (KeyError, ConfigError) as exc:
            return self.reject(item, ValidationIssue.BAD_RECORD, f"response record unusable: {exc}")
        if item.get("output") is None:
            return self.reject(
                item,
                ValidationIssue.UNPARSABLE,
                f"the model's answer is not JSON: {item.get('error') or 'no output'}",
                raw_text=(item.get("raw_text") or "")[:500],
            )
        steps = [(s.name, s.params) for s in intent.validators]
        fails = recorded_failures(item, intent)  # synthesis already checked the answer it kept
        if fails is None:
            fails = check_answer(intent, item["output"], ctx, item.get("schema"))
        if fails:  # named after the most severe failure; all of them kept, most severe first
            return self.reject(
                item,
                headline(fails).reason,
                reject_message(fails),
                failures=[f.to_dict() for f in by_severity(fails)],
            )
        try:
            sample = build_sample(item, intent, [name for name, _ in [("schema", {}), *steps]])
        except TemplateError as exc:
            return self.reject(item, ValidationIssue.BAD_RECORD, str(exc))
        sample.grounding = grounding_status(ctx, [name for name, _ in steps])  # unchecked is counted apart
        return [sample.model_dump(mode="json")]
