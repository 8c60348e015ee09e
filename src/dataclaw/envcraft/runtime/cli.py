"""The command-line runner every environment package shares (``python -m <package> <command> ...``).

Agent-visible commands: one per tool (``create_ticket`` → ``create-ticket --title ...``) plus ``task``;
output is JSON ``{"status": "ok", "data": ...}`` or ``{"status": "error", "error": {...}}``. The session
comes only from the trainer's bindings ``<PREFIX>_SESSION_ID`` / ``<PREFIX>_STATE_ROOT`` /
``<PREFIX>_SCENARIO_ID`` — there is no ``--session-id``. Hidden trainer commands (``prepare-rollout``,
``reset-rollout``, ``evaluate-rollout``, ``export-state``) are dispatched before the parser and never
appear in help.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TextIO

import orjson

from dataclaw.envcraft.runtime.environment import Environment
from dataclaw.envcraft.runtime.errors import LOGGER_NAME, EnvError, ErrorCategory, infrastructure_error
from dataclaw.envcraft.runtime.tools import ToolSpec

HIDDEN_COMMANDS = ("prepare-rollout", "reset-rollout", "evaluate-rollout", "export-state")
_TRUE = {"true", "1", "yes", "y", "on"}
_FALSE = {"false", "0", "no", "n", "off"}


class _ParseError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse that reports problems as structured errors instead of usage text on stderr."""

    def error(self, message: str) -> NoReturn:
        raise _ParseError(message)


def cli_name(tool_name: str) -> str:
    return tool_name.replace("_", "-")


def _bool(text: str) -> bool:
    low = text.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError("expected true or false")


def _converter(schema: dict[str, Any]) -> Callable[[str], Any]:
    kind = schema.get("type")
    if kind == "integer":
        return int
    if kind == "number":
        return float
    if kind == "boolean":
        return _bool
    if kind == "object":
        return _json_object
    return str


def _json_object(text: str) -> dict[str, Any]:
    value = orjson.loads(text)
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object")
    return value


def _add_tool_command(sub: Any, spec: ToolSpec) -> None:
    cmd = sub.add_parser(cli_name(spec.name), help=spec.description, description=spec.description)
    cmd.set_defaults(_tool=spec.name)
    for p in spec.params:
        flag = "--" + cli_name(p.name)
        kwargs: dict[str, Any] = {"dest": p.name, "default": argparse.SUPPRESS, "help": p.description}
        if p.schema.get("type") == "array":
            kwargs.update(action="append", type=_converter(p.schema.get("items", {})), metavar="ITEM")
            kwargs["help"] += " (repeat the option for each item)"
        else:
            kwargs["type"] = _converter(p.schema)
            if "enum" in p.schema:
                kwargs["choices"] = p.schema["enum"]
            else:
                kwargs["metavar"] = p.schema.get("type", "value").upper()
        if p.required:
            kwargs["required"] = True
        elif p.default is not None:
            kwargs["help"] += f" (default: {p.default})"
        cmd.add_argument(flag, **kwargs)


def build_parser(env_cls: type[Environment], prog: str | None = None) -> argparse.ArgumentParser:
    """The agent-facing parser: tool commands and ``task`` only."""
    parser = _Parser(
        prog=prog or f"python -m {env_cls.__module__.rsplit('.', 1)[0]}",
        description=f"{env_cls.name}: agent commands. Output is JSON. The rollout session is already bound.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.add_parser("task", help="Show the task assigned in this rollout.")
    for spec in env_cls.tools:
        _add_tool_command(sub, spec)
    return parser


def _emit(out: TextIO, envelope: dict[str, Any]) -> int:
    out.write(orjson.dumps(envelope, option=orjson.OPT_INDENT_2).decode() + "\n")
    return 0 if envelope.get("status") == "ok" else 1


def _error(category: ErrorCategory, message: str) -> dict[str, Any]:
    return {"status": "error", "error": EnvError(category, message).to_dict()}


def _parse_error_envelope(message: str) -> dict[str, Any]:
    if "required" in message:
        return _error(
            ErrorCategory.MISSING_FIELD, f"Missing required option: {message.split(':', 1)[-1].strip()}."
        )
    return _error(ErrorCategory.INVALID_ARGUMENT, f"Invalid command line: {message}.")


def _bindings(env_cls: type[Environment], environ: dict[str, str]) -> tuple[str, str, str | None]:
    prefix = env_cls.prefix()
    sid, root = environ.get(f"{prefix}_SESSION_ID"), environ.get(f"{prefix}_STATE_ROOT")
    if not sid or not root:
        raise EnvError(
            ErrorCategory.MISSING_BINDING,
            "No rollout session is bound to this shell. The trainer must initialize the rollout "
            "(prepare-rollout) before agent commands can run.",
        )
    return sid, root, environ.get(f"{prefix}_SCENARIO_ID") or None


def _attach_server_log(state_root: str) -> None:
    """Infrastructure details go to ``<state_root>/server.log``, never to the agent."""
    import logging

    logger = logging.getLogger(LOGGER_NAME)
    if logger.handlers or not os.path.isdir(state_root):
        return
    try:
        handler = logging.FileHandler(os.path.join(state_root, "server.log"))
    except OSError:
        return
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.propagate = False


def main(
    env_cls: type[Environment],
    argv: list[str] | None = None,
    *,
    environ: dict[str, str] | None = None,
    out: TextIO | None = None,
    prog: str | None = None,
) -> int:
    """Run one command; returns the exit status (0 ok, 1 error, 2 bad command line)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    environ = dict(os.environ if environ is None else environ)
    out = out or sys.stdout
    try:
        if argv and argv[0] in HIDDEN_COMMANDS:
            return _emit(out, _hidden(env_cls, argv[0], argv[1:], environ))
        parser = build_parser(env_cls, prog)
        try:
            ns = parser.parse_args(argv)
        except _ParseError as exc:
            _emit(out, _parse_error_envelope(str(exc)))
            return 2
        if ns.command is None:
            parser.print_help(out)
            return 0
        sid, root, scenario_id = _bindings(env_cls, environ)
        _attach_server_log(root)
        env = env_cls(root)
        if ns.command == "task":
            return _emit(out, _task(env, sid, scenario_id))
        params = {k: v for k, v in vars(ns).items() if k not in ("command", "_tool")}
        return _emit(out, env.call(sid, ns._tool, **params))
    except EnvError as exc:
        return _emit(out, {"status": "error", "error": exc.to_dict()})
    except Exception as exc:  # noqa: BLE001 - the last boundary: logged server-side, generic text to the agent
        err = infrastructure_error(exc, context=f"{env_cls.name} cli", ref_seed=" ".join(argv))
        return _emit(out, {"status": "error", "error": err.to_dict()})


def _task(env: Environment, sid: str, scenario_id: str | None) -> dict[str, Any]:
    state = env.get_session_state(sid)
    if scenario_id and scenario_id != state["scenario_id"]:
        raise EnvError(
            ErrorCategory.MISSING_BINDING,
            "The bound scenario does not match the session; the trainer must prepare the rollout again.",
        )
    sc = env.scenario(state["scenario_id"])
    return {
        "status": "ok",
        "data": {"title": sc.title, "task": sc.task_prompt, "account": state.get("workspace_account")},
    }


def _hidden_parser(command: str) -> _Parser:
    p = _Parser(prog=command, add_help=False)
    p.add_argument("--state-root")
    p.add_argument("--session-id")
    if command == "prepare-rollout":
        p.add_argument("--scenario-id")
        p.add_argument("--long-context", action="store_true")
        p.add_argument("--show-bindings", action="store_true")
        p.add_argument("--show-task", action="store_true")
    return p


def _hidden(
    env_cls: type[Environment], command: str, argv: list[str], environ: dict[str, str]
) -> dict[str, Any]:
    """Trainer commands: they may name the session explicitly (the trainer owns the lifecycle)."""
    try:
        ns = _hidden_parser(command).parse_args(argv)
    except _ParseError as exc:
        return _parse_error_envelope(str(exc))
    prefix = env_cls.prefix()
    root = ns.state_root or environ.get(f"{prefix}_STATE_ROOT")
    sid = ns.session_id or environ.get(f"{prefix}_SESSION_ID")
    if command == "prepare-rollout":
        scenario_id = ns.scenario_id or environ.get(f"{prefix}_SCENARIO_ID")
        if not scenario_id:
            return _error(ErrorCategory.MISSING_FIELD, "prepare-rollout needs --scenario-id.")
        root = root or str(Path.cwd() / ".envcraft_state" / env_cls.name)
        Path(root).mkdir(parents=True, exist_ok=True)
        env = env_cls(root)
        sid = env.create_session(scenario_id, sid, long_context=ns.long_context)
        data: dict[str, Any] = {"session_id": sid}
        if ns.show_bindings:
            data["bindings"] = {
                f"{prefix}_SESSION_ID": sid,
                f"{prefix}_STATE_ROOT": str(Path(root).resolve()),
                f"{prefix}_SCENARIO_ID": scenario_id,
            }
        if ns.show_task:
            data["task"] = env.scenario(scenario_id).task_prompt
        return {"status": "ok", "data": data}
    if not root or not sid:
        return _error(
            ErrorCategory.MISSING_BINDING, f"{command} needs a bound session (--session-id and --state-root)."
        )
    env = env_cls(root)
    if command == "reset-rollout":
        env.reset_session(sid)
        return {"status": "ok", "data": {"session_id": sid, "reset": True}}
    if command == "evaluate-rollout":
        return {"status": "ok", "data": env.evaluate_session(sid)}
    return {"status": "ok", "data": env.get_session_state(sid)}
