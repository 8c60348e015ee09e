"""Bad input: a clear message on the page, the rest viewable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.core.store import RunStore
from dataclaw.viewer import open_site


def test_a_folder_that_is_not_a_run_says_so(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("hello")
    site = open_site([tmp_path / "notes"], tmp_path / "c")
    html = site.render("index.html")
    assert "is not a run directory" in html and "no manifest.json and no .jsonl" in html


def test_a_missing_path_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such run directory"):
        open_site([tmp_path / "nope"], tmp_path / "c")
    (tmp_path / "file.jsonl").write_text("{}\n")
    with pytest.raises(ConfigError, match="not a directory"):
        open_site([tmp_path / "file.jsonl"], tmp_path / "c")


def test_a_torn_last_line_is_reported_and_the_other_records_shown(quickstart: Path, tmp_path: Path) -> None:
    run = quickstart / "envcraft"
    with (run / "rollouts.jsonl").open("a") as fh:
        fh.write(
            '{"id": "env:temporal_scheduling-3ab2432a/chain-087a07ab/grounded-8672dca4/task-dcc1a6f7/roll'
        )
    site = open_site([run], tmp_path / "c")
    overview = site.render("index.html")
    assert "rollouts.jsonl: the last line" in overview and "is incomplete" in overview
    html = site.render("r/0/rollouts/p1.html")
    assert "4 records" in html and "is incomplete" in html
    # the store agrees: the torn line is not a record
    assert len(list(RunStore(run).records("rollouts"))) == 4


def test_a_torn_line_completed_later_becomes_a_record(quickstart: Path, tmp_path: Path) -> None:
    run = quickstart / "envcraft"
    path = run / "rollouts.jsonl"
    first = json.loads(path.read_text().splitlines()[0])
    line = json.dumps({**first, "id": first["id"] + "-again", "sample": 7})
    with path.open("a") as fh:
        fh.write(line[:40])
    site = open_site([run], tmp_path / "c")
    assert "4 records" in site.render("r/0/rollouts/p1.html")
    with path.open("a") as fh:
        fh.write(line[40:] + "\n")
    html = site.render("r/0/rollouts/p1.html")  # a list page refreshes the index: only the new bytes are read
    assert "5 records" in html and "incomplete" not in html


def test_a_bad_line_in_the_middle_is_named_and_skipped(quickstart: Path, tmp_path: Path) -> None:
    run = quickstart / "envcraft"
    lines = (run / "chains.jsonl").read_text().splitlines()
    lines.insert(2, "{not json")
    (run / "chains.jsonl").write_text("\n".join(lines) + "\n")
    site = open_site([run], tmp_path / "c")
    html = site.render("r/0/chains/p1.html")
    assert "chains.jsonl: line 3 is not valid JSON" in html and "4 records" in html


def test_a_broken_manifest_is_named_and_the_stage_files_still_listed(
    quickstart: Path, tmp_path: Path
) -> None:
    run = quickstart / "tailor"
    (run / "manifest.json").write_text('{"command": "tailor run", ')
    site = open_site([run], tmp_path / "c")
    html = site.render("index.html")
    assert "manifest.json: cannot be read as JSON" in html
    assert "samples/p1.html" in html


def test_a_sample_whose_media_file_is_missing(quickstart: Path, tmp_path: Path) -> None:
    run = quickstart / "tailor"
    art = json.loads((run / "artifacts.jsonl").read_text())
    (run / art["path"]).unlink()
    site = open_site([run], tmp_path / "c")
    html = site.render("r/0/samples/0.html")
    assert "media file missing: " + art["path"] in html
    assert "Request as sent" in html and "<td>schema</td>" in html  # the rest of the sample is there


def test_an_artifact_path_outside_the_run_is_never_served(quickstart: Path, tmp_path: Path) -> None:
    run = quickstart / "tailor"
    art = json.loads((run / "artifacts.jsonl").read_text())
    (tmp_path / "outside.mp4").write_bytes((run / art["path"]).read_bytes())
    art["path"] = "../../outside.mp4"
    (run / "artifacts.jsonl").write_text(json.dumps(art) + "\n")
    site = open_site([run], tmp_path / "c")
    html = site.render("r/0/samples/0.html")
    assert "points outside the run directory; it is not served" in html
    assert 'outside.mp4"' not in html and "<video" not in html
    assert "<td>schema</td>" in html


def test_superseded_records_are_not_shown(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with RunStore(run) as store:
        store.set_producer("tasks", {"model": "a"})
        store.stage("tasks").append({"id": "t1", "instruction": "old text"})
        store.set_producer("tasks", {"model": "b"})
        store.stage("tasks").append({"id": "t1", "instruction": "new text"})
        store.update_manifest()
    site = open_site([run], tmp_path / "c")
    html = site.render("r/0/tasks/p1.html")
    assert "1 records" in html and "new text" in html and "old text" not in html
    assert "<td>1</td>" in site.render("index.html")  # one superseded line, counted apart
