"""Every figure ``tailor run`` prints agrees with the run directory: the stage table (records per stage
file, rejects per stage and reason, no ``rejects`` row posing as a stage), the usage and request lines per
model, the concurrency note, the export line, and the manifest's counts, ``last_run`` and usage: each is
recounted here from the JSONL files (and the server's own request count), so any printed number that
drifts from the files fails."""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: makes `support` importable

from dataclaw.cli.app import _run
from dataclaw.core.store import REJECTS, RunStore
from support.openai_server import OpenAIServer, Reply

pytestmark = pytest.mark.slow


def _props(body: dict[str, Any]) -> dict[str, Any] | None:
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    return schema.get("properties")


class Annotator:
    """Answers the endpoint probe, writes one valid video_generation_segment answer per candidate, and an
    empty object every third request (a failed answer: rejected, its tokens still spent)."""

    def __init__(self) -> None:
        self.n = 0
        self.prompt_tokens = 0  # what the server counted for the pipeline's requests

    def __call__(self, req: Any) -> Reply:
        props = _props(req.body or {})
        if props is None:
            return Reply.text("OK")
        if "probe" in props:
            return Reply.json({"probe": 7})
        self.n += 1
        if self.n % 3 == 0:
            return Reply.json({}, prompt_tokens=100 + self.n, completion_tokens=2)
        seg = props["segment"]["properties"]
        lo, hi = seg["start"]["minimum"], seg["end"]["maximum"]
        frames = [f for f in props["key_frames"]["items"]["enum"] if lo <= f <= hi]
        return Reply.json(
            {
                "segment": {"start": lo, "end": hi},
                "prompt": f"A person crosses a bright room, take {self.n}, while the camera follows them.",
                "motion_plan": ["the person walks in", f"the person turns to the camera ({self.n})"],
                "camera_motion": "tracking",
                "key_frames": frames[:3],
            },
            prompt_tokens=100 + self.n,
            completion_tokens=40,
        )


def _table(out: str) -> tuple[dict[str, tuple[str, str]], str]:
    """Rows (stage → records, rejects) of the printed stage table, and its caption line."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("┃ stage"))
    rows: dict[str, tuple[str, str]] = {}
    caption = ""
    for line in lines[start + 1 :]:
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip("│").split("│")]
            rows[cells[0]] = (cells[1], cells[2])
        elif line.startswith("└"):
            caption = lines[lines.index(line, start) + 1].strip()
            break
    return rows, caption


def test_every_printed_figure_of_a_tailor_run_is_what_its_files_hold(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DATACLAW_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "300")
    run = tmp_path / "run"
    annotator = Annotator()
    with OpenAIServer(responder=annotator) as server:
        model = f"{server.base_url}::vlm"
        videos = [str(shared_data / f"videos/dj_video{i}.mp4") for i in (1, 2, 3)]
        argv = [
            "tailor", "run", *videos, "--out", str(run),
            "--intent", "video_generation_segment", "--model", model, "--extractors", "shots,motion",
            "--workers", "1", "--concurrency", "2", "--export", "jsonl", "--text-only-evidence",
        ]  # fmt: skip
        assert _run(argv) == 0
        out = capsys.readouterr().out
        pipeline_calls = annotator.n
        manifest = RunStore(run).manifest()  # as this run left it (the rerun below writes its own last_run)
        assert _run([*argv, "--json"]) == 0  # a rerun: everything resumed, no call made
        again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert annotator.n == pipeline_calls
    store = RunStore(run)
    rejects = store.rejects()
    by_stage: dict[str, Counter[str]] = {}
    for r in rejects:
        by_stage.setdefault(r["stage"], Counter())[r["reason"]] += 1
    files = {p.stem: len(list(store.records(p.stem))) for p in run.glob("*.jsonl") if p.stem != REJECTS}

    # the stage table: one row per stage file with its records; rejects by reason; no "rejects" stage
    assert out.lstrip().startswith("tailor run")
    rows, caption = _table(out)
    assert REJECTS not in rows, "rejects.jsonl is the rejects column, not a stage"
    assert {name: int(n) for name, (n, _) in rows.items() if n != "-"} == files
    for name, (_, reasons) in rows.items():
        shown = Counter({k: int(v) for k, v in re.findall(r"(\w+) (\d+)", reasons)})
        assert shown == by_stage.get(name, Counter()), name
    assert {n for n, (c, _) in rows.items() if c == "-"} == set(by_stage) - set(files)
    assert caption == f"{len(rejects)} rejects (rejects.jsonl)"
    assert rejects, "the run has rejects (every third answer is empty), so the check above means something"

    # model usage and requests: the lines, the manifest and what the server saw agree
    usage = manifest["models"]["usage"]["by_model"][model]
    sent = manifest["models"]["requests"]["by_model"][model]
    assert usage["calls"] == sent["started"] == sent["answered"] == pipeline_calls
    responses = list(store.records("responses"))
    assert usage["prompt_tokens"] == sum(r["usage"]["prompt_tokens"] for r in responses)
    assert usage["prompt_tokens"] == sum(100 + i for i in range(1, pipeline_calls + 1))
    assert usage["failed"] == sum(1 for r in responses for g in r["generations"] if g["error"])
    line = next(x for x in out.splitlines() if x.startswith(model[:40]))
    calls, cached, failed, _errors, tok_in, tok_out = (int(x) for x in line[40:].split()[:6])
    want = ("calls", "cache_hits", "failed", "prompt_tokens", "completion_tokens")
    assert (calls, cached, failed, tok_in, tok_out) == tuple(usage[k] for k in want)
    assert f"requests to {model}: {sent['started']} sent, {sent['answered']} answered, 0 failed" in out
    note = next(x for x in out.splitlines() if "in flight" in x)
    assert "--concurrency 2" in note and "of 16 configured" not in note

    # the manifest: counts and last_run are the files' and this run's
    assert {k: v for k, v in manifest["counts"].items() if k != REJECTS} == files
    assert manifest["counts"][REJECTS] == len(rejects)
    assert manifest["last_run"]["responses"]["outputs"] == files["responses"]
    assert pipeline_calls == sum(len(r["generations"]) for r in responses), "re-asks are calls too"
    assert manifest["last_run"]["validated"]["rejects"] == sum(by_stage.get("validated", Counter()).values())
    exported = (run / "export" / "jsonl" / "samples.jsonl").read_text().splitlines()
    assert f"exported {len(exported)} samples → " in out and len(exported) == files["samples"]

    # the --json summary of the rerun (all resumed) says the same, and its last_run says it made nothing
    assert RunStore(run).manifest()["last_run"]["responses"]["skipped"] == files["responses"]
    assert {k: v for k, v in again["counts"].items() if k != REJECTS} == files
    assert sum(again["rejects"].values()) == len(RunStore(run).rejects()) == len(rejects)
