"""Know before the run (issue 26 item 5): the model's context length against each synthesis path's
prompt (spec, repair, codegen), checked before any spec call; a path the model cannot serve is refused in
one line naming the path, the prompt size and the context length. An embedded model's ``n_ctx`` and
tokenizer; an OpenAI-compatible server's ``/models`` ``max_model_len`` (a server that says nothing is
not refused)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.envcraft.scenarios import load_catalogue
from dataclaw.envcraft.synth.library import (
    PromptFit,
    Requests,
    SynthConfig,
    check_context,
    context_length,
    synthesize,
)
from dataclaw.models import get_model

SCENARIO = "support_ticketing"


class _Server:
    """An OpenAI-compatible server that lists its models (with what ``entry`` adds) and counts the chat
    calls it gets (it answers none: the refusal must come first)."""

    def __init__(self, entry: dict[str, Any]) -> None:
        owner = self
        self.chat_calls = 0

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [{"id": "writer", "object": "model", **entry}]})

            def do_POST(self) -> None:
                owner.chat_calls += 1
                self._send(500, {"error": {"message": "no answers here"}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.model = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1::writer"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[_Server]:
    s = _Server(request.param)
    yield s
    s.close()


def _scenarios() -> list[Any]:
    return [load_catalogue().get(SCENARIO)]


def _sizes(message: str) -> tuple[int, int]:
    """(prompt tokens, context tokens) as the refusal states them."""
    prompt, context = re.search(r"prompt is .*?([\d,]+) tokens.*context of ([\d,]+) tokens", message).groups()
    return int(prompt.replace(",", "")), int(context.replace(",", ""))


def test_the_embedded_models_codegen_path_is_refused_before_the_run() -> None:
    pytest.importorskip("llama_cpp")
    model = get_model("local:smollm2-135m", cache=False)
    assert context_length(model) == 4096
    check_context(model, _scenarios(), ["compile"], 2)  # spec and repair prompts fit: no refusal
    with pytest.raises(ConfigError) as err:
        check_context(model, _scenarios(), ["codegen"], 2)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("the codegen path cannot run on local:smollm2-135m")
    prompt, context = _sizes(msg)
    assert context == 4096 and prompt > 10_000  # the reference code alone is longer than the context
    assert "at least" in msg and "--path compile" in msg
    # a longer context serves it
    check_context(get_model("local:smollm2-135m?n_ctx=32768", cache=False), _scenarios(), ["codegen"], 2)


def test_synth_refuses_codegen_before_any_spec_call(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    lib = tmp_path / "LIB"
    config = SynthConfig(model="local:smollm2-135m", paths=("compile", "codegen"))
    with pytest.raises(ConfigError, match="the codegen path cannot run"):
        synthesize(lib, Requests(scenarios=_scenarios()), config)
    assert not (lib / "specs.jsonl").exists() or not (lib / "specs.jsonl").read_text().strip()
    assert not (lib / "model_cache.sqlite").exists()  # no model call was made, none cached


@pytest.mark.parametrize("server", [{"max_model_len": 1024}], indirect=True)
def test_a_server_that_says_its_context_is_held_to_it(server: _Server, tmp_path: Path) -> None:
    model = get_model(server.model, cache=False)
    assert context_length(model) == 1024
    with pytest.raises(ConfigError) as err:  # a repair sends the previous answer (1200 tokens) back
        synthesize(tmp_path / "LIB", Requests(scenarios=_scenarios()), SynthConfig(model=server.model))
    msg = str(err.value)
    assert msg.startswith(f"the repair path cannot run on {server.model}: its prompt is up to ≈")
    prompt, context = _sizes(msg)
    assert context == 1024 and prompt > 1200 and "--repair-rounds 0" in msg
    assert server.chat_calls == 0  # refused before any spec call
    check_context(model, _scenarios(), ["compile"], 0)  # without repairs the spec prompt fits


@pytest.mark.parametrize("server", [{}], indirect=True)
def test_a_server_that_does_not_say_is_not_refused(server: _Server) -> None:
    model = get_model(server.model, cache=False)
    assert context_length(model) is None
    check_context(model, _scenarios(), ["compile", "codegen"], 2)


def test_a_recorded_model_has_no_context_to_check(tmp_path: Path) -> None:
    (tmp_path / "rec.jsonl").write_text("")
    model = get_model(f"replay:{tmp_path / 'rec.jsonl'}", cache=False)
    assert context_length(model) is None


def test_the_refusal_line_names_path_size_and_context() -> None:
    fit = PromptFit("spec", 5000, 4096, exact=True)
    assert not fit.fits and PromptFit("spec", 4095, 4096, exact=True).fits
    assert fit.line("m") == (
        "the spec path cannot run on m: its prompt is at least 5,000 tokens, more than the model's context"
        " of 4,096 tokens; use a model with a longer context"
    )
