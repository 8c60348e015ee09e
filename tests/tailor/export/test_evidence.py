"""Every export keeps a sample's evidence mark (issue 27): ``text_only`` — a visual intent answered by a
model that did not see the media — stays on the sample in jsonl, LLaMA-Factory ShareGPT and HF parquet,
and the export summary (and the dataset card) count it."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest

from dataclaw.core.ids import child_id
from dataclaw.tailor.export import export as run_export
from dataclaw.tailor.materialize import make_item, materialize
from dataclaw.tailor.records import Route, Sample, Turn
from dataclaw.tailor.streams import Stream, open_source


@pytest.fixture(scope="module")
def run(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three samples with a still each: marked text_only, perceived, and unmarked (an older run's)."""
    stream = next(s for s in open_source(shared_data / "videos/lf_demo4.mp4") if isinstance(s, Stream))
    run_dir = tmp_path_factory.mktemp("run")
    items = []
    for n, evidence in enumerate(["text_only", "perceived", None]):
        key = evidence or "unmarked"
        cand = child_id(stream.id, "cand", key, label=key)
        sample = Sample(
            id=child_id(cand, "sample", key, label=key), intent="world_knowledge_qa", domain="daily_life",
            stream_id=stream.id, candidate_id=cand, output={"answer": key},
            conversation=[Turn(role="user", content="<image>What is shown?"),
                          Turn(role="assistant", content="A person walking.")],
            route=Route(model="local:smollm2-135m", router="omni"), evidence=evidence,  # type: ignore[arg-type]
        )  # fmt: skip
        items.append(make_item(sample, stream, None, [{"name": "still", "frames": [10 + n]}]))
    materialize(items, run_dir)
    return run_dir


def _marks(ids: list[str], marks: list[str | None]) -> dict[str, str | None]:
    return {i.rsplit("sample-", 1)[-1].split("-")[0]: m for i, m in zip(ids, marks, strict=True)}


WANT = {"text_only": "text_only", "perceived": "perceived", "unmarked": None}


def test_jsonl_llamafactory_and_hf_keep_the_mark(run: Path, tmp_path: Path) -> None:
    summaries = {fmt: run_export(run, fmt, tmp_path / fmt) for fmt in ("jsonl", "llamafactory", "hf")}
    for summary in summaries.values():
        assert summary.samples == 3 and summary.evidence == {"text_only": 1, "perceived": 1}
    rows = [json.loads(x) for x in (tmp_path / "jsonl/samples.jsonl").read_text().splitlines()]
    assert _marks([r["id"] for r in rows], [r["evidence"] for r in rows]) == WANT
    lf = json.loads((tmp_path / "llamafactory/dataclaw.json").read_text())
    assert _marks([r["id"] for r in lf], [r["evidence"] for r in lf]) == WANT
    assert all(r["images"] for r in lf), "the media are exported all the same"
    hf = datasets.load_dataset("parquet", data_files=str(tmp_path / "hf/data/*.parquet"), split="train")
    assert hf.features["evidence"] == datasets.Value("string")
    assert _marks(hf["id"], hf["evidence"]) == WANT
    card = (tmp_path / "hf/README.md").read_text()
    assert (
        "`text_only` when the model that wrote the answer did not see the media (1 of these samples" in card
    )


def test_the_cli_says_how_many_exported_samples_are_text_only(run: Path, tmp_path: Path, capsys) -> None:
    from dataclaw.cli.app import _run

    assert _run(["tailor", "export", str(run), "-f", "llamafactory", "-o", str(tmp_path / "lf")]) == 0
    out = capsys.readouterr().out
    assert "1 of 3 samples are marked evidence: text_only" in out
