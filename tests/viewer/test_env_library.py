"""The viewer's page of an environment library (``LIB/index.jsonl`` of env synth / env import): each
environment's status — passing, floor (never counted as passing) or failed — its gates and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataclaw.core.store import RunStore
from dataclaw.envcraft.synth.library import INDEX, row
from dataclaw.viewer import open_site
from dataclaw.viewer.site import Site

GATES = {"spec": True, "meaning": True, "audit": True, "soundness": True}
FLOOR = [{"code": "floor", "message": "spec still invalid"}]
MEANING = [{"code": "meaning", "message": "entity_is_id: ticket_id"}]
ROWS = [
    ("clinic", "passing", GATES, []),
    ("tickets", "floor", {**GATES, "spec": False, "soundness": None}, FLOOR),
    ("crm", "failed", {**GATES, "meaning": False, "soundness": None}, MEANING),
]


@pytest.fixture
def site(tmp_path: Path) -> Site:
    lib = tmp_path / "LIB"
    with RunStore(lib, command="env synth") as store:
        for name, status, gates, reasons in ROWS:
            scenario = {"id": name, "name": name, "category": "general", "source": "builtin"}
            store.stage(INDEX).append(
                row(f"{name}/compile", scenario, "compile", env=name, status=status, gates=gates,
                    reasons=reasons, tools=8, chains3=12, soundness={"grounded": 3, "sound": 3})
            )  # fmt: skip
    return open_site([lib], tmp_path / "cache")


def test_the_library_page_lists_each_environment_with_its_status(site: Site) -> None:
    (run,) = site.runs.values()
    html = site.render(f"r/{run.key}/index/p1.html")
    for status in ("passing", "floor", "failed"):
        assert '<span class="badge' in html and f">{status}</span>" in html
    assert "meaning" in html and "floor" in html


def test_an_environment_page_shows_its_gates_and_why_it_is_not_passing(site: Site) -> None:
    (run,) = site.runs.values()
    floor = site.render(f"r/{run.key}/index/1.html")
    assert ">floor</span>" in floor and "counted in the pass rate</th><td>no" in floor.replace("\n", "")
    assert "Why not passing" in floor and "spec still invalid" in floor
    passing = site.render(f"r/{run.key}/index/0.html")
    assert ">passing</span>" in passing and "Why not passing" not in passing
    assert "3 of 3 grounded" in passing
