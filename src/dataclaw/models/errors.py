"""Errors of the model layer. Each is one clear line naming the model or input and the problem.

Every class is a :class:`~dataclaw.core.errors.DataclawError`, so the CLI prints it without a traceback.
``raw_text`` keeps what the model (or server) actually sent, for debugging and for rejects.
"""

from __future__ import annotations

from dataclaw.core.errors import ConfigError, DataclawError


class ModelError(DataclawError):
    """A model call that could not give a usable answer. ``raw_text`` is the server's or model's text."""

    def __init__(self, message: str, *, model: str = "", raw_text: str | None = None) -> None:
        super().__init__(message)
        self.model = model
        self.raw_text = raw_text


class UnknownModelError(ConfigError):
    """A model string no registered backend understands."""


class InvalidSchemaError(ConfigError):
    """The JSON schema given with a request is not a valid JSON Schema."""


class ImagesNotSupportedError(ConfigError):
    """Images were sent to a text-only model and the caller did not ask to drop them."""


class ModelUnreachableError(ModelError):
    """The server could not be reached (connection refused, DNS, reset) after all retries."""


class ModelTimeoutError(ModelError):
    """The server did not answer within the timeout, after all retries."""


class ModelAuthError(ModelError):
    """The server refused the credentials (HTTP 401/403)."""


class ModelRateLimitError(ModelError):
    """The server kept answering 429 after all retries."""


class ModelServerError(ModelError):
    """The server kept failing (HTTP 5xx) after all retries."""


class ModelRequestError(ModelError):
    """The server rejected the request itself (HTTP 4xx other than auth and rate limits)."""


class ModelOutputError(ModelError):
    """The answer is not valid JSON or does not validate against the schema; ``raw_text`` is the answer."""


class ReplayMissError(ModelError):
    """A replay file has no recorded answer for this request."""
