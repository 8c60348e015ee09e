"""Exporters on a real materialised run (frames of a real H.264 video): LLaMA-Factory ShareGPT JSON loads
with `datasets` and its media tokens match its media lists, the HF parquet loads with Image columns and
clip bytes whose decoded pixels are the source frames, the JSONL export is normalised, and bad samples are
left out with reasons."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import av
import datasets
import numpy as np
import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.core.ids import child_id
from dataclaw.core.store import RunStore
from dataclaw.media import VideoReader, frame_hash
from dataclaw.media.video import decode_all
from dataclaw.tailor.export import (
    REJECTS_FILE,
    Exporter,
    ExportIssue,
    exporter_names,
    get_exporter,
    register_exporter,
)
from dataclaw.tailor.export import export as run_export
from dataclaw.tailor.materialize import ARTIFACTS, SAMPLES, make_item, materialize, source_frames
from dataclaw.tailor.records import Artifact, Route, Sample, Turn
from dataclaw.tailor.streams import Stream, open_source

VIDEO = "videos/lf_demo4.mp4"  # 224x224, 150 frames, H.264


@pytest.fixture(scope="module")
def stream(shared_data: Path) -> Stream:
    return next(s for s in open_source(shared_data / VIDEO) if isinstance(s, Stream))


@pytest.fixture(scope="module")
def source_hashes(stream: Stream) -> list[str]:
    with VideoReader(stream.cameras["video"].path) as reader:
        return [frame_hash(f) for f in reader.frames_at(list(range(stream.frame_count)))]


def _sample(stream: Stream, key: str, output: dict[str, Any], turns: list[tuple[str, str]]) -> Sample:
    cand_id = child_id(stream.id, "cand", key, label=key)
    return Sample(
        id=child_id(cand_id, "sample", key, label=key),
        intent="approach_stall" if "freeze_frame" in output else "keyframe_qa",
        domain="embodied",
        stream_id=stream.id,
        candidate_id=cand_id,
        output=output,
        conversation=[Turn(role=r, content=c) for r, c in turns],  # type: ignore[arg-type]
        route=Route(model="replay:test", router="omni"),
    )


FAULT = {
    "input_video": {"start": 20, "end": 40},
    "freeze_frame": 33,
    "repeat_count": 6,
    "output_video": {"start": 41, "end": 48},
    "output_image": 45,
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, stream: Stream) -> Path:
    """A run with three good samples (fault recovery, keyframes + clip, text only) and bad ones."""
    run_dir = tmp_path_factory.mktemp("run")
    fault = _sample(
        stream,
        "fault",
        FAULT,
        [
            ("system", "You diagnose robots."),
            ("user", "Why stuck?"),
            ("assistant", "It stalled. <video_gen>"),
        ],
    )
    frames = _sample(
        stream,
        "frames",
        {"frames": [5, 60, 120], "clip": [0, 9]},
        [("user", "Order these."), ("assistant", "1, 2, 3")],
    )
    text = _sample(stream, "text", {}, [("user", "Hi"), ("assistant", "Hello")])
    tampered = _sample(
        stream, "tampered", {"output_image": 7}, [("user", "What is shown?"), ("assistant", "A cat.")]
    )
    items = [
        make_item(fault, stream, None, ["fault_recovery"]),
        make_item(
            frames,
            stream,
            None,
            [{"name": "keyframes", "field": "frames"}, {"name": "clip", "field": "clip"}],
        ),
        make_item(text, stream, None, []),
        make_item(tampered, stream, None, [{"name": "still", "role": "observation"}]),
    ]
    stats = materialize(items, run_dir, codec="lossless")  # the pixel checks below need exact frames
    assert stats.outputs == 4
    with RunStore(run_dir) as store:
        samples = {s["id"]: s for s in store.records(SAMPLES)}
        arts = {a["id"]: a for a in store.records(ARTIFACTS)}
        # tamper with a file after it was recorded: the export must notice
        still = next(a for a in arts.values() if a["sample_id"] == tampered.id)
        (run_dir / still["path"]).write_bytes(b"not the same png")
        good = samples[fault.id]
        extra_token = json.loads(json.dumps(good))
        extra_token["id"] = fault.id + "-extra-token"
        extra_token["conversation"][1]["content"] = "<video>" + extra_token["conversation"][1]["content"]
        dangling = json.loads(json.dumps(good))
        dangling["id"] = fault.id + "-dangling"
        dangling["media"][0]["artifact_id"] = "no/such/artifact"
        backwards = json.loads(json.dumps(samples[text.id]))
        backwards["id"] = text.id + "-backwards"
        backwards["conversation"] = list(reversed(backwards["conversation"]))
        for rec in (extra_token, dangling, backwards, {"id": "broken", "intent": 3}):
            store.stage(SAMPLES).append(rec)
    return run_dir


def _expected_rejects(run_dir: Path) -> dict[str, str]:
    return {
        "extra-token": ExportIssue.TOKEN_MISMATCH,
        "dangling": ExportIssue.MISSING_ARTIFACT,
        "backwards": ExportIssue.BAD_CONVERSATION,
        "tampered": ExportIssue.HASH_MISMATCH,
        "broken": ExportIssue.BAD_RECORD,
    }


def _check_rejects(out: Path, summary: Any) -> None:
    rejects = [json.loads(x) for x in (out / REJECTS_FILE).read_text().splitlines()]
    got = {}
    for r in rejects:
        key = next(k for k in _expected_rejects(out) if k in r["id"])
        got[key] = r["reason"]
    assert got == {k: str(v) for k, v in _expected_rejects(out).items()}
    assert summary.rejected == 5 and summary.samples == 3
    assert sum(summary.reasons.values()) == 5


def _decode_bytes(data: bytes) -> list[str]:
    with av.open(io.BytesIO(data)) as container:
        return [frame_hash(f.to_ndarray(format="rgb24")) for f in container.decode(video=0)]


def test_llamafactory_export_loads_with_datasets_and_tokens_match_media(
    run: Path, tmp_path: Path, shared_data: Path, source_hashes: list[str]
) -> None:
    out = tmp_path / "lf"
    summary = run_export(run, "llamafactory", out, dataset_name="robot_stall")
    _check_rejects(out, summary)
    assert (out / "robot_stall.json").is_file()

    info = json.loads((out / "dataset_info.json").read_text())
    reference = json.loads((shared_data / "formats/llamafactory_dataset_info.json").read_text())
    entry, demo = info["robot_stall"], reference["mllm_video_demo"]
    assert (
        entry["file_name"] == "robot_stall.json" and entry["formatting"] == demo["formatting"] == "sharegpt"
    )
    assert demo["columns"].items() <= entry["columns"].items()
    assert reference["mllm_demo"]["columns"].items() <= entry["columns"].items()
    assert demo["tags"].items() <= entry["tags"].items()

    demo_rows = json.loads((shared_data / "formats/llamafactory_mllm_video_demo.json").read_text())
    rows = json.loads((out / "robot_stall.json").read_text())
    assert set(demo_rows[0]) <= set(rows[0]) and set(rows[0]["messages"][0]) == set(
        demo_rows[0]["messages"][0]
    )

    loaded = datasets.load_dataset("json", data_files=str(out / "robot_stall.json"), split="train")
    assert len(loaded) == 3
    for row in loaded:
        text = "".join(m["content"] for m in row["messages"])
        assert text.count("<image>") == len(row["images"]) and text.count("<video>") == len(row["videos"])
        for rel in row["images"] + row["videos"] + [t["path"] for t in row["targets"]]:
            assert not Path(rel).is_absolute() and (out / rel).is_file()
    fault = next(r for r in loaded if r["targets"])
    assert fault["messages"][0] == {"role": "system", "content": "You diagnose robots."}
    assert len(fault["videos"]) == 1 and fault["images"] == []
    assert {t["placeholder"] for t in fault["targets"]} == {"<video_gen>", "<image_recall>"}
    stall = [frame_hash(f) for f in decode_all(out / fault["videos"][0])]
    assert stall == source_hashes[20:34] + [source_hashes[33]] * 6
    frames_row = next(r for r in loaded if len(r["images"]) == 3)
    assert frames_row["messages"][0]["content"].startswith("<image><image><image><video>")
    assert all(r["id"].startswith("stream:lf_demo4") for r in loaded)  # ids kept for traceability

    again = run_export(run, "llamafactory", out, dataset_name="other")  # a second entry is merged in
    assert set(json.loads((out / "dataset_info.json").read_text())) == {"robot_stall", "other"}
    assert again.samples == 3


def test_hf_export_has_image_and_video_columns_with_exact_pixels(
    run: Path, tmp_path: Path, source_hashes: list[str]
) -> None:
    out = tmp_path / "hf"
    summary = run_export(run, "hf", out, shard_size=2)
    _check_rejects(out, summary)
    assert summary.files[:2] == ["data/train-00000-of-00002.parquet", "data/train-00001-of-00002.parquet"]
    cache = str(tmp_path / "cache")
    loaded = datasets.load_dataset(
        "parquet", data_files=str(out / "data/*.parquet"), split="train", cache_dir=cache
    )
    assert len(loaded) == 3
    by_folder = datasets.load_dataset(str(out), split="train", cache_dir=cache)  # the card names the shards
    assert sorted(by_folder["id"]) == sorted(loaded["id"])
    assert isinstance(loaded.features["images"].feature, datasets.Image)
    # videos are the clip files' bytes, not decoded (no torchcodec needed); casting turns decoding on
    clip = {"bytes": datasets.Value("binary"), "path": datasets.Value("string")}
    assert loaded.features["videos"].feature == clip == loaded.features["target_videos"].feature
    decoding = loaded.cast_column("videos", datasets.List(datasets.Video()))
    assert isinstance(decoding.features["videos"].feature, datasets.Video)

    raw = loaded
    fault = next(r for r in raw if r["targets"])
    assert json.loads(fault["output"])["freeze_frame"] == 33
    assert _decode_bytes(fault["videos"][0]["bytes"]) == source_hashes[20:34] + [source_hashes[33]] * 6
    recovery = next(t for t in fault["targets"] if t["placeholder"] == "<video_gen>")
    assert _decode_bytes(fault["target_videos"][recovery["index"]]["bytes"]) == source_hashes[41:49]
    frames_row = next(r for r in raw if len(r["images"]) == 3)  # Image decodes with PIL
    pixels = [frame_hash(np.asarray(img.convert("RGB"))) for img in frames_row["images"]]
    assert pixels == [source_hashes[i] for i in (5, 60, 120)]
    for row in raw:
        text = "".join(m["content"] for m in row["messages"])
        assert text.count("<image>") == len(row["images"]) and text.count("<video>") == len(row["videos"])


def test_jsonl_export_is_normalised_and_self_contained(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "jsonl"
    summary = run_export(run, "jsonl", out)
    _check_rejects(out, summary)
    samples = [Sample.model_validate_json(x) for x in (out / f"{SAMPLES}.jsonl").read_text().splitlines()]
    arts = {
        a.id: a
        for a in (
            Artifact.model_validate_json(x) for x in (out / f"{ARTIFACTS}.jsonl").read_text().splitlines()
        )
    }
    assert len(samples) == 3
    assert {m.artifact_id for s in samples for m in s.media} == set(arts)  # exactly the artifacts used
    for art in arts.values():
        assert (out / art.path).is_file() and (out / art.path).stat().st_size > 0
    assert summary.media_files == len(arts) == 3 + 4
    fault = next(s for s in samples if s.intent == "approach_stall")
    stall = arts[fault.media[0].artifact_id]
    assert source_frames(stall) == list(range(20, 34)) + [33] * 6


def test_default_out_dir_registry_and_bad_runs(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    summary = run_export(copy, "jsonl")
    assert Path(summary.out_dir) == copy / "export" / "jsonl"
    assert {"jsonl", "llamafactory", "hf"} <= set(exporter_names())
    with pytest.raises(ConfigError, match="unknown export format 'csv'"):
        get_exporter("csv")
    with pytest.raises(ConfigError, match="already registered"):

        @register_exporter
        class Again(Exporter):  # pragma: no cover - refused before use
            name = "jsonl"

            def write(self, run_dir, samples, out, summary):  # type: ignore[no-untyped-def]
                return []

    with pytest.raises(ConfigError, match=r"has no samples\.jsonl"):
        run_export(tmp_path / "empty", "jsonl")
    with pytest.raises(ConfigError, match="would overwrite it"):
        run_export(copy, "jsonl", copy)
    with pytest.raises(ConfigError, match="dataset name"):
        get_exporter("llamafactory", dataset_name="bad name!")


def test_cli_export_command(run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dataclaw.cli.app import _run

    out = tmp_path / "cli"
    code = _run(
        [
            "tailor",
            "export",
            str(run),
            "--format",
            "llamafactory",
            "--out",
            str(out),
            "--name",
            "g1",
            "--json",
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["samples"] == 3 and summary["rejected"] == 5 and summary["format"] == "llamafactory"
    assert (out / "g1.json").is_file() and "g1" in json.loads((out / "dataset_info.json").read_text())
    assert _run(["tailor", "export", str(run), "--format", "csv", "--out", str(out)]) == 1
    assert "unknown export format 'csv'" in capsys.readouterr().err
    assert _run(["tailor", "export", str(run), "--format", "hf", "--name", "x", "--out", str(out)]) == 1
    assert "does not take" in capsys.readouterr().err
    assert _run(["tailor", "export", str(tmp_path / "nothing"), "--format", "jsonl"]) == 1
    err = capsys.readouterr().err
    assert "has no samples.jsonl" in err and "Traceback" not in err


# ------------------------------------------------------------------------------------------------
# media tokens where the trainer expects them (issue 16 item 5)


def lf_align(record: dict[str, Any]) -> dict[str, Any]:
    """LLaMA-Factory's ShareGPT alignment, replicated from llamafactory 0.9.5
    ``data/converter.py`` (``SharegptDatasetConverter``: a leading system message is taken out, the
    rest must alternate user/assistant, an odd count is broken) and ``data/mm_plugin.py``
    (``_validate_messages``: the ``<image>`` / ``<video>`` count over all remaining messages equals the
    number of images / videos; ``process_messages`` expands every token in every message, so one in an
    assistant message would become image tokens inside the labels)."""
    messages = record["messages"]
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    rest = messages[1:] if system else messages
    assert len(rest) % 2 == 0 and all(
        m["role"] == ("user", "assistant")[i % 2] for i, m in enumerate(rest)
    ), f"invalid role tags {[m['role'] for m in rest]}"
    text = "".join(m["content"] for m in rest)
    assert text.count("<image>") == len(record["images"]), "images do not match <image> tokens"
    assert text.count("<video>") == len(record["videos"]), "videos do not match <video> tokens"
    assert "<image>" not in system and "<video>" not in system
    for m in rest:
        if m["role"] == "assistant":
            assert "<image>" not in m["content"] and "<video>" not in m["content"], m["content"]
    return {"_prompt": rest[:-1], "_response": rest[-1:], "_system": system}


def test_token_placement_per_builtin_intent() -> None:
    """Every built-in intent's sample, built from a recorded answer of the embedded model and bound to
    its media as materialisation does, exports with input tokens in user turns only and the media the
    model should produce (tutorial step images, <video_gen>, <image_recall>) as targets."""
    from dataclaw.tailor.export import Checked, place_tokens
    from dataclaw.tailor.intents.registry import IntentCatalog
    from dataclaw.tailor.materialize import bind_media, get_materializer
    from dataclaw.tailor.records import MediaRef, build_sample

    catalog = IntentCatalog.builtin()
    data = Path(__file__).parents[1] / "data" / "smollm_responses.jsonl"
    answers: dict[str, dict[str, Any]] = {}
    for line in data.read_text().splitlines():
        rec = json.loads(line)
        if isinstance(rec.get("output"), dict):
            answers.setdefault(rec["intent"], rec)
    assert set(answers) == {i.id for i in catalog}
    produced = {}
    for intent_id, rec in sorted(answers.items()):
        intent = catalog.get(intent_id)
        sample = build_sample(rec, intent, [])
        specs = [
            spec
            for step in sample.provenance["materialize"]
            for spec in get_materializer(step).plan(sample.output, None, None)  # type: ignore[arg-type]
        ]
        refs = [
            MediaRef(artifact_id=f"a{i}", kind=s.media_type, role=s.role, placeholder=s.placeholder)
            for i, s in enumerate(specs)
        ]
        bound, _ = bind_media(sample, refs)
        arts = [
            Artifact(
                id=r.artifact_id,
                sample_id=bound.id,
                kind="still" if r.kind == "image" else "clip",
                path=f"media/{r.artifact_id}",
                sha256="0" * 64,
                media_type=r.kind,
                frames=1,
                width=1,
                height=1,
                source={},
            )
            for r in bound.media
        ]
        placed = place_tokens(Checked(bound, arts))
        record = {
            "messages": placed.turns,
            "images": [a.path for a in placed.inputs["image"]],
            "videos": [a.path for a in placed.inputs["video"]],
        }
        lf_align(record)
        produced[intent_id] = sorted({r.placeholder for r, _ in placed.targets})
        assert len(placed.targets) + len(record["images"]) + len(record["videos"]) == len(arts)
    assert produced["robot_tutorial"] == produced["daily_tutorial"] == ["<image_gen>"]
    assert produced["robot_fault_recovery"] == ["<image_recall>", "<video_gen>"]
    assert produced["video_generation_segment"] == ["<video_gen>"]
    assert produced["world_model_prediction"] == ["<image_gen>"]


def test_assistant_image_tokens_export_as_targets(
    tmp_path: Path, stream: Stream, source_hashes: list[str]
) -> None:
    tutorial = _sample(
        stream,
        "tutorial",
        {"steps": [{"frame": 10}, {"frame": 90}]},
        [("user", "How do I do it?"), ("assistant", "Step 1: open <image>\nStep 2: close <image>")],
    )
    run_dir = tmp_path / "run"
    materialize([make_item(tutorial, stream, None, [{"name": "still", "frames": [10, 90]}])], run_dir)
    out = tmp_path / "lf"
    summary = run_export(run_dir, "llamafactory", out)
    assert summary.samples == 1 and summary.rejected == 0
    (row,) = json.loads((out / "dataclaw.json").read_text())
    lf_align(row)
    assert row["images"] == [] and row["messages"][1]["content"].count("<image_gen>") == 2
    assert [t["placeholder"] for t in row["targets"]] == ["<image_gen>", "<image_gen>"]
    assert all((out / t["path"]).is_file() for t in row["targets"])
    hf = run_export(run_dir, "hf", tmp_path / "hf")
    loaded = datasets.load_dataset("parquet", data_files=str(tmp_path / "hf/data/*.parquet"), split="train")
    assert hf.samples == 1 and loaded[0]["images"] == [] and len(loaded[0]["target_images"]) == 2
    pixels = [frame_hash(np.asarray(img.convert("RGB"))) for img in loaded[0]["target_images"]]
    assert pixels == [source_hashes[10], source_hashes[90]]


@pytest.mark.parametrize("fmt", ["jsonl", "llamafactory", "hf"])
def test_a_run_with_no_samples_still_writes_an_empty_valid_export(tmp_path: Path, fmt: str) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "manifest.json").write_text("{}")  # a run whose responses were all rejected
    summary = run_export(run_dir, fmt, tmp_path / fmt)
    assert summary.samples == 0 and "0 samples: the run produced no samples" in summary.note
    out = tmp_path / fmt
    if fmt == "llamafactory":
        assert json.loads((out / "dataclaw.json").read_text()) == []
        assert json.loads((out / "dataset_info.json").read_text())["dataclaw"]["formatting"] == "sharegpt"
    elif fmt == "hf":
        import pyarrow.parquet as pq

        # datasets' parquet builder refuses a zero-row file (batch size 0), so read it with pyarrow; the
        # features (Image / Video columns) travel in the schema metadata as they do for full shards
        (shard,) = sorted((out / "data").glob("*.parquet"))
        loaded = datasets.Dataset(pq.read_table(shard))
        assert len(loaded) == 0 and isinstance(loaded.features["target_images"].feature, datasets.Image)
        assert set(loaded.features) == set(get_exporter("hf").features())  # type: ignore[attr-defined]
    else:
        assert (out / "samples.jsonl").read_text() == ""


def test_a_torn_last_line_is_counted_as_a_reason_with_its_file_and_line(run: Path, tmp_path: Path) -> None:
    """A crash mid-write leaves half a sample: the export reads every whole one and says which line it
    skipped (it used to skip it without a word)."""
    torn = tmp_path / "torn"
    shutil.copytree(run, torn)
    lines = (torn / f"{SAMPLES}.jsonl").read_text().count("\n")
    with (torn / f"{SAMPLES}.jsonl").open("a") as fh:
        fh.write('{"id": "stream:half-a-samp')
    summary = run_export(torn, "jsonl", tmp_path / "out")
    assert summary.samples == 3 and summary.reasons["torn_line"] == 1 and summary.rejected == 6
    rejects = [json.loads(x) for x in (tmp_path / "out" / REJECTS_FILE).read_text().splitlines()]
    (rec,) = [r for r in rejects if r["reason"] == "torn_line"]
    assert rec["id"] == f"{SAMPLES}.jsonl line {lines + 1}"
    assert "an unfinished write (26 bytes), skipped" in rec["message"]
