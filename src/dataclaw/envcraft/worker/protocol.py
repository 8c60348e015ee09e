"""The env worker's wire format: length-prefixed JSON frames over a Unix socket, both directions.

A request is ``{"id": n, "op": <Op>, ...arguments}``; its reply is ``{"id": n, "ok": true, "value": ...}``
or ``{"id": n, "ok": false, "error": {...}}``. An error is either the environment's own
(``kind: "env"``, with ``category`` and an agent-safe ``message``: re-raised as :class:`EnvError` so callers
see what the in-process environment would raise), a failure of the package code (``kind: "error"``), or an
incident the sandbox classified (``kind: "incident"``: ``status``/``resource``/``message`` in the
sandbox's outcome classes). A tool call's reply carries the envelope and, when the tool tripped a
containment (network, host files, memory, forking, timeout), an ``incident`` beside it.
"""

from __future__ import annotations

import socket
import struct
from enum import StrEnum
from typing import Any

import orjson

HEADER = struct.Struct(">I")
MAX_FRAME = 64 << 20
"""Largest frame either side accepts (a session state is well below; a bigger one is garbage)."""


class Op(StrEnum):
    """What a request asks the worker to do."""

    DESCRIBE = "describe"
    CREATE = "create"
    LOAD_SCENARIO = "load_scenario"
    RESET = "reset"
    DELETE = "delete"
    EXISTS = "exists"
    STATE = "state"
    RESTORE = "restore"
    CALL = "call"
    RUN = "run"
    EVALUATE = "evaluate"
    DROP = "drop"
    PING = "ping"


class FrameError(Exception):
    """The peer sent something that is not one of our frames, or hung up."""


def send_frame(sock: socket.socket, obj: dict[str, Any]) -> None:
    body = orjson.dumps(obj)
    sock.sendall(HEADER.pack(len(body)) + body)


class FrameReader:
    """Buffered reader of frames from one socket (the socket's own timeout bounds each ``recv``)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()

    def read(self) -> dict[str, Any]:
        while True:
            if len(self.buf) >= HEADER.size:
                (size,) = HEADER.unpack_from(self.buf)
                if size > MAX_FRAME:
                    raise FrameError(f"frame of {size} bytes is over the limit")
                if len(self.buf) >= HEADER.size + size:
                    body = bytes(self.buf[HEADER.size : HEADER.size + size])
                    del self.buf[: HEADER.size + size]
                    try:
                        value = orjson.loads(body)
                    except orjson.JSONDecodeError as exc:
                        raise FrameError("garbled frame") from exc
                    if not isinstance(value, dict):
                        raise FrameError("a frame must be a JSON object")
                    return value
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise FrameError("the peer closed the channel")
            self.buf += chunk
