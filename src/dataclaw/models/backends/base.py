"""The backend registry and model-string parsing: what every backend module needs to register itself and
read its options, below :func:`dataclaw.models.get_model` (which builds models from it).

A backend is a factory ``(scheme, the spec after "scheme:", options) -> Backend`` registered for one or
more schemes with ``@register_backend``. Built-ins are the modules of this package; one from outside is an
entry point in the ``dataclaw.model_backends`` group whose name is the scheme and whose value is the
factory (or a ``--plugin`` module that registers it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from dataclaw.core.errors import ConfigError
from dataclaw.core.registry import Registry
from dataclaw.models.errors import UnknownModelError
from dataclaw.models.types import Backend

BackendFactory = Callable[[str, str, dict[str, Any]], Backend]
"""(scheme, the spec after ``scheme:``, options) → backend. Must consume or reject every option."""

BACKENDS: Registry[BackendFactory] = Registry(
    "model backend",
    builtins="dataclaw.models.backends",
    unknown="scheme '{name}' is not one of {known}",
    error=UnknownModelError,
)
"""Scheme → backend factory."""


def register_backend(*schemes: str) -> Callable[[BackendFactory], BackendFactory]:
    """Register a backend factory for one or more schemes; refuses a scheme that is already taken."""

    def deco(factory: BackendFactory) -> BackendFactory:
        for scheme in schemes:
            BACKENDS.register(scheme, factory)
        return factory

    return deco


def backend_factory(spec: str, scheme: str) -> BackendFactory:
    """The factory of ``scheme``; an unknown one is an :class:`UnknownModelError` naming ``spec``."""
    try:
        return BACKENDS.get(scheme)
    except UnknownModelError as exc:
        raise UnknownModelError(f"unknown model string {spec!r}: {exc}") from None


def parse_spec(spec: str) -> tuple[str, str, dict[str, str]]:
    """Split a model string into (scheme, rest, options from ``?k=v&…``)."""
    if not isinstance(spec, str) or ":" not in spec:
        raise UnknownModelError(
            f"model string {spec!r} has no scheme: use openai:<model>, http://host:port/v1::<model>, "
            "local:smollm2-135m or replay:<file>"
        )
    scheme, rest = spec.split(":", 1)
    options: dict[str, str] = {}
    if "?" in rest:
        rest, query = rest.rsplit("?", 1)
        options = dict(parse_qsl(query, keep_blank_values=True, strict_parsing=False))
    return scheme.lower(), rest, options


def take_option(options: dict[str, Any], name: str, kind: type, default: Any, spec: str) -> Any:
    """Remove ``name`` from ``options`` and convert it to ``kind`` (query-string values arrive as text)."""
    if name not in options:
        return default
    value = options.pop(name)
    if kind is bool and isinstance(value, str):
        if value.lower() in ("1", "true", "yes", "on"):
            return True
        if value.lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"model {spec}: option {name}={value!r} must be true or false")
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"model {spec}: option {name}={value!r} must be a {kind.__name__}") from None


def refuse_unknown_options(options: dict[str, Any], spec: str, known: list[str]) -> None:
    if options:
        raise ConfigError(
            f"model {spec}: unknown option(s) {', '.join(sorted(options))} "
            f"(known: {', '.join(sorted(known)) or 'none'})"
        )
