"""The DataClaw0-val metric (paper A.4.4) on hand-computed cases, pairing and bad input."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # bench_support
from bench_support import CAND, GUI, WKQ, WMP, response, sample, write_jsonl, write_run

from dataclaw.cli.app import _run
from dataclaw.core.errors import ConfigError
from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.scoring.bench import MetricConfig, RoleBook, Scorer, evaluate, load_metric_config, table
from dataclaw.tailor.scoring.bench import fields as F
from dataclaw.tailor.scoring.bench import trajectory as T
from dataclaw.tailor.scoring.bench.data import Prediction, Reference

CATALOG = IntentCatalog.builtin()


def ref_of(intent: str, output: dict, subset: str = "daily_life", **kw: object) -> Reference:
    return Reference(id=f"ref-{intent}", intent=intent, output=output, subset=subset, **kw)


def pred_of(intent: str, output: object, error: str | None = None) -> Prediction:
    return Prediction(id=f"pred-{intent}", intent=intent, output=output, error=error)


# ------------------------------------------------------------------------------------------------
# trajectory shape


def test_resampling_unequal_lengths_to_k_points() -> None:
    # a 3-point and a 5-point linear ramp are the same shape once both are resampled to K = 50
    assert T.shape_distance([0.0, 0.5, 1.0], [0.0, 0.25, 0.5, 0.75, 1.0]) == pytest.approx(0.0, abs=1e-12)
    assert T.resample([0.0, 1.0]).shape == (50,)
    # [0, 1] against [0, 0, 1]: at t_i = i/49 the gap is min(t_i, 1 − t_i); Σ_i min(i, 49 − i) = 600
    assert T.shape_distance([0.0, 1.0], [0.0, 0.0, 1.0]) == pytest.approx(600 / 49 / 50)
    assert T.shape_distance([0.3], [0.3, 0.3]) == 0.0  # one point is a constant


def test_reversed_trajectory() -> None:
    spec = T.TrajectorySpec(kind="frames", paths=["key_frames[]"])
    pred, ref = T.trajectories(spec, {"key_frames": [70, 40, 10]}, WKQ)
    assert ref == [0.0, 0.5, 1.0] and pred == [1.0, 0.5, 0.0]
    # |(1 − t) − t| = |1 − 2t| at t_i = i/49: mean 25/49
    d = T.shape_distance(pred, ref)
    assert d == pytest.approx(25 / 49)
    assert T.shape_similarity(pred, ref, tau=0.2) == pytest.approx(math.exp(-(25 / 49) / 0.2))


def test_labels_reversed_and_distractors() -> None:
    spec = T.TrajectorySpec(kind="labels", paths=["ordered_labels"])
    pred, ref = T.trajectories(spec, {"ordered_labels": ["D", "C", "B", "A"]}, GUI)
    assert ref == pytest.approx([0, 1 / 3, 2 / 3, 1]) and pred == pytest.approx([1, 2 / 3, 1 / 3, 0])
    assert T.shape_distance(pred, ref) == pytest.approx(25 / 49)
    # a distractor (E) has no place in the reference order: left out of the predicted sequence
    pred, _ = T.trajectories(spec, {"ordered_labels": ["A", "E", "B", "C", "D"]}, GUI)
    assert pred == pytest.approx([0, 1 / 3, 2 / 3, 1])


def test_grouped_paths_read_item_by_item() -> None:
    out = {"fragments": [{"start": 0, "end": 4, "subtask": "x"}, {"start": 5, "end": 9, "subtask": "y"}]}
    assert T.frame_values(out, ["fragments[].start", "fragments[].end"]) == [0, 4, 5, 9]
    fault = {"input_video": {"start": 3, "end": 9}, "freeze_frame": 8, "output_image": 20}
    paths = ["input_video.start", "input_video.end", "freeze_frame", "output_image"]
    assert T.frame_values(fault, paths) == [3, 9, 8, 20]


# ------------------------------------------------------------------------------------------------
# fields


def test_missing_required_field() -> None:
    schema = CATALOG.get("world_knowledge_qa").output_schema
    pred = {k: v for k, v in WKQ.items() if k != "answer"}
    assert F.coverage(pred, WKQ, schema) == pytest.approx(3 / 4)  # question, reasoning, key_frames of 4
    assert F.redundancy(pred, schema) == 0.0
    assert F.gate(pred, schema) == 0.0 and F.gate(pred, schema, "json") == 1.0
    base, _ = Scorer(CATALOG)._structural(
        ref_of("world_knowledge_qa", WKQ), pred_of("world_knowledge_qa", pred)
    )
    assert base["field"] == pytest.approx(0.7 * 0.75 + 0.3 * 1.0)
    assert base["gate"] == 0.0 and "answer" in base["error"]


def test_coverage_wants_well_typed_values_and_redundancy_counts_unknown_fields() -> None:
    schema = CATALOG.get("world_knowledge_qa").output_schema
    wrong = {**WKQ, "key_frames": ["10", "40"], "answer": 3}
    assert F.coverage(wrong, WKQ, schema) == pytest.approx(2 / 4)
    extra = {**WKQ, "confidence": 0.9, "notes": {"a": 1, "b": 2}}
    assert F.redundancy(extra, schema) == pytest.approx(2 / 6)  # 4 known leaves + 2 unknown keys
    steps = CATALOG.get("daily_tutorial").output_schema
    ref = {"title": "Make tea", "question": "How do I make tea?", "steps": []}
    ref["steps"] = [{"frame": 1, "text": "Boil"}, {"frame": 5, "text": "Pour"}]
    short = {**ref, "steps": ref["steps"][:1]}
    assert F.coverage(short, ref, steps) == pytest.approx(4 / 6)  # list items compared by index


# ------------------------------------------------------------------------------------------------
# roles


def test_roles_file_names_fields_the_builtin_schemas_have() -> None:
    book = RoleBook()
    assert set(book.listed) == set(CATALOG.ids())
    for intent in CATALOG:
        roles = book.listed[intent.id]
        for path in [
            *roles.question,
            *roles.answer,
            *roles.cot,
            *(roles.trajectory.paths if roles.trajectory else []),
        ]:
            node = intent.output_schema
            for part in path.split("."):
                name = part.removesuffix("[]")
                assert name in node.get("properties", {}), f"{intent.id}: {path}"
                node = node["properties"][name]
                if part.endswith("[]"):
                    node = node["items"]


def test_roles_inferred_for_a_user_intent() -> None:
    INT = {"type": "integer"}
    schema = {
        "type": "object",
        "required": ["instruction", "answer", "rationale", "clip"],
        "properties": {
            "instruction": {"type": "string"},
            "answer": {"type": "string"},
            "rationale": {"type": "string"},
            "clip": {"type": "object", "properties": {"start_frame": INT, "end_frame": INT}},
            "count": {"type": "integer"},
        },
    }  # fmt: skip
    roles = RoleBook().infer(schema)
    assert roles.question == ["instruction"] and roles.answer == ["answer"] and roles.cot == ["rationale"]
    assert roles.trajectory is not None and roles.trajectory.paths == ["clip.start_frame", "clip.end_frame"]


# ------------------------------------------------------------------------------------------------
# the whole metric (real MiniLM embeddings)


@pytest.mark.slow
def test_identical_prediction_scores_one_on_every_component(embedder) -> None:
    scorer = Scorer(CATALOG, embedder=embedder)
    for intent, output in [
        ("world_knowledge_qa", WKQ),
        ("world_model_prediction", WMP),
        ("gui_task_reconstruction", GUI),
    ]:
        (s,) = scorer.score([(ref_of(intent, output), pred_of(intent, json.loads(json.dumps(output))))])
        assert (s.gate, s.c_field, s.r_field, s.field, s.traj) == (1.0, 1.0, 0.0, 1.0, 1.0)
        assert s.semantic == pytest.approx(1.0) and s.total == pytest.approx(1.0)
        assert all(v in (None, 1.0) for v in s.sims.values())


@pytest.mark.slow
def test_invalid_json_is_zero_through_the_gate_and_semantics_rank(embedder) -> None:
    scorer = Scorer(CATALOG, embedder=embedder)
    ref = ref_of("world_knowledge_qa", WKQ)
    bad, para, off = scorer.score(
        [
            (ref, pred_of("world_knowledge_qa", None, "not JSON (Expecting value at char 0)")),
            (ref, pred_of("world_knowledge_qa", {**WKQ, "answer": "There is a silver kettle."})),
            (
                ref,
                pred_of("world_knowledge_qa", {**WKQ, "answer": "The stock market fell sharply in March."}),
            ),
        ]
    )
    assert bad.total == 0.0 and bad.field == 0.0 and bad.semantic == 0.0 and bad.traj == 0.0
    assert bad.error.startswith("not JSON")
    assert 1.0 > para.sims["answer"] > off.sims["answer"] >= 0.0
    # S_semantic = (α·1 + β·sim + γ·1) / 3 with question and reasoning identical
    assert para.semantic == pytest.approx((2 + para.sims["answer"]) / 3)
    assert para.total == pytest.approx((1.0 + para.semantic + 1.0) / 3)


@pytest.mark.slow
def test_weights_are_config(embedder, tmp_path: Path) -> None:
    path = tmp_path / "metric.yaml"
    path.write_text("lambdas: {field: 1, semantic: 0, traj: 0}\ngate: json\n")
    cfg = load_metric_config(path)
    pred = {k: v for k, v in WKQ.items() if k != "answer"}
    (s,) = Scorer(CATALOG, cfg, embedder).score(
        [(ref_of("world_knowledge_qa", WKQ), pred_of("world_knowledge_qa", pred))]
    )
    assert s.total == pytest.approx(0.7 * 0.75 + 0.3)  # only S_field counts; the json gate passes it
    path.write_text("tau_s: -1\n")
    with pytest.raises(ConfigError, match=r"metric config .*metric.yaml: tau_s"):
        load_metric_config(path)


def test_table_overall_is_the_mean_of_columns() -> None:
    from dataclaw.tailor.scoring.bench.metric import SampleScore

    def s(subset: str, field: float, traj: float | None) -> SampleScore:
        return SampleScore(
            ref_id="r", pred_id="p", intent="x", subset=subset, gate=1.0, c_field=field, r_field=0.0,
            field=field, sims={}, semantic=0.5, d_shape=None, traj=traj, total=field,
        )  # fmt: skip

    t = table([s("gui", 1.0, 1.0), s("gui", 0.5, None), s("education", 0.0, None), s("fuzzy", 1.0, 0.0)])
    assert t["Field"]["GUI"] == pytest.approx(75.0) and t["Field"]["Education"] == 0.0
    assert t["Field"]["Embodied"] is None  # no sample: not averaged into Overall
    assert t["Field"]["Overall"] == pytest.approx((75 + 0 + 100) / 3)
    assert t["Sequence"]["GUI"] == 100.0 and t["Sequence"]["Education"] is None
    assert t["Sequence"]["Overall"] == pytest.approx(50.0)
    assert list(t["Field"]) == ["GUI", "Embodied", "AIGC", "Daily", "Education", "Fuzzy", "Overall"]


# ------------------------------------------------------------------------------------------------
# files, pairing, bad input


def references(tmp_path: Path) -> Path:
    refs = [
        sample("world_model_prediction", "aigc_world", WMP, 1),
        sample("world_knowledge_qa", "daily_life", WKQ, 2),
        sample("gui_task_reconstruction", "gui", GUI, 3, fuzzy=True),
        sample("no_such_intent", "gui", GUI, 4),
        sample("world_knowledge_qa", "daily_life", {**WKQ, "surprise": 1}, 5),
    ]
    return write_jsonl(tmp_path / "refs.jsonl", refs, ["{not json"])


@pytest.mark.slow
def test_run_directory_against_references_with_bad_input(tmp_path: Path, embedder) -> None:
    ref_path = references(tmp_path)
    refs = [json.loads(line) for line in ref_path.read_text().splitlines()[:3]]
    run = write_run(
        tmp_path / "run",
        [
            response(refs[0], json.dumps(WMP)),  # pairs by (candidate, intent): ids differ
            response(refs[1], "Sorry, I can't help with that."),  # not JSON: gate 0
            response(refs[1], json.dumps(WKQ), producer="0ld0ld0ld0ld"),  # superseded: not read
            {
                **response(refs[0], "{}"),
                "candidate_id": f"{CAND}-other",
                "stream_id": "stream:other",
            },  # no ref
        ],
    )
    with (run / "responses.jsonl").open("a") as fh:
        fh.write('{"id": "torn", "intent": "world_mo\n')
    report = evaluate(run, ref_path, embedder=embedder)
    c = report["counts"]
    assert c["references"] == 3 and c["scored"] == 3 and c["unanswered"] == 1 and c["gate_passed"] == 1
    assert c["rejects"] == {
        "bench_ref:unknown_intent": 1,
        "bench_ref:invalid_reference": 1,
        "bench_ref:bad_line": 1,
        "bench_pred:no_reference": 1,
        "bench_pred:bad_line": 1,
    }
    by_ref = {s["ref_id"]: s for s in report["samples"]}
    assert by_ref[refs[0]["id"]]["total"] == pytest.approx(1.0)
    assert by_ref[refs[1]["id"]]["total"] == 0.0 and by_ref[refs[1]["id"]]["error"].startswith("not JSON")
    assert by_ref[refs[2]["id"]]["subset"] == "fuzzy" and by_ref[refs[2]["id"]]["error"] == "no prediction"
    assert report["table"]["Field"]["AIGC"] == pytest.approx(100.0)
    assert report["table"]["Field"]["Fuzzy"] == 0.0
    skipped = evaluate(run, ref_path, config=MetricConfig(missing="skip"), embedder=embedder)
    assert skipped["counts"]["scored"] == 2


@pytest.mark.slow
def test_cli_prints_table_1_and_writes_json(tmp_path: Path, capsys) -> None:
    ref_path = references(tmp_path)
    ref_ids = [json.loads(line)["id"] for line in ref_path.read_text().splitlines()[:3]]
    preds = write_jsonl(
        tmp_path / "preds.jsonl", [{"id": ref_ids[1], "intent": "world_knowledge_qa", "output": WKQ}]
    )
    out = tmp_path / "scores.json"
    code = _run(
        [
            "tailor",
            "bench",
            "--pred",
            str(preds),
            "--ref",
            str(ref_path),
            "--out",
            str(out),
            "--no-embed-cache",
        ]
    )
    text = capsys.readouterr().out
    assert code == 0, text
    for head in (
        "Field",
        "Semantic",
        "Sequence",
        "GUI",
        "Embodied",
        "AIGC",
        "Daily",
        "Education",
        "Fuzzy",
        "Overall",
    ):
        assert head in text
    assert "rejected 1 bench_ref:unknown_intent" in text
    report = json.loads(out.read_text())
    assert report["table"]["Field"]["Daily"] == pytest.approx(100.0)
    assert {s["ref_id"] for s in report["samples"]} == set(ref_ids)


def test_cli_bad_paths_are_one_line(tmp_path: Path, capsys) -> None:
    code = _run(
        ["tailor", "bench", "--pred", str(tmp_path / "nope.jsonl"), "--ref", str(tmp_path / "refs.jsonl")]
    )
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert err.strip().startswith("error:") and "does not exist" in err and len(err.strip().splitlines()) == 1
    (tmp_path / "run").mkdir()
    write_jsonl(tmp_path / "refs.jsonl", [sample("world_knowledge_qa", "daily_life", WKQ)])
    code = _run(["tailor", "bench", "--pred", str(tmp_path / "run"), "--ref", str(tmp_path / "refs.jsonl")])
    assert code == 1 and "without responses.jsonl or samples.jsonl" in capsys.readouterr().err


@pytest.mark.slow
def test_embeddings_cached_per_text_on_disk(tmp_path: Path, embedder) -> None:
    from dataclaw.tailor.scoring.bench import CachedEmbedder

    first = CachedEmbedder(embedder=embedder.embedder, cache=tmp_path / "emb.sqlite")
    texts = ["A silver kettle.", "A silver kettle.", "The stock market fell.", ""]
    vecs = first.vectors(texts)
    assert set(vecs) == {"A silver kettle.", "The stock market fell."} and first.stats["model"] == 2
    first.close()
    again = CachedEmbedder(embedder=embedder.embedder, cache=tmp_path / "emb.sqlite")
    back = again.vectors(texts)
    assert again.stats == {"memory": 0, "disk": 2, "model": 0}
    assert all((back[t] == vecs[t]).all() for t in vecs)
    again.close()


def test_fuzzy_subset_from_the_reference_route() -> None:
    from dataclaw.tailor.scoring.bench.data import _subset

    assert _subset({"route": {"intent_choice": {"method": "explicit"}}}, "gui") == "gui"
    assert (
        _subset({"route": {"intent_choice": {"method": "embedding+model", "request": "make data"}}}, "gui")
        == "fuzzy"
    )
    assert _subset({"intent_choice": {"method": "embedding"}}, "education") == "fuzzy"  # a responses record
    assert _subset({"fuzzy": True}, "embodied") == "fuzzy" and _subset({}, "embodied") == "embodied"
