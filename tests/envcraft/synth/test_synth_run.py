"""One synthesis run as a user asks for it (``synth/run.py``): the request refuses bad settings before any
work, the run's rows come back as pass rates, failures and a headline (what ``env synth`` prints)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.envcraft.synth.library import PATHS, row
from dataclaw.envcraft.synth.run import LibraryRun, SynthRequest, synth_library


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"scenarios": ("a",), "path": "both ways"}, "--path must be compile, codegen or both"),
        ({}, "say what to synthesise"),
        ({"scenarios": ("a",), "workers": 0}, "--workers at least 1"),
        ({"scenarios": ("a",), "repair_rounds": -1}, "--repair-rounds must be at least 0"),
        ({"all_": True, "timeout_s": 0}, "--timeout positive"),
    ],
)
def test_a_bad_request_is_refused_when_made(kw: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SynthRequest("replay:/nowhere.jsonl", **kw)


def test_a_request_names_its_paths_and_config() -> None:
    request = SynthRequest("m", descriptions=("",), path="both", workers=3, spec_bounds="compact")
    assert request.paths == PATHS
    config = request.config()
    assert (config.model, config.paths, config.workers, config.bounds) == ("m", PATHS, 3, "compact")


def _row(sid: str, path: str, status: str, archetype: str | None = None, reasons: list | None = None) -> dict:
    return row(
        f"{sid}/{path}", {"id": sid}, path, status=status, archetypes=[archetype] if archetype else [],
        reasons=reasons or [],
    )  # fmt: skip


def test_a_run_gives_rates_failures_and_a_headline(tmp_path: Path) -> None:
    long = "x" * 400
    run = LibraryRun(
        tmp_path,
        [
            _row("s1", "compile", "passing", "crm"),
            _row("s2", "compile", "failed", "crm", [{"code": "timeout", "message": long}]),
            _row("", "codegen", "failed", reasons=[{"code": "unknown_scenario", "message": "no such"}]),
            _row("s3", "compile", "floor", "crm", [{"code": "floor", "message": "spec still invalid"}]),
        ],
    )
    assert [(r.kind, r.name, r.raw, r.passed, r.floor) for r in run.rates()] == [
        ("path", "codegen", 1, 0, 0),
        ("path", "compile", 3, 1, 1),
        ("archetype", "crm", 3, 1, 1),
    ]
    failures = run.failures()
    assert [(f.scenario, f.path, f.status) for f in failures] == [
        ("s2", "compile", "failed"),
        ("(request)", "codegen", "failed"),
        ("s3", "compile", "floor"),
    ]
    assert len(failures[0].why) == 300 and failures[0].why.startswith("timeout: xxx")
    assert failures[1].why == "unknown_scenario: no such"
    # the floor environment is counted apart, never in the rate: 1 of 4, not 2 of 4
    assert run.headline().startswith(
        "all 4 → 1 passing = 25.0% · 1 floor (invalid spec, smoke tests only, not counted) · 2 failed"
        " · paper (Table 2) 324 → 139 = 42.9% · tokens 0 in"
    )
    assert run.index == tmp_path / "index.jsonl"


def test_synth_library_writes_a_row_for_an_unknown_scenario(tmp_path: Path) -> None:
    """A request that names nothing synthesisable needs no model: its rows are the index."""
    request = SynthRequest(
        "replay:/nonexistent/never-called.jsonl", scenarios=("no_such_scenario",), unsafe=True
    )
    run = synth_library(tmp_path / "LIB", request)
    assert [(r["scenario_id"], r["path"], r["passed"]) for r in run.rows] == [
        ("no_such_scenario", "compile", False)
    ]
    assert run.summary["reasons"] == {"unknown_scenario": 1}
    assert run.index.is_file()
