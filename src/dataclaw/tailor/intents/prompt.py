"""An intent's prompt as a request sends it: the rendered messages with the fixed footer, and the literal
template text an answer must not echo back (the ``prompt_echo`` validator)."""

from __future__ import annotations

import re
from typing import Any

from dataclaw.tailor.intents.base import Intent, render

FOOTER = (
    "Answer with one JSON object that follows the required schema. Frame indices are stream frame numbers."
)


def build_messages(intent: Intent, ctx: dict[str, Any]) -> list[dict[str, Any]]:
    system = render(intent.prompt.system, ctx, f"intent {intent.id} prompt.system")
    user = render(intent.prompt.user, ctx, f"intent {intent.id} prompt.user")
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"{user.rstrip()}\n\n{FOOTER}"},
    ]


_TEMPLATE_FIELD = re.compile(r"\{\{.*?\}\}", re.DOTALL)
_TEMPLATES: dict[tuple[str, str, str], list[str]] = {}


def prompt_template(intent: Any) -> list[str]:
    """The literal text of ``intent``'s prompt (system, user, the fixed footer) without its ``{{ … }}``
    fields, one piece per line between fields: what an answer must not echo (``prompt_echo``)."""
    key = (intent.id, intent.prompt.system, intent.prompt.user)
    if key not in _TEMPLATES:
        pieces = []
        for text in (intent.prompt.system, intent.prompt.user, FOOTER):
            for part in _TEMPLATE_FIELD.split(text):
                pieces.extend(line.strip() for line in part.splitlines() if line.strip())
        _TEMPLATES[key] = pieces
    return _TEMPLATES[key]
