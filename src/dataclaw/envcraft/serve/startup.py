"""What ``dataclaw env serve`` prints when it starts: the URLs a client uses, each with its method and the
body it takes, built from the same names the app routes on (the catalogue's environment name, not the name
typed on the command line, which may be a package folder or an ``a+b`` group). A test requests every URL
printed here, so the line never advertises one that does not answer."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

SPLIT = "train"
"""The one task split the server has (the Task API's ``split``)."""


@dataclass(frozen=True)
class Endpoint:
    """One URL of the running server: how to call it and what it is for."""

    method: str
    """``GET``, ``POST`` or ``WS`` (a WebSocket)."""
    path: str
    body: dict[str, Any] | None
    what: str

    def url(self, host: str, port: int) -> str:
        scheme = "ws" if self.method == "WS" else "http"
        return f"{scheme}://{host}:{port}{self.path}"


def endpoints(env: str) -> list[Endpoint]:
    """The URLs of a server of environment ``env`` that the start-up line advertises."""
    tools_list = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    return [
        Endpoint("GET", "/health", None, "liveness"),
        Endpoint("GET", "/metadata", None, "the environment's name and description"),
        Endpoint("GET", f"/{env}/splits", None, "Task API: the splits"),
        Endpoint(
            "POST", f"/{env}/tasks", {"split": SPLIT}, "Task API: the tasks, without verifiers or states"
        ),
        Endpoint("POST", "/mcp", tools_list, "MCP JSON-RPC: tools/list, tools/call"),
        Endpoint("WS", "/ws", None, "OpenEnv sessions: EnvClient or MCPToolClient, reset and step"),
    ]


def startup_lines(
    count: int, kind: str, env: str, host: str, port: int, skipped: dict[str, int] | None = None
) -> list[str]:
    """The start-up message: what is served, then one line per URL (method, URL, body, purpose)."""
    left_out = ", ".join(f"{n} of {k}" for k, n in sorted((skipped or {}).items()))
    head = f"serving {count} {kind} of {env} at http://{host}:{port}"
    lines = [head + (f"; left out: {left_out}" if left_out else "")]
    for e in endpoints(env):
        body = f" {json.dumps(e.body)}" if e.body is not None and e.path != "/mcp" else ""
        lines.append(f"  {e.method:<4} {e.url(host, port)}{body}  ({e.what})")
    return lines
