"""Recorded answers, for tests: record a real model once, replay it forever.

A replay file is JSONL, one line per answered request: ``{"key", "model", "prompt", "generation"}``.
``key`` is :meth:`ChatRequest.fingerprint` (messages, schema, tools, params — not the model, so a recording
made against one server replays under ``replay:<file>``). Record with
``get_model(spec, record_to="answers.jsonl")``; replay with ``get_model("replay:answers.jsonl")``.
Raw answers are recorded, so replayed answers go through the same validation as live ones.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError
from dataclaw.models.backends.base import refuse_unknown_options, register_backend
from dataclaw.models.errors import ReplayMissError
from dataclaw.models.types import Backend, ChatRequest, Generation


def _prompt_preview(request: ChatRequest) -> str:
    """The last user text, shortened: makes a replay file readable by eye."""
    for m in reversed(request.messages):
        if m.get("role") == "user":
            c = m.get("content")
            text = (
                c
                if isinstance(c, str)
                else " ".join(p.get("text", "") for p in c or [] if isinstance(p, dict))
            )
            return text[:200]
    return ""


def read_replay_file(path: Path) -> dict[str, Generation]:
    """key → recorded answer. A missing file or a bad line is a ConfigError naming the line."""
    if not path.is_file():
        raise ConfigError(
            f"replay file {path} does not exist (record it first with get_model(spec, record_to=...))"
        )
    out: dict[str, Generation] = {}
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                out[rec["key"]] = Generation.model_validate(rec["generation"])
            except (ValueError, KeyError, TypeError) as exc:
                raise ConfigError(f"replay file {path}: line {n} is not a recorded answer ({exc})") from None
    return out


class ReplayBackend(Backend):
    """Answers requests from a replay file; an unrecorded request is a :class:`ReplayMissError`."""

    free = True
    cache_by_default = False
    structured_output = "recorded"

    def __init__(self, path: Path) -> None:
        super().__init__(f"replay:{path}", f"replay:{path.name}")
        self.path = path
        self.answers = read_replay_file(path)

    async def generate(self, request: ChatRequest) -> Generation:
        key = request.fingerprint()
        try:
            return self.answers[key].model_copy(deep=True)
        except KeyError:
            raise ReplayMissError(
                f"replay file {self.path} has no answer for this request (key {key[:12]}, prompt "
                f"{_prompt_preview(request)[:60]!r}); record it again with get_model(spec, record_to=...)",
                model=self.model_id,
            ) from None


class RecordingBackend(Backend):
    """Wraps another backend and appends every answer it gives to a replay file (once per key)."""

    def __init__(self, inner: Backend, path: Path) -> None:
        super().__init__(inner.model_id, inner.model_name)
        self.inner = inner
        self.path = path
        self.free = inner.free  # type: ignore[misc]
        self.cache_by_default = inner.cache_by_default  # type: ignore[misc]
        self._keys = set(read_replay_file(path)) if path.exists() else set()
        self._lock = threading.Lock()

    @property  # type: ignore[override]
    def supports_images(self) -> bool:  # type: ignore[override]
        """The inner backend's, which an endpoint may learn while running."""
        return self.inner.supports_images

    @supports_images.setter
    def supports_images(self, value: bool) -> None:
        self.inner.supports_images = value  # type: ignore[misc]

    def concurrency_state(self) -> dict[str, int] | None:
        state = getattr(self.inner, "concurrency_state", None)
        return state() if state is not None else None

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    async def generate(self, request: ChatRequest) -> Generation:
        generation = await self.inner.generate(request)
        self.record(request, generation)
        return generation

    def record(self, request: ChatRequest, generation: Generation) -> None:
        key = request.fingerprint()
        line: dict[str, Any] = {
            "key": key,
            "model": self.inner.model_id,
            "prompt": _prompt_preview(request),
            "generation": generation.model_dump(),
        }
        with self._lock:
            if key in self._keys:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
            self._keys.add(key)

    async def aclose(self) -> None:
        await self.inner.aclose()


@register_backend("replay")
def _replay_factory(scheme: str, rest: str, options: dict[str, Any]) -> Backend:
    """``replay:<file.jsonl>``."""
    if not rest:
        raise ConfigError("model string 'replay:' needs a file, e.g. replay:tests/data/answers.jsonl")
    refuse_unknown_options(options, f"{scheme}:{rest}", [])
    return ReplayBackend(Path(rest))
