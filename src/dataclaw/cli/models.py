"""``dataclaw models``: check that a model answers, list what model strings exist, read a run's usage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from dataclaw.core.errors import ConfigError

app = typer.Typer(no_args_is_help=True, help="Check models, list backends, show a run's model usage.")


@app.command("check")
def check(
    spec: str = typer.Argument(
        ..., help="Model string: local:smollm2-135m, openai:<model>, http://host/v1::<model>"
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON line instead of text."),
) -> None:
    """Send one tiny structured request (no cache) and print latency, tokens and the parsed answer."""
    from dataclaw.models.structured import check_model

    done = check_model(spec)
    result = {
        "model": done.model,
        "latency_s": round(done.latency_s, 3),
        "prompt_tokens": done.usage.prompt_tokens,
        "completion_tokens": done.usage.completion_tokens,
        "cost_usd": done.cost_usd,
        "priced": done.priced,
        "answer": done.parsed,
    }
    if as_json:
        typer.echo(json.dumps(result))
        return
    for key, value in result.items():
        typer.echo(f"{key:>18}: {value}")


@app.command("list")
def list_backends() -> None:
    """The model-string schemes, server flavours for structured output, and bundled local models."""
    from dataclaw.models.local import BUNDLED
    from dataclaw.models.registry import BACKENDS, load_builtin_backends
    from dataclaw.models.schema import SCHEMA_FORMS

    load_builtin_backends()
    typer.echo("schemes:         " + ", ".join(sorted(BACKENDS)))
    typer.echo("server flavours: " + ", ".join(SCHEMA_FORMS) + "   (http://…/v1::<model>?server=<flavour>)")
    typer.echo("local models:    " + ", ".join(f"local:{name}" for name in BUNDLED))


@app.command("usage")
def usage(run: Annotated[Path, typer.Argument(help="Run directory (with manifest.json).")]) -> None:
    """Print the model usage (calls, cache hits, tokens, cost) recorded in a run's manifest."""
    from dataclaw.models.ledger import render_summary

    manifest = run / "manifest.json"
    if not manifest.is_file():
        raise ConfigError(f"run {run} has no manifest.json")
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ConfigError(f"{manifest} is not valid JSON ({exc})") from None
    summary = (data.get("models") or {}).get("usage")
    if not summary:
        raise ConfigError(f"run {run} has no model usage recorded in its manifest")
    typer.echo(render_summary(summary))
