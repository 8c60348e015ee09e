"""Every figure ``tasks synth`` prints agrees with its run directory: the pipeline table's raw, kept, pass
rate and reject reasons per stage, the end-to-end caption, and the manifest's counts, ``last_run`` and
model usage, each recounted here from the JSONL files and the model server's own request count."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from dataclaw.cli import _summary
from dataclaw.cli.app import _run
from dataclaw.core.store import REJECTS, RunStore
from support.openai_server import OpenAIServer, ReceivedRequest, Reply

pytestmark = pytest.mark.slow  # ~35 s on 2 cores: 16 chains grounded and worded


def _rows(out: str) -> tuple[dict[str, list[str]], str]:
    """The printed ``tasks pipeline`` table: stage → [raw, kept, pass rate, reasons], and its caption."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("┃ stage"))
    rows, caption = {}, ""
    for i, line in enumerate(lines[start + 1 :], start + 1):
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip("│").split("│")]
            rows[cells[0]] = cells[1:]
        elif line.startswith("└"):
            caption = lines[i + 1].strip()
            break
    return rows, caption


def test_every_printed_figure_of_tasks_synth_is_what_its_files_hold(
    tmp_path: Path,
    task_text_writer: Callable[[ReceivedRequest], Reply],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(_summary.console, "width", 250)
    run = tmp_path / "run"
    sample = ["tasks", "sample", "--out", str(run), "-n", "8", "--seed", "3", "--env", "temporal_scheduling"]
    assert _run([*sample, "--env", "state_machine"]) == 0
    capsys.readouterr()
    asked = 0

    def writer(req: ReceivedRequest) -> Reply:  # every third text leaves the user's values out
        nonlocal asked
        asked += 1
        if asked % 3 == 0:
            return Reply.json({"message": "Please sort out my things for this week, thank you."})
        return task_text_writer(req)

    with OpenAIServer(responder=writer) as server:
        model = f"{server.base_url}::t"
        assert _run(["tasks", "synth", "--run", str(run), "--model", model, "--strict-text"]) == 0
        calls = server.request_count
    out = capsys.readouterr().out
    store = RunStore(run)
    chains = list(store.records("chains"))
    grounded = list(store.records("grounded"))
    tasks = list(store.records("tasks"))
    reasons = {s: Counter(r["reason"] for r in store.rejects(s)) for s in ("grounded", "tasks")}

    rows, caption = _rows(out)
    assert set(rows) == {"grounded", "tasks"}
    for stage, raw, kept in (("grounded", chains, grounded), ("tasks", grounded, tasks)):
        shown_raw, shown_kept, rate, why = rows[stage]
        assert (int(shown_raw), int(shown_kept)) == (len(raw), len(kept)), stage
        assert rate == f"{len(kept) / len(raw):.1%}"
        assert Counter({k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", why)}) == reasons[stage], stage
        assert len(raw) - len(kept) == sum(reasons[stage].values()), f"{stage}: every loss has a reason"
    assert caption.startswith(f"end to end {len(tasks)}/{len(chains)} = {len(tasks) / len(chains):.1%}")
    assert sum(reasons["tasks"].values()) >= 1, (
        f"rejects exist, so the reason checks mean something {reasons}"
    )

    manifest = store.manifest()
    files = {p.stem: len(list(store.records(p.stem))) for p in run.glob("*.jsonl") if p.stem != REJECTS}
    assert {k: v for k, v in manifest["counts"].items() if k != REJECTS} == files
    assert manifest["counts"][REJECTS] == len(store.rejects())
    last = manifest["last_run"]
    assert (last["grounded"]["inputs"], last["grounded"]["outputs"]) == (len(chains), len(grounded))
    assert (last["tasks"]["inputs"], last["tasks"]["outputs"]) == (len(grounded), len(tasks))
    assert last["tasks"]["reasons"] == dict(reasons["tasks"])
    usage = manifest["models"]["usage"]["by_model"][model]
    assert usage["calls"] == calls and usage["cache_hits"] == 0 and usage["prompt_tokens"] > 0
