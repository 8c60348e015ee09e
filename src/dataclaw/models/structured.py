"""One-shot structured questions for scripts and commands (``dataclaw models check``, the quickstart):
build the model, ask for JSON matching a schema, optionally write the answer to a file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from dataclaw.models.client import Model
from dataclaw.models.registry import get_model
from dataclaw.models.types import Completion, Message

CHECK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
    "additionalProperties": False,
}
CHECK_PROMPT = 'What is 2 + 3? Reply with JSON: {"answer": <integer>}.'


def ask_json(
    model: Model | str,
    prompt: str | list[Message],
    schema: dict[str, Any],
    *,
    system: str | None = None,
    out: str | os.PathLike[str] | None = None,
    **params: Any,
) -> Completion:
    """Ask ``model`` (a Model or a model string) for a JSON answer valid under ``schema``; with ``out``,
    write ``{model, prompt, answer, usage, cost_usd, latency_s, cached}`` there as JSON."""
    m = get_model(model) if isinstance(model, str) else model
    messages: list[Message] = (
        [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
    )
    if system:
        messages = [{"role": "system", "content": system}, *messages]
    done = m.complete_sync(messages, schema=schema, **params)
    if out is not None:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "model": done.model,
            "prompt": messages,
            "answer": done.parsed,
            "usage": done.usage.model_dump(),
            "cost_usd": done.cost_usd,
            "priced": done.priced,
            "latency_s": round(done.latency_s, 3),
            "cached": done.cached,
        }
        path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return done


def check_model(spec: str, **options: Any) -> Completion:
    """Send one tiny structured request to ``spec``, bypassing the cache: proves the model answers and
    that its JSON validates."""
    model = get_model(spec, cache=False, **options)
    return ask_json(model, CHECK_PROMPT, CHECK_SCHEMA, temperature=0, max_tokens=32)
