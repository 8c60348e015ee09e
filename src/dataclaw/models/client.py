""":class:`Model`: the one :class:`ChatModel` implementation. It normalises a request, serves it from the
response cache or sends it through a :class:`Backend`, validates the answer, prices it and records it in the
run's :class:`UsageLedger`. Backends stay small because all of this lives here once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from dataclaw.core.errors import ConfigError
from dataclaw.models.cache import ResponseCache
from dataclaw.models.errors import (
    CapabilityError,
    ImagesNotSupportedError,
    ModelConnectionRefusedError,
    ModelDNSError,
    ModelError,
    ModelOutputError,
    ModelTLSError,
)
from dataclaw.models.images import attach_images, count_images, drop_images, has_images
from dataclaw.models.ledger import UsageLedger
from dataclaw.models.prices import PriceTable
from dataclaw.models.schema import check_schema, parse_json_answer, parse_tool_arguments
from dataclaw.models.types import Backend, ChatRequest, Completion, Generation, Message

log = logging.getLogger(__name__)

_NOTHING_SENT = (ModelConnectionRefusedError, ModelDNSError, ModelTLSError)
"""Failures before any byte of the request left: no tokens sent, none estimated."""


def normalise_messages(messages: list[Message] | str) -> list[Message]:
    """A prompt string becomes one user message; every message must be a dict with a role."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    if not isinstance(messages, list) or not messages:
        raise ConfigError("messages must be a prompt string or a non-empty list of {role, content} dicts")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise ConfigError(f"message {i} must be a dict with a 'role' string, got {m!r:.80}")
    return [dict(m) for m in messages]


def estimate_prompt_tokens(messages: list[Message]) -> int:
    """Tokens a request sent, estimated from its text (~4 characters a token, 4 per message for the chat
    template; images not counted) for failed calls whose server never said: a guess, marked as one."""
    chars = 0
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            chars += sum(len(p.get("text") or "") for p in content if isinstance(p, dict))
    return (chars + 3) // 4 + 4 * len(messages)


def normalise_tools(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """Tools in OpenAI form (``{"type": "function", "function": {name, description, parameters}}``);
    bare ``{name, parameters}`` dicts are wrapped. Parameter schemas are checked before sending."""
    if not tools:
        return None
    out = []
    for i, tool in enumerate(tools):
        fn = tool.get("function", tool) if isinstance(tool, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise ConfigError(f"tool {i} must be an OpenAI function tool with a 'name', got {tool!r:.80}")
        params = fn.get("parameters", {"type": "object", "properties": {}})
        try:
            check_schema(params)
        except ConfigError as exc:
            raise type(exc)(f"tool {fn['name']!r}: parameters {exc}") from None
        out.append({"type": "function", "function": {**fn, "parameters": params}})
    return out


class Model:
    """A chat model with cache, validation, pricing and usage accounting. Build one with ``get_model``."""

    def __init__(
        self,
        backend: Backend,
        *,
        cache: ResponseCache | None = None,
        prices: PriceTable | None = None,
        ledger: UsageLedger | None = None,
        drop_images: bool = False,
    ) -> None:
        self.backend = backend
        self.cache = cache
        self.prices = prices or PriceTable.load()
        self.ledger = ledger if ledger is not None else UsageLedger()
        self.drop_images = drop_images
        self._warned_downgrade = False

    @property
    def model_id(self) -> str:
        return self.backend.model_id

    def __repr__(self) -> str:
        return f"Model({self.model_id!r}, cache={'on' if self.cache else 'off'})"

    def build_request(
        self,
        messages: list[Message] | str,
        schema: dict[str, Any] | None = None,
        tools: list[dict[str, Any]] | None = None,
        images: list[Any] | None = None,
        *,
        tool_choice: str | dict[str, Any] | None = None,
        schema_name: str = "answer",
        **params: Any,
    ) -> ChatRequest:
        """Check and normalise one request (no I/O besides reading image files)."""
        msgs = normalise_messages(messages)
        if schema is not None:
            check_schema(schema)
        if images:
            msgs = attach_images(msgs, list(images))
        if not self.backend.supports_images and has_images(msgs):
            if not self.drop_images:
                raise ImagesNotSupportedError(
                    f"model {self.model_id} is text-only and cannot take images; send them as text or "
                    "allow dropping them (--send-images auto / drop_images=true)",
                    model=self.model_id,
                )
            msgs = self._downgrade(msgs, f"model {self.model_id} is text-only")
        return ChatRequest(
            messages=msgs,
            json_schema=schema,
            schema_name=schema_name,
            tools=normalise_tools(tools),
            tool_choice=tool_choice,
            params=params,
        )

    async def complete(
        self,
        messages: list[Message] | str,
        schema: dict[str, Any] | None = None,
        tools: list[dict[str, Any]] | None = None,
        images: list[Any] | None = None,
        *,
        use_cache: bool = True,
        **params: Any,
    ) -> Completion:
        """Answer one chat request. With ``schema`` the answer is JSON validated against it (``parsed``);
        with ``tools`` the model may answer with OpenAI-format ``tool_calls``. Raises a ModelError subclass
        (with ``raw_text``) when the model cannot be reached or its answer is not valid. Images the model
        turns out not to take are dropped once (and recorded as a downgrade) when ``drop_images`` allows
        it; otherwise that is a :class:`CapabilityError`."""
        start = time.perf_counter()
        request = self.build_request(messages, schema, tools, images, **params)
        try:
            try:
                return await self._answer(request, start, use_cache)
            except CapabilityError as exc:
                if exc.capability != "images" or not self.drop_images or not has_images(request.messages):
                    raise
                messages = self._downgrade(request.messages, str(exc))
                request = request.model_copy(update={"messages": messages})
                return await self._answer(request, start, use_cache)
        except ModelError as exc:
            exc.images_sent = count_images(request.messages)  # what the failed call last sent
            exc.latency_s = time.perf_counter() - start
            if not (exc.prompt_tokens or exc.completion_tokens or isinstance(exc, _NOTHING_SENT)):
                exc.prompt_tokens, exc.tokens_estimated = estimate_prompt_tokens(request.messages), True
            if not isinstance(exc, ModelOutputError):  # bad answers are counted where they are found
                self.ledger.record_error(self.model_id, exc, latency_s=exc.latency_s)
            raise

    def _downgrade(self, messages: list[Message], reason: str) -> list[Message]:
        """``messages`` without their images (text parts kept), recorded in the ledger."""
        if not self._warned_downgrade:  # once per model: a run may drop images from every request
            log.warning("%s: sending requests without their images", reason)
            self._warned_downgrade = True
        self.ledger.record_downgrade(self.model_id, "images", reason)
        return drop_images(messages)

    async def _answer(self, request: ChatRequest, start: float, use_cache: bool) -> Completion:
        """Serve ``request`` from the cache or the backend; validate, price and record it."""
        caching = self.cache is not None and use_cache
        key = request.cache_key(self.model_id) if caching else ""  # hashing the request costs ~0.1 ms
        if caching:
            hit = self.cache.get(key)  # type: ignore[union-attr]
            if hit is not None:
                generation, _ = hit
                completion = self._finish(
                    request, generation, cached=True, latency_s=time.perf_counter() - start
                )
                self.ledger.record(
                    self.model_id,
                    generation.usage,
                    cost_usd=0.0,
                    priced=completion.priced,
                    cached=True,
                    latency_s=0.0,
                )
                return completion
        try:
            generation = await self.backend.generate(request)
        except ModelOutputError as exc:  # the server's answer is not a completion at all
            exc.prompt_tokens, exc.tokens_estimated = estimate_prompt_tokens(request.messages), True
            self.ledger.record_error(self.model_id, exc, latency_s=time.perf_counter() - start)
            raise
        finally:
            window = getattr(self.backend, "concurrency_state", None)
            state = window() if window is not None else None
            if state:
                self.ledger.record_concurrency(self.model_id, state)
        latency = time.perf_counter() - start
        try:
            completion = self._finish(request, generation, cached=False, latency_s=latency)
        except ModelOutputError as exc:  # answered, but not valid: the server counted its tokens
            exc.prompt_tokens = generation.usage.prompt_tokens
            exc.completion_tokens = generation.usage.completion_tokens
            cost, priced = self._cost(generation)
            exc.cost_usd = cost
            self.ledger.record(
                self.model_id,
                generation.usage,
                cost_usd=cost,
                priced=priced,
                cached=False,
                latency_s=latency,
                failed=True,
            )
            raise
        self.ledger.record(
            self.model_id,
            generation.usage,
            cost_usd=completion.cost_usd,
            priced=completion.priced,
            cached=False,
            latency_s=latency,
        )
        if caching:
            self.cache.put(key, self.model_id, generation, latency)  # type: ignore[union-attr]
        return completion

    def complete_sync(self, messages: list[Message] | str, **kwargs: Any) -> Completion:
        """:meth:`complete` for code without an event loop (CLI commands, scripts)."""
        return asyncio.run(self.complete(messages, **kwargs))

    def _cost(self, generation: Generation) -> tuple[float, bool]:
        if self.backend.free:
            return 0.0, False
        price = self.prices.lookup(self.backend.model_name)
        if price is None:
            return 0.0, False
        return price.cost(generation.usage), True

    def _finish(
        self, request: ChatRequest, generation: Generation, *, cached: bool, latency_s: float
    ) -> Completion:
        parsed = None
        tool_calls = parse_tool_arguments(generation.tool_calls)
        if not tool_calls and request.json_schema is not None:
            parsed = parse_json_answer(generation.text, request.json_schema, self.model_id)
        cost, priced = self._cost(generation)
        return Completion(
            text=generation.text,
            parsed=parsed,
            tool_calls=tool_calls,
            usage=generation.usage,
            cost_usd=0.0 if cached else cost,
            priced=priced,
            model=self.model_id,
            cached=cached,
            latency_s=latency_s,
            images_sent=count_images(request.messages),
            finish_reason=generation.finish_reason,
            reasoning=generation.reasoning,
            logprobs=generation.logprobs,
            token_ids=generation.token_ids,
            prompt_token_ids=generation.prompt_token_ids,
        )

    async def aclose(self) -> None:
        await self.backend.aclose()
