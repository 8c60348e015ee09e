"""The worked examples of docs/extending.md, run as a user runs them: the example distribution in
``examples/plugins`` made visible to ``importlib.metadata`` (its package and a ``*.dist-info`` with the
entry points its pyproject.toml declares, on PYTHONPATH, as ``pip install`` would leave them), then the
``dataclaw`` console script in a subprocess. Each test checks what the example itself produced."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from dataclaw.sandbox import sandbox_available

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "plugins"
DATA = EXAMPLE / "data"
PACKAGE = "dataclaw_example_plugins"
BIN = Path(sys.executable).parent


def install(site: Path, groups: set[str] | None = None) -> Path:
    """The example distribution in ``site`` as pip installs it: the package, and a dist-info whose
    ``entry_points.txt`` holds the pyproject's entry points (only ``groups``, when given)."""
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    shutil.copytree(EXAMPLE / "src" / PACKAGE, site / PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    info = site / f"{PACKAGE}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n", encoding="utf-8"
    )
    sections = [
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in eps.items())
        for group, eps in project["entry-points"].items()
        if groups is None or group in groups
    ]
    (info / "entry_points.txt").write_text("\n".join(sections), encoding="utf-8")
    return site


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install(tmp_path_factory.mktemp("site-packages"))


def dataclaw(*args: str, site: Path | None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``dataclaw ARGS`` in the repository with ``site`` (None: no plugins) on PYTHONPATH, wide tables."""
    exe = shutil.which("dataclaw", path=str(BIN)) or shutil.which("dataclaw")
    assert exe, "the dataclaw console script is not installed"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DATACLAW_PLUGINS")}
    env["COLUMNS"] = "200"
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def summary(proc: subprocess.CompletedProcess[str]) -> dict:
    """The ``--json`` summary: the last line of stdout."""
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_doc_lists_every_entry_point_group_and_each_example_group() -> None:
    from dataclaw.core.registry import ENTRY_POINT_GROUPS

    doc = (REPO / "docs" / "extending.md").read_text(encoding="utf-8")
    listed = {line.split("`")[1] for line in doc.splitlines() if line.startswith("| `dataclaw.")}
    assert listed == set(ENTRY_POINT_GROUPS.values())
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for group, eps in project["entry-points"].items():
        for name, value in eps.items():
            assert f'{name} = "{value}"' in doc, f"docs/extending.md does not show the {group} entry point"


# ------------------------------------------------------------------------------------------------
# a stream reader: dataclaw.readers


def test_the_clip_list_reader_reads_one_stream_per_clip(site: Path, tmp_path: Path) -> None:
    clips = str(DATA / "demo.clips.json")
    plain = dataclaw("tailor", "ingest", clips, "-o", str(tmp_path / "plain"), "--json", site=None)
    assert plain.returncode == 1 and "no stream was read" in plain.stderr  # nothing made: exit 1, why named
    without = json.loads(plain.stdout.strip().splitlines()[-1])  # the summary is still printed
    assert without["streams"] == 0 and without["rejects"] == {"ingest:not_a_dataset": 1}

    run = tmp_path / "clips"
    out = summary(dataclaw("tailor", "ingest", clips, "-o", str(run), "--json", site=site))
    assert out["streams"] == 2 and out["rejects"] == {"ingest:length_mismatch": 1}
    assert out["candidates"]["dynamic_segment"] >= 2
    streams = {s["metadata"]["clip"]: s for s in jsonl(run / "streams.jsonl")}
    assert set(streams) == {"walk-in", "turn"}
    walk = streams["walk-in"]
    assert walk["reader"] == "clips" and walk["modality"] == "video" and walk["duration"] == 6.0
    assert walk["metadata"]["task"] == "A person walks into a bright room"
    camera = streams["turn"]["cameras"]["video"]
    assert (camera["frame_start"], camera["frame_end"]) == (120, 276)  # 5.0-11.5 s at 24 fps
    [rej] = jsonl(run / "rejects.jsonl")
    assert rej["message"] == "clip 'overrun': 10.0-20.0 s is outside the video's 0-11.75 s"

    shown = dataclaw("tailor", "inspect", str(run), site=site)
    assert shown.returncode == 0 and "stream:walk-in-" in shown.stdout and "length_mismatch" in shown.stdout


# ------------------------------------------------------------------------------------------------
# a miner: dataclaw.miners

VIDEOS = REPO / "examples" / "videos"


def test_the_shot_cut_miner_mines_the_frames_around_each_cut(site: Path, tmp_path: Path) -> None:
    def ingest(
        video: str, out: str, *args: str, site: Path | None = site
    ) -> subprocess.CompletedProcess[str]:
        return dataclaw("tailor", "ingest", str(VIDEOS / video), "-o", str(tmp_path / out), *args, site=site)

    unknown = ingest("dj_video1.mp4", "x", "--miners", "shot_cut", site=None)
    assert unknown.returncode == 1 and "unknown miner 'shot_cut'" in unknown.stderr

    out = summary(ingest("dj_video1.mp4", "cuts", "--json"))
    assert out["anchors"]["shot_boundary"] == 2
    assert out["candidates"] == {"dynamic_segment": 3, "keyframes": 2}  # the built-in's, and one per cut
    anchors = {a["id"]: a for a in jsonl(tmp_path / "cuts" / "anchors.jsonl")}
    cuts = [c for c in jsonl(tmp_path / "cuts" / "candidates.jsonl") if c["kind"] == "keyframes"]
    assert [anchors[c["anchor_ids"][0]]["payload"]["frame"] for c in cuts] == [144, 237]
    first = cuts[0]
    assert "/cand-cut-" in first["id"] and first["payload"]["cut_frame"] == 144
    assert (first["payload"]["before"], first["payload"]["after"]) == ([135, 141], [147, 153])
    assert first["frames"] == [135, 141, 147, 153] and first["span"]["start"] == 132
    assert first["why"] == "cut at 6.00 s (frame 144, score 59.1316): frames [135, 141] | [147, 153]"

    only = ("--miners", "shot_cut", "--json")
    fewer = summary(ingest("dj_video1.mp4", "fewer", *only, "--set", "shot_cut.min_score=50"))
    assert fewer["candidates"] == {"keyframes": 1}  # the cut at frame 237 scores 48.0
    bad = ingest("dj_video1.mp4", "bad", *only, "--set", "shot_cut.frames=0")
    assert bad.returncode == 1 and "shot_cut needs frames >= 1 and window_s > 0, got 0 and 0.5" in bad.stderr

    one_shot = summary(ingest("lf_demo4.mp4", "one-shot", *only))  # a video of one shot: no cut to mine
    assert one_shot["candidates"] == {} and one_shot["rejects"] == {"candidates:no_candidates": 1}
    [rej] = jsonl(tmp_path / "one-shot" / "rejects.jsonl")
    assert rej["message"] == (
        "miners shot_cut found nothing worth mining in 6 anchors "
        "(shot_cut: no shot_boundary anchors: the video is one shot)"
    )


# ------------------------------------------------------------------------------------------------
# a validator: dataclaw.validators, or --plugin

RUN_ARGS = [
    "tailor", "run", str(DATA / "demo.clips.json"), "--intent", str(DATA / "clip_prediction.yaml"),
    "--model", f"replay:{DATA / 'clip_answers.jsonl'}", "--send-images", "never", "--text-only-evidence",
    "--workers", "1",
]  # fmt: skip


def _check_hedge_rejected(run: Path, out: dict) -> None:
    assert out["counts"]["samples"] == 2 and out["rejects"]["validated:ungrounded_text"] == 1
    # the recording answers two clips word for word alike: the second is a duplicate of the run (issue 27)
    assert out["rejects"]["dedup:duplicate_exact"] == 1
    [rej] = [r for r in jsonl(run / "rejects.jsonl") if r["stage"] == "validated"]
    assert rej["message"] == "no_hedging: answer hedges ('i cannot') instead of saying what the frames show"
    assert [(f["validator"], f["span"]) for f in rej["detail"]["failures"]] == [
        ("no_hedging", "I cannot tell what happens next from these frame"),
        ("no_hedging", "It is unclear what the person is doing in the earlier"),
    ]
    answers = [s["output"]["answer"] for s in jsonl(run / "samples.jsonl")]
    assert len(answers) == 2 and not any("cannot" in a for a in answers)


def test_an_entry_point_validator_rejects_the_hedging_answer(site: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    _check_hedge_rejected(run, summary(dataclaw(*RUN_ARGS, "-o", str(run), "--json", site=site)))


def test_the_same_validator_as_a_plugin_module(tmp_path: Path) -> None:
    reader_only = install(tmp_path / "site", groups={"dataclaw.readers"})
    missing = dataclaw(*RUN_ARGS, "-o", str(tmp_path / "bare"), site=reader_only)
    assert missing.returncode == 1 and "unknown validator 'no_hedging'" in missing.stderr
    run = tmp_path / "run"
    args = [*RUN_ARGS, "-o", str(run), "--json", "--plugin", f"{PACKAGE}.checks"]
    _check_hedge_rejected(run, summary(dataclaw(*args, site=reader_only)))


# ------------------------------------------------------------------------------------------------
# an importer: dataclaw.importers


def test_the_checklist_importer_makes_claw_tasks(site: Path, tmp_path: Path) -> None:
    listed = dataclaw("tasks", "import", "--list", site=site)
    assert listed.returncode == 0 and "checklist" in listed.stdout

    run = tmp_path / "tasks"
    proc = dataclaw(
        "tasks", "import", "checklist", str(DATA / "office.checklist.yaml"), "-o", str(run), site=site
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "import checklist → tasks" in proc.stdout and "malformed=1" in proc.stdout
    assert "reject: [malformed] office.checklist.yaml#tidy_desk: no checks" in proc.stdout
    tasks = {t["id"]: t for t in jsonl(run / "tasks.jsonl")}
    assert set(tasks) == {"weekly_report", "todo_done"}
    report = tasks["weekly_report"]
    assert report["kind"] == "claw_workspace" and report["import"]["format"] == "checklist"
    assert "lambda: not os.path.exists('notes.txt')" in report["verifier"]
    assert tasks["todo_done"]["solution"] is None and "report.md" in report["solution"]

    auto = dataclaw("tasks", "import", "auto", str(DATA), "-o", str(tmp_path / "auto"), site=site)
    assert auto.returncode == 0 and "import checklist → tasks" in auto.stdout


@pytest.mark.skipif(not sandbox_available(), reason="needs the sandbox (claw scripts run in it)")
def test_the_imported_tasks_pass_the_code_audit(site: Path, tmp_path: Path) -> None:
    run = tmp_path / "tasks"
    dataclaw("tasks", "import", "checklist", str(DATA / "office.checklist.yaml"), "-o", str(run), site=site)
    audit = tmp_path / "audit"
    proc = dataclaw("tasks", "audit", str(run / "tasks.jsonl"), "-o", str(audit), "--strict", site=site)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "pass rate 2/2 = 100.0%" in proc.stdout
    reports = {r["id"]: r for r in jsonl(audit / "code_audit.jsonl")}
    assert reports["weekly_report"]["solved_score"] == 1.0 and reports["todo_done"]["untouched_score"] == 0.0
    assert all(r["passed"] for r in reports.values())


# ------------------------------------------------------------------------------------------------
# an executor: dataclaw.executors


def test_the_serial_executor_runs_the_stages_of_an_ingest(site: Path, tmp_path: Path) -> None:
    clips = str(DATA / "demo.clips.json")
    unknown = dataclaw(
        "tailor", "ingest", clips, "-o", str(tmp_path / "x"), "--executor", "serial", site=None
    )
    assert unknown.returncode == 1 and "unknown executor 'serial'" in unknown.stderr

    run = tmp_path / "serial"
    proc = dataclaw("tailor", "ingest", clips, "-o", str(run), "--executor", "serial", "--json", site=site)
    out = summary(proc)
    assert "serial: anchors: 2 records, 0 rejects" in proc.stderr
    assert "serial: candidates: 2 records, 0 rejects" in proc.stderr
    local = summary(dataclaw("tailor", "ingest", clips, "-o", str(tmp_path / "local"), "--json", site=site))
    assert {k: out[k] for k in ("streams", "anchors", "candidates", "rejects")} == {
        k: local[k] for k in ("streams", "anchors", "candidates", "rejects")
    }
    assert "serial:" not in dataclaw("tailor", "inspect", str(run), site=site).stderr


# ------------------------------------------------------------------------------------------------
# an archetype: dataclaw.archetypes


def test_the_inventory_ledger_archetype_is_listed_and_callable(site: Path, tmp_path: Path) -> None:
    assert "inventory_ledger" not in dataclaw("env", "list", site=None).stdout
    listed = dataclaw("env", "list", site=site)
    assert listed.returncode == 0 and "│ inventory_ledger " in listed.stdout
    assert "A stock room: items with a quantity per SKU" in listed.stdout

    contract = dataclaw("env", "contract", "inventory_ledger", site=site)
    assert contract.returncode == 0, contract.stdout[-3000:] + contract.stderr[-3000:]
    assert "workflow_scores_and_penalties: damaged_delivery=1.0" in contract.stdout
    assert "inventory_ledger: 9/9 contract checks passed" in contract.stdout

    poke = ["env", "call", "inventory_ledger", "adjust_stock", "--scenario", "monthly_count"]
    poke += [
        "--state-root",
        str(tmp_path / "poke"),
        "--arg",
        "sku=SKU-OAT",
        "--arg",
        "reason=count_correction",
    ]
    done = dataclaw(*poke, "--arg", "delta=-2", "--arg", "note=count: 38", site=site)
    assert done.returncode == 0 and json.loads(done.stdout)["data"]["item"]["quantity"] == 38
    refused = json.loads(dataclaw(*poke, "--arg", "delta=-50", "--arg", "note=x", site=site).stdout)
    assert (
        refused["error"]["message"]
        == "Invalid value for 'delta': SKU-OAT holds 38: -50 would leave -12, below zero"
    )

    out = tmp_path / "tasks"
    sampled = dataclaw("tasks", "sample", "-o", str(out), "--env", "inventory_ledger", "-n", "3", site=site)
    assert sampled.returncode == 0, sampled.stderr[-3000:]
    chains = jsonl(out / "chains.jsonl")
    assert len(chains) == 3 and all(c["envs"] == ["inventory_ledger"] for c in chains)
    tools = {step for c in chains for step in c["steps"]}
    assert tools <= {"list_stock", "get_item", "adjust_stock"} and "adjust_stock" in tools


def test_its_blueprint_is_what_synthesis_retrieves(site: Path) -> None:
    code = (
        "from dataclaw.envcraft.synth.retrieval import retrieve\n"
        "best = retrieve('Track the pantry stock: record each delivery and write off damaged items')[0]\n"
        "print(best.blueprint.name, best.blueprint.title, sorted(best.matched))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == (
        "inventory_ledger Reasoned Inventory Ledger ['delivery', 'pantry', 'stock', 'write-off']"
    )


@pytest.mark.skipif(not sandbox_available(), reason="needs the sandbox (the audit runs the package in it)")
def test_the_inventory_ledger_passes_the_audit(site: Path) -> None:
    missing = dataclaw("env", "audit", "inventory_ledger", site=None)
    assert missing.returncode == 1 and "neither a package folder nor an archetype" in missing.stderr
    audit = dataclaw("env", "audit", "inventory_ledger", site=site)
    assert audit.returncode == 0, audit.stdout[-3000:] + audit.stderr[-3000:]
    assert (
        "│ inventory_ledger │ PASS   │ 0 finding(s) │" in audit.stdout
        and "1/1 environments passed" in audit.stdout
    )
