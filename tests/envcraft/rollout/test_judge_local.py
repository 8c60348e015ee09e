"""The judge of natural-language assertions on the embedded model (local:smollm2-135m): its JSON schema fits
a llama.cpp grammar and the answer is read as one verdict per assertion."""

from __future__ import annotations

import asyncio
import re

import pytest

from dataclaw.envcraft.rollout.evaluate import judge_schema, nl_component

pytest.importorskip("llama_cpp", reason="the embedded model needs dataclaw[local]")

ASSERTION = ["The agent tells the user that ticket T-1001 is resolved."]
CALL = {"name": "resolve_ticket", "arguments": '{"ticket_id": "T-1001"}'}
TOLD = [
    {"role": "user", "content": "Please resolve the SSO ticket T-1001."},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "c0", "type": "function", "function": CALL}]},
    {"role": "tool", "tool_call_id": "c0", "content": '{"status": "ok"}'},
    {"role": "assistant", "content": "Ticket T-1001 is resolved as fixed with KB-207."},
]  # fmt: skip


def test_the_judge_schema_fits_a_grammar() -> None:
    from dataclaw.core.ids import canonical_json
    from dataclaw.models.backends.local import _checked_grammar
    from dataclaw.models.schema import grammar_schema

    for n in (1, 3, 8):
        assert _checked_grammar(canonical_json(grammar_schema(judge_schema(n)))) is None


@pytest.mark.slow
def test_the_embedded_model_judges_through_the_schema() -> None:
    """The grammar-constrained answer is read as a verdict for each conversation (no judge_error: the
    schema, the grammar and the reading agree). Whether the verdict is right is the model's quality: the
    135M model also calls the assertion met when the agent said nothing (docs/envcraft.md), which is why
    an assertion in the reward basis wants a stronger judge."""
    from dataclaw.models import get_model

    model = get_model("local:smollm2-135m", cache=False)
    for convo in (TOLD, TOLD[:3]):
        got = asyncio.run(nl_component(model, ASSERTION, convo))
        assert "error" not in got, got
        assert re.fullmatch(r"[01]/1 assertions met.*", got["detail"]) and got["score"] in (0.0, 1.0)
