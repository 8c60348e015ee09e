"""``dataclaw`` entry point. Command groups are registered in :data:`GROUPS` (name → module with ``app``).

Each group declares its help once, on its own ``typer.Typer(help=...)``; ``dataclaw --help`` shows it with
the group's commands listed after it, so the top-level help names every command."""

from __future__ import annotations

import functools
import importlib
import logging
import signal
import sys

import typer
from typer.main import get_command_name

from dataclaw import __version__
from dataclaw.core.errors import DataclawError

# name -> module exposing a typer ``app`` (whose help is the group's).
GROUPS: dict[str, str] = {
    "models": "dataclaw.cli.models",
    "tailor": "dataclaw.cli.tailor",
    "sandbox": "dataclaw.sandbox.cli",
    "env": "dataclaw.cli.env",
    "tasks": "dataclaw.cli.tasks",
    "train": "dataclaw.cli.train",
}
# top-level commands: name -> module exposing a function of the same name.
COMMANDS: dict[str, str] = {"quickstart": "dataclaw.cli.quickstart", "view": "dataclaw.cli.view"}

app = typer.Typer(
    name="dataclaw",
    help="Training data for agents: Tailor (streams → samples) and EnvCraft (scenarios → RL environments).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"dataclaw {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks and debug logs."),
) -> None:
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )


@functools.cache
def _register() -> None:
    """Attach COMMANDS and GROUPS to the root app, once per process (tests call :func:`_run` many times)."""
    for name, module in COMMANDS.items():
        app.command(name)(getattr(importlib.import_module(module), name))
    for name, module in GROUPS.items():
        group = importlib.import_module(module).app
        app.add_typer(group, name=name, short_help=listing(group))


def listing(group: typer.Typer) -> str:
    """A group's row in ``dataclaw --help``: its help, then every command it has."""
    names = [c.name or get_command_name(c.callback.__name__) for c in group.registered_commands]  # type: ignore[union-attr]
    names += [g.name for g in group.registered_groups if g.name]
    return f"{group.info.help} Commands: {', '.join(names)}."


_signalled: list[int] = []


def _on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C, so a killed command stops its workers, removes its temporary files
    and saves its manifest (``finally`` blocks run) instead of vanishing."""
    _signalled.append(signum)
    raise KeyboardInterrupt


def _interrupted() -> int:
    term = bool(_signalled)
    what = "terminated (SIGTERM)" if term else "interrupted"
    typer.secho(f"error: {what}: stopped; rerun the same command to resume", fg=typer.colors.RED, err=True)
    return 143 if term else 130


def _run(argv: list[str]) -> int:
    """Run the app; a DataclawError (or any unexpected error) becomes one line on stderr, not a traceback.
    An interrupt (Ctrl-C, or SIGTERM under :func:`main`) exits 130 (143) after the command cleaned up."""
    _register()
    debug = "--debug" in argv
    try:
        app(args=argv, prog_name="dataclaw")
    except SystemExit as exc:  # typer/click exit: help, usage errors, typer.Exit, an interrupt (130)
        if _signalled:
            return _interrupted()
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        return _interrupted()
    except DataclawError as exc:
        if debug:
            raise
        typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
        return 1
    except Exception as exc:  # the last boundary: one line, not a traceback
        if debug:
            raise
        typer.secho(
            f"error: {type(exc).__name__}: {exc} (rerun with --debug for details)",
            fg=typer.colors.RED,
            err=True,
        )
        return 1
    return 0


def main() -> None:
    signal.signal(signal.SIGTERM, _on_sigterm)
    sys.exit(_run(sys.argv[1:]))


def envcraft_main() -> None:
    """``envcraft`` is ``dataclaw env``."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    sys.exit(_run(["env", *sys.argv[1:]]))
