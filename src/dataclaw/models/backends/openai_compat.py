"""Any OpenAI-compatible chat-completions endpoint: hosted APIs, vLLM, SGLang, Ollama, llama.cpp's
``llama-server``, llama-cpp-python's ``llama_cpp.server``. Requests go out on one aiohttp session per event
loop (``POST {base}/chat/completions`` with a bearer key, JSON in and out).

The schema goes in the server kind's own form (``server=`` option, see :mod:`dataclaw.models.schema`;
``server=auto`` probes the endpoint once and picks the form it enforces); tools and tool calls are OpenAI
format, with ``tool_choice: "auto"`` whenever tools are offered (some servers never call a tool without
it). Failures are classified once (:func:`classify_status`, :func:`classify_connection`) into one-line
errors with a retry decision: transient ones (429, 503, timeouts, dropped connections) are retried with
backoff and slow the :class:`~dataclaw.models.limiter.AdaptiveLimiter` window; deterministic ones
(unsupported request shapes, a 5xx that repeats word for word, wrong key, unknown model, DNS, TLS) are
not. The policy is ours and testable.
"""

from __future__ import annotations

import asyncio
import random
import re
import socket
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from dataclaw.core.errors import ConfigError
from dataclaw.models.backends.base import refuse_unknown_options, register_backend, take_option
from dataclaw.models.errors import (
    CapabilityError,
    ContextLengthError,
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
)
from dataclaw.models.images import has_images
from dataclaw.models.limiter import AdaptiveLimiter, CircuitBreaker, Signal, breaker_for
from dataclaw.models.servers import SERVER_KINDS, schema_fields, server_messages
from dataclaw.models.types import Backend, ChatRequest, Generation, Usage

DEFAULT_OPENAI_URL = "https://api.openai.com/v1"
OVERLOAD_STATUS = frozenset({429, 503, 504})
RETRY_STATUS = frozenset({408, 409, 429, 502, 503, 504})
GENERIC_5XX = frozenset({502, 503, 504})
"""Gateway and overload answers repeat word for word while the server is busy; they stay retryable."""


# ---------------------------------------------------------------------------------------------------------
# what the server's error text says


# capability -> pattern of server messages that say the request shape is unsupported
CAPABILITY_PATTERNS: dict[str, re.Pattern[str]] = {
    "images": re.compile(
        r"(image|vision|multi-?modal|mmproj|image_url)[^.]{0,80}(not supported|unsupported|not enabled|"
        r"does not support|only supported|cannot|not allowed)|(does not support|not support|unsupported)"
        r"[^.]{0,60}(image|vision|multi-?modal)|not a multi-?modal model|invalid content type",
        re.I,
    ),
    "tools": re.compile(
        r"(tools?|function[_ ]call\w*|tool_choice)[^.]{0,60}(not supported|unsupported|does not support|"
        r"not enabled)|does not support tools|enable-auto-tool-choice",
        re.I,
    ),
    "json_schema": re.compile(
        r"(response_format|json_schema|guided_json|structured_outputs)[^.]{0,80}(not supported|"
        r"unsupported|invalid|unknown|not permitted|not allowed)|(unsupported|unknown|invalid)[^.]{0,40}"
        r"(response_format|response format|json_schema)",
        re.I,
    ),
}

_CONTEXT = re.compile(
    r"maximum context length|context window|context length|context size|exceed_context_size|"
    r"too many tokens|prompt is too long|input is too long|exceeds? the (available )?context",
    re.I,
)
_LIMIT = [
    re.compile(p, re.I)
    for p in (
        r"maximum context length is (\d+)",
        r"context window of (\d+)",
        r"context length \((\d+) tokens?\)",
        r"\"n_ctx\"\s*:\s*(\d+)",
        r"n_ctx[ =:]+(\d+)",
    )
]
_REQUESTED = [
    re.compile(p, re.I)
    for p in (
        r"resulted in (\d+) tokens",
        r"you requested (\d+) tokens",
        r"requested tokens \((\d+)\)",
        r"input \((\d+) tokens?\)",
        r"request has (\d+) input tokens",
        r"\"n_prompt_tokens\"\s*:\s*(\d+)",
        r"prompt is too long: (\d+)",
    )
]


def _first_int(patterns: list[re.Pattern[str]], text: str) -> int | None:
    for pattern in patterns:
        m = pattern.search(text)
        if m:
            return int(m.group(1))
    return None


_TRACEBACK = re.compile(r'\s+File "[^"]+", line \d+.*', re.S)


def _short(text: str) -> str:
    """One line of at most 240 characters, without the Python traceback some servers append."""
    return " ".join(_TRACEBACK.sub("", text).split())[:240]


@dataclass
class HTTPAnswer:
    """A response as read off the wire: status, headers, body."""

    status: int
    headers: dict[str, str]
    raw: bytes

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return orjson.loads(self.raw)

    def message(self) -> str:
        """The server's own error message (OpenAI's ``{"error": {"message"}}`` or the body), short."""
        try:
            body = self.json()
        except orjson.JSONDecodeError:
            body = None
        if isinstance(body, dict):
            err = body.get("error", body)
            msg = err.get("message") if isinstance(err, dict) else err
            if msg:
                return _short(str(msg))
        return _short(self.text) or f"HTTP {self.status}"

    def retry_after(self) -> float | None:
        value = self.headers.get("retry-after")
        try:
            return float(value) if value is not None else None
        except ValueError:
            return None


@dataclass
class Verdict:
    """What to do about one failed attempt."""

    error: ModelError
    retry: bool
    signal: Signal = Signal.NEUTRAL
    retry_after: float | None = None
    verify: tuple[str, ...] = ()
    """Capabilities the request used that may explain an opaque 5xx: check them before retrying."""
    why: str = ""
    """What the server said (``HTTP 500: …``), for an error built later."""


def used_capabilities(request: ChatRequest | None, form: str) -> tuple[str, ...]:
    """The capabilities a request relies on beyond plain chat."""
    if request is None:
        return ()
    used = []
    if has_images(request.messages):
        used.append("images")
    if request.tools:
        used.append("tools")
    if request.json_schema is not None and form != "none":
        used.append("json_schema")
    return tuple(used)


def capability_error(model_id: str, capability: str, form: str, why: str, raw: str | None) -> CapabilityError:
    """The one line for an unsupported request shape."""
    what = {
        "images": "does not take images (text-only model or server); send text only, or allow dropping "
        "images (--send-images auto / drop_images=true)",
        "tools": "does not take tools (function calling is off on this server)",
        "json_schema": f"refuses JSON-schema requests in the server={form} form; use ?server=auto to find "
        "the form it accepts",
    }[capability]
    return CapabilityError(
        f"model {model_id} {what} ({why})", capability=capability, model=model_id, raw_text=raw
    )


def classify_status(
    model_id: str, status: int, text: str, raw: str | None, used: tuple[str, ...], form: str, tries: str
) -> Verdict:
    """One HTTP error answer → error and retry decision (the order matters: most specific first)."""
    where = f"model {model_id}"
    why = f"HTTP {status}: {text}"
    if status in (401, 403):
        return Verdict(
            ModelAuthError(f"{where}: the server refused the API key ({why})", model=model_id, raw_text=raw),
            False,
        )
    if status == 429:
        err = ModelRateLimitError(f"{where}: rate limited ({why}) {tries}", model=model_id, raw_text=raw)
        return Verdict(err, True, Signal.OVERLOAD)
    if _CONTEXT.search(text) and (status < 500 or "exceed" in text.lower()):
        limit, requested = _first_int(_LIMIT, raw or text), _first_int(_REQUESTED, raw or text)
        counts = (
            f"{requested} tokens requested, the context holds {limit}"
            if limit and requested
            else (f"the context holds {limit} tokens" if limit else "no token counts given")
        )
        err = ContextLengthError(
            f"{where}: the prompt does not fit the context ({counts}; {why})",
            model=model_id, raw_text=raw, limit=limit, requested=requested,
        )  # fmt: skip
        return Verdict(err, False)
    for capability in used:
        if CAPABILITY_PATTERNS[capability].search(text):
            return Verdict(capability_error(model_id, capability, form, why, raw), False)
    if status == 404:
        err = ModelNotFoundError(
            f"{where}: the server does not know this model ({why})", model=model_id, raw_text=raw
        )
        return Verdict(err, False)
    if status >= 500 or status in RETRY_STATUS:
        signal = Signal.OVERLOAD if status in OVERLOAD_STATUS else Signal.OK
        err = ModelServerError(f"{where}: server error ({why}) {tries}", model=model_id, raw_text=raw)
        verify = used if status in (500, 501) else ()
        return Verdict(err, True, signal, verify=verify, why=why)
    err = ModelRequestError(f"{where}: the server rejected the request ({why})", model=model_id, raw_text=raw)
    return Verdict(err, False, verify=used if status in (400, 422) else (), why=why)


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and all(cur is not s for s in seen):
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    return seen


# (error class, retry?, test on one exception of the cause chain, what to say)
_CONNECTION_KINDS: list[tuple[type[ModelUnreachableError], bool, Callable[[BaseException], bool], str]] = [
    (
        ModelDNSError,
        False,
        lambda e: isinstance(e, socket.gaierror) or type(e).__name__ == "ClientConnectorDNSError",
        "the host name does not resolve",
    ),
    (
        ModelTLSError,
        False,
        lambda e: (
            isinstance(e, ssl.SSLError) or "SSL" in type(e).__name__ or "Certificate" in type(e).__name__
        ),
        "the TLS handshake failed",
    ),
    (
        ModelConnectionRefusedError,
        True,
        lambda e: (
            isinstance(e, ConnectionRefusedError)
            or (type(e).__name__ == "ClientConnectorError" and "refused" in str(e).lower())
        ),
        "connection refused (is the server running on that port?)",
    ),
]


_AIOHTTP_PREFIX = re.compile(r"^Cannot connect to host \S+ ssl:\S+\s*")


def classify_connection(model_id: str, base_url: str, exc: BaseException, tries: str) -> Verdict | None:
    """A transport failure → DNS, TLS, refused or dropped connection; None when it is a plain timeout."""
    chain = _chain(exc)
    for cls, retry, test, say in _CONNECTION_KINDS:
        hit = next((e for e in chain if test(e)), None)
        if hit is not None:
            detail = " ".join((str(hit).strip() or type(hit).__name__).split())
            detail = _AIOHTTP_PREFIX.sub("", detail)
            if detail.startswith("[") and detail.endswith("]"):
                detail = detail[1:-1]
            detail = detail[:120]
            err = cls(
                f"model {model_id}: cannot reach the server at {base_url}: {say} ({detail}) {tries}",
                model=model_id,
            )
            return Verdict(err, retry, Signal.NEUTRAL)
    if isinstance(exc, TimeoutError):
        return None
    cause = chain[1] if len(chain) > 1 else exc
    why = " ".join((str(cause).strip() or type(cause).__name__).split())[:120]
    msg = f"model {model_id}: cannot reach the server at {base_url}: connection lost ({why}) {tries}"
    return Verdict(ModelUnreachableError(msg, model=model_id), True, Signal.OVERLOAD)


# ---------------------------------------------------------------------------------------------------------
# the backend


def _new_session(api_key: str, timeout: float) -> aiohttp.ClientSession:
    """The HTTP session of one event loop. aiohttp straight, not the ``openai`` SDK (over httpx or over
    aiohttp): the SDK spends ~1 ms of client CPU per call building httpx requests and headers, four times
    what a call costs here, which decides whether one event loop keeps 32 requests in flight against a
    200 ms server at ≥ 90% of ideal on a busy machine. Concurrency is bounded by the backend's limiter,
    not by the pool; ``timeout`` is only a backstop (the request's overall deadline): answer timeouts are
    the limiter's."""
    headers = {
        "Authorization": f"Bearer {api_key}",
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": "dataclaw",
    }
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0),
        headers=headers,
        timeout=aiohttp.ClientTimeout(total=timeout),
    )


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTP(S)_PROXY``, unless ``NO_PROXY`` matches), looked
    up once per session: aiohttp's ``trust_env`` looks it up again on every request (~0.5 ms each)."""
    import urllib.request
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if not parts.hostname or urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


async def _closed_with_loop(session: aiohttp.ClientSession) -> AsyncIterator[None]:
    """Lives as long as its event loop: ``asyncio.run`` finalises async generators before it closes the
    loop, and this one then closes the session's connections in that loop (aiohttp must be closed there)."""
    try:
        yield
    finally:
        await session.close()


class HTTPStatusError(Exception):
    """A non-2xx answer (internal: classified into a ModelError where it is caught)."""

    def __init__(self, answer: HTTPAnswer) -> None:
        super().__init__(f"HTTP {answer.status}")
        self.answer = answer


class OpenAICompatBackend(Backend):
    """One model on one OpenAI-compatible server."""

    def __init__(
        self,
        model_id: str,
        model_name: str,
        base_url: str,
        api_key: str,
        *,
        server: str = "openai",
        timeout: float = 120.0,
        deadline: float = 900.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        backoff_max: float = 30.0,
        concurrency: int = 16,
        adaptive: bool = True,
        breaker: int = 5,
    ) -> None:
        super().__init__(model_id, model_name)
        if server not in SERVER_KINDS:
            raise ConfigError(f"model {model_id}: {SERVER_KINDS.unknown(server)}")
        if concurrency < 1 or max_retries < 0 or timeout <= 0 or deadline <= 0 or breaker < 1:
            raise ConfigError(
                f"model {model_id}: concurrency ≥ 1, max_retries ≥ 0, breaker ≥ 1, timeout > 0 and "
                "deadline > 0 are required"
            )
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.server = server
        self.timeout = timeout
        self.deadline = deadline
        self.max_retries = max_retries
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.concurrency = concurrency
        self.adaptive = adaptive
        self.breaker_threshold = breaker
        self.supports_images = True  # type: ignore[misc]  # learnt per endpoint (probe or refusal)
        self._form: str | None = None if server == "auto" else server
        self._probed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: aiohttp.ClientSession | None = None
        self._limiter: AdaptiveLimiter | None = None
        self._probe_lock: asyncio.Lock | None = None
        self._closer: AsyncIterator[None] | None = None
        self._state: dict[str, int] = {}
        self._breaker: CircuitBreaker | None = None
        self._proxy: str | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickles without its loop-bound clients; the copy makes its own on first use."""
        loop_bound = ("_loop", "_client", "_limiter", "_probe_lock", "_closer", "_breaker")
        return {**self.__dict__, **dict.fromkeys(loop_bound)}

    @property
    def breaker(self) -> CircuitBreaker:
        """The endpoint's breaker, shared by every backend on it in this process."""
        if self._breaker is None:
            self._breaker = breaker_for(self.model_id, self.breaker_threshold)
        return self._breaker

    @property
    def form(self) -> str:
        """The schema form in use (``auto`` until the probe has answered)."""
        return self._form or "auto"

    def concurrency_state(self) -> dict[str, int]:
        """Configured, effective (current window), lowest window and most requests seen in flight."""
        if self._limiter is not None:
            self._state = self._limiter.state()
        return dict(self._state) or {
            "configured": self.concurrency, "effective": self.concurrency, "lowest": self.concurrency,
            "max_in_flight": 0,
        }  # fmt: skip

    async def _bind(self) -> tuple[aiohttp.ClientSession, AdaptiveLimiter]:
        """Session and limiter of the running event loop (both are loop-bound, so ``asyncio.run`` twice
        in one process works; each loop's session is closed when that loop shuts down)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._client is None or self._limiter is None:
            self._client = _new_session(self.api_key, self.deadline)
            self._proxy = proxy_for(self.base_url)
            decrease = 0.5 if self.adaptive else 1.0
            self._limiter = AdaptiveLimiter(self.concurrency, decrease=decrease)
            self._probe_lock = asyncio.Lock()
            self._loop = loop
            self._closer = _closed_with_loop(self._client)
            await anext(self._closer)
        return self._client, self._limiter

    def body(self, request: ChatRequest, form: str | None = None) -> dict[str, Any]:
        """The JSON body fields beyond ``model`` and ``messages``."""
        extra: dict[str, Any] = dict(request.params)
        if request.tools:
            extra["tools"] = request.tools
            extra["tool_choice"] = request.tool_choice if request.tool_choice is not None else "auto"
        if request.json_schema is not None:
            extra.update(
                schema_fields(form or self._form or "openai", request.json_schema, request.schema_name)
            )
        return extra

    async def capabilities(self, refresh: bool = False) -> Any:
        """This endpoint's :class:`~dataclaw.models.probe.Capabilities`: cached, else probed (once per loop
        even when many requests ask at the same time)."""
        from dataclaw.models.probe import aprobe, cached_capabilities

        await self._bind()
        assert self._probe_lock is not None
        async with self._probe_lock:
            caps = None if refresh else cached_capabilities(self.model_id)
            if caps is None:
                caps = await aprobe(self)
        if self.server == "auto":
            self._form = caps.json_schema or "none"
        self.supports_images = caps.images  # type: ignore[misc]
        self._probed = True
        return caps

    async def generate(self, request: ChatRequest) -> Generation:
        images = has_images(request.messages)
        if self._form is None or (images and not self._probed):
            # server=auto needs the schema form; and some text-only servers answer 200 to images they
            # cannot see (the image is read as text): only a probe tells, once per endpoint, before the
            # first image is sent
            await self.capabilities()
        if images and not self.supports_images:
            caps = await self.capabilities()  # cached by now
            why = caps.detail.get("images") or "the images probe failed"
            raise capability_error(self.model_id, "images", self.form, why, None)
        form = self.form
        messages = server_messages(form, request.messages)
        body = {"model": self.model_name, "messages": messages, **self.body(request, form)}
        return self._generation(await self._post(body, request, form))

    async def post_json(self, body: dict[str, Any]) -> dict[str, Any]:
        """Send one raw chat-completions body with the retry policy (no capability checks); the decoded
        answer. For probes."""
        resp = await self._post(body, None, "none", probing=True)
        try:
            data = resp.json()
        except orjson.JSONDecodeError:
            raise ModelOutputError(
                f"model {self.model_id}: the server's answer is not JSON",
                model=self.model_id,
                raw_text=resp.text[:2000],
            ) from None
        return data if isinstance(data, dict) else {}

    async def _post(
        self, body: dict[str, Any], request: ChatRequest | None, form: str, *, probing: bool = False
    ) -> HTTPAnswer:
        """Send ``body`` through the window, the breaker and the retry policy. ``probing``: a refusal is
        the answer being looked for, so only overload (429, 503, timeouts) is retried."""
        breaker = self.breaker
        breaker.check()  # before anything else: an open circuit costs nothing
        client, limiter = await self._bind()
        loop = asyncio.get_running_loop()
        used = used_capabilities(request, form)
        cap: float | None = None
        attempt, last_text, last_answer = 0, None, None
        while True:
            if attempt:
                breaker.check()  # another request may have opened the circuit while this one waited
            seq = await limiter.acquire()
            start = loop.time()
            cap = cap if cap is not None else start + self.deadline
            signal, latency, verdict = Signal.NEUTRAL, None, None
            tries = f"after {attempt + 1} attempt(s)"
            try:
                clock = limiter.answer_timeout(self.timeout, cap)
                try:
                    async with clock:
                        resp = await self._send(client, body)
                finally:
                    limiter.done(clock)
                signal, latency = Signal.OK, loop.time() - start
                limiter.answered()
                breaker.success()
                return resp
            except TimeoutError:
                verdict = self._timeout(loop.time() >= cap, tries, last_answer)
            except HTTPStatusError as exc:
                limiter.answered()  # an error answer is an answer: the server is alive
                answer = exc.answer
                text = answer.message()
                verdict = classify_status(self.model_id, answer.status, text, answer.text, used, form, tries)
                if verdict.retry and answer.status not in GENERIC_5XX and (text == last_text or probing):
                    verdict.retry = False  # the same error word for word: deterministic, not transient
                last_text, last_answer = text, f"HTTP {answer.status} {text}"
                verdict.retry_after = answer.retry_after()
                if answer.status == 404 and isinstance(verdict.error, ModelNotFoundError):
                    verdict.error = await self._not_found(verdict.error)
            except (aiohttp.ClientError, OSError) as exc:
                verdict = classify_connection(self.model_id, self.base_url, exc, tries) or self._timeout(
                    loop.time() >= cap, tries, last_answer
                )
            finally:
                limiter.release(seq, verdict.signal if verdict is not None else signal, latency)
            if verdict.verify:
                verdict = await self._verify(verdict, form) or verdict
            delay = min(self.backoff_max, self.backoff * (2**attempt)) * (0.5 + random.random() / 2)
            if verdict.retry_after is not None:
                delay = min(self.backoff_max, max(delay, verdict.retry_after))
            if not verdict.retry or attempt >= self.max_retries or loop.time() + delay >= cap:
                if isinstance(verdict.error, CapabilityError):
                    if verdict.error.capability == "images":
                        self.supports_images = False  # type: ignore[misc]
                elif verdict.error.fatal or isinstance(verdict.error, ModelTimeoutError):
                    breaker.failure(verdict.error)  # a server that answers nothing is as dead as none
                raise verdict.error
            attempt += 1
            await asyncio.sleep(delay)

    async def _send(self, session: aiohttp.ClientSession, body: dict[str, Any]) -> HTTPAnswer:
        """POST ``body`` to ``/chat/completions``; the answer, or :class:`HTTPStatusError` for non-2xx."""
        url = f"{self.base_url}/chat/completions"
        async with session.post(url, data=orjson.dumps(body), proxy=self._proxy) as resp:
            answer = HTTPAnswer(
                resp.status, {k.lower(): v for k, v in resp.headers.items()}, await resp.read()
            )
        if answer.status >= 400:
            raise HTTPStatusError(answer)
        return answer

    def _timeout(self, past_deadline: bool, tries: str, last_answer: str | None = None) -> Verdict:
        """A timed-out attempt; ``last_answer`` (an earlier attempt's error answer) is named, so a
        request that kept failing says how, not only that the deadline came."""
        what = (
            f"no answer within the deadline of {self.deadline:g}s"
            if past_deadline
            else f"no answer within {self.timeout:g}s"
        )
        last = f" (the last answer: {last_answer})" if last_answer else ""
        return Verdict(
            ModelTimeoutError(f"model {self.model_id}: {what} {tries}{last}", model=self.model_id),
            True,
            Signal.OVERLOAD,
        )

    async def _verify(self, verdict: Verdict, form: str) -> Verdict | None:
        """An opaque refusal of a request that used images, tools or a schema form: when the endpoint's
        probe says one of them does not work, that is the reason — a capability error, not retried."""
        try:
            caps = await self.capabilities()
        except ModelError:
            return None
        for capability in verdict.verify:
            if capability == "json_schema":
                works = caps.json_schema == form
            elif (
                capability == "tools"
            ):  # a model that chose not to call the probe's tool may still take tools
                works = caps.tools or "tools" not in caps.refused
            else:
                works = caps.supports(capability)
            if not works:
                why = verdict.why or str(verdict.error)
                return Verdict(
                    capability_error(self.model_id, capability, form, why, verdict.error.raw_text), False
                )
        return None

    async def _not_found(self, error: ModelNotFoundError) -> ModelNotFoundError:
        """Add the models the server lists (``GET /models``) to a 404, or say the URL has no API."""
        session, _ = await self._bind()
        try:
            async with asyncio.timeout(min(10.0, self.timeout)):
                async with session.get(f"{self.base_url}/models", proxy=self._proxy) as resp:
                    ok, raw = resp.status < 400, await resp.read()
            data = orjson.loads(raw) if ok else None
            names = [str(m.get("id")) for m in data.get("data", []) if isinstance(m, dict)]  # type: ignore[union-attr]
        except (aiohttp.ClientError, OSError, orjson.JSONDecodeError, AttributeError, TimeoutError):
            names = None
        if names is None:
            where = f"model {self.model_id}: no OpenAI-compatible API at {self.base_url}"
            msg = f"{where} (HTTP 404; is the /v1 part of the URL right?)"
            return ModelNotFoundError(msg, model=self.model_id, raw_text=error.raw_text)
        if self.model_name in names:
            return error
        listed = ", ".join(names[:20]) + (" …" if len(names) > 20 else "") if names else "none"
        msg = f"model {self.model_id}: the server has no model {self.model_name!r} (it serves: {listed})"
        return ModelNotFoundError(msg, model=self.model_id, raw_text=error.raw_text, available=names)

    def _generation(self, resp: HTTPAnswer) -> Generation:
        """Read the chat-completion JSON; a body without a message is an output error with the raw text."""
        try:
            data = resp.json()
            choice = data["choices"][0]
            msg = choice["message"]
        except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
            raise ModelOutputError(
                f"model {self.model_id}: the server's answer is not a chat completion",
                model=self.model_id,
                raw_text=resp.text[:2000],
            ) from None
        calls = [
            {
                "id": c.get("id") or f"call_{i}",
                "type": c.get("type", "function"),
                "function": c.get("function", {}),
            }
            for i, c in enumerate(msg.get("tool_calls") or [])
        ]
        usage = data.get("usage") or {}
        logprobs = choice.get("logprobs")
        return Generation(
            text=msg.get("content"),
            tool_calls=calls,
            usage=Usage(
                prompt_tokens=usage.get("prompt_tokens") or 0,
                completion_tokens=usage.get("completion_tokens") or 0,
            ),
            finish_reason=choice.get("finish_reason"),
            # vLLM/SGLang/DeepSeek: reasoning_content (vLLM >= 0.11 also: reasoning); token ids only
            # where the request asked for them (vLLM return_token_ids)
            reasoning=msg.get("reasoning_content") or msg.get("reasoning") or None,
            logprobs=logprobs.get("content") if isinstance(logprobs, dict) else None,
            token_ids=choice.get("token_ids") or None,
            prompt_token_ids=data.get("prompt_token_ids") or choice.get("prompt_token_ids") or None,
        )

    async def aclose(self) -> None:
        if self._limiter is not None:
            self._state = self._limiter.state()
        if self._closer is not None and self._loop is asyncio.get_running_loop():
            await self._closer.aclose()  # type: ignore[attr-defined]
        self._client = self._closer = None


_HTTP_OPTIONS = [
    "server",
    "schema_mode",
    "timeout",
    "deadline",
    "max_retries",
    "backoff",
    "backoff_max",
    "concurrency",
    "adaptive",
    "breaker",
    "api_key",
]


def _common_options(options: dict[str, Any], spec: str) -> dict[str, Any]:
    server = take_option(options, "server", str, "openai", spec)
    server = take_option(options, "schema_mode", str, server, spec)
    return {
        "server": server,
        "timeout": take_option(options, "timeout", float, 120.0, spec),
        "deadline": take_option(options, "deadline", float, 900.0, spec),
        "max_retries": take_option(options, "max_retries", int, 4, spec),
        "backoff": take_option(options, "backoff", float, 0.5, spec),
        "backoff_max": take_option(options, "backoff_max", float, 30.0, spec),
        "concurrency": take_option(options, "concurrency", int, 16, spec),
        "adaptive": take_option(options, "adaptive", bool, True, spec),
        "breaker": take_option(options, "breaker", int, 5, spec),
    }


@register_backend("http", "https")
def _http_factory(scheme: str, rest: str, options: dict[str, Any]) -> Backend:
    """``http://host:port/v1::<model>``: a self-hosted server. API key: option ``api_key`` or
    ``DATACLAW_API_KEY`` (most local servers accept any key)."""
    import os

    spec = f"{scheme}:{rest}"
    url, sep, model = rest.partition("::")
    if not sep or not model or not url.startswith("//"):
        raise ConfigError(f"model string {spec!r} must look like http://host:port/v1::<model name>")
    api_key = take_option(options, "api_key", str, os.environ.get("DATACLAW_API_KEY") or "EMPTY", spec)
    common = _common_options(options, spec)
    refuse_unknown_options(options, spec, _HTTP_OPTIONS)
    base_url = f"{scheme}:{url}"
    return OpenAICompatBackend(f"{base_url}::{model}", model, base_url, api_key, **common)


@register_backend("openai")
def _openai_factory(scheme: str, rest: str, options: dict[str, Any]) -> Backend:
    """``openai:<model>``: OPENAI_BASE_URL (default: the OpenAI API) and OPENAI_API_KEY from the env."""
    import os

    spec = f"{scheme}:{rest}"
    if not rest:
        raise ConfigError("model string 'openai:' needs a model name, e.g. openai:gpt-4o-mini")
    base_url = os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_URL
    api_key = take_option(options, "api_key", str, os.environ.get("OPENAI_API_KEY", ""), spec)
    if not api_key:
        raise ConfigError(f"model {spec} needs an API key: set OPENAI_API_KEY")
    common = _common_options(options, spec)
    refuse_unknown_options(options, spec, _HTTP_OPTIONS)
    return OpenAICompatBackend(f"openai:{rest}", rest, base_url, api_key, **common)
