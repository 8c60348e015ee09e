"""Task sets for the export tests: real sampled chains, grounded by the task pipeline (S0 with distractors,
a proven verifier) and made into Task records by its own ``task_record``; only the user text is written
here (no model), the way the synth stage's model would phrase it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from dataclaw.envcraft import archetypes
from dataclaw.envcraft.graph import ChainSampler, build_env_graph, build_tool_graph
from dataclaw.envcraft.tasks import GroundStage, chain_record
from dataclaw.envcraft.tasks.tool.stages import task_record

REPO = Path(__file__).resolve().parents[3]
ENV = "temporal_scheduling"
TRAIN_PY = Path(os.environ.get("DATACLAW_TRAIN_PYTHON", REPO / ".venv-train" / "bin" / "python"))
VERL_PY = Path(os.environ.get("DATACLAW_VERL_PYTHON", REPO / ".venv-verl" / "bin" / "python"))


def synth(envs: list[str], n: int, *, cross: float = 0.0, seed: int = 3) -> list[dict[str, Any]]:
    graphs = [build_tool_graph(archetypes.get(e)) for e in envs]
    sampler = ChainSampler(graphs, build_env_graph(graphs))
    stage = GroundStage()
    out: list[dict[str, Any]] = []
    for chain in sampler.sample(12 * n, seed=seed, cross_env_fraction=cross, min_len=2, max_len=4):
        if cross and len(chain.envs) < 2:
            continue
        grounded = stage.process(chain_record(chain))
        if not isinstance(grounded, list):
            continue
        g = grounded[0]
        steps = [f"call {s['tool']} with {json.dumps(s['params'])}" for s in g["steps"]]
        text = {
            "instruction": "Hi! Please " + "; then ".join(steps) + ". Thanks.",
            "user_turns": [f"Please {s}." for s in steps],
            "user": [],
            "derived": [],
        }
        persona = {"id": "ops-lead", "description": "an operations lead", "similarity": 1.0}
        out.append(task_record(g, persona, text, "scripted"))
        if len(out) == n:
            return out
    pytest.fail(f"only {len(out)} of {n} chains of {envs} grounded")


def write(tasks: list[dict[str, Any]], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


@pytest.fixture(scope="session")
def tool_tasks() -> list[dict[str, Any]]:
    """Four grounded tasks of one environment."""
    return synth([ENV], 4)


@pytest.fixture(scope="session")
def cross_tasks() -> list[dict[str, Any]]:
    """Two cross-environment tasks (``a+b`` groups; not necessarily the same group)."""
    return synth(archetypes.names(), 2, cross=1.0, seed=5)


@pytest.fixture
def tasks_file(tool_tasks: list[dict[str, Any]], tmp_path: Path) -> Path:
    return write(tool_tasks, tmp_path / "run" / "tasks.jsonl")


def copy_export(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest
