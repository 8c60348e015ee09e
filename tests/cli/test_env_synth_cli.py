"""``dataclaw env synth`` and ``env list --library`` as a user reads them (issue 26): a path the model
cannot serve is refused in one line before any spec call; a library lists passing, floor and failed
environments apart, with the reasons of the others."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dataclaw.cli.app import _run
from dataclaw.core.store import RunStore
from dataclaw.envcraft.synth.library import INDEX, row
from dataclaw.sandbox import sandbox_available


def test_env_synth_refuses_codegen_on_the_embedded_model_in_one_line(tmp_path: Path, capsys) -> None:
    pytest.importorskip("llama_cpp")
    avail = sandbox_available()
    if not avail:
        pytest.skip(avail.reason)
    out = tmp_path / "LIB"
    args = ["env", "synth", "--out", str(out), "--scenario", "support_ticketing", "--path", "codegen"]
    assert _run([*args, "--model", "local:smollm2-135m"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("error: the codegen path cannot run on local:smollm2-135m: its prompt is at least")
    assert "more than the model's context of 4,096 tokens" in err
    assert not (out / "specs.jsonl").exists() or not (out / "specs.jsonl").read_text().strip()


@pytest.fixture
def library(tmp_path: Path) -> Path:
    """A library index with one environment of each status (packages as folders)."""
    lib = tmp_path / "LIB"
    scenario = {"id": "", "name": "", "category": "general", "source": "builtin"}
    rows = [
        ("clinic", "passing", "envs/compile/clinic", []),
        ("tickets", "floor", "floor/compile/tickets", [{"code": "floor", "message": "spec still invalid"}]),
        ("crm", "failed", "failed/compile/crm", [{"code": "meaning", "message": "entity_is_id: ticket_id"}]),
    ]
    with RunStore(lib, command="test") as store:
        for name, status, package, reasons in rows:
            (lib / package).mkdir(parents=True)
            store.stage(INDEX).append(
                row(f"{name}/compile", {**scenario, "id": name, "name": name}, "compile", env=name,
                    package=package, status=status, reasons=reasons, tools=8, scenarios=2)
            )  # fmt: skip
    return lib


def test_env_list_library_says_which_is_passing_floor_or_failed(library: Path, capsys) -> None:
    assert _run(["env", "list", "--library", str(library), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(e["name"], e["status"]) for e in listed] == [
        ("clinic", "passing"),
        ("tickets", "floor"),
        ("crm", "failed"),
    ]
    assert listed[1]["reasons"] == "floor: spec still invalid"
    assert listed[2]["reasons"].startswith("meaning: entity_is_id")
    assert _run(["env", "list", "--library", str(library)]) == 0
    table = capsys.readouterr().out
    assert "1 passing, 1 floor (not counted as passing), 1 failed" in " ".join(table.split())
    assert "floor" in table and "meaning" in table and "why, in full:" in table
    assert listed[2]["codes"] == ["meaning"]
