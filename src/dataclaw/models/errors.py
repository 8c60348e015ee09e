"""Errors of the model layer. Each is one clear line naming the model or input and the problem.

Every class is a :class:`~dataclaw.core.errors.DataclawError`, so the CLI prints it without a traceback.
``raw_text`` keeps what the model (or server) actually sent, for debugging and for rejects.

``fatal`` (a class attribute) says whether the error condemns the whole run rather than one record: the
server is unreachable, the key is wrong, the model name is unknown, the request shape is unsupported and
may not be downgraded, or the endpoint's circuit is open. A runner stops early on
``getattr(exc, "fatal", False)``; a per-record failure (bad output, one prompt too long) is not fatal.
"""

from __future__ import annotations

from typing import ClassVar

from dataclaw.core.errors import ConfigError, DataclawError


class ModelError(DataclawError):
    """A model call that could not give a usable answer. ``raw_text`` is the server's or model's text."""

    fatal: ClassVar[bool] = False

    def __init__(self, message: str, *, model: str = "", raw_text: str | None = None) -> None:
        super().__init__(message)
        self.model = model
        self.raw_text = raw_text
        self.images_sent: int | None = None
        """Images the last request of the failed call carried (set by ``Model.complete``; None: unknown)."""
        self.latency_s: float | None = None
        """Wall time of the failed call, retries included (set by ``Model.complete``; None: unknown)."""
        self.prompt_tokens = 0
        self.completion_tokens = 0
        """Tokens of the failed call as the server counted them (an answer that failed validation)."""
        self.cost_usd = 0.0
        """What the failed call cost (priced tokens of an answer that failed validation)."""
        self.tokens_estimated = False
        """True when the server never answered: ``prompt_tokens`` is then an estimate from the request's
        text (:func:`dataclaw.models.client.estimate_prompt_tokens`), not a count."""

    def usage(self) -> dict[str, int]:
        """The failed call's tokens as a record's ``usage`` field: estimated ones under
        ``prompt_tokens_estimated``, never mixed with counted ones."""
        key = "prompt_tokens_estimated" if self.tokens_estimated else "prompt_tokens"
        return {key: self.prompt_tokens, "completion_tokens": self.completion_tokens}


class UnknownModelError(ConfigError):
    """A model string no registered backend understands."""

    fatal: ClassVar[bool] = True


class InvalidSchemaError(ConfigError):
    """The JSON schema given with a request is not a valid JSON Schema."""

    fatal: ClassVar[bool] = True


class ModelUnreachableError(ModelError):
    """The server could not be reached (connection refused, DNS, TLS, reset) after all retries."""

    fatal = True


class ModelDNSError(ModelUnreachableError):
    """The server's host name does not resolve."""


class ModelConnectionRefusedError(ModelUnreachableError):
    """Nothing listens at the server's host and port."""


class ModelTLSError(ModelUnreachableError):
    """The TLS handshake failed (certificate not trusted, wrong name, http served on an https URL)."""


class ModelTimeoutError(ModelError):
    """The server did not answer within the timeout (or the overall deadline), after all retries."""


class ModelAuthError(ModelError):
    """The server refused the credentials (HTTP 401/403)."""

    fatal = True


class ModelRateLimitError(ModelError):
    """The server kept answering 429 after all retries."""


class ModelServerError(ModelError):
    """The server kept failing (HTTP 5xx) after all retries."""


class ModelRequestError(ModelError):
    """The server rejected the request itself (HTTP 4xx other than auth and rate limits)."""


class ModelNotFoundError(ModelRequestError):
    """The server does not serve this model name (HTTP 404); the message lists the models it does."""

    fatal = True

    def __init__(
        self,
        message: str,
        *,
        model: str = "",
        raw_text: str | None = None,
        available: list[str] | None = None,
    ) -> None:
        super().__init__(message, model=model, raw_text=raw_text)
        self.available = list(available or [])


class ContextLengthError(ModelRequestError):
    """The prompt (plus ``max_tokens``) does not fit the model's context; counts when the server says them.

    Not fatal: another record's prompt may fit."""

    def __init__(
        self,
        message: str,
        *,
        model: str = "",
        raw_text: str | None = None,
        limit: int | None = None,
        requested: int | None = None,
    ) -> None:
        super().__init__(message, model=model, raw_text=raw_text)
        self.limit = limit
        self.requested = requested


class CapabilityError(ModelRequestError):
    """The model or server does not support a request shape (``capability``: images, json_schema, tools)
    and the caller did not allow a downgrade. Never retried: the next request would fail the same way."""

    fatal = True

    def __init__(
        self, message: str, *, capability: str, model: str = "", raw_text: str | None = None
    ) -> None:
        super().__init__(message, model=model, raw_text=raw_text)
        self.capability = capability


class ImagesNotSupportedError(CapabilityError, ConfigError):
    """Images were sent to a text-only model and the caller did not ask to drop them."""

    def __init__(self, message: str, *, model: str = "", raw_text: str | None = None) -> None:
        super().__init__(message, capability="images", model=model, raw_text=raw_text)


class CircuitOpenError(ModelError):
    """The endpoint failed several times in a row (fatal errors, or no answer at all after every retry);
    requests fail fast with the last error until the cool-down has passed."""

    fatal = True


class ModelOutputError(ModelError):
    """The answer is not valid JSON or does not validate against the schema; ``raw_text`` is the answer."""


class ReplayMissError(ModelError):
    """A replay file has no recorded answer for this request."""
