"""A small OpenAI-compatible chat-completions server for tests and benchmarks (a test double for the model
servers we don't own: vLLM, SGLang, Ollama, llama.cpp server, hosted APIs).

It serves ``POST /v1/chat/completions`` and ``GET /v1/models`` on 127.0.0.1 (a free port) from a threaded
stdlib HTTP server, so many requests really run at the same time. It records every request body it
received, counts requests and the maximum number in flight, and answers from:

* a script: ``server.enqueue(Reply.error(429), Reply.json({"a": 1}))`` — consumed in order, one per request;
* then a responder: ``OpenAIServer(responder=lambda req: Reply.text(...))`` — called per request;
* else the default reply (``Reply.text("ok")``).

A :class:`Reply` can be text, a JSON answer, tool calls, an HTTP error (OpenAI error body), with a delay
and token usage. With ``api_key=...`` requests with another bearer token get 401. ``slots=1`` makes it
answer one request at a time (the others wait their turn, like a single-slot llama.cpp server);
``models=[...]`` is what ``GET /v1/models`` lists.

    with OpenAIServer(delay=0.2) as server:
        model = get_model(f"{server.base_url}::test-model", cache=False)
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One canned answer. ``status`` ≠ 200 sends an OpenAI-style error body with ``message``."""

    content: str | None = "ok"
    tool_calls: list[dict[str, Any]] | None = None
    status: int = 200
    message: str = ""
    delay: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    finish_reason: str | None = None
    raw_body: bytes | None = None
    """Send exactly these bytes as the body (for malformed answers)."""

    @classmethod
    def text(cls, content: str, **kw: Any) -> Reply:
        return cls(content=content, **kw)

    @classmethod
    def json(cls, value: Any, **kw: Any) -> Reply:
        """An answer whose content is ``value`` as JSON text."""
        return cls(content=json.dumps(value), **kw)

    @classmethod
    def tool_call(
        cls, name: str, arguments: dict[str, Any] | str, call_id: str = "call_0", **kw: Any
    ) -> Reply:
        args = arguments if isinstance(arguments, str) else json.dumps(arguments)
        call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
        return cls(content=None, tool_calls=[call], **kw)

    @classmethod
    def error(cls, status: int, message: str = "", **kw: Any) -> Reply:
        return cls(content=None, status=status, message=message or f"error {status}", **kw)


@dataclass
class ReceivedRequest:
    """What the server got: path, headers (lower-case names) and the decoded JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None


def _words(text: str) -> int:
    return max(1, len(text.split()))


class OpenAIServer:
    """The server; use as a context manager or call :meth:`start` / :meth:`stop`."""

    def __init__(
        self,
        responder: Callable[[ReceivedRequest], Reply] | None = None,
        *,
        delay: float = 0.0,
        api_key: str | None = None,
        default: Reply | None = None,
        slots: int | None = None,
        models: list[str] | None = None,
    ) -> None:
        self.responder = responder
        self.delay = delay
        self.api_key = api_key
        self.default = default or Reply.text("ok")
        self.models = list(models) if models is not None else ["test-model"]
        self._slots = threading.Semaphore(slots) if slots else None
        self.requests: list[ReceivedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._script: list[Reply] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # control -------------------------------------------------------------------------------------
    def enqueue(self, *replies: Reply) -> None:
        """Answer the next requests with these replies, in order."""
        with self._lock:
            self._script.extend(replies)

    @property
    def request_count(self) -> int:
        """Chat-completion requests received."""
        with self._lock:
            return sum(1 for r in self.requests if r.path.endswith("/chat/completions"))

    def chat_bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body or {} for r in self.requests if r.path.endswith("/chat/completions")]

    def reset_counters(self) -> None:
        with self._lock:
            self.requests.clear()
            self.max_in_flight = 0

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> OpenAIServer:
        server = self

        class Handler(_Handler):
            owner = server

        httpd = _ThreadingServer(("127.0.0.1", 0), Handler)
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # request handling ----------------------------------------------------------------------------
    def _next_reply(self, req: ReceivedRequest) -> Reply:
        with self._lock:
            if self._script:
                return self._script.pop(0)
        if self.responder is not None:
            return self.responder(req)
        return self.default

    def _enter(self, req: ReceivedRequest) -> None:
        with self._lock:
            self.requests.append(req)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def completion_body(self, req: ReceivedRequest, reply: Reply) -> dict[str, Any]:
        body = req.body or {}
        prompt = " ".join(
            m["content"] if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
            for m in body.get("messages", [])
        )
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = reply.tool_calls
        pt = reply.prompt_tokens if reply.prompt_tokens is not None else _words(prompt)
        ct = reply.completion_tokens if reply.completion_tokens is not None else _words(reply.content or "x")
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "test-model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
        }


class _ThreadingServer(ThreadingHTTPServer):
    """One thread per connection; a listen backlog deep enough for bursts of concurrent connects."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 512


class _Handler(BaseHTTPRequestHandler):
    owner: OpenAIServer
    protocol_version = "HTTP/1.1"
    # headers and body go out in two writes: with Nagle's algorithm on, the body waits for the client's
    # delayed ACK (~40 ms) on every keep-alive response, which no real inference server does
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # silence the per-request log
        return

    def _send(
        self, status: int, payload: dict[str, Any] | bytes, headers: dict[str, str] | None = None
    ) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
            self.close_connection = True

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        kind = {401: "invalid_request_error", 429: "rate_limit_error"}.get(
            status, "invalid_request_error" if status < 500 else "server_error"
        )
        self._send(status, {"error": {"message": message, "type": kind, "code": status}}, headers)

    def do_GET(self) -> None:
        owner = self.owner
        owner._enter(ReceivedRequest("GET", self.path, {k.lower(): v for k, v in self.headers.items()}, None))
        try:
            if self.path.rstrip("/").endswith("/models"):
                data = [{"id": name, "object": "model"} for name in owner.models]
                self._send(200, {"object": "list", "data": data})
            else:
                self._error(404, f"no route {self.path}")
        finally:
            owner._leave()

    def do_POST(self) -> None:
        owner = self.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        req = ReceivedRequest("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        owner._enter(req)
        try:
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._error(404, f"no route {self.path}")
                return
            if owner.api_key is not None and req.headers.get("authorization") != f"Bearer {owner.api_key}":
                self._error(401, "Incorrect API key provided")
                return
            if body is None:
                self._error(400, "body is not JSON")
                return
            if owner._slots is not None:
                owner._slots.acquire()
            try:
                reply = owner._next_reply(req)
                if owner.delay or reply.delay:
                    time.sleep(owner.delay + reply.delay)
            finally:
                if owner._slots is not None:
                    owner._slots.release()
            if reply.raw_body is not None:
                self._send(reply.status, reply.raw_body, reply.headers)
            elif reply.status != 200:
                self._error(reply.status, reply.message, reply.headers)
            else:
                self._send(200, owner.completion_body(req, reply), reply.headers)
        finally:
            owner._leave()


# ---------------------------------------------------------------------------------------------------------
# server kinds: a responder that behaves like one kind of real server towards the request shapes it gets

# kind -> (how to find the schema it enforces in a request body, or None when the body has no such form)
_FORMS: dict[str, Callable[[dict[str, Any]], dict[str, Any] | None]] = {
    "openai": lambda b: (
        ((b.get("response_format") or {}).get("json_schema") or {}).get("schema")
        if (b.get("response_format") or {}).get("type") == "json_schema"
        else None
    ),
    "llama-cpp-python": lambda b: (
        (b.get("response_format") or {}).get("schema")
        if (b.get("response_format") or {}).get("type") == "json_object"
        else None
    ),
    "vllm": lambda b: (b.get("structured_outputs") or {}).get("json"),
    "ollama": lambda b: b.get("format") if isinstance(b.get("format"), dict) else None,
    "llamacpp": lambda b: b.get("json_schema"),
}


def _png_colour(url: str) -> str:
    """The colour name of a solid PNG data URI (red or blue, whichever is nearer)."""
    import base64
    import zlib

    data = base64.b64decode(url.split(",", 1)[1])
    idat = data[data.index(b"IDAT") + 4 :]
    r, _, b = zlib.decompressobj().decompress(idat)[1:4]
    return "red" if r > b else "blue"


@dataclass
class KindResponder:
    """Answers like a server of ``kind``: it enforces only its own schema form (``answer`` for schemas
    other than the probe's), calls the first tool when ``tool_choice`` is given and ``tools`` is on,
    and treats images as ``images`` says: ``see`` (a vision model), ``blind`` (HTTP 200, the image read as
    text, like llama_cpp.server with chatml-function-calling) or ``500`` (like its default template)."""

    kind: str = "openai"
    answer: Any = None
    tools: bool = True
    images: str = "see"

    def __call__(self, req: ReceivedRequest) -> Reply:
        body = req.body or {}
        fmt = body.get("response_format") or {}
        if self.kind == "llama-cpp-python" and fmt.get("type") not in (None, "text", "json_object"):
            return Reply.error(500, "Input should be 'text' or 'json_object'")
        parts = [
            p
            for m in body.get("messages", [])
            if isinstance(m.get("content"), list)
            for p in m["content"]
            if p.get("type") == "image_url"
        ]
        if parts and self.images == "500":
            return Reply.error(500, 'can only concatenate str (not "list") to str')
        schema = _FORMS[self.kind](body) if self.kind in _FORMS else None
        if schema is not None:
            probe = "probe" in (schema.get("properties") or {})
            return Reply.json({"probe": 7} if probe else self.answer)
        if body.get("tools") and body.get("tool_choice") and self.tools:
            return Reply.tool_call(body["tools"][0]["function"]["name"], {})
        if parts:
            return Reply.text(
                _png_colour(parts[0]["image_url"]["url"]) if self.images == "see" else "The code"
            )
        return Reply.text("hello")
