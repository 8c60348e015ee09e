"""The exports against the real trainers, each in its own venv (``make train-setup``: .venv-train with TRL;
``make verl-setup``: .venv-verl with verl 0.9.1), run as subprocesses: dataclaw never imports a trainer.
Skipped, with the reason, where a venv is absent; ``make test`` builds both."""

from __future__ import annotations

import json
import os
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dataclaw.cli.app import _run
from dataclaw.envcraft import archetypes
from dataclaw.envcraft.export import export_tasks
from dataclaw.envcraft.export.base import method_name
from envcraft.export.conftest import ENV, TRAIN_PY, VERL_PY

HERE = Path(__file__).resolve().parent


def probe(python: Path, script: str, *args: str, timeout: int = 1500) -> dict[str, Any]:
    proc = subprocess.run(
        [str(python), str(HERE / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TRL_EXPERIMENTAL_SILENCE": "1",
        },
    )
    lines = [x for x in proc.stdout.splitlines() if x.startswith("PROBE ")]
    assert proc.returncode == 0 and lines, (proc.stdout[-3000:], proc.stderr[-5000:])
    return json.loads(lines[-1][len("PROBE ") :])


def gguf() -> Path:
    from dataclaw.models.backends.local import find_gguf

    return find_gguf("smollm2-135m")


needs_trl = pytest.mark.skipif(
    not TRAIN_PY.is_file(),
    reason=f"no trainer venv at {TRAIN_PY}: `make train-setup` builds it (TRL, torch CPU)",
)
needs_verl = pytest.mark.skipif(
    not VERL_PY.is_file(), reason=f"no VERL venv at {VERL_PY}: `make verl-setup` builds it (verl 0.9.1)"
)


@needs_trl
@pytest.mark.timeout(1800)
def test_trl_builds_tool_schemas_renders_parses_and_trains_with_the_exported_class(
    tasks_file: Path, tool_tasks: list, tmp_path: Path
) -> None:
    out = export_tasks(tasks_file, "trl", tmp_path / "trl").out
    task = tool_tasks[0]
    found = probe(TRAIN_PY, "trl_probe.py", str(out), str(gguf()), task["id"])
    # transformers' get_json_schema on each method == the environment's own tool schema
    tools = archetypes.get(ENV).env_cls.tools
    assert set(found["schemas"]) == set(tools.names())
    for spec in tools:
        got = found["schemas"][spec.name]
        assert got["description"] == spec.description
        assert sorted(got["parameters"].get("required", [])) == sorted(
            p.name for p in spec.params if p.required
        )
        for p in spec.params:
            prop = got["parameters"]["properties"][p.name]
            assert prop["type"] == p.schema["type"] and prop.get("enum") == p.schema.get("enum")
            assert prop["description"] == " ".join(p.description.split())
            if "items" in p.schema:
                assert prop["items"] == p.schema["items"]
    # SmolLM2's own template drops tool calls; the one the recipe installs renders and parses them
    assert found["smollm2_template_supports_tools"] is False
    assert found["supports_tool_calling"] and found["prefix_preserving"]
    assert found["rendered_tools"] == sorted(tools.names())
    # the gold chain, written as the model would, parsed by TRL and dispatched as TRL does: 1.0
    assert found["gold_observations"] == len(task["gold_chain"]) and found["gold_reward"] == 1.0
    assert found["untouched_reward"] == 0.0
    # GRPOTrainer found reset/get_reward, took the tools, and ran a real step with a tiny random policy
    assert found["reward_funcs"] == ["TemporalSchedulingEnv"]
    assert found["trainer_tools"] == sorted(tools.names())
    (log,) = found["grpo_logs"]
    assert log["rewards/TemporalSchedulingEnv/mean"] == log["reward"]
    assert 0.0 <= log["reward"] <= 1.0 and "tools/call_frequency" in log


@needs_verl
@pytest.mark.timeout(1200)
def test_verl_loads_the_tools_and_runs_their_lifecycle_per_rollout(
    tasks_file: Path, tool_tasks: list, tmp_path: Path
) -> None:
    out = export_tasks(tasks_file, "verl", tmp_path / "verl").out
    found = probe(VERL_PY, "verl_probe.py", str(out))
    task = tool_tasks[0]
    tools = sorted(archetypes.get(ENV).env_cls.tools.names())
    assert found["tools"] == tools and found["all_base_tools"]
    assert found["gold_ok"] == ["ok"] * len(task["gold_chain"])
    assert found["gold_score"] == {"score": 1.0, "fraction": 1.0, "passed": 1.0}
    initial = pytest.approx(task["metadata"]["verifier_check"]["initial"])
    # the interleaved second rollout only read: its state is the task's S0, like a rollout with no call
    assert found["idle_score"] == {"score": 0.0, "fraction": initial, "passed": 0.0}
    assert found["no_call_score"] == {"score": 0.0, "fraction": initial, "passed": 0.0}
    assert found["live_instances"] == 0  # verl released every call's instance
    assert found["unknown_tool"].startswith("Unknown function 'no_such_tool'")
    assert found["bad_json"].startswith(f"Invalid JSON in arguments for '{tools[0]}'")
    assert (
        found["bad_args"]["status"] == "error"
        and "unknown parameter 'bogus'" in found["bad_args"]["error"]["message"]
    )
    assert "needs create_kwargs.task_id" in found["no_task_id"]
    assert method_name(task["gold_chain"][0]["tool"]) in tools


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


@needs_trl
@pytest.mark.slow
@pytest.mark.timeout(3600)  # ~7 min on 2 idle cores (GGUF conversion included), longer when shared
def test_train_grpo_runs_two_steps_on_cpu_and_writes_the_reward_curve(
    tasks_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    run = tmp_path / "run"
    args = ["train", "grpo", str(tasks_file), "--recipe", "envcraft", "-o", str(run), "--steps", "2"]
    code = _run([*args, "--train-python", str(TRAIN_PY), "--max-completion-length", "64"])
    output = capsys.readouterr()
    assert code == 0, output.out[-3000:] + output.err[-3000:]
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "reward" in r]
    assert [r["step"] for r in steps] == [1, 2]
    assert all(
        0.0 <= r["reward"] <= 1.0 and r["rewards/TemporalSchedulingEnv/mean"] == r["reward"] for r in steps
    )
    width, height = _png_size(run / "reward_curve.png")
    assert width > 300 and height > 200
    assert "reward per step" in output.out
    (line,) = [x for x in output.out.splitlines() if x.startswith('{"summary"')]
    summary = json.loads(line)["summary"]
    assert summary["activation_checkpointing"] is False  # GRPOConfig's default is on; the recipe turns it off
    assert summary["rewards"] == [r["reward"] for r in steps]
