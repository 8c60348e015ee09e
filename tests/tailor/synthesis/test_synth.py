"""Synthesis end to end on real sample inputs: candidate → request → recorded response → validated sample,
one intent per domain, replayed from a recording; and resume after a kill repeats no model call."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: makes `support` importable

from dataclaw.core.store import RunStore
from dataclaw.models import get_model
from dataclaw.pipeline import run_stage
from dataclaw.pipeline.executors import LocalExecutor
from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.pipeline import IngestConfig, ingest
from dataclaw.tailor.synthesis.fragments import load_distractors, run_distractors
from dataclaw.tailor.synthesis.route import RouteConfig
from dataclaw.tailor.synthesis.stage import SynthesizeStage, synth_item
from dataclaw.tailor.validation.stage import ValidateStage
from support.openai_server import KindResponder, OpenAIServer, Reply

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATACLAW_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def ingested(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Real inputs (LeRobot G1, an OpenCUA recording, a data-juicer video, a lecture) through ingest
    (parser and shot/motion anchors; OCR left out for speed)."""
    run = tmp_path_factory.mktemp("ingest")
    ingest(
        [
            shared_data / "lerobot_g1",
            shared_data / "opencua/raw_recording",
            shared_data / "videos/dj_video1.mp4",
            shared_data / "lectures",
        ],
        run,
        IngestConfig(workers=1, extractors=["proprio", "gui", "shots", "motion", "lecture"]),
    )
    store = RunStore(run)
    out = {
        "streams": {s["id"]: s for s in store.records("streams")},
        "anchors": {a["id"]: a for a in store.records("anchors")},
        "candidates": list(store.records("candidates")),
    }
    store.close()
    return out


def items_for(ingested: dict[str, Any], catalog: IntentCatalog, wanted: dict[str, str]) -> list[dict]:
    """One synthesis item per (candidate kind → intent) in ``wanted``, on the first such candidate."""
    items = []
    for kind, intent_id in wanted.items():
        cand = next(c for c in ingested["candidates"] if c["kind"] == kind)
        anchors = [ingested["anchors"][a] for a in cand["anchor_ids"] if a in ingested["anchors"]]
        items.append(
            synth_item(cand, ingested["streams"][cand["stream_id"]], anchors, catalog.get(intent_id))
        )
    return items


def good_answer(intent: str, ctx: dict[str, Any]) -> dict[str, Any]:
    """A valid answer for ``ctx``, as a careful annotator (or strong VLM) would give it."""
    fr = ctx["frame_indices"]
    if intent == "robot_fault_recovery":
        o, f = ctx["obs"], ctx["fut"]
        return {
            "fault_type": "approach_stall",
            "input_video": {"start": o["start"], "end": o["end"]},
            "freeze_frame": (o["start"] + o["end"]) // 2,
            "repeat_count": 30,
            "output_video": {"start": f["start"], "end": f["end"]},
            "output_image": f["end"],
            "question": "The robot stopped while reaching for the bottle. What went wrong, how to recover?",
            "answer": "An approach stall: resume the reach and grasp the bottle. <video_gen> <image_recall>",
            "reasoning": "The arm holds still mid-approach; the continuation closes the right hand on it.",
        }
    if intent == "gui_task_reconstruction":
        return {
            "ordered_labels": ctx["answer_order"],
            "distractors": ctx["distractor_labels"],
            "reconstructed_goal": ctx["task"],
            "reasoning": "The kept fragments all act on the Windows display settings, in the order recorded.",
        }
    if intent == "video_generation_segment":
        s = ctx["span"]
        inside = [i for i in fr if s["start"] <= i <= s["end"]]
        return {
            "segment": {"start": s["start"], "end": s["end"]},
            "camera_motion": "pan",
            "prompt": "A short outdoor clip with steady motion across the frame.",
            "motion_plan": ["subject enters", "subject crosses the frame"],
            "key_frames": inside[:3],
        }
    if intent == "vln_navigation":
        return {
            "question": "How do I get from where the video starts to where it ends?",
            "answer": "Walk forward along the path and stop where the last frame shows.",
            "reasoning": "The early frames show the start, the late frames the destination.",
            "input_frames": fr[:2],
            "output_frames": fr[-2:],
        }
    if intent == "interleaved_lesson":
        words = re.findall(r"[A-Za-z]{5,}", ctx["lecture"]["transcript"])
        return {
            "key_concept": " ".join(words[:3]),
            "question": f"What does the lecture explain about {' '.join(words[:4])}?",
            "steps": [
                f"Look at the slide <image_1>: it introduces {' '.join(words[:2])}.",
                f"The lecturer then explains {' '.join(words[2:6])}.",
            ],
        }
    raise AssertionError(intent)


WANTED = {
    "fault_window": "robot_fault_recovery",
    "gui_task": "gui_task_reconstruction",
    "dynamic_segment": "video_generation_segment",
    "lecture_segment": "interleaved_lesson",
}


def record_answers(items: list[dict], stage: SynthesizeStage, catalog: IntentCatalog, replay: Path) -> int:
    """Answer every item's request once through a real HTTP server and record the answers to ``replay``."""
    by_prompt = {}
    for item in items:
        ctx, _, messages = stage.prepare(item, catalog.get(item["intent"]))
        by_prompt[messages[1]["content"]] = good_answer(item["intent"], ctx)

    vision = KindResponder()  # the endpoint probe's one-message requests: a vision model answers them
    answered = []

    def responder(req: Any) -> Reply:
        if len(req.body["messages"]) < 2:
            return vision(req)
        content = req.body["messages"][1]["content"]
        text = content if isinstance(content, str) else content[0]["text"]
        answered.append(text)
        return Reply.json(by_prompt[text])

    with OpenAIServer(responder=responder) as server:
        spec = f"{server.base_url}::vlm"
        rec_stage = SynthesizeStage(
            RouteConfig.omni(spec), catalog=catalog, distractor_pool=stage.pool, seed=stage.seed
        )
        rec_stage.setup()
        rec_stage.router._models[spec] = get_model(spec, cache=False, record_to=replay)
        for item in items:
            [rec] = asyncio.run(rec_stage.aprocess(item))
            assert rec["output"] is not None
        return len(answered)


def test_one_intent_per_domain_end_to_end(ingested: dict[str, Any], tmp_path: Path) -> None:
    catalog = IntentCatalog.builtin()
    pool = run_distractors(ingested["candidates"], ingested["anchors"]) + load_distractors()
    items = items_for(ingested, catalog, WANTED)
    dyn = next(c for c in ingested["candidates"] if c["kind"] == "dynamic_segment")
    anchors = [ingested["anchors"][a] for a in dyn["anchor_ids"]]
    items.append(
        synth_item(dyn, ingested["streams"][dyn["stream_id"]], anchors, catalog.get("vln_navigation"))
    )
    replay = tmp_path / "answers.jsonl"
    stage = SynthesizeStage(RouteConfig.omni("replay:x"), catalog=catalog, distractor_pool=pool, seed=7)
    assert record_answers(items, stage, catalog, replay) == len(items)

    store = RunStore(tmp_path / "run")
    synth = SynthesizeStage(
        RouteConfig.omni(f"replay:{replay}"), catalog=catalog, distractor_pool=pool, seed=7
    )
    stats = run_stage(synth, items, store, LocalExecutor(workers=1))
    assert stats.outputs == len(items) and stats.rejects == 0, store.rejects()
    responses = list(store.records("responses"))
    fault = next(r for r in responses if r["intent"] == "robot_fault_recovery")
    assert fault["images"] == len(fault["frames"]) == 12, "sampled frames go to vision models as images"
    assert fault["schema"]["properties"]["freeze_frame"]["minimum"] == fault["context"]["obs"]["start"]
    assert all(r["request_hash"] and r["model"].startswith("replay:") for r in responses)
    lesson = next(r for r in responses if r["intent"] == "interleaved_lesson")
    assert lesson["images"] == 1, "the aligned slide is rendered and sent"
    gui_resp = next(r for r in responses if r["intent"] == "gui_task_reconstruction")
    assert gui_resp["images"] == 0 and len(gui_resp["context"]["distractor_labels"]) == 3

    stats = run_stage(ValidateStage(catalog), responses, store, LocalExecutor(workers=1))
    samples = list(store.records("validated"))
    assert stats.rejects == 0, store.rejects()
    assert {s["domain"] for s in samples} == {"embodied", "gui", "aigc_world", "daily_life", "education"}
    for s in samples:
        assert s["route"]["router"] == "omni" and s["route"]["intent_choice"]["method"] == "explicit"
        assert s["id"].startswith(s["candidate_id"] + "/sample-")
        assert s["conversation"][0]["role"] == "user" and s["conversation"][-1]["role"] == "assistant"
    gui = next(s for s in samples if s["intent"] == "gui_task_reconstruction")
    assert "Fragment A" in gui["conversation"][0]["content"]
    store.close()


def test_text_only_model_gets_anchors_not_images(ingested: dict[str, Any]) -> None:
    catalog = IntentCatalog.builtin()
    [item] = items_for(ingested, catalog, {"fault_window": "robot_fault_recovery"})
    with OpenAIServer(responder=lambda req: Reply.text("not json")) as server:
        stage = SynthesizeStage(
            RouteConfig.omni(f"{server.base_url}::m"),
            catalog=catalog,
            send_images=False,
            text_only_evidence=True,
        )
        [rec] = asyncio.run(stage.aprocess(item))
        body = server.chat_bodies()[0]
    assert rec["images"] == 0 and rec["output"] is None and rec["raw_text"] == "not json"
    text = body["messages"][1]["content"]
    assert isinstance(text, str) and "hand_close" in text and "Observation range" in text
    assert body["response_format"]["json_schema"]["schema"] == rec["schema"]


RESUME_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from dataclaw.core.store import RunStore
    from dataclaw.pipeline import run_stage
    from dataclaw.pipeline.executors import LocalExecutor
    from dataclaw.tailor.synthesis.route import RouteConfig
    from dataclaw.tailor.synthesis.stage import SynthesizeStage
    items = json.load(open(sys.argv[2]))
    stage = SynthesizeStage(RouteConfig.omni(sys.argv[3]), send_images=False, text_only_evidence=True)
    run_stage(stage, items, RunStore(sys.argv[1]), LocalExecutor(workers=1, concurrency=1))
    """
)


def test_resume_after_kill_repeats_no_model_call(ingested: dict[str, Any], tmp_path: Path) -> None:
    catalog = IntentCatalog.builtin()
    faults = [c for c in ingested["candidates"] if c["kind"] == "fault_window"][:6]
    items = [
        synth_item(c, ingested["streams"][c["stream_id"]], [], catalog.get("robot_fault_recovery"))
        for c in faults
    ]
    stage = SynthesizeStage(RouteConfig.omni("replay:x"), catalog=catalog)
    answers = {}
    for item in items:
        ctx, _, messages = stage.prepare(item, catalog.get(item["intent"]))
        answers[messages[1]["content"]] = good_answer("robot_fault_recovery", ctx)
    items_file = tmp_path / "items.json"
    items_file.write_text(json.dumps(items))
    run = tmp_path / "run"
    with OpenAIServer(
        responder=lambda req: Reply.json(answers[req.body["messages"][1]["content"]], delay=0.4)
    ) as srv:
        spec = f"{srv.base_url}::vlm"
        env = {**os.environ, "DATACLAW_CACHE_DIR": str(tmp_path / "cache")}
        proc = subprocess.Popen(
            [sys.executable, "-c", RESUME_SCRIPT, str(run), str(items_file), spec], env=env
        )
        out = run / "responses.jsonl"
        deadline = time.time() + 120
        while time.time() < deadline and (not out.exists() or len(out.read_text().splitlines()) < 2):
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        done_before = [json.loads(line)["messages"][1]["content"] for line in out.read_text().splitlines()]
        assert 2 <= len(done_before) < len(items)
        first_run = srv.request_count
        stats = run_stage(
            SynthesizeStage(RouteConfig.omni(spec), send_images=False, text_only_evidence=True),
            items,
            RunStore(run),
            LocalExecutor(1, 1),
        )
        resent = [b["messages"][1]["content"] for b in srv.chat_bodies()[first_run:]]
    assert stats.skipped == len(done_before) and stats.outputs == len(items) - len(done_before)
    assert not set(resent) & set(done_before), "an answered request was sent again after the resume"
    assert srv.request_count <= len(items) + 1  # at most the one request in flight at the kill
    assert len(list(RunStore(run).records("responses"))) == len(items)


def test_frames_shared_by_intents_are_decoded_once(ingested: dict[str, Any], monkeypatch) -> None:
    import pickle

    from dataclaw.tailor.synthesis import stage as synthesize

    catalog = IntentCatalog.builtin()
    cand = next(c for c in ingested["candidates"] if c["kind"] == "keyframes")
    stream = ingested["streams"][cand["stream_id"]]
    stage = SynthesizeStage(RouteConfig.omni("replay:x"), catalog=catalog)
    calls = []
    real = synthesize.load_frames
    monkeypatch.setattr(synthesize, "load_frames", lambda *a: calls.append(a) or real(*a))
    ctxs = [stage.prepare(synth_item(cand, stream, [], catalog.get(i)), catalog.get(i))[0]
            for i in ("predict_next_subtask", "describe_current_subtask")]  # fmt: skip
    assert ctxs[0]["frame_indices"] == ctxs[1]["frame_indices"]
    got = [stage.frames.get(stream, c["frame_indices"], cand["camera"], 512) for c in ctxs]
    assert len(calls) == 1 and got[0] is got[1] and len(got[0]) == 20
    assert got[0][0][:3] == b"\xff\xd8\xff", "JPEG"
    assert len(pickle.loads(pickle.dumps(stage)).frames._entries) == 0
