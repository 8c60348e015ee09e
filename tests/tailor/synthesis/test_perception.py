"""A model that must see, sees (issue 27): intents declare what their model must perceive; a request whose
model cannot see is refused (the run before it starts, a request when it turns out on the way) unless
text-only evidence is allowed, and then marked ``evidence: text_only``; a response records what its
request actually carried — never images it did not send."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: makes `support` importable

from dataclaw.core.errors import ConfigError
from dataclaw.core.store import RunStore
from dataclaw.tailor.intents.base import CATALOG as CATALOG_DIR
from dataclaw.tailor.intents.base import load_intent
from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.pipeline import IngestConfig, ingest
from dataclaw.tailor.synthesis.perception import BlindModelError, refuse_blind
from dataclaw.tailor.synthesis.route import RouteConfig
from dataclaw.tailor.synthesis.stage import SynthesizeStage, synth_item
from support.openai_server import OpenAIServer, Reply

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
CATALOG = IntentCatalog.builtin()
SUBTASK = CATALOG.get("describe_current_subtask")
DECOMPOSE = CATALOG.get("gui_task_decomposition")
LOCAL = "local:smollm2-135m"


def test_built_in_intents_declare_what_their_model_must_see() -> None:
    seen = {i.id: [str(p) for p in i.perceive] for i in CATALOG}
    assert {i for i in seen if "text" == "/".join(seen[i])} == {
        "gui_task_decomposition", "gui_task_reconstruction",
    }  # fmt: skip
    for intent in CATALOG:  # every intent that shows frames and is not a text intent must see them
        sends = bool(intent.frames.sources) and intent.frames.max_frames > 0
        assert intent.needs_vision == sends, intent.id
    assert seen["interleaved_lesson"] == ["text", "images"] and seen["world_model_prediction"] == [
        "frames", "video",
    ]  # fmt: skip


def test_a_user_intent_without_the_field_must_see_what_it_shows(tmp_path: Path) -> None:
    src = CATALOG_DIR / "describe_current_subtask.yaml"
    text = "\n".join(line for line in src.read_text().splitlines() if not line.startswith("perceive:"))
    path = tmp_path / "mine.yaml"
    path.write_text(text.replace("id: describe_current_subtask", "id: mine"))
    assert [str(p) for p in load_intent(path).perceive] == ["frames"]
    blind = text.replace("id: describe_current_subtask", "id: blind").replace(
        "  sources: [frames]", "  sources: []"
    )
    path.write_text(blind + "\nperceive: [video]\n")
    with pytest.raises(ConfigError, match=r"intent file .*perceive.*needs frames to show"):
        load_intent(path)
    path.write_text(blind)  # no field, nothing shown: a text intent
    assert [str(p) for p in load_intent(path).perceive] == ["text"]


def test_a_text_only_model_on_a_visual_intent_is_refused_in_one_line() -> None:
    caps = {LOCAL: {"images": False, "detail": {"chat": "no server: answered in this process"}}}
    with pytest.raises(BlindModelError) as err:
        refuse_blind([(SUBTASK, LOCAL), (DECOMPOSE, LOCAL)], caps, send_images=True, text_only_evidence=False)
    line = str(err.value)
    assert "\n" not in line and "describe_current_subtask must see frames" in line
    assert f"model {LOCAL} is text-only" in line and "--text-only-evidence" in line
    assert "gui_task_decomposition" not in line, "a text intent needs no eyes"
    # the opt-in: the same pairs are allowed and named, to be marked
    assert refuse_blind([(SUBTASK, LOCAL)], caps, send_images=True, text_only_evidence=True) == [
        ("describe_current_subtask", LOCAL)
    ]
    # a model that sees, with images off, is as blind; with images on it passes
    vlm = {"http://gpu/v1::vlm": {"images": True}}
    assert (
        refuse_blind([(SUBTASK, "http://gpu/v1::vlm")], vlm, send_images=True, text_only_evidence=False) == []
    )
    with pytest.raises(BlindModelError, match=r"images are off"):
        refuse_blind([(SUBTASK, "http://gpu/v1::vlm")], vlm, send_images=False, text_only_evidence=False)
    # the probe's own words say why a server's model is blind
    server = {"http://h/v1::m": {"images": False, "detail": {"images": "the model did not see them"}}}
    with pytest.raises(BlindModelError, match=r"is text-only \(the model did not see them\)"):
        refuse_blind([(SUBTASK, "http://h/v1::m")], server, send_images=True, text_only_evidence=False)


@pytest.fixture(scope="module")
def keyframes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The bundled LeRobot episode's keyframes candidate (real video, 20 frames to show)."""
    run = tmp_path_factory.mktemp("ingest")
    ingest(
        [EXAMPLES / "lerobot_g1"], run, IngestConfig(workers=1, extractors=["proprio"], miners=["keyframes"])
    )
    with RunStore(run) as store:
        [cand] = list(store.records("candidates"))
        stream = next(iter(store.records("streams")))
        anchors = [a for a in store.records("anchors") if a["id"] in cand["anchor_ids"]]
    return synth_item(cand, stream, anchors, SUBTASK)


ANSWER = {
    "input_video": {"start": 0, "end": 100}, "current_subtask": "pick up the yellow bottle",
    "question": "What is the robot doing now?", "answer": "It reaches for the yellow bottle on the table.",
    "reasoning": "The hand closes around the bottle in the sampled frames.",
}  # fmt: skip


def _has_image(body: dict[str, Any]) -> bool:
    return any(
        isinstance(m.get("content"), list) and any(p.get("type") == "image_url" for p in m["content"])
        for m in body.get("messages", [])
    )


def _sees(req: Any) -> Reply:
    """A vision server: names the probe's colours, fills the schema."""
    from support.openai_server import _png_colour

    body = req.body or {}
    props = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema", {}).get("properties")
    if props is None:
        urls = [p["image_url"]["url"] for m in body["messages"] if isinstance(m["content"], list)
                for p in m["content"] if p.get("type") == "image_url"]  # fmt: skip
        return Reply.text(_png_colour(urls[0]) if urls else "OK")
    return Reply.json({"probe": 7} if "probe" in props else ANSWER)


def _refuses_images(req: Any) -> Reply:
    """A text-only server: a request with images gets the HTTP 500 such servers send."""
    if _has_image(req.body or {}):
        return Reply.error(500, "Image input is not supported for this model")
    return _sees(req)


def _run(stage: SynthesizeStage, item: dict[str, Any]) -> Any:
    return asyncio.run(stage.aprocess(item))


def test_a_vision_model_is_sent_the_frames_and_the_record_says_so(
    keyframes: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATACLAW_CACHE_DIR", str(tmp_path / "cache"))
    with OpenAIServer(responder=_sees) as server:
        stage = SynthesizeStage(RouteConfig.omni(f"{server.base_url}::vlm"), catalog=CATALOG)
        [rec] = _run(stage, keyframes)
        bodies = [b for b in server.chat_bodies() if "input_video" in str(b.get("response_format"))]
    [body] = bodies
    carried = sum(1 for m in body["messages"] if isinstance(m["content"], list)
                  for p in m["content"] if p.get("type") == "image_url")  # fmt: skip
    assert carried == len(rec["frames"]) == 20
    assert rec["images"] == rec["sent"]["images"] == 20 and rec["sent"]["frames"] == rec["frames"]
    assert rec["sent"]["bytes"] > 20 * 1000 and rec["evidence"] == "perceived"
    assert rec["perceive"] == ["frames"]


@pytest.mark.parametrize("allowed", [False, True])
def test_images_dropped_on_the_way_are_recorded_as_not_sent(
    keyframes: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, allowed: bool
) -> None:
    """A server that refuses images mid-run (--send-images auto drops them): the answer was made from
    text alone — a reject without the opt-in, a record marked text_only with 0 images sent with it."""
    from dataclaw.tailor.synthesis.route import Router

    monkeypatch.setenv("DATACLAW_CACHE_DIR", str(tmp_path / "cache"))
    with OpenAIServer(responder=_refuses_images) as server:
        route = RouteConfig.omni(f"{server.base_url}::text-only")
        router = Router(route, model_options={"drop_images": True})
        stage = SynthesizeStage(route, catalog=CATALOG, router=router, text_only_evidence=allowed)
        result = _run(stage, keyframes)
        answered = [b for b in server.chat_bodies() if "input_video" in str(b.get("response_format"))]
    assert answered and not _has_image(answered[-1]), "the answer that was kept carried no image"
    if not allowed:
        assert result.reason == "not_perceived", result
        assert "dropped the 20 frames" in result.message and "--text-only-evidence" in result.message
        return
    [rec] = result
    assert rec["images"] == 0 and rec["sent"] == {"images": 0, "frames": [], "bytes": 0}
    assert rec["evidence"] == "text_only" and len(rec["frames"]) == 20  # listed as text, not seen


def test_no_request_is_made_for_a_visual_intent_when_the_model_cannot_see(
    keyframes: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATACLAW_CACHE_DIR", str(tmp_path / "cache"))
    with OpenAIServer(responder=_sees) as server:
        spec = f"{server.base_url}::text-only"
        refused = _run(
            SynthesizeStage(RouteConfig.omni(spec), catalog=CATALOG, vision={spec: False}), keyframes
        )
        off = _run(SynthesizeStage(RouteConfig.omni(spec), catalog=CATALOG, send_images=False), keyframes)
        asked = server.request_count
        [rec] = _run(
            SynthesizeStage(RouteConfig.omni(spec), catalog=CATALOG, vision={spec: False},
                            text_only_evidence=True),
            keyframes,
        )  # fmt: skip
    assert asked == 0, "refused before any call"
    assert refused.reason == off.reason == "not_perceived"
    assert f"model {spec} is text-only" in refused.message and "images are off" in off.message
    assert rec["images"] == 0 and rec["evidence"] == "text_only" and rec["output"] == ANSWER
