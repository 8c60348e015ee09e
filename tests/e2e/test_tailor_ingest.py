"""`dataclaw tailor ingest` / `inspect` as a user runs them: real samples, a bad file, a rerun."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def dataclaw(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("dataclaw", path=str(BIN)) or shutil.which("dataclaw")
    assert exe, "console script dataclaw is not installed"
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_ingest_then_inspect_then_resume(tmp_path: Path, shared_data: Path) -> None:
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    run = tmp_path / "run"
    args = [
        "tailor", "ingest", str(shared_data / "opencua" / "cot_example"), str(shared_data / "lerobot_g1"),
        str(empty), "--out", str(run), "--extractors", "gui,ocr,proprio", "--ocr-max-images", "3",
        "--keyframes", "12", "--json",
    ]  # fmt: skip
    res = dataclaw(*args)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert summary["streams"] == 4
    # one fault window per grasp: the three episodes close the right hand 1, 2 and 1 times (proprio anchors)
    assert summary["candidates"] == {"fault_window": 4, "gui_task": 1, "keyframes": 3}
    assert summary["anchors"]["hand_close"] == 4
    assert summary["rejects"]["ingest:empty_video"] == 1
    assert summary["anchors"]["ocr_text"] > 10
    keyframes = [
        json.loads(x) for x in (run / "candidates.jsonl").read_text().splitlines() if "keyframes" in x
    ]
    assert all(len(c["frames"]) == 12 for c in keyframes)  # the option reached the miner

    res = dataclaw("tailor", "inspect", str(run))
    assert res.returncode == 0, res.stderr
    for text in ("gui_task", "fault_window", "empty_video", "rejects", "trajectory", "robot"):
        assert text in res.stdout
    assert "why" in res.stdout and "candidates (first" in res.stdout  # candidates shown with their reason
    res = dataclaw("tailor", "inspect", str(run), "--json")
    per_stream = json.loads(res.stdout)["per_stream"]
    assert {row["modality"] for row in per_stream} == {"robot", "trajectory"}

    again = dataclaw(*args)
    assert again.returncode == 0, again.stderr
    resumed = json.loads(again.stdout.strip().splitlines()[-1])
    assert resumed["candidates"] == summary["candidates"]
    assert resumed["stages"]["anchors"]["processed"] == 0 and resumed["stages"]["anchors"]["skipped"] == 4


def test_bad_arguments_are_one_line_errors(tmp_path: Path, shared_data: Path) -> None:
    res = dataclaw(
        "tailor", "ingest", str(shared_data / "videos"), "--out", str(tmp_path / "r"), "--extractors", "nope"
    )
    assert res.returncode == 1
    assert "unknown anchor extractor 'nope'" in res.stderr and "Traceback" not in res.stderr
    res = dataclaw("tailor", "ingest", "--out", str(tmp_path / "r"))
    assert res.returncode == 2  # usage error: no inputs
    res = dataclaw("tailor", "inspect", str(tmp_path / "nothing-here"))
    assert res.returncode == 1 and "not a Tailor run directory" in res.stderr


def test_quickstart_ingest_part(tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The quickstart's 'ingest' part ingests whatever examples a reader recognises (here: one video)."""
    from dataclaw.cli import quickstart
    from dataclaw.core.errors import ConfigError

    examples = tmp_path / "examples"
    (examples / "videos").mkdir(parents=True)
    shutil.copy(shared_data / "videos" / "dj_video1.mp4", examples / "videos")
    (examples / "README.md").write_text("not an input")
    monkeypatch.setattr(quickstart, "EXAMPLES", examples)
    assert "ingest" in [name for name, _ in quickstart.PARTS]
    summary = quickstart._ingest_part(tmp_path / "out", "unused")
    assert summary["inputs"] == "videos" and summary["streams"] == 1 and summary["rejects"] == 0
    assert summary["candidates"] == "dynamic_segment 3"
    assert (tmp_path / "out" / "candidates.jsonl").is_file()
    monkeypatch.setattr(quickstart, "EXAMPLES", tmp_path / "empty")
    with pytest.raises(ConfigError, match="no bundled Tailor examples"):
        quickstart._ingest_part(tmp_path / "out2", "unused")


def _children() -> dict[int, int]:
    """pid → parent pid of every live process."""
    out = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] not in ("Z", "X"):
            out[int(stat.parent.name)] = int(fields[1])
    return out


def _descendants(pid: int) -> dict[int, str]:
    """Live descendants of ``pid`` with their command names."""
    parents = _children()
    found: dict[int, str] = {}
    frontier = [pid]
    while frontier:
        p = frontier.pop()
        for child, parent in parents.items():
            if parent == p and child not in found:
                try:
                    found[child] = Path(f"/proc/{child}/comm").read_text().strip()
                except OSError:
                    continue
                frontier.append(child)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGKILL"])
def test_a_killed_ingest_leaves_no_worker_tesseract_or_temp_folder(tmp_path: Path, sig: str) -> None:
    import os
    import signal
    import time

    examples = Path(__file__).resolve().parents[2] / "examples"
    run = tmp_path / "run"
    exe = shutil.which("dataclaw", path=str(BIN)) or "dataclaw"
    args = [
        exe, "tailor", "ingest", str(examples / "opencua_recording"), str(examples / "lectures"),
        str(examples / "videos"), "--out", str(run), "--extractors", "ocr", "--workers", "2",
    ]  # fmt: skip
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen: dict[int, str] = {}
    deadline = time.time() + 120
    while time.time() < deadline and "tesseract" not in seen.values() and proc.poll() is None:
        seen.update(_descendants(proc.pid))
        time.sleep(0.05)
    assert "tesseract" in seen.values(), f"tesseract never ran: {proc.stderr.read() if proc.poll() else seen}"
    temp = [p for p in (run / "_tmp").rglob("*")]
    assert temp, "OCR pages are written under the run's scratch folder"
    proc.send_signal(getattr(signal, sig))
    proc.wait(60)
    deadline = time.time() + 10
    while time.time() < deadline and any(p in _children() for p in seen):
        time.sleep(0.1)
    survivors = {p: seen[p] for p in seen if p in _children()}
    for p in survivors:
        os.kill(p, signal.SIGKILL)
    assert not survivors, f"left behind by a {sig}ed ingest: {survivors}"
    assert not (run / "_tmp").exists(), f"temp files left: {list((run / '_tmp').rglob('*'))}"
    if sig == "SIGTERM":
        assert proc.returncode == 143 and len(proc.stderr.read().strip().splitlines()) == 1
    res = dataclaw("tailor", "ingest", *args[3:6], "--out", str(run), "--extractors", "ocr", "--json")
    assert res.returncode == 0, res.stderr  # and the run resumes
    assert json.loads(res.stdout.strip().splitlines()[-1])["anchors"]["ocr_text"] > 100
