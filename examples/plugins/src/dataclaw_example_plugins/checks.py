"""A validator: no hedging. A weak model that cannot tell what happens answers "I cannot tell" or "it is
unclear", which passes every structural check and teaches nothing; this check rejects such a sample and
names the phrase (the reject's ``span``).

The module registers the validator itself, so it is loaded the same way by the entry point
``no_hedging = "dataclaw_example_plugins.checks"`` (a module: imported, it registers what it holds) and by
``--plugin dataclaw_example_plugins.checks``. An intent lists it by name with its parameters::

    validators:
      - {name: no_hedging, params: {fields: [answer, reasoning]}}
"""

from __future__ import annotations

import re
from typing import Any

from dataclaw.tailor.validation.base import Failure, ValidationIssue, register_validator

HEDGES = ("i cannot", "i can't", "it is unclear", "it is not possible to", "as an ai", "hard to say")


@register_validator("no_hedging")
def no_hedging(
    output: dict[str, Any], ctx: dict[str, Any], fields: list[str], phrases: list[str] | None = None
) -> list[Failure]:
    """One failure per field of ``output`` that hedges (``phrases``, case-insensitive; default
    :data:`HEDGES`) instead of saying what the frames show."""
    found = []
    for field in fields:
        text = str(output.get(field, ""))
        for phrase in phrases or HEDGES:
            hit = re.search(re.escape(phrase), text, flags=re.IGNORECASE)
            if hit:
                found.append(
                    Failure(
                        ValidationIssue.UNGROUNDED_TEXT,
                        f"{field} hedges ({phrase!r}) instead of saying what the frames show",
                        span=text[max(0, hit.start() - 40) : hit.end() + 40],
                    )
                )
                break
    return found
