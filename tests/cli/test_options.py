"""Options generated from config dataclasses (cli/_options.py): one declaration, the same option, default
and help on every command that takes it."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import typer
import typer.main
from typer.testing import CliRunner

from dataclaw.cli._options import fields_of, with_options


@dataclass(frozen=True)
class Knobs:
    size: int = field(default=3, metadata={"help": "How big."})
    name: str | None = field(default=None, metadata={"flags": ("--called", "-c"), "help": "Its name."})
    tags: list[str] = field(
        default_factory=list, metadata={"flags": ("--tag",), "help": "Tags (repeatable)."}
    )


def _app() -> tuple[typer.Typer, list[object]]:
    seen: list[object] = []
    app = typer.Typer()

    @app.command("a")
    @with_options(knobs=Knobs)
    def a(path: str, knobs: Knobs, verbose: bool = False) -> None:
        seen.append((path, knobs, verbose))

    @app.command("b")
    @with_options(part=fields_of(Knobs, "size"))
    def b(part: dict) -> None:
        seen.append(part)

    return app, seen


def test_fields_become_options_with_their_default_help_and_flags():
    app, _ = _app()
    group = typer.main.get_command(app)
    params = {p.name: p for p in group.commands["a"].params}  # type: ignore[attr-defined]
    assert list(params) == ["path", "size", "name", "tags", "verbose"]  # in place of the knobs parameter
    assert (
        params["size"].opts == ["--size"]
        and params["size"].default == 3
        and params["size"].help == "How big."
    )
    assert params["name"].opts == ["--called", "-c"] and params["name"].default is None
    assert params["tags"].multiple and params["tags"].default is None  # the factory's value, unshown


def test_the_command_gets_the_built_dataclass_or_the_named_fields():
    app, seen = _app()
    assert (
        CliRunner().invoke(app, ["a", "p", "--size", "5", "-c", "x", "--tag", "t1", "--tag", "t2"]).exit_code
        == 0
    )
    assert CliRunner().invoke(app, ["a", "q"]).exit_code == 0
    assert CliRunner().invoke(app, ["b", "--size", "7"]).exit_code == 0
    assert seen == [
        ("p", Knobs(size=5, name="x", tags=["t1", "t2"]), False),
        ("q", Knobs(), False),
        {"size": 7},
    ]


def test_tailor_ingest_and_run_share_one_declaration_with_the_components_defaults():
    from dataclaw.cli.tailor import IngestOptions, app
    from dataclaw.tailor.anchors.shots import ShotBoundaries, ShotParams

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    ingest, run = ({p.name: p for p in commands[c].params} for c in ("ingest", "run"))
    for name in (f.name for f in IngestOptions.__dataclass_fields__.values()):
        same = ("opts", "default", "help", "multiple", "is_flag", "required")
        assert [getattr(ingest[name], k) for k in same] == [getattr(run[name], k) for k in same], name
    threshold = inspect.signature(ShotBoundaries).parameters["threshold"].default
    assert ingest["shot_threshold"].default == threshold == IngestOptions().shot_threshold
    assert threshold == ShotParams().threshold  # declared once, in ShotParams
    assert ingest["fault_fractions"].default == "0.35,0.5,0.65"
    assert IngestOptions().config(2).miner_config["fault_window"]["fractions"] == [0.35, 0.5, 0.65]


def test_the_executor_help_shows_the_ray_extra_as_typed():
    """rich reads ``[ray]`` as markup unless escaped: the help must show ``pip install 'dataclaw[ray]'``."""
    from typer.testing import CliRunner

    from dataclaw.cli.app import _register, app

    _register()
    out = CliRunner().invoke(app, ["tasks", "audit", "--help"], env={"COLUMNS": "400"}).output
    assert "pip install 'dataclaw[ray]'" in out
