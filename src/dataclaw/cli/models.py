"""``dataclaw models``: check that a model answers, list what model strings exist, read a run's usage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(no_args_is_help=True, help="Check models, list backends, show a run's model usage.")


@app.command("check")
def check(
    spec: str = typer.Argument(
        ..., help="Model string: local:smollm2-135m, openai:<model>, http://host/v1::<model>"
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON line instead of text."),
) -> None:
    """Probe the endpoint once per capability (chat, JSON schema, tools, images) and print what works,
    then send one tiny structured request with the model string as given (no cache). Exit status 1 when
    the model cannot answer or that request fails."""
    from dataclaw.models.structured import check_endpoint

    result = check_endpoint(spec)  # a dead endpoint, wrong key or model: one line, exit 1
    caps, done = result.capabilities, result.done
    if as_json:
        typer.echo(json.dumps(result.to_dict()))
    else:
        typer.echo(f"model: {caps.model}")
        for name, ok, detail in caps.rows():
            latency = caps.latency_s.get(name)
            when = f"{latency:6.2f}s" if latency is not None else " " * 7
            typer.echo(f"  {name:<12} {'yes' if ok else 'no':<4} {when}  {detail}".rstrip())
        if done is not None:
            price = f"${done.cost_usd:.6f}" + ("" if done.priced else " unpriced")
            tokens = f"{done.usage.prompt_tokens} + {done.usage.completion_tokens} tokens"
            typer.echo(
                f"  {'check':<12} yes  {done.latency_s:6.2f}s  answer {done.parsed} ({tokens}, {price})"
            )
        else:
            typer.echo(f"  {'check':<12} no            {result.error}")
    if not result.ok:
        raise typer.Exit(1)


@app.command("list")
def list_backends() -> None:
    """The model-string schemes, server kinds (how a schema is sent), and bundled local models."""
    from dataclaw.models.backends.base import BACKENDS
    from dataclaw.models.backends.local import BUNDLED
    from dataclaw.models.servers import SERVER_KINDS

    typer.echo("schemes:         " + ", ".join(BACKENDS.names()))
    kinds = ", ".join(SERVER_KINDS.names())
    typer.echo("server kinds:    " + kinds + "   (http://…/v1::<model>?server=<kind>)")
    typer.echo("local models:    " + ", ".join(f"local:{name}" for name in BUNDLED.names()))


@app.command("usage")
def usage(run: Annotated[Path, typer.Argument(help="Run directory (with manifest.json).")]) -> None:
    """Print the model usage (calls, cache hits, tokens, cost) recorded in a run's manifest."""
    from dataclaw.models.ledger import render_summary, run_usage

    typer.echo(render_summary(run_usage(run)))
