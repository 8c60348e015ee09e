"""The claw extension's bash tool for compiled environments (EnvCraft §3.2, Claw-specific extension).

A claw scenario's package gets the built-in claw ``bash`` tool (:class:`dataclaw.envcraft.rollout.ClawTools`)
over a workspace made from the session: every record of every collection as ``<collection>/<id>.json``,
the logs as ``<log>.json`` and a ``README.md`` naming the layout. The command runs in the sandbox (no
network, the throwaway workspace as the only writable path); the workspace is deleted afterwards, so the
tool is a read tool — state changes go through the environment's own write tools. Its output is a
function of the session state and the command, like any read tool. Inside the env worker (itself a
sandbox, where bubblewrap cannot nest) the command runs as a child process with rlimits and a timeout,
contained by the worker's sandbox.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from dataclaw.envcraft.runtime.errors import EnvError, ErrorCategory, invalid_argument

_SAFE = re.compile(r"[^A-Za-z0-9_.-]")
MAX_COMMAND = 4000


def workspace_files(session: dict[str, Any], config: dict[str, Any]) -> dict[str, str]:
    """The workspace as ``{relative path: text}`` (the layout the bash tool and SKILL.md describe)."""
    files: dict[str, str] = {}
    for cname in sorted(config["collections"]):
        for rid, rec in sorted(session.get(cname, {}).items()):
            files[f"{cname}/{_SAFE.sub('_', rid)}.json"] = json.dumps(rec, indent=1, sort_keys=True)
    for key in (config.get("log"), config.get("events")):
        if key and key in session:
            files[f"{key}.json"] = json.dumps(session[key], indent=1)
    lines = ["# Workspace", "", "One JSON file per record: <collection>/<id>.json.", ""]
    lines += [f"- {c}/: {cfg['entity']} records" for c, cfg in sorted(config["collections"].items())]
    files["README.md"] = "\n".join(lines) + "\n"
    return files


def session_files(session: dict[str, Any]) -> dict[str, str]:
    """The workspace of a package whose state has no compiled layout (code generation): a top-level
    mapping of records becomes ``<key>/<id>.json`` per record, any other value ``<key>.json``; the
    runtime's own bookkeeping (keys starting with ``_``) is left out."""
    files: dict[str, str] = {}
    for key, value in sorted(session.items()):
        if key.startswith("_"):
            continue
        name = _SAFE.sub("_", str(key))
        if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
            for rid, rec in sorted(value.items()):
                files[f"{name}/{_SAFE.sub('_', str(rid))}.json"] = json.dumps(rec, indent=1, sort_keys=True)
        else:
            files[f"{name}.json"] = json.dumps(value, indent=1, sort_keys=True, default=str)
    lines = [
        "# Workspace",
        "",
        "The session's state as files: <key>/<id>.json per record, <key>.json else.",
        "",
    ]
    lines += [f"- {f}" for f in sorted({f.split("/")[0] for f in files})]
    files["README.md"] = "\n".join(lines) + "\n"
    return files


def _policy() -> Any:
    """The sandbox policy for bash: its own bubblewrap sandbox on the host; inside a dataclaw sandbox
    already (the env worker runs non-built-in packages in one, where bubblewrap cannot nest) a plain child
    process with rlimits and a timeout, contained by that outer sandbox."""
    from dataclaw.sandbox import SandboxPolicy  # on first use: package import stays light

    return SandboxPolicy(unsafe=os.environ.get("DATACLAW_SANDBOX") == "1")


def bash_over_state(session: dict[str, Any], config: dict[str, Any] | None, command: str) -> dict[str, Any]:
    """Run ``command`` with the claw bash tool over a fresh snapshot of ``session`` (laid out by the
    compiled ``config``, or by :func:`session_files` when there is none)."""
    from dataclaw.envcraft.rollout.claw_tools import ClawTools

    if not command.strip():
        raise invalid_argument("command", "must not be blank")
    if len(command) > MAX_COMMAND or "\x00" in command:
        raise invalid_argument("command", f"must be plain text of at most {MAX_COMMAND} characters")
    root = Path(tempfile.mkdtemp(prefix="dataclaw-claw-env-"))
    try:
        ws = root / "workspace"
        files = workspace_files(session, config) if config is not None else session_files(session)
        for rel, text in files.items():
            path = ws / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        try:
            result = ClawTools(ws, policy=_policy()).call("bash", {"command": command})
        except Exception:  # noqa: BLE001 - the sandbox could not start here: an agent-safe refusal
            raise EnvError(
                ErrorCategory.INFRASTRUCTURE,
                "The bash sandbox is not available right now; use the other tools.",
            ) from None
    finally:
        shutil.rmtree(root, ignore_errors=True)
    out: dict[str, Any] = {"output": result.content, "ok": result.ok}
    if result.error_kind:
        out["error_kind"] = result.error_kind
    return out
