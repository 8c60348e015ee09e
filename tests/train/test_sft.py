"""``dataclaw train sft``: a ShareGPT export made by our own LLaMA-Factory exporter, read as chat messages
and trained for two real TRL ``SFTTrainer`` steps in the trainer venv (``make train-setup``), plus the
reader on LLaMA-Factory's default ShareGPT shape and the refused inputs (no venv needed)."""

from __future__ import annotations

import json
import math
import os
import struct
import sys
from pathlib import Path

import pytest
import yaml

from dataclaw.cli.app import _run
from dataclaw.core.errors import ConfigError
from dataclaw.core.store import RunStore
from dataclaw.tailor.export import export as tailor_export
from dataclaw.tailor.materialize import SAMPLES
from dataclaw.tailor.records import Route, Sample, Turn
from dataclaw.train.sharegpt import read_sharegpt

REPO = Path(__file__).resolve().parents[2]
TRAIN_PY = Path(os.environ.get("DATACLAW_TRAIN_PYTHON", REPO / ".venv-train" / "bin" / "python"))

needs_trl = pytest.mark.skipif(
    not TRAIN_PY.is_file(),
    reason=f"no trainer venv at {TRAIN_PY}: `make train-setup` builds it (TRL, torch CPU)",
)

CHATS = [
    [
        ("system", "You describe robot logs."),
        ("user", "Why did the arm stop?"),
        ("assistant", "It hit a limit."),
    ],
    [("user", "Summarise: gripper opened, closed."), ("assistant", "The gripper cycled once.")],
    [
        ("user", "Hi"),
        ("assistant", "Hello! How can I help?"),
        ("user", "Count to 3."),
        ("assistant", "1, 2, 3"),
    ],
]


def _sample(n: int, turns: list[tuple[str, str]]) -> Sample:
    return Sample(
        id=f"s{n}",
        intent="keyframe_qa",
        domain="embodied",
        stream_id="stream-0",
        candidate_id=f"cand-{n}",
        output={},
        conversation=[Turn(role=r, content=c) for r, c in turns],  # type: ignore[arg-type]
        route=Route(model="replay:test", router="omni"),
    )


@pytest.fixture
def export_dir(tmp_path: Path) -> Path:
    """Text-only samples written to a run and exported by `tailor export -f llamafactory`."""
    run = tmp_path / "run"
    run.mkdir()
    with RunStore(run) as store:
        for n, turns in enumerate(CHATS):
            store.stage(SAMPLES).append(_sample(n, turns).model_dump(mode="json"))
    summary = tailor_export(run, "llamafactory", tmp_path / "export")
    assert summary.samples == len(CHATS) and summary.rejected == 0
    return tmp_path / "export"


def test_reads_our_export_as_chat_messages(export_dir: Path) -> None:
    data = read_sharegpt(export_dir)
    assert data.name == "dataclaw" and data.file == export_dir / "dataclaw.json"
    assert data.conversations == [[{"role": r, "content": c} for r, c in chat] for chat in CHATS]


def test_reads_llamafactory_default_sharegpt_and_keeps_media_placeholders(tmp_path: Path) -> None:
    # LLaMA-Factory's documented sharegpt shape: conversations of from/value, human/gpt, a system column
    records = [
        {
            "conversations": [
                {"from": "human", "value": "<image>What is on the table?"},
                {"from": "gpt", "value": "A red cup."},
            ],
            "system": "Answer briefly.",
            "images": ["frames/0001.png"],
        },
        {"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello"}]},
    ]
    (tmp_path / "demo.json").write_text(json.dumps(records))
    info = {"demo": {"file_name": "demo.json", "formatting": "sharegpt", "columns": {"system": "system"}}}
    (tmp_path / "dataset_info.json").write_text(json.dumps(info))
    data = read_sharegpt(tmp_path)
    assert data.conversations[0] == [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "<image>What is on the table?"},  # text-only: the placeholder stays
        {"role": "assistant", "content": "A red cup."},
    ]
    assert data.conversations[1][0] == {"role": "user", "content": "Hi"}
    assert data.media == {"images": 1, "videos": 0}


def _errors(args: list[str], capsys: pytest.CaptureFixture) -> str:
    assert _run(args) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and len(err.splitlines()) == 1, err  # one clear line, no traceback
    return err


def test_refuses_a_folder_that_is_not_a_sharegpt_export(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    err = _errors(["train", "sft", str(tmp_path), "-o", str(tmp_path / "out")], capsys)
    assert "is not a ShareGPT export: it has no dataset_info.json" in err
    assert "tailor export RUN -f llamafactory" in err
    err = _errors(["train", "sft", str(tmp_path / "missing"), "-o", str(tmp_path / "out")], capsys)
    assert "no such folder" in err
    # a dataset_info.json with another formatting, and turns that are not ShareGPT
    (tmp_path / "dataset_info.json").write_text(json.dumps({"a": {"file_name": "a.json"}}))
    assert 'no dataset with "formatting": "sharegpt"' in _errors(["train", "sft", str(tmp_path)], capsys)
    (tmp_path / "dataset_info.json").write_text(
        json.dumps({"a": {"file_name": "a.json", "formatting": "sharegpt"}})
    )
    (tmp_path / "a.json").write_text(json.dumps([{"instruction": "x", "output": "y"}]))
    assert "a.json sample 1: no 'conversations' list" in _errors(["train", "sft", str(tmp_path)], capsys)
    (tmp_path / "a.json").write_text(
        json.dumps(
            [{"conversations": [{"from": "human", "value": "x"}, {"from": "function_call", "value": "{}"}]}]
        )
    )
    assert "role 'function_call' is not" in _errors(["train", "sft", str(tmp_path)], capsys)
    assert not (tmp_path / "out").exists()


def test_refuses_an_empty_export(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run = tmp_path / "run"
    run.mkdir()
    with RunStore(run) as store:  # one sample, and it is rejected by the exporter (turns out of order)
        store.stage(SAMPLES).append(
            _sample(0, [("assistant", "Hi"), ("user", "Hello")]).model_dump(mode="json")
        )
    assert tailor_export(run, "llamafactory", tmp_path / "export").samples == 0
    err = _errors(["train", "sft", str(tmp_path / "export"), "-o", str(tmp_path / "out")], capsys)
    assert "dataclaw.json holds no samples: nothing to train on" in err
    with pytest.raises(ConfigError, match="holds no samples"):
        read_sharegpt(tmp_path / "export")


def test_refuses_a_missing_trainer_venv(
    export_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    nowhere = tmp_path / "no-venv" / "bin" / "python"
    err = _errors(
        ["train", "sft", str(export_dir), "-o", str(tmp_path / "out"), "--train-python", str(nowhere)], capsys
    )
    assert f"no trainer Python at {nowhere} (--train-python)" in err and "make train-setup" in err
    # a Python without the trainer stack (dataclaw's own venv has no trl) is named with what it lacks
    args = ["train", "sft", str(export_dir), "-o", str(tmp_path / "out"), "--train-python", sys.executable]
    assert "lacks trl" in _errors(args, capsys)
    assert not (tmp_path / "out").exists()


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


@needs_trl
@pytest.mark.slow
@pytest.mark.timeout(1800)  # 12-30 s on 2 cores with the converted checkpoint cached, +1.5 min without
def test_train_sft_runs_two_steps_on_cpu_and_writes_the_loss_curve(
    export_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    run = tmp_path / "sft"
    args = ["train", "sft", str(export_dir), "-o", str(run), "--steps", "2", "--max-length", "128"]
    code = _run([*args, "--train-python", str(TRAIN_PY)])
    output = capsys.readouterr()
    assert code == 0, output.out[-3000:] + output.err[-3000:]
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "loss" in r]
    assert [r["step"] for r in steps] == [1, 2]
    assert all(math.isfinite(r["loss"]) and r["loss"] > 0 for r in steps)
    assert all(r["num_tokens"] > 0 for r in steps)  # real tokens went through the model
    width, height = _png_size(run / "loss_curve.png")
    assert width > 300 and height > 200
    (line,) = [x for x in output.out.splitlines() if x.startswith('{"summary"')]
    summary = json.loads(line)["summary"]
    assert summary["losses"] == [r["loss"] for r in steps] and summary["samples"] == len(CHATS)
    assert summary["activation_checkpointing"] is False  # SFTConfig's default is on; the recipe turns it off
    # the data the trainer read is our export's conversations, and LLaMA-Factory's config points at it
    fed = [json.loads(x)["messages"] for x in (run / "sft.jsonl").read_text().splitlines()]
    assert fed == read_sharegpt(export_dir).conversations
    config = yaml.safe_load((run / "llamafactory_sft.yaml").read_text())
    assert (
        config["dataset_dir"] == str((run / "llamafactory_data").resolve())
        and config["dataset"] == "dataclaw"
    )
    entry = json.loads((run / "llamafactory_data" / "dataset_info.json").read_text())["dataclaw"]
    assert entry["file_name"] == str((export_dir / "dataclaw.json").resolve())  # the export itself
    assert config["template"] == "qwen" and set(entry["columns"]) == {"messages"}  # text-only: no media
    assert config["model_name_or_path"] == summary["checkpoint"] and config["stage"] == "sft"
    assert config["learning_rate"] == 2e-5 and config["max_steps"] == 2 and config["cutoff_len"] == 128
    assert f"llamafactory-cli train {run / 'llamafactory_sft.yaml'}" in output.out


def test_recipe_argv_names_each_option_once_with_absolute_paths(tmp_path: Path, monkeypatch) -> None:
    from dataclaw.train.trainer import recipe_argv

    monkeypatch.chdir(tmp_path)
    argv = recipe_argv(Path("py"), Path("r.py"), data=Path("d.jsonl"), max_length=256, learning_rate=2e-5)
    data = str(tmp_path / "d.jsonl")
    assert argv == ["py", "r.py", "--data", data, "--max-length", "256", "--learning-rate", "2e-05"]


@needs_trl
def test_prepare_sft_writes_the_chat_data_and_the_llamafactory_config(
    export_dir: Path, tmp_path: Path
) -> None:
    """What `train sft` trains on, without training: the export's conversations as chat messages, the
    LLaMA-Factory config for the same export, and the recipe's command line pointing at both."""
    from dataclaw.train.sft import prepare_sft
    from dataclaw.train.trainer import SFT_RECIPE

    out = tmp_path / "sft"
    plan = prepare_sft(export_dir, out, steps=3, max_length=64, python=TRAIN_PY, cache=tmp_path / "cache")
    rows = [json.loads(line) for line in plan.data_file.read_text(encoding="utf-8").splitlines()]
    assert [[(m["role"], m["content"]) for m in row["messages"]] for row in rows] == [list(c) for c in CHATS]
    assert plan.media == 0 and plan.python == TRAIN_PY
    config = yaml.safe_load(plan.llamafactory_config.read_text(encoding="utf-8"))
    assert config["max_steps"] == 3 and config["cutoff_len"] == 64
    assert plan.argv[:2] == [str(TRAIN_PY), str(SFT_RECIPE)]
    assert plan.argv[plan.argv.index("--data") + 1] == str(plan.data_file.resolve())
    assert plan.argv[plan.argv.index("--steps") + 1] == "3"
