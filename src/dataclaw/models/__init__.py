"""Chat models behind one async protocol, with a response cache and cost accounting.

    from dataclaw.models import get_model, UsageLedger
    ledger = UsageLedger()
    model = get_model("local:smollm2-135m", ledger=ledger)          # or openai:…, http://host/v1::…
    done = await model.complete("Describe the task as JSON.", schema={...})
    done.parsed, done.usage, done.cost_usd, done.cached
    ledger.save(run_store)                                          # into manifest.json

Backends (``models/backends/``: openai_compat, local, replay, and any registered through the
``dataclaw.model_backends`` entry points) are imported when the first model is built.
"""

from dataclaw.core.moved import keep_old_paths
from dataclaw.models.backends.base import BACKENDS, register_backend
from dataclaw.models.cache import ResponseCache
from dataclaw.models.client import Model
from dataclaw.models.errors import (
    CapabilityError,
    CircuitOpenError,
    ContextLengthError,
    ImagesNotSupportedError,
    InvalidSchemaError,
    ModelAuthError,
    ModelConnectionRefusedError,
    ModelDNSError,
    ModelError,
    ModelNotFoundError,
    ModelOutputError,
    ModelRateLimitError,
    ModelRequestError,
    ModelServerError,
    ModelTimeoutError,
    ModelTLSError,
    ModelUnreachableError,
    ReplayMissError,
    UnknownModelError,
)
from dataclaw.models.ledger import UsageLedger
from dataclaw.models.prices import Price, PriceTable
from dataclaw.models.probe import Capabilities, aprobe_endpoint, probe_endpoint
from dataclaw.models.registry import build_backend, get_model
from dataclaw.models.types import Backend, ChatModel, ChatRequest, Completion, Generation, Message, Usage

keep_old_paths(
    {
        "dataclaw.models.openai_compat": "dataclaw.models.backends.openai_compat",
        "dataclaw.models.local": "dataclaw.models.backends.local",
        "dataclaw.models.replay": "dataclaw.models.backends.replay",
    }
)

__all__ = [
    "BACKENDS",
    "Backend",
    "Capabilities",
    "CapabilityError",
    "ChatModel",
    "ChatRequest",
    "CircuitOpenError",
    "Completion",
    "ContextLengthError",
    "Generation",
    "ImagesNotSupportedError",
    "InvalidSchemaError",
    "Message",
    "Model",
    "ModelAuthError",
    "ModelConnectionRefusedError",
    "ModelDNSError",
    "ModelError",
    "ModelNotFoundError",
    "ModelOutputError",
    "ModelRateLimitError",
    "ModelRequestError",
    "ModelServerError",
    "ModelTLSError",
    "ModelTimeoutError",
    "ModelUnreachableError",
    "Price",
    "PriceTable",
    "ReplayMissError",
    "ResponseCache",
    "UnknownModelError",
    "Usage",
    "UsageLedger",
    "aprobe_endpoint",
    "build_backend",
    "get_model",
    "probe_endpoint",
    "register_backend",
]
