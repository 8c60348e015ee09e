"""``dataclaw sandbox``: check that bubblewrap works, or run one program in the sandbox and print its outcome.

Other commands that run untrusted code should declare ``unsafe: Annotated[bool, UNSAFE_OPTION] = False`` and
pass it on as ``SandboxPolicy(unsafe=...)``, so the opt-out is spelled ``--unsafe-no-sandbox`` everywhere.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from dataclaw.core.errors import ConfigError
from dataclaw.sandbox.bwrap import sandbox_available
from dataclaw.sandbox.runner import run as sandbox_run
from dataclaw.sandbox.types import UNSAFE_FLAG, Limits, SandboxPolicy

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="Run untrusted code in the bubblewrap sandbox; check that it works.",
)

UNSAFE_OPTION = typer.Option(
    UNSAFE_FLAG,
    help="Run untrusted code WITHOUT bubblewrap (rlimits and timeout only). Dangerous; logged loudly.",
)


@app.command()
def check() -> None:
    """Say whether the sandbox can run here (exit status 1 if not)."""
    avail = sandbox_available()
    if avail:
        typer.echo(f"sandbox: ok ({avail.reason})")
        return
    typer.echo(f"sandbox: unavailable: {avail.refusal}", err=True)
    raise typer.Exit(1)


@app.command(context_settings={"allow_interspersed_args": False})
def run(
    command: Annotated[list[str] | None, typer.Argument(help="Program and arguments (after --).")] = None,
    workspace: Annotated[Path, typer.Option("--workspace", "-w", help="The only writable directory.")] = Path(
        "."
    ),
    python_file: Annotated[
        Path | None, typer.Option("--python", help="Run this Python file instead.")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Wall-clock timeout in seconds.")] = 60.0,
    cpu: Annotated[float, typer.Option(help="CPU seconds.")] = 30.0,
    memory_mb: Annotated[int, typer.Option(help="Address space per process in MB.")] = 2048,
    disk_mb: Annotated[int, typer.Option(help="How much the workspace may grow in the run (MB).")] = 256,
    stdlib_only: Annotated[
        bool, typer.Option(help="Python sees the standard library only (base interpreter, -I -S, no venv).")
    ] = False,
    ro: Annotated[
        list[Path] | None, typer.Option("--ro", help="Extra read-only host path (repeatable).")
    ] = None,
    unsafe: Annotated[bool, UNSAFE_OPTION] = False,
) -> None:
    """Run one program in the sandbox and print its outcome as JSON (exit status 0 only if it was ok)."""
    if bool(command) == bool(python_file):
        raise ConfigError("give either a command after -- or --python FILE, not both and not neither")
    program: str | list[str] = list(command or [])
    if python_file is not None:
        if not python_file.is_file():
            raise ConfigError(f"--python {str(python_file)!r} is not a file")
        program = python_file.read_text(encoding="utf-8")
    limits = Limits(cpu_s=cpu, memory_mb=memory_mb, wall_s=timeout, disk_mb=disk_mb, stdlib_only=stdlib_only)
    policy = SandboxPolicy(ro_paths=tuple(p.resolve() for p in ro or []), unsafe=unsafe)
    outcome = sandbox_run(program, workspace, limits, policy=policy)
    typer.echo(json.dumps(outcome.to_dict(), ensure_ascii=False))
    if not outcome.ok:
        raise typer.Exit(1)
