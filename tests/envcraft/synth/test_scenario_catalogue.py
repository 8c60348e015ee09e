"""The scenario catalogue: the paper's 83 scenarios as data, users' YAML folders, and the CLI listing."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest

from dataclaw.cli.app import _run
from dataclaw.core.errors import ConfigError
from dataclaw.envcraft import archetypes
from dataclaw.envcraft.scenarios import (
    Category,
    ScenarioFileError,
    blueprints,
    builtin_scenarios,
    load_catalogue,
)

PAPER = Path(
    os.environ.get(
        "DATACLAW_ENVCRAFT_PAPER",
        Path(__file__).resolve().parents[3] / ".." / "shared" / "papers" / "003_9fb00b4dccb2ed41.txt",
    )
)


def test_catalogue_has_the_papers_counts() -> None:
    cat = load_catalogue()
    assert len(cat) == 83
    by_cat = Counter(s.category for s in cat)
    assert by_cat == {Category.GENERAL: 41, Category.CLAW: 42}  # B.2: 41 general, 42 Claw-specific
    assert len(set(cat.ids())) == 83
    # the "# Envs" columns sum to Table 2's passed environments: 70 general + 69 claw = 139
    envs = Counter()
    for s in cat:
        envs[s.category] += s.paper_envs
    assert envs == {Category.GENERAL: 70, Category.CLAW: 69}
    # rows per table (Tables 5-9 general, 10-14 claw) and numbering 1..41 / 1..42 without gaps
    assert Counter(s.paper_table for s in cat) == {
        5: 9,
        6: 8,
        7: 8,
        8: 8,
        9: 8,
        10: 9,
        11: 9,
        12: 8,
        13: 8,
        14: 8,
    }
    for category, n in ((Category.GENERAL, 41), (Category.CLAW, 42)):
        assert [s.paper_number for s in cat.filter(category)] == list(range(1, n + 1))
    for s in cat:
        assert (s.paper_table <= 9) == (s.category is Category.GENERAL)
        assert s.description.endswith(".") and s.archetypes == () and s.source == "builtin"
    assert cat.get("scheduling_reminders").paper_envs == 2
    assert cat.get("travel_compliance_booking_closure").name == "Travel Compliance & Booking Closure"


def _paper_rows(text: str) -> list[tuple[int, int, str, int, str]]:
    """(table, number, name, envs, description) rows of Tables 5-14 from the paper's text rendering."""
    line = next(x for x in text.splitlines() if "Fine\\-Grained Scenario" in x).replace("\\", "")
    parts = re.split(r"Table (\d+):[^.]*?descriptions(?: \(continued\))?\.", line)
    rows = []
    for body, table in zip(parts[0::2], parts[1::2], strict=False):
        body = body.replace("No.Fine-Grained Scenario# EnvsScenario Description", "")
        pattern = r"(\d{1,2})([A-Z][^.]*?[a-z)])(\d)([A-Z].*?\.)(?=\d{1,2}[A-Z]|$)"
        for m in re.finditer(pattern, body):
            rows.append((int(table), int(m[1]), m[2], int(m[3]), m[4]))
    return rows


@pytest.mark.skipif(not PAPER.is_file(), reason="the EnvCraft paper text is not next to the checkout")
def test_catalogue_matches_the_paper_tables_row_by_row() -> None:
    rows = _paper_rows(PAPER.read_text(encoding="utf-8"))
    assert len(rows) == 83
    ours = [(s.paper_table, s.paper_number, s.name, s.paper_envs, s.description) for s in builtin_scenarios()]
    assert ours == rows


def test_blueprints_are_the_nine_archetypes_with_their_code() -> None:
    bps = blueprints()
    assert [b.number for b in bps] == list(range(1, 10))
    assert sorted(b.name for b in bps) == archetypes.names()
    for b in bps:
        assert len(b.blueprint) > 500 and "\\" not in b.blueprint
        files = b.reference_files()
        assert any(p.name == "env.py" for p in files) and all(p.is_file() for p in files)
    assert bps[5].name == "temporal_scheduling" and bps[5].title == "Multi-Resource Temporal Scheduling"


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


GOOD = """\
id: greenhouse_irrigation
category: claw
name: Greenhouse Irrigation
description: Irrigation controllers with moisture sensors, watering schedules and valve faults.
archetypes: [event_triggering]
"""


def test_user_folder_adds_scenarios(tmp_path: Path) -> None:
    _write(tmp_path, "one.yaml", GOOD)
    _write(
        tmp_path,
        "more.yml",
        "scenarios:\n"
        "  - {id: pet_clinic, category: general, name: Pet Clinic, description: Vet appointments.}\n"
        "  - {id: bike_share, category: general, name: Bike Share, description: Dock and rent bikes.}\n",
    )
    _write(tmp_path, "notes.txt", "not a scenario file")
    cat = load_catalogue([tmp_path])
    assert len(cat) == 86
    mine = cat.get("greenhouse_irrigation")
    assert mine.source == str(tmp_path / "one.yaml") and mine.archetypes == ("event_triggering",)
    assert mine.paper_envs is None
    assert [s.id for s in load_catalogue([tmp_path], builtin=False)] == [
        "pet_clinic",  # files sorted by name, scenarios in file order
        "bike_share",
        "greenhouse_irrigation",
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (GOOD.replace("greenhouse_irrigation", "scheduling_reminders"), "already defined in builtin"),
        ("id: [unclosed\n", "not valid YAML at line"),
        ("", "the file is empty"),
        ("- just\n- a list\n", "expected a scenario mapping"),
        (GOOD.replace("category: claw", "category: robots"), "scenario greenhouse_irrigation: category"),
        (GOOD.replace("id: greenhouse_irrigation", "id: Greenhouse Irrigation"), "id: String should match"),
        (GOOD + "colour: green\n", "colour: Extra inputs are not permitted"),
        (GOOD.replace("event_triggering", "teleportation"), "unknown archetype 'teleportation'"),
        (
            GOOD.replace("description: Irr", "description: ' '\nx: Irr"),
            "description: Value error, must not be",
        ),
        ("scenarios: []\n", "'scenarios' must be a non-empty list"),
    ],
)
def test_bad_user_file_is_one_error_naming_it(tmp_path: Path, text: str, problem: str) -> None:
    path = _write(tmp_path, "bad.yaml", text)
    with pytest.raises(ScenarioFileError) as err:
        load_catalogue([tmp_path])
    assert str(err.value).startswith(f"scenario file {path}: ") and problem in str(err.value)


def test_duplicate_between_two_user_files(tmp_path: Path) -> None:
    first = _write(tmp_path, "a.yaml", GOOD)
    second = _write(tmp_path, "b.yaml", GOOD)
    with pytest.raises(ScenarioFileError, match=f"scenario file {second}: .*already defined in {first}"):
        load_catalogue([tmp_path])


def test_missing_folder_and_unknown_id(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_catalogue([tmp_path / "nope"])
    with pytest.raises(ConfigError, match="did you mean scheduling_reminders"):
        load_catalogue().get("scheduling_reminder")


def test_cli_lists_json_lines_and_filters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["env", "scenarios", "--json", "--category", "claw"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [json.loads(x) for x in lines]
    assert len(rows) == 42 and {r["category"] for r in rows} == {"claw"}
    assert rows[0]["id"] == "collaborative_office_email_automation" and rows[0]["source"] == "builtin"
    _write(tmp_path, "one.yaml", GOOD)
    assert _run(["env", "scenarios", "--json", "--scenarios", str(tmp_path)]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(rows) == 84 and rows[-1]["id"] == "greenhouse_irrigation"
    assert _run(["env", "scenarios", "--category", "general"]) == 0
    assert "41 scenarios" in capsys.readouterr().out
    assert _run(["env", "scenarios", "--category", "robots"]) == 1
    assert "unknown category 'robots'" in capsys.readouterr().err
    _write(tmp_path, "bad.yaml", "")
    assert _run(["env", "scenarios", "--scenarios", str(tmp_path)]) == 1
    assert f"scenario file {tmp_path / 'bad.yaml'}: the file is empty" in capsys.readouterr().err
