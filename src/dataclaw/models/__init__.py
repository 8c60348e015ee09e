"""Chat models behind one async protocol, with a response cache and cost accounting.

    from dataclaw.models import get_model, UsageLedger
    ledger = UsageLedger()
    model = get_model("local:smollm2-135m", ledger=ledger)          # or openai:…, http://host/v1::…
    done = await model.complete("Describe the task as JSON.", schema={...})
    done.parsed, done.usage, done.cost_usd, done.cached
    ledger.save(run_store)                                          # into manifest.json

Backends (openai_compat, local, replay) are imported when the first model is built.
"""

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
from dataclaw.models.registry import BACKENDS, build_backend, get_model, register_backend
from dataclaw.models.types import Backend, ChatModel, ChatRequest, Completion, Generation, Message, Usage

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
