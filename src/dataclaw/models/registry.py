"""Model strings → models. Backends register a factory per scheme; :func:`get_model` is the one entry point.

Model strings::

    openai:<model>                      OPENAI_BASE_URL / OPENAI_API_KEY from the environment
    http://host:port/v1::<model>        vLLM, SGLang, Ollama, llama.cpp server or any OpenAI-compatible API
    local:smollm2-135m                  the embedded default model (llama.cpp, in-process)
    replay:<file.jsonl>                 answers recorded earlier (tests)

Options follow a ``?`` as ``key=value&…`` or come as keyword arguments, e.g.
``http://gpu:8000/v1::Qwen/Qwen2.5-7B-Instruct?server=vllm&concurrency=64``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from dataclaw.core.errors import ConfigError
from dataclaw.models.cache import ResponseCache
from dataclaw.models.client import Model
from dataclaw.models.errors import UnknownModelError
from dataclaw.models.ledger import UsageLedger
from dataclaw.models.prices import PriceTable
from dataclaw.models.types import Backend

BackendFactory = Callable[[str, str, dict[str, Any]], Backend]
"""(scheme, the spec after ``scheme:``, options) → backend. Must consume or reject every option."""

BACKENDS: dict[str, BackendFactory] = {}
# scheme -> module that registers it; imported on first use so `local:` never pays for importing `openai`
_BUILTIN_SCHEMES = {
    "http": "dataclaw.models.openai_compat",
    "https": "dataclaw.models.openai_compat",
    "openai": "dataclaw.models.openai_compat",
    "local": "dataclaw.models.local",
    "replay": "dataclaw.models.replay",
}


def register_backend(*schemes: str) -> Callable[[BackendFactory], BackendFactory]:
    """Register a backend factory for one or more schemes; refuses a scheme that is already taken."""

    def deco(factory: BackendFactory) -> BackendFactory:
        for scheme in schemes:
            if scheme in BACKENDS:
                raise ValueError(f"model backend scheme {scheme!r} is already registered")
            BACKENDS[scheme] = factory
        return factory

    return deco


def load_builtin_backends(scheme: str | None = None) -> None:
    """Import the built-in backend module of ``scheme`` (all of them when None) so it registers."""
    modules = set(_BUILTIN_SCHEMES.values()) if scheme is None else {_BUILTIN_SCHEMES.get(scheme)}
    for module in sorted(m for m in modules if m):
        importlib.import_module(module)


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


def build_backend(spec: str, **options: Any) -> Backend:
    """The backend for ``spec`` without cache or accounting (for wrapping, e.g. recording)."""
    scheme, rest, query = parse_spec(spec)
    return _backend(spec, scheme, rest, {**query, **options})


def _backend(spec: str, scheme: str, rest: str, options: dict[str, Any]) -> Backend:
    if scheme not in BACKENDS:
        load_builtin_backends(scheme)
    if scheme not in BACKENDS:
        load_builtin_backends()
        raise UnknownModelError(
            f"unknown model string {spec!r}: scheme {scheme!r} is not one of {', '.join(sorted(BACKENDS))}"
        )
    return BACKENDS[scheme](scheme, rest, options)


def _open_cache(
    cache: ResponseCache | str | os.PathLike[str] | bool | None, backend: Backend
) -> ResponseCache | None:
    if isinstance(cache, ResponseCache):
        return cache
    if cache is None:
        cache = backend.cache_by_default
    if cache is True:
        return ResponseCache()
    if cache is False:
        return None
    return ResponseCache(Path(cache))


def get_model(
    spec: str,
    *,
    cache: ResponseCache | str | os.PathLike[str] | bool | None = None,
    prices: PriceTable | dict[str, Any] | str | os.PathLike[str] | None = None,
    ledger: UsageLedger | None = None,
    drop_images: bool = False,
    record_to: str | os.PathLike[str] | None = None,
    **options: Any,
) -> Model:
    """Build the model named by ``spec``.

    ``cache``: a :class:`ResponseCache`, a sqlite path, True (the default file), False (off) or None (the
    backend's default: on, except for replay). ``prices``: overrides of the bundled price table (mapping or
    YAML path). ``ledger``: share one :class:`UsageLedger` across a run's models. ``drop_images``: let a
    text-only model silently drop images instead of refusing. ``record_to``: also write every answer the
    model gives to a replay file (``replay:<file>`` answers it later). Other options go to the backend.
    """
    scheme, rest, query = parse_spec(spec)
    options = {**query, **options}
    # drop_images is the model's option, not the backend's
    drop_images = take_option(options, "drop_images", bool, drop_images, spec)
    backend = _backend(spec, scheme, rest, options)
    if record_to is not None:
        from dataclaw.models.replay import RecordingBackend

        backend = RecordingBackend(backend, Path(record_to))
    return Model(
        backend,
        cache=_open_cache(cache, backend),
        prices=PriceTable.load(prices),
        ledger=ledger,
        drop_images=drop_images,
    )
