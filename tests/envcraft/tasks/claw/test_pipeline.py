"""The claw-task run composition: what it refuses before any model call."""

from __future__ import annotations

from pathlib import Path

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.envcraft.tasks.claw.pipeline import claw_synth, read_chains


def test_chains_must_be_a_jsonl_file(tmp_path: Path):
    with pytest.raises(ConfigError, match="is not a file"):
        claw_synth(tmp_path / "none.jsonl", tmp_path / "run", "replay:none")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1}\nnot json\n')
    with pytest.raises(ConfigError, match="not JSONL"):
        read_chains(bad)
    good = tmp_path / "good.jsonl"
    good.write_text('{"id": 1}\n\n{"id": 2}\n{"id": 3}\n')
    assert read_chains(good, limit=2) == [{"id": 1}, {"id": 2}]
    assert not (tmp_path / "run").exists()  # refused before the run directory was made
