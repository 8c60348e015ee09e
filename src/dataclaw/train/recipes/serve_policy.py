"""Serve a transformers checkpoint as an OpenAI-compatible tool-calling model (``dataclaw train loop``).

A standalone script run by the *trainer's* Python (``.venv-train``); dataclaw never imports it. The
learning loop evaluates the policy before and after training with ``dataclaw tasks rollout``, which needs
an OpenAI-compatible server; both checkpoints are served by this one script, the same way, so the
comparison is fair (same template, same decoding, same parser):

- ``POST /v1/chat/completions``: the messages and tools rendered with the checkpoint's own chat template
  (the converted SmolLM2 carries TRL's ChatML/Qwen2.5 tool template: tools in the system turn, calls as
  ``<tool_call>{"name", "arguments"}</tool_call>``), ``generate`` with the request's ``max_tokens``,
  ``temperature`` (0: greedy), ``top_p`` and ``seed``; the answer's ``<tool_call>`` blocks become OpenAI
  ``tool_calls`` (a block whose JSON does not parse is passed on with its raw text as ``arguments``, so
  the rollout counts it as a malformed call rather than hiding it); usage counts real tokens;
- ``GET /v1/models``: the one model.

One request at a time (a lock around ``generate``): a CPU has no batch to gain. The key/value cache of
the last request is kept, and a request that starts with the same tokens (the next turn of an episode,
or the next task's system turn and tools) computes only what follows them: a turn costs its new tokens,
not the whole conversation again. The port is written to
``--port-file`` once the model is loaded, which is how the caller knows the server is ready.

    python serve_policy.py --model CHECKPOINT_DIR --port 0 --port-file port.txt
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)
"""One tool call in the ChatML/Qwen2.5 format (an answer cut off inside its last call still counts)."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, required=True, help="a transformers checkpoint folder")
    p.add_argument("--name", default="policy", help="the model id the server answers to")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0: a free port (written to --port-file)")
    p.add_argument("--port-file", type=Path, required=True)
    p.add_argument("--chat-template", type=Path, default=None, help="a Jinja chat template to render with")
    p.add_argument("--device", default="cpu", help="cpu, cuda, or auto (cuda when present)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    return p.parse_args(argv)


def tool_calls_of(text: str) -> tuple[str | None, list[dict[str, Any]]]:
    """The answer's plain text (None when it only calls tools) and its calls in OpenAI form."""
    calls = []
    for i, m in enumerate(CALL.finditer(text)):
        raw = m.group(1).strip()
        try:
            obj = json.loads(raw)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("name"), str):
            args = obj.get("arguments", {})
            arguments = args if isinstance(args, str) else json.dumps(args)
            name = obj["name"]
        else:  # passed on as it is: the rollout records a malformed call
            name, arguments = "unparsable_tool_call", raw
        calls.append(
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": arguments}}
        )
    rest = CALL.sub("", text).strip()
    return (rest or None) if calls else text.strip(), calls


def _template_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI messages as the template reads them: a call's JSON ``arguments`` as an object (the template
    writes it with ``tojson``, as it did in the SFT data), ``None`` content as empty."""
    out = []
    for m in messages:
        m = {**m, "content": m.get("content") or ""}
        if m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                fn = dict(c.get("function", {}))
                if isinstance(fn.get("arguments"), str):
                    try:
                        fn["arguments"] = json.loads(fn["arguments"])
                    except ValueError:
                        pass
                calls.append({"type": "function", "function": fn})
            m["tool_calls"] = calls
        out.append(m)
    return out


class Policy:
    """The checkpoint, its tokenizer and one lock."""

    def __init__(self, path: Path, name: str, template: Path | None = None, device: str = "cpu") -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        self.name = name
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        if template is not None:
            self.tokenizer.chat_template = template.read_text()
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = device
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(device)
        self.model.eval()
        self.lock = threading.Lock()
        self.cache: Any = None  # the last request's key/value cache
        self.cached: list[int] = []  # the tokens it holds
        self.stop_ids = [
            i
            for i in {self.tokenizer.eos_token_id, self.tokenizer.convert_tokens_to_ids("<|im_end|>")}
            if isinstance(i, int) and i >= 0
        ]

    def _prefix_cache(self, ids: list[int]) -> Any:
        """The kept cache cut to the longest prefix it shares with ``ids`` (at least the last token of
        ``ids`` is left to compute), or a new empty one."""
        from transformers import DynamicCache

        shared, most = 0, min(len(ids) - 1, len(self.cached))
        while shared < most and ids[shared] == self.cached[shared]:
            shared += 1
        if self.cache is None or shared == 0:
            self.cache = DynamicCache(config=self.model.config)
            self.cached = []
            return self.cache
        extra = self.cache.get_seq_length() - shared
        if extra > 0:
            self.cache.crop(-extra)
        self.cached = self.cached[:shared]
        return self.cache

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """One chat completion in OpenAI's response shape."""
        torch = self.torch
        ids = self.tokenizer.apply_chat_template(
            _template_messages(body.get("messages", [])),
            tools=body.get("tools") or None,
            add_generation_prompt=True,
            return_tensors="pt",
            return_dict=True,
        )["input_ids"].to(self.device)
        temperature = float(body.get("temperature") if body.get("temperature") is not None else 1.0)
        top_p = float(body.get("top_p") if body.get("top_p") is not None else 1.0)
        max_new = int(body.get("max_tokens") or body.get("max_completion_tokens") or 256)
        sample = temperature > 0
        with self.lock, torch.inference_mode():
            if body.get("seed") is not None:
                torch.manual_seed(int(body["seed"]))
            cache = self._prefix_cache(ids[0].tolist())
            out = self.model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                cache=cache,
                max_new_tokens=max_new,
                do_sample=sample,
                temperature=temperature if sample else None,
                top_p=top_p if sample else None,
                top_k=None,
                eos_token_id=self.stop_ids,
                pad_token_id=self.stop_ids[0],
            )
            self.cached = out[0, : cache.get_seq_length()].tolist()
        new = out[0, ids.shape[1] :].tolist()
        stopped = bool(new) and new[-1] in self.stop_ids
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        content, calls = tool_calls_of(text)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        finish = "tool_calls" if calls else ("stop" if stopped else "length")
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.name,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": int(ids.shape[1]),
                "completion_tokens": len(new),
                "total_tokens": int(ids.shape[1]) + len(new),
            },
        }


def handler_for(policy: Policy) -> type[BaseHTTPRequestHandler]:
    """The request handler bound to ``policy``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, code: int, obj: Any) -> None:
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": policy.name, "object": "model"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            except ValueError:
                self._send(400, {"error": {"message": "the body is not JSON"}})
                return
            try:
                self._send(200, policy.complete(body))
            except Exception as exc:  # noqa: BLE001 - the client gets the error, the server stays up
                self._send(400, {"error": {"message": f"{type(exc).__name__}: {exc}"}})

        def log_message(self, *_args: Any) -> None:  # quiet: the rollout records every call
            pass

    return Handler


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    policy = Policy(args.model, args.name, args.chat_template, args.device)
    server = ThreadingHTTPServer((args.host, args.port), handler_for(policy))
    args.port_file.write_text(str(server.server_address[1]))
    print(f"serving {args.model} as {args.name!r} on port {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
