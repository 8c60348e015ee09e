"""The tool-task run composition as functions: sample chains into a run directory, then ground them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.core.store import RunStore
from dataclaw.envcraft.tasks.tool.pipeline import sample_chains, synth_tasks, tool_graphs


def test_tool_graphs_default_to_every_archetype_and_record_no_module_for_them():
    from dataclaw.envcraft import archetypes

    modules: dict[str, str] = {}
    graphs = tool_graphs([], [], modules)
    assert [g.env for g in graphs] == archetypes.names() and modules == {}


def test_sampling_is_seeded_resumable_and_counts_the_shortfall(tmp_path: Path):
    run = tmp_path / "run"
    done = sample_chains(run, envs=["temporal_scheduling"], n=5, seed=3, max_len=4)
    assert 0 < len(done.chains) <= 5 and done.added == len(done.chains)
    assert done.stats and RunStore(run).manifest()["chains"]["seed"] == 3
    stage, raw, kept, reasons = done.stage_count
    assert (stage, raw, kept) == ("chains", 5, len(done.chains))
    assert reasons == ({"duplicate_or_no_write_end": 5 - kept} if kept < 5 else {})
    again = sample_chains(run, envs=["temporal_scheduling"], n=5, seed=3, max_len=4)
    assert again.added == 0 and [c.to_dict() for c in again.chains] == [c.to_dict() for c in done.chains]
    lines = (run / "chains.jsonl").read_text().splitlines()
    assert all(json.loads(x)["envs"] == ["temporal_scheduling"] for x in lines)


def test_bad_requests_fail_before_any_work(tmp_path: Path):
    with pytest.raises(ConfigError, match="-n must be at least 1"):
        sample_chains(tmp_path / "run", n=0)
    with pytest.raises(ConfigError, match=r"has no chains\.jsonl"):
        synth_tasks(tmp_path / "empty")
