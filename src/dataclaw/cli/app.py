"""``dataclaw`` entry point. Command groups are registered in :data:`GROUPS` (name → module with ``app``)."""

from __future__ import annotations

import functools
import importlib
import logging
import signal
import sys

import typer

from dataclaw import __version__
from dataclaw.core.errors import DataclawError

# name -> (module, help). Each module exposes a typer ``app``.
GROUPS: dict[str, tuple[str, str]] = {
    "models": ("dataclaw.cli.models", "Check models, list backends, show a run's model usage."),
    "tailor": (
        "dataclaw.cli.tailor",
        "Tailor: ingest, inspect, intents, run, export (raw streams → training samples).",
    ),
    "sandbox": ("dataclaw.sandbox.cli", "Run untrusted code in the bubblewrap sandbox; check that it works."),
    "env": ("dataclaw.cli.env", "EnvCraft environments: list, show, tools, call, contract, audit, graph."),
    "tasks": (
        "dataclaw.cli.tasks",
        "EnvCraft tasks: sample chains, synthesise, audit, calibrate, roll out; claw workspace tasks.",
    ),
    "train": ("dataclaw.cli.train", "Train on dataclaw data: TRL GRPO and SFT in the trainer's own venv."),
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
    for name, (module, help_) in GROUPS.items():
        app.add_typer(importlib.import_module(module).app, name=name, help=help_)


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
