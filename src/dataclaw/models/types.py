"""The records and protocols of the model layer.

A caller sees :class:`ChatModel` (``await model.complete(messages, schema=…, tools=…, images=…)``) and gets
a :class:`Completion`. Behind it a :class:`Backend` turns one normalised :class:`ChatRequest` into a raw
:class:`Generation`; caching, validation, pricing and the usage ledger live once in
:class:`dataclaw.models.client.Model`, so a backend is only "send this, give me the text back".
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from dataclaw.core.ids import stable_hash

Message = dict[str, Any]
"""One chat message in OpenAI form: ``{"role": ..., "content": str | list[content part]}``."""


class Usage(BaseModel):
    """Tokens one call consumed, as the server (or llama.cpp) counted them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class ChatRequest(BaseModel):
    """One normalised request: what a backend must send and what the cache key is made of."""

    messages: list[Message]
    json_schema: dict[str, Any] | None = None
    schema_name: str = "answer"
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    """Sampling parameters (temperature, max_tokens, seed, top_p, stop, …), sent as they are."""

    def fingerprint(self) -> str:
        """Hash of everything that decides the answer except the model: the replay key."""
        return stable_hash(
            {
                "messages": self.messages,
                "schema": self.json_schema,
                "tools": self.tools,
                "tool_choice": self.tool_choice,
                "params": self.params,
            },
            length=32,
        )

    def cache_key(self, model_id: str) -> str:
        """Hash of (model, messages, schema, tools, params): the response-cache key."""
        return stable_hash([model_id, self.fingerprint()], length=32)


class Generation(BaseModel):
    """What a backend answered, before validation: the text and/or OpenAI-format tool calls."""

    text: str | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    finish_reason: str | None = None
    reasoning: str | None = None
    """The model's reasoning text, where the server returns it apart (``reasoning_content``)."""
    logprobs: list[dict[str, Any]] | None = None
    """Per-token log-probabilities (``choices[0].logprobs.content``) when they were asked for."""
    token_ids: list[int] | None = None
    """The completion's token ids, where the server returns them (vLLM ``return_token_ids``)."""
    prompt_token_ids: list[int] | None = None
    """The prompt's token ids as the server rendered it (vLLM ``return_token_ids``)."""


class Completion(BaseModel):
    """A finished, validated call as the caller sees it."""

    text: str | None = None
    parsed: Any = None
    """The answer decoded from JSON when a schema was given (already validated against it)."""
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    """OpenAI format: ``{"id", "type": "function", "function": {"name", "arguments": <JSON string>}}``;
    a call whose arguments are not a JSON object keeps them raw and carries a ``parse_error`` line."""
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    """What this call cost; 0 for cache hits, local models and models without a price."""
    priced: bool = False
    """Whether ``cost_usd`` comes from a price (False: local or unknown model, cost counted as 0)."""
    model: str = ""
    cached: bool = False
    latency_s: float = 0.0
    images_sent: int = 0
    """Images the answered request carried: 0 when the model was sent none or they were dropped."""
    finish_reason: str | None = None
    reasoning: str | None = None
    logprobs: list[dict[str, Any]] | None = None
    token_ids: list[int] | None = None
    prompt_token_ids: list[int] | None = None
    """Reasoning text, log-probabilities and token ids as in :class:`Generation` (None when absent)."""


@runtime_checkable
class ChatModel(Protocol):
    """What every caller codes against."""

    model_id: str

    async def complete(
        self,
        messages: list[Message] | str,
        schema: dict[str, Any] | None = None,
        tools: list[dict[str, Any]] | None = None,
        images: list[Any] | None = None,
        **params: Any,
    ) -> Completion: ...


class Backend(ABC):
    """One way to reach a model. Subclasses implement :meth:`generate`; everything else is shared."""

    supports_images: ClassVar[bool] = True
    free: ClassVar[bool] = False
    """Answers cost nothing (in-process or recorded): never priced, reported as unpriced."""
    cache_by_default: ClassVar[bool] = True
    """Whether ``get_model`` puts the response cache in front of this backend unless told otherwise."""
    structured_output: ClassVar[str] = "validated"
    """How a schema is enforced when this backend is not a server that can be probed: ``grammar``
    (constrained decoding), ``recorded`` (replayed answers) or ``validated`` (checked afterwards only)."""

    def __init__(self, model_id: str, model_name: str) -> None:
        self.model_id = model_id
        """The full model string: part of the cache key."""
        self.model_name = model_name
        """The bare model name: what prices are looked up by."""

    @abstractmethod
    async def generate(self, request: ChatRequest) -> Generation:
        """Send ``request`` and return the raw answer; raise a ModelError subclass on failure."""

    async def aclose(self) -> None:  # noqa: B027 - most backends hold nothing to release
        """Release connections; the backend may not be used afterwards."""
