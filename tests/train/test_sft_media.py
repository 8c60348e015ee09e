"""``dataclaw train sft`` on exports with images and videos made from a real video: a text-only model is
refused in one line (it would train on ``<image>`` as text), a vision-language model gets its images as
image blocks where the tokens stood, and the LLaMA-Factory config matches the model (template, media
columns, media folder)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from dataclaw.cli.app import _run
from dataclaw.core.errors import ConfigError
from dataclaw.core.ids import child_id
from dataclaw.core.store import RunStore
from dataclaw.tailor.export import export as tailor_export
from dataclaw.tailor.materialize import SAMPLES, make_item, materialize
from dataclaw.tailor.records import Route, Sample, Turn
from dataclaw.tailor.streams import Stream, open_source
from dataclaw.train.policy import profile_policy
from dataclaw.train.sft import check_can_see, prepare_sft, vision_messages
from dataclaw.train.sharegpt import read_sharegpt

REPO = Path(__file__).resolve().parents[2]
TRAIN_PY = Path(os.environ.get("DATACLAW_TRAIN_PYTHON", REPO / ".venv-train" / "bin" / "python"))
needs_trl = pytest.mark.skipif(not TRAIN_PY.is_file(), reason=f"no trainer venv at {TRAIN_PY}")


@pytest.fixture(scope="module")
def stream(shared_data: Path) -> Stream:
    return next(s for s in open_source(shared_data / "videos/lf_demo4.mp4") if isinstance(s, Stream))


def _sample(stream: Stream, key: str, output: dict, turns: list[tuple[str, str]]) -> Sample:
    cand = child_id(stream.id, "cand", key, label=key)
    return Sample(
        id=child_id(cand, "sample", key, label=key),
        intent="keyframe_qa",
        domain="embodied",
        stream_id=stream.id,
        candidate_id=cand,
        output=output,
        conversation=[Turn(role=r, content=c) for r, c in turns],  # type: ignore[arg-type]
        route=Route(model="replay:test", router="omni"),
    )


def _export(root: Path, stream: Stream, kinds: str) -> Path:
    """A llamafactory export of real materialised media: ``images`` (two stills), ``video`` (a clip) or
    ``text``."""
    run = root / f"run-{kinds}"
    if kinds == "images":
        s = _sample(
            stream,
            "frames",
            {"frames": [5, 60]},
            [("user", "First <image> then <image>: what changed?"), ("assistant", "The arm moved.")],
        )
        items = [make_item(s, stream, None, [{"name": "keyframes", "field": "frames"}])]
    elif kinds == "video":
        s = _sample(
            stream, "clip", {"clip": [0, 9]}, [("user", "<video>What happens?"), ("assistant", "A hand.")]
        )
        items = [make_item(s, stream, None, [{"name": "clip", "field": "clip", "role": "observation"}])]
    else:
        items = []
        with RunStore(run) as store:
            store.stage(SAMPLES).append(
                _sample(stream, "t", {}, [("user", "Hi"), ("assistant", "Hello")]).model_dump(mode="json")
            )
    if items:
        assert materialize(items, run, codec="h264").outputs == 1
    out = root / f"export-{kinds}"
    assert tailor_export(run, "llamafactory", out).samples == 1
    return out


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory, stream: Stream) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("exports")
    return {k: _export(root, stream, k) for k in ("images", "video", "text")}


def _vlm(root: Path, model_type: str, **extra: object) -> Path:
    """A checkpoint folder as far as the profile reads it: its config.json."""
    folder = root / model_type
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"model_type": model_type, **extra}))
    return folder


@pytest.mark.parametrize("kinds", ["images", "video"])
def test_text_only_model_on_a_multimodal_export_is_refused_in_one_line(
    exports: dict[str, Path], kinds: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "sft"
    assert _run(["train", "sft", str(exports[kinds]), "-o", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and len(err.splitlines()) == 1, err
    counted = "2 images" if kinds == "images" else "1 videos"
    assert "--model smollm2-135m (gguf, text-only) cannot see media" in err
    assert f"dataclaw.json (dataclaw) lists {counted}" in err
    assert "never trains on <image>/<video> as text" in err and "vision-language checkpoint" in err
    assert not out.exists()  # refused before anything is written, trainer venv or not


def test_a_vision_model_without_video_is_refused_on_videos(exports: dict[str, Path], tmp_path: Path) -> None:
    llava = _vlm(tmp_path, "llava")
    data = read_sharegpt(exports["video"])
    with pytest.raises(ConfigError, match=r"llava \(llava, images\) reads no videos and dataclaw.json"):
        check_can_see(profile_policy(str(llava), llava), data)
    check_can_see(profile_policy(str(llava), llava), read_sharegpt(exports["images"]))  # images: fine


def test_profiles_name_what_each_model_reads(tmp_path: Path) -> None:
    root = tmp_path
    assert (
        profile_policy("x", _vlm(root / "p27", "qwen2_5_vl")).describe() == "x (qwen2_5_vl, images, videos)"
    )
    assert profile_policy("x", _vlm(root / "p27", "qwen2_5_vl")).template == "qwen2_vl"
    odd = profile_policy("y", _vlm(root / "p27", "mystery_vlm", vision_config={}))
    assert odd.inputs == {"image"} and odd.template is None  # a vision model with no known template
    assert profile_policy("z", _vlm(root / "p27", "qwen3")).text_only


def test_image_tokens_become_image_blocks_where_they_stood() -> None:
    msgs = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "First <image> then <image>: what changed?"},
        {"role": "assistant", "content": "The arm moved."},
    ]
    assert vision_messages(msgs)[1]["content"] == [
        {"type": "text", "text": "First "},
        {"type": "image"},
        {"type": "text", "text": " then "},
        {"type": "image"},
        {"type": "text", "text": ": what changed?"},
    ]
    assert vision_messages(msgs)[2]["content"] == [{"type": "text", "text": "The arm moved."}]


def _lf(plan_config: Path) -> tuple[dict, dict]:
    config = yaml.safe_load(plan_config.read_text())
    info = json.loads((Path(config["dataset_dir"]) / "dataset_info.json").read_text())
    return config, info[config["dataset"]]


@needs_trl
def test_text_model_config_has_no_media_columns(exports: dict[str, Path], tmp_path: Path) -> None:
    plan = prepare_sft(exports["text"], tmp_path / "sft", python=TRAIN_PY, cache=tmp_path / "cache")
    assert plan.llamafactory_config is not None
    config, entry = _lf(plan.llamafactory_config)
    assert config["template"] == "qwen" and "media_dir" not in config
    # our exporter names images/videos columns; a text template must not be handed them
    assert json.loads((exports["text"] / "dataset_info.json").read_text())["dataclaw"]["columns"]["images"]
    assert set(entry["columns"]) == {"messages"} and entry["formatting"] == "sharegpt"
    assert Path(entry["file_name"]) == (exports["text"] / "dataclaw.json").resolve()
    assert "images" not in plan.data_file.read_text()


@needs_trl
def test_vision_model_trains_with_the_images_and_gets_its_template(
    exports: dict[str, Path], tmp_path: Path
) -> None:
    qwen = _vlm(tmp_path, "qwen2_vl")
    plan = prepare_sft(exports["images"], tmp_path / "sft", model=str(qwen), python=TRAIN_PY)
    (row,) = [json.loads(x) for x in plan.data_file.read_text().splitlines()]
    assert len(row["images"]) == 2 and all(Path(p).is_file() and p.endswith(".png") for p in row["images"])
    assert [b["type"] for b in row["messages"][0]["content"]] == ["text", "image", "text", "image", "text"]
    assert "<image>" not in json.dumps(row["messages"])  # never as text
    config, entry = _lf(plan.llamafactory_config)  # type: ignore[arg-type]
    assert config["template"] == "qwen2_vl" and config["media_dir"] == str(exports["images"].resolve())
    assert entry["columns"] == {"messages": "messages", "images": "images"}
    assert all(
        (exports["images"] / p).is_file()
        for p in json.loads(Path(entry["file_name"]).read_text())[0]["images"]
    )


@needs_trl
def test_videos_are_refused_for_trl_with_the_llamafactory_config_named(
    exports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    qwen = _vlm(tmp_path, "qwen2_vl")
    out = tmp_path / "sft"
    args = ["train", "sft", str(exports["video"]), "-o", str(out), "--model", str(qwen)]
    assert _run([*args, "--train-python", str(TRAIN_PY)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "TRL's SFTTrainer trains no videos" in err
    assert f"llamafactory-cli train {out / 'llamafactory_sft.yaml'}" in err
    config, entry = _lf(out / "llamafactory_sft.yaml")
    assert config["template"] == "qwen2_vl" and entry["columns"]["videos"] == "videos"
    assert not (out / "sft.jsonl").exists()


def test_no_trainer_python_is_needed_to_refuse(exports: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot see media"):
        prepare_sft(exports["images"], tmp_path / "o", python=Path(sys.executable))


COUNT_TOKENS = """
import json, sys
from PIL import Image
from transformers import AutoProcessor
proc = AutoProcessor.from_pretrained(sys.argv[1])
row = json.loads(open(sys.argv[2]).read().splitlines()[0])
ids = proc.apply_chat_template(
    row["messages"], tokenize=True, return_dict=True, images=[Image.open(p) for p in row["images"]]
)["input_ids"][0]
print(json.dumps([len(ids), sum(1 for i in ids if i == proc.tokenizer.convert_tokens_to_ids("<image>"))]))
"""


@needs_trl
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_train_sft_trains_a_vision_language_model_on_the_images(
    exports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Two real SFT steps of a tiny LLaVA (random weights, built here: no download) on the export's
    images: every step's tokens are the processor's sequence with the images expanded."""
    import subprocess

    from dataclaw.models.backends.local import find_gguf

    made = subprocess.run(
        [
            str(TRAIN_PY),
            str(Path(__file__).parent / "tiny_vlm.py"),
            str(find_gguf("smollm2-135m")),
            str(tmp_path / "vlm"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert made.returncode == 0, made.stderr[-2000:]
    per_image = json.loads(made.stdout.strip().splitlines()[-1])["tokens_per_image"]
    run = tmp_path / "sft"
    args = ["train", "sft", str(exports["images"]), "-o", str(run), "--model", str(tmp_path / "vlm")]
    code = _run([*args, "--steps", "2", "--train-python", str(TRAIN_PY)])
    output = capsys.readouterr()
    assert code == 0, output.out[-3000:] + output.err[-3000:]
    (line,) = [x for x in output.out.splitlines() if x.startswith('{"summary"')]
    summary = json.loads(line)["summary"]
    assert summary["images"] == 2 and summary["finite"] and len(summary["losses"]) == 2
    assert "read 1 conversations with 2 images" in output.out
    counted = subprocess.run(
        [str(TRAIN_PY), "-c", COUNT_TOKENS, str(tmp_path / "vlm"), str(run / "sft.jsonl")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert counted.returncode == 0, counted.stderr[-2000:]
    with_images, image_tokens = json.loads(counted.stdout.strip().splitlines()[-1])
    assert image_tokens == 2 * per_image  # the two images, each expanded to its patches
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines() if '"loss"' in x]
    assert [r["num_tokens"] for r in rows] == [with_images, 2 * with_images]  # batch 1, one conversation
    config, _ = _lf(run / "llamafactory_sft.yaml")
    assert config["template"] == "llava"
