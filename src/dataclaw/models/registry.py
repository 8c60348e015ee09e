"""Model strings → models. Backends register a factory per scheme (:mod:`dataclaw.models.backends`);
:func:`get_model` is the one entry point.

Model strings::

    openai:<model>                      OPENAI_BASE_URL / OPENAI_API_KEY from the environment
    http://host:port/v1::<model>        vLLM, SGLang, Ollama, llama.cpp server or any OpenAI-compatible API
    local:smollm2-135m                  the embedded default model (llama.cpp, in-process)
    replay:<file.jsonl>                 answers recorded earlier (tests)

Options follow a ``?`` as ``key=value&…`` or come as keyword arguments, e.g.
``http://gpu:8000/v1::Qwen/Qwen2.5-7B-Instruct?server=vllm&concurrency=64``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dataclaw.core.moved import keep_old_names
from dataclaw.models.backends.base import backend_factory, parse_spec, take_option
from dataclaw.models.backends.replay import RecordingBackend
from dataclaw.models.cache import ResponseCache
from dataclaw.models.client import Model
from dataclaw.models.ledger import UsageLedger
from dataclaw.models.prices import PriceTable
from dataclaw.models.types import Backend


def build_backend(spec: str, **options: Any) -> Backend:
    """The backend for ``spec`` without cache or accounting (for wrapping, e.g. recording)."""
    scheme, rest, query = parse_spec(spec)
    return backend_factory(spec, scheme)(scheme, rest, {**query, **options})


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
    backend = backend_factory(spec, scheme)(scheme, rest, options)
    if record_to is not None:
        backend = RecordingBackend(backend, Path(record_to))
    return Model(
        backend,
        cache=_open_cache(cache, backend),
        prices=PriceTable.load(prices),
        ledger=ledger,
        drop_images=drop_images,
    )


# names that moved out of this module in 0.x, readable here for one release
keep_old_names(
    __name__,
    {
        "BACKENDS": "dataclaw.models.backends.base",
        "BackendFactory": "dataclaw.models.backends.base",
        "refuse_unknown_options": "dataclaw.models.backends.base",
        "register_backend": "dataclaw.models.backends.base",
    },
)
