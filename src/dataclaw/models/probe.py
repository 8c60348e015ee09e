"""What an endpoint can do, found by asking it: chat, JSON schema (and in which request form), tools,
images. ``dataclaw models check`` prints it; ``server=auto`` picks its schema form from it; a runner calls
:func:`probe_endpoint` before a long run so a wrong URL, key or model name fails in seconds.

One probe request per capability (the JSON-schema probe tries the server kinds' forms in
:data:`~dataclaw.models.schema.PROBE_ORDER` until one is enforced). Results are cached per endpoint in the
process and on disk next to the response cache (``capabilities.json``, a day at most).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import struct
import threading
import time
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from dataclaw.models.cache import default_cache_path
from dataclaw.models.errors import CapabilityError, ModelError
from dataclaw.models.schema import parse_json_answer
from dataclaw.models.servers import PROBE_ORDER, SERVER_KINDS, schema_fields

if TYPE_CHECKING:
    from dataclaw.models.backends.openai_compat import OpenAICompatBackend

CAPABILITIES = ("chat", "json_schema", "tools", "images")
_HTTP = re.compile(r"HTTP \d+: .*?(?=\) after \d+ attempt|\)$|$)")
TTL_S = 24 * 3600.0

# A schema the prompt does not describe: an answer that obeys it proves the server enforced it.
PROBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"probe": {"type": "integer", "enum": [7]}},
    "required": ["probe"],
    "additionalProperties": False,
}
PROBE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_magic_number",
        "description": "Return the magic number.",
        "parameters": {"type": "object", "properties": {}},
    },
}


def solid_png(rgb: tuple[int, int, int], side: int = 32) -> bytes:
    """A ``side``×``side`` PNG of one colour (for the images probe; no imaging library needed)."""
    row = b"\x00" + bytes(rgb) * side  # filter byte 0, then RGB pixels

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * side))
        + chunk(b"IEND", b"")
    )


# a model that sees images names both colours; a text-only one that was given the image as text cannot
PROBE_COLOURS: dict[str, tuple[int, int, int]] = {"red": (230, 20, 20), "blue": (20, 40, 230)}


def _clip(text: str, limit: int = 120) -> str:
    """``text`` cut at a word boundary near ``limit`` characters."""
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"


class Capabilities(BaseModel):
    """What one endpoint (server + model) accepted when probed."""

    model: str
    """The model string's id (``http://host/v1::name``)."""
    chat: bool = False
    json_schema: str | None = None
    """The server kind whose schema form the server enforced; None when no form was enforced."""
    tools: bool = False
    """The server took ``tools`` with ``tool_choice: auto`` and the model answered with a parsable call."""
    images: bool = False
    refused: list[str] = Field(default_factory=list)
    """Capabilities whose probe the server answered with an HTTP error (not merely an unusable answer)."""
    detail: dict[str, str] = Field(default_factory=dict)
    """Per capability (and per schema form tried): what the server did, one line."""
    latency_s: dict[str, float] = Field(default_factory=dict)
    probed_at: float = 0.0

    def supports(self, capability: str) -> bool:
        value = getattr(self, capability)
        return bool(value)

    def rows(self) -> list[tuple[str, bool, str]]:
        """(capability, works, detail) for printing."""
        out = []
        for cap in CAPABILITIES:
            works = self.supports(cap)
            detail = self.detail.get(cap, "")
            if cap == "json_schema" and self.json_schema:
                form = f"server={self.json_schema}" if self.json_schema in SERVER_KINDS else self.json_schema
                detail = form + (f" ({detail})" if detail else "")
            out.append((cap, works, detail))
        return out


# ---------------------------------------------------------------------------------------------------------
# the cache: in-process and capabilities.json next to the response cache

_MEMORY: dict[tuple[str, str], Capabilities] = {}  # (capabilities file, model id) -> capabilities
_LOCK = threading.Lock()


def capabilities_path() -> Path:
    return default_cache_path().with_name("capabilities.json")


def _read_disk() -> dict[str, Any]:
    try:
        data = json.loads(capabilities_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def cached_capabilities(model_id: str) -> Capabilities | None:
    """The last probe of ``model_id`` within a day (this process first, then the disk cache), or None."""
    where = str(capabilities_path())
    with _LOCK:
        caps = _MEMORY.get((where, model_id))
    if caps is None:
        raw = _read_disk().get(model_id)
        try:
            caps = Capabilities.model_validate(raw) if raw else None
        except ValueError:
            caps = None
    if caps is None or time.time() - caps.probed_at > TTL_S:
        return None
    with _LOCK:
        _MEMORY[(where, model_id)] = caps
    return caps


def remember(caps: Capabilities) -> None:
    """Keep ``caps`` in the process and write it to the disk cache (atomically, unique temp name)."""
    path = capabilities_path()
    with _LOCK:
        _MEMORY[(str(path), caps.model)] = caps
        data = _read_disk()
        data[caps.model] = caps.model_dump()
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:  # a read-only cache dir only costs a probe next time
            tmp.unlink(missing_ok=True)


def forget(model_id: str | None = None) -> None:
    """Drop the in-process entries (all, or one endpoint's); the disk cache stays."""
    with _LOCK:
        for key in [k for k in _MEMORY if model_id is None or k[1] == model_id]:
            del _MEMORY[key]


# ---------------------------------------------------------------------------------------------------------
# probing


def _user(text: str, image: bytes | None = None) -> list[dict[str, Any]]:
    if image is None:
        return [{"role": "user", "content": text}]
    uri = "data:image/png;base64," + base64.b64encode(image).decode("ascii")
    parts = [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": uri}}]
    return [{"role": "user", "content": parts}]


def _content(data: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]]]:
    msg = (data.get("choices") or [{}])[0].get("message") or {}
    return msg.get("content"), list(msg.get("tool_calls") or [])


def _names(answer: str, colour: str) -> bool:
    """Whether ``answer`` names ``colour`` as a word ("colored" does not name red)."""
    return re.search(rf"\b{colour}\b", answer, re.I) is not None


def _said(data: dict[str, Any]) -> str:
    """The answer's text, or a reasoning model's reasoning when it used every token on it."""
    msg = (data.get("choices") or [{}])[0].get("message") or {}
    return " ".join(str(msg.get("content") or msg.get("reasoning_content") or "").split())


async def aprobe(backend: OpenAICompatBackend, forms: tuple[str, ...] = PROBE_ORDER) -> Capabilities:
    """Probe ``backend``'s endpoint once per capability and remember the result. A failing plain chat
    request raises its error (unreachable, wrong key, unknown model): nothing else can work then."""
    caps = Capabilities(model=backend.model_id, probed_at=time.time())

    async def ask(name: str, messages: list[dict[str, Any]], **fields: Any) -> dict[str, Any] | None:
        start = time.perf_counter()
        body = {"model": backend.model_name, "messages": messages, "temperature": 0, **fields}
        try:
            return await backend.post_json(body)
        except ModelError as exc:
            if name == "chat" or (exc.fatal and not isinstance(exc, CapabilityError)):
                raise
            if name in ("tools", "images"):
                caps.refused.append(name)
            said = _HTTP.search(str(exc))
            caps.detail[name] = _clip(said.group(0) if said else str(exc).split(": ", 1)[-1])
            return None
        finally:
            caps.latency_s[name] = round(caps.latency_s.get(name, 0.0) + time.perf_counter() - start, 3)

    data = await ask("chat", _user("Reply with the word OK."), max_tokens=8)
    caps.chat = data is not None
    tried: list[str] = []
    for form in forms:
        data = await ask(
            f"json_schema:{form}", _user("Say hello."), max_tokens=48, **schema_fields(form, PROBE_SCHEMA)
        )
        if data is None:
            tried.append(f"{form}: {caps.detail.pop(f'json_schema:{form}')}")
            continue
        try:
            parse_json_answer(_content(data)[0], PROBE_SCHEMA, backend.model_id)
        except ModelError:
            tried.append(f"{form}: ignored")
            continue
        caps.json_schema = form
        break
    caps.latency_s["json_schema"] = round(
        sum(v for k, v in caps.latency_s.items() if k.startswith("json_schema:")), 3
    )
    caps.latency_s = {k: v for k, v in caps.latency_s.items() if not k.startswith("json_schema:")}
    if tried:
        caps.detail["json_schema"] = "; ".join(tried)[:300]
    data = await ask(
        "tools",
        _user("Call the get_magic_number tool now."),
        max_tokens=64,
        tools=[PROBE_TOOL],
        tool_choice="auto",
    )
    if data is not None:
        calls = _content(data)[1]
        try:
            caps.tools = bool(calls) and all(
                isinstance(json.loads(c["function"].get("arguments") or "{}"), dict) for c in calls
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            caps.tools = False
        if not caps.tools:
            caps.detail["tools"] = "tools accepted but the model answered without a parsable tool call"
    answers = {}
    for colour, rgb in PROBE_COLOURS.items():  # stops at the first miss: a blind model costs one request
        question = _user(
            "What colour is this image? Answer with one word: red, green or blue.", solid_png(rgb)
        )
        data = await ask("images", question, max_tokens=32)
        if data is None:
            break
        answers[colour] = _said(data)[:60]
        if not _names(answers[colour], colour):
            break
    caps.images = len(answers) == len(PROBE_COLOURS) and all(_names(a, c) for c, a in answers.items())
    if answers and not caps.images:
        said = ", ".join(f"{c} image: {a!r}" for c, a in answers.items())
        caps.detail["images"] = f"the server took the images but the model did not see them ({said})"
    remember(caps)
    return caps


async def aprobe_endpoint(spec: str, *, refresh: bool = False, **options: Any) -> Capabilities:
    """The capabilities of the endpoint behind the model string ``spec`` (cached for a day unless
    ``refresh``). Raises the endpoint's one-line :class:`ModelError` when even a plain chat request fails
    (``exc.fatal`` is True for unreachable, wrong key, unknown model) and a ConfigError for a bad model
    string. Probe requests are not in any usage ledger. Backends that are not servers
    (``local:``, ``replay:``) report what they support without a request. Call it before a long run."""
    from dataclaw.models.registry import build_backend

    backend = build_backend(spec, **options)
    if not hasattr(backend, "post_json"):  # in-process or recorded: nothing to ask over the network
        return Capabilities(
            model=backend.model_id, chat=True, json_schema=backend.structured_output, tools=True,
            images=backend.supports_images, detail={"chat": "no server: answered in this process"},
            probed_at=time.time(),
        )  # fmt: skip
    if not refresh:
        caps = cached_capabilities(backend.model_id)
        if caps is not None:
            return caps
    try:
        return await aprobe(backend)  # type: ignore[arg-type]
    finally:
        await backend.aclose()


def probe_endpoint(spec: str, *, refresh: bool = False, **options: Any) -> Capabilities:
    """:func:`aprobe_endpoint` for code without an event loop (the CLI, a runner before ingest)."""
    return asyncio.run(aprobe_endpoint(spec, refresh=refresh, **options))
