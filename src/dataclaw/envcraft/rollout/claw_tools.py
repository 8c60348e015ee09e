"""The built-in claw tools (EnvCraft §3 Claw-specific extension): bash, read, write, edit, ls, grep, finish.

All of them act on one task workspace. ``bash`` runs through :func:`dataclaw.sandbox.run` (no network,
read-only system, the workspace as the only writable path, mounted at the policy's ``workspace_mount``,
``/workspace`` by default); the file tools run on the host but only on paths that resolve inside the
workspace — ``..`` escapes, absolute paths outside the mount and symlinks that lead out are refused
with an agent-safe error.

One-shot sandbox runs per bash call were measured against a warm worker forking ``bash``: ~46 ms vs
~56 ms per call on the dev box (the worker has to spawn bash anyway), so bash uses one-shot runs.
"""

from __future__ import annotations

import inspect
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from dataclaw.sandbox import Limits, SandboxPolicy, Status, run

MAX_FILE_BYTES = 1_024_000  # largest file read, edited or grepped whole
MAX_OUTPUT_CHARS = 16_000
MAX_GREP_HITS = 200
FINISH = "finish"


class ClawErrorKind(StrEnum):
    """Agent-facing claw tool error categories."""

    INVALID_PATH = "invalid_path"
    NOT_FOUND = "not_found"
    IS_DIRECTORY = "is_directory"
    NOT_A_DIRECTORY = "not_a_directory"
    INVALID_ARGUMENT = "invalid_argument"
    NO_MATCH = "no_match"
    AMBIGUOUS_MATCH = "ambiguous_match"
    TOO_LARGE = "too_large"
    NOT_TEXT = "not_text"
    TIMEOUT = "timeout"
    BLOCKED = "blocked"
    UNKNOWN_TOOL = "unknown_tool"


class ClawToolError(Exception):
    """A recoverable tool error; ``message`` is agent-safe (no host paths, no traceback)."""

    def __init__(self, kind: ClawErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


@dataclass
class ToolResult:
    """What one tool call gives back to the agent (``content``) and to the trajectory."""

    content: str
    ok: bool = True
    error_kind: str | None = None
    finished: bool = False


def _fn(name: str, description: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": props,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


_S = {"type": "string"}
CLAW_TOOL_SCHEMAS: list[dict[str, Any]] = [
    _fn(
        "bash",
        "Run a bash command in the workspace (working directory: the workspace root; no network).",
        {"command": {**_S, "description": "the command line"}},
        ["command"],
    ),
    _fn(
        "read",
        "Read a text file of the workspace.",
        {
            "path": {**_S, "description": "workspace-relative path"},
            "offset": {"type": "integer", "description": "first line (1-based)", "default": 1},
            "limit": {"type": "integer", "description": "number of lines", "default": 2000},
        },
        ["path"],
    ),
    _fn(
        "write",
        "Create or overwrite a file (parent folders are created).",
        {"path": {**_S, "description": "workspace-relative path"}, "content": {**_S, "description": "text"}},
        ["path", "content"],
    ),
    _fn(
        "edit",
        "Replace one exact occurrence of old_text with new_text in a file.",
        {
            "path": {**_S, "description": "workspace-relative path"},
            "old_text": {**_S, "description": "text that occurs exactly once"},
            "new_text": {**_S, "description": "replacement"},
        },
        ["path", "old_text", "new_text"],
    ),
    _fn(
        "ls",
        "List a folder of the workspace (folders end with '/').",
        {"path": {**_S, "description": "workspace-relative folder", "default": "."}},
        [],
    ),
    _fn(
        "grep",
        "Search files for a regular expression; prints path:line:text.",
        {
            "pattern": {**_S, "description": "Python regular expression"},
            "path": {**_S, "description": "file or folder to search", "default": "."},
        },
        ["pattern"],
    ),
    _fn(
        FINISH,
        "Say that the task is done (ends the episode).",
        {"summary": {**_S, "description": "one line on what was done", "default": ""}},
        [],
    ),
]
CLAW_TOOL_NAMES = frozenset(t["function"]["name"] for t in CLAW_TOOL_SCHEMAS)


class ClawTools:
    """The claw tools bound to one workspace folder."""

    def __init__(
        self,
        workspace: Path,
        *,
        policy: SandboxPolicy | None = None,
        bash_limits: Limits | None = None,
    ) -> None:
        self.workspace = workspace
        self.root = os.path.realpath(workspace)
        self.policy = policy or SandboxPolicy()
        self.bash_limits = bash_limits or Limits(cpu_s=20, wall_s=30, memory_mb=1024, file_size_mb=64)
        self._tools: dict[str, Callable[..., ToolResult]] = {
            "bash": self.bash,
            "read": self.read,
            "write": self.write,
            "edit": self.edit,
            "ls": self.ls,
            "grep": self.grep,
            FINISH: self.finish,
        }

    def schemas(self) -> list[dict[str, Any]]:
        return CLAW_TOOL_SCHEMAS

    def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        """Run one tool; a :class:`ClawToolError` becomes an error result (recoverable)."""
        fn = self._tools.get(name)
        try:
            if fn is None:
                raise ClawToolError(
                    ClawErrorKind.UNKNOWN_TOOL, f"unknown tool {name!r}; tools: {', '.join(self._tools)}"
                )
            try:
                inspect.signature(fn).bind(**args)
            except TypeError:  # wrong or missing argument names: the call's shape
                raise ClawToolError(
                    ClawErrorKind.INVALID_ARGUMENT,
                    f"{name}: bad arguments {sorted(args)}; see the tool's parameters",
                ) from None
            return fn(**args)
        except ClawToolError as exc:
            return ToolResult(f"error ({exc.kind}): {exc.message}", ok=False, error_kind=str(exc.kind))

    # ---- paths -------------------------------------------------------------------------------------

    def resolve(self, path: str) -> Path:
        """Host path of a workspace path; refuses anything that leads outside the workspace."""
        if not isinstance(path, str) or not path or "\x00" in path:
            raise ClawToolError(ClawErrorKind.INVALID_PATH, "path must be a non-empty string")
        p, mount = path, self.policy.workspace_mount  # where bash sees the workspace
        if p == mount or p.startswith(mount + "/"):
            p = p[len(mount) :].lstrip("/") or "."
        if p.startswith(("/", "~")):
            raise ClawToolError(
                ClawErrorKind.INVALID_PATH,
                f"absolute paths outside {mount} are not allowed; use a workspace-relative path",
            )
        real = os.path.realpath(os.path.join(self.root, p))
        if real != self.root and not real.startswith(self.root + os.sep):
            raise ClawToolError(ClawErrorKind.INVALID_PATH, f"{path!r} leads outside the workspace")
        return Path(real)

    def _rel(self, host: Path) -> str:
        rel = os.path.relpath(host, self.root)
        return "." if rel == "." else rel.replace(os.sep, "/")

    # ---- tools -------------------------------------------------------------------------------------

    def bash(self, command: str) -> ToolResult:
        if not isinstance(command, str) or not command.strip():
            raise ClawToolError(ClawErrorKind.INVALID_ARGUMENT, "command must be a non-empty string")
        out = run(["bash", "-c", command], self.workspace, self.bash_limits, policy=self.policy)
        text = _clip(out.stdout) + (f"\n[stderr]\n{_clip(out.stderr)}" if out.stderr.strip() else "")
        if out.status is Status.TIMEOUT:
            raise ClawToolError(ClawErrorKind.TIMEOUT, f"the command timed out. {out.message}")
        if out.status in (Status.VIOLATION, Status.RESOURCE_LIMIT):
            return ToolResult(f"[{out.message}]\n{text}", ok=False, error_kind=str(ClawErrorKind.BLOCKED))
        return ToolResult(f"[exit code {out.exit_code}]\n{text}".rstrip(), ok=out.exit_code == 0)

    def read(self, path: str, offset: int = 1, limit: int = 2000) -> ToolResult:
        text = self._text(self.resolve(path), path)
        if not isinstance(offset, int) or not isinstance(limit, int) or offset < 1 or limit < 1:
            raise ClawToolError(ClawErrorKind.INVALID_ARGUMENT, "offset and limit must be positive integers")
        lines = text.splitlines(keepends=True)
        chunk = "".join(lines[offset - 1 : offset - 1 + limit])
        more = len(lines) - (offset - 1 + limit)
        return ToolResult(chunk + (f"\n[... {more} more lines]" if more > 0 else ""))

    def _text(self, host: Path, path: str) -> str:
        """The UTF-8 text of an existing, not too large file (``path`` as the agent wrote it)."""
        if not host.exists():
            raise ClawToolError(ClawErrorKind.NOT_FOUND, f"{path!r} does not exist")
        if host.is_dir():
            raise ClawToolError(ClawErrorKind.IS_DIRECTORY, f"{path!r} is a folder; use ls")
        if host.stat().st_size > MAX_FILE_BYTES:
            raise ClawToolError(ClawErrorKind.TOO_LARGE, f"{path!r} is too large to read whole; use bash")
        try:
            return host.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise ClawToolError(ClawErrorKind.NOT_TEXT, f"{path!r} is not UTF-8 text") from None

    def write(self, path: str, content: str) -> ToolResult:
        if not isinstance(content, str):
            raise ClawToolError(ClawErrorKind.INVALID_ARGUMENT, "content must be a string")
        host = self.resolve(path)
        if host.is_dir():
            raise ClawToolError(ClawErrorKind.IS_DIRECTORY, f"{path!r} is a folder")
        if host.parent.exists() and not host.parent.is_dir():
            raise ClawToolError(ClawErrorKind.NOT_A_DIRECTORY, f"a parent of {path!r} is a file")
        host.parent.mkdir(parents=True, exist_ok=True)
        host.write_text(content, encoding="utf-8")
        return ToolResult(f"wrote {len(content.encode())} bytes to {self._rel(host)}")

    def edit(self, path: str, old_text: str, new_text: str) -> ToolResult:
        host = self.resolve(path)
        text = self._text(host, path)
        if not old_text:
            raise ClawToolError(ClawErrorKind.INVALID_ARGUMENT, "old_text must not be empty")
        n = text.count(old_text)
        if n == 0:
            raise ClawToolError(ClawErrorKind.NO_MATCH, f"old_text does not occur in {path!r}")
        if n > 1:
            raise ClawToolError(ClawErrorKind.AMBIGUOUS_MATCH, f"old_text occurs {n} times in {path!r}")
        host.write_text(text.replace(old_text, new_text, 1), encoding="utf-8")
        return ToolResult(f"edited {self._rel(host)}")

    def ls(self, path: str = ".") -> ToolResult:
        host = self.resolve(path)
        if not host.exists():
            raise ClawToolError(ClawErrorKind.NOT_FOUND, f"{path!r} does not exist")
        if not host.is_dir():
            raise ClawToolError(ClawErrorKind.NOT_A_DIRECTORY, f"{path!r} is a file; use read")
        names = sorted(p.name + ("/" if p.is_dir() else "") for p in host.iterdir())
        return ToolResult("\n".join(names) if names else "(empty)")

    def grep(self, pattern: str, path: str = ".") -> ToolResult:
        try:
            rx = re.compile(pattern)
        except (re.error, TypeError) as exc:
            raise ClawToolError(ClawErrorKind.INVALID_ARGUMENT, f"bad regular expression: {exc}") from None
        host = self.resolve(path)
        if not host.exists():
            raise ClawToolError(ClawErrorKind.NOT_FOUND, f"{path!r} does not exist")
        files = [host] if host.is_file() else sorted(p for p in host.rglob("*") if p.is_file())
        hits: list[str] = []
        for f in files:
            real = os.path.realpath(f)
            if not real.startswith(self.root + os.sep) or f.stat().st_size > MAX_FILE_BYTES:
                continue
            try:
                lines = f.read_text(encoding="utf-8").splitlines()
            except (UnicodeDecodeError, OSError):
                continue
            for n, line in enumerate(lines, 1):
                if rx.search(line):
                    hits.append(f"{self._rel(f)}:{n}:{line[:300]}")
                    if len(hits) >= MAX_GREP_HITS:
                        return ToolResult("\n".join(hits) + "\n[... more matches]")
        return ToolResult("\n".join(hits) if hits else "(no matches)")

    def finish(self, summary: str = "") -> ToolResult:
        return ToolResult(json.dumps({"finished": True, "summary": str(summary)[:500]}), finished=True)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_OUTPUT_CHARS else text[:MAX_OUTPUT_CHARS] + "\n[... output cut]"
