"""A model that must see, sees — as a user meets it on the command line (issue 27): the embedded model and
a real ``llama_cpp.server`` (both text-only) on a visual intent are refused before the run in one line
naming the intent, the model and the opt-in; ``--text-only-evidence`` lets them answer from text, each
response and sample marked ``evidence: text_only`` with nothing recorded as sent that was not; and a
command that makes no record exits 1 saying why."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: makes `support` importable

from dataclaw.cli.app import _run
from support.llama_server import llama_cpp_server  # noqa: F401  (the fixture)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ROBOT = ["tailor", "run", str(EXAMPLES / "lerobot_g1"), "-i", "describe_current_subtask",
         "--extractors", "proprio", "--miners", "keyframes", "--workers", "1"]  # fmt: skip


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """One response cache for the module, as a user's machine has: a repeated answer is not paid twice."""
    monkeypatch.setenv("DATACLAW_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "evidence-cache"))


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    )


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_the_embedded_model_on_a_visual_intent_is_refused_before_the_run(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    assert _run([*ROBOT, "-o", str(run), "-i", "gui_task_decomposition"]) == 1
    line = _one_line(capsys.readouterr().err)
    assert "intent describe_current_subtask must see frames" in line
    assert "model local:smollm2-135m is text-only" in line and "--text-only-evidence" in line
    assert "gui_task_decomposition" not in line, "a text intent is not refused"
    assert not (run / "streams.jsonl").exists(), "refused before any ingest"


def test_commands_that_make_nothing_exit_1_saying_why(tmp_path: Path, capsys) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _run(["tailor", "ingest", str(empty), "-o", str(tmp_path / "i")]) == 1
    line = _one_line(capsys.readouterr().err)
    assert "no stream was read from the inputs: ingest:not_a_dataset 1" in line

    corrupt = tmp_path / "clip.mp4"  # the first 20 kB of a real mp4: its index is missing
    corrupt.write_bytes((EXAMPLES / "videos" / "dj_video1.mp4").read_bytes()[:20000])
    run = tmp_path / "run"
    argv = ["tailor", "run", str(corrupt), "-o", str(run), "-i", "video_generation_segment",
            "--text-only-evidence", "--workers", "1", "--json"]  # fmt: skip
    assert _run(argv) == 1
    out, err = capsys.readouterr()
    summary = json.loads(out.strip().splitlines()[-1])  # the summary is still printed
    assert summary["export"]["samples"] == 0
    line = _one_line(err)
    assert "the run made no sample: no stream was read from the inputs: ingest:corrupt_video 1" in line

    assert _run(["tailor", "export", str(run), "-f", "jsonl", "-o", str(tmp_path / "x")]) == 1
    assert "exported no sample: the run produced no samples" in _one_line(capsys.readouterr().err)


def _check_text_only(run: Path, code: int, err: str) -> list[dict[str, Any]]:
    """Every response and sample of ``run`` is marked text_only and says it was sent nothing; the exit
    status says whether samples were made."""
    responses = _jsonl(run / "responses.jsonl")
    assert responses, err
    for r in responses:
        assert r["evidence"] == "text_only" and r["images"] == 0, r["id"]
        assert r["sent"] == {"images": 0, "frames": [], "bytes": 0} and len(r["frames"]) == 20
    samples = _jsonl(run / "samples.jsonl")
    assert all(s["evidence"] == "text_only" for s in samples)
    assert all(s["provenance"]["sent"]["images"] == 0 for s in samples)
    if samples:
        assert code == 0, err
        rows = json.loads((run / "export/llamafactory/dataclaw.json").read_text())
        assert [r["evidence"] for r in rows] == ["text_only"] * len(samples)
    else:  # every answer rejected: the run says so and fails
        assert code == 1 and "the run made no sample: every answer was rejected" in _one_line(err)
    return samples


@pytest.mark.slow
def test_the_embedded_model_with_text_only_evidence_marks_what_it_made(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    code = _run([*ROBOT, "-o", str(run), "--text-only-evidence", "--export", "llamafactory"])
    _check_text_only(run, code, capsys.readouterr().err)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["evidence"]["text_only"] == [
        {"intent": "describe_current_subtask", "model": "local:smollm2-135m"}
    ]


@pytest.mark.slow
def test_a_text_only_llama_cpp_server_is_refused_then_marked(
    llama_cpp_server,  # noqa: F811
    tmp_path: Path,
    capsys,
) -> None:  # fmt: skip
    model = f"{llama_cpp_server.base_url}::smollm2?server=auto"
    run = tmp_path / "run"
    assert _run([*ROBOT, "-o", str(run), "--model", model, "--send-images", "auto"]) == 1
    line = _one_line(capsys.readouterr().err)  # the probe found the model blind: refused before ingest
    assert "intent describe_current_subtask must see frames" in line and f"model {model} is text-only" in line
    assert "did not see them" in line and "--text-only-evidence" in line
    assert not (run / "streams.jsonl").exists()
    before = len(llama_cpp_server.statuses())
    argv = [*ROBOT, "-o", str(run), "--model", model, "--send-images", "auto", "--text-only-evidence",
            "--export", "llamafactory"]  # fmt: skip
    code = _run(argv)
    _check_text_only(run, code, capsys.readouterr().err)
    asked = llama_cpp_server.statuses()[before:]
    # 20 frames as base64 would overflow its 2048-token context (an error status): none was sent
    assert asked and set(asked) == {200}, asked
