"""One-shot structured questions for scripts and commands (``dataclaw models check``, the quickstart):
build the model, ask for JSON matching a schema, optionally write the answer to a file."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dataclaw.models.client import Model
from dataclaw.models.registry import get_model
from dataclaw.models.types import Completion, Message

if TYPE_CHECKING:
    from dataclaw.models.probe import Capabilities

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


@dataclass
class ModelCheck:
    """What ``dataclaw models check`` finds: the endpoint's capabilities (one probe per capability) and the
    answer to one tiny structured request with the model string as given, or why it failed."""

    capabilities: Capabilities
    done: Completion | None
    error: str | None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the model, each capability (ok, detail, latency), the server, the check."""
        caps = self.capabilities
        check: dict[str, Any] = {"ok": False, "error": self.error}
        if self.done is not None:
            done = self.done
            check = {
                "ok": True,
                "latency_s": round(done.latency_s, 3),
                "prompt_tokens": done.usage.prompt_tokens,
                "completion_tokens": done.usage.completion_tokens,
                "cost_usd": done.cost_usd,
                "priced": done.priced,
                "answer": done.parsed,
            }
        return {
            "model": caps.model,
            "capabilities": {
                name: {"ok": ok, "detail": detail, "latency_s": caps.latency_s.get(name)}
                for name, ok, detail in caps.rows()
            },
            "server": caps.json_schema,
            "check": check,
        }


def check_endpoint(spec: str) -> ModelCheck:
    """Probe ``spec``'s endpoint afresh (a dead endpoint, wrong key or model is a ModelError), then
    :func:`check_model` it; a failed check is recorded, not raised."""
    from dataclaw.models.errors import ModelError
    from dataclaw.models.probe import probe_endpoint

    caps = probe_endpoint(spec, refresh=True)
    try:
        return ModelCheck(caps, check_model(spec), None)
    except ModelError as exc:
        return ModelCheck(caps, None, str(exc))
