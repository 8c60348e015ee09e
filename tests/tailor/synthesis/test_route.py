"""Omni vs Expert routing (B.2.2): configs, the model per domain, the choice recorded per sample."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: makes `support` importable

from dataclaw.core.errors import ConfigError
from dataclaw.tailor.intents.base import Domain
from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.synthesis.route import RouteConfig, RouteMode, Router
from dataclaw.tailor.synthesis.stage import SynthesizeStage, synth_item
from dataclaw.tailor.validation.stage import ValidateStage
from support.openai_server import OpenAIServer, Reply


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATACLAW_CACHE_DIR", str(tmp_path / "cache"))


def test_omni_routes_every_domain_to_one_model() -> None:
    cfg = RouteConfig.from_cli("openai:gpt-4o")
    assert cfg.mode is RouteMode.OMNI
    assert {cfg.spec_for(d) for d in Domain} == {"openai:gpt-4o"}


def test_expert_routes_per_domain_with_default() -> None:
    cfg = RouteConfig.from_cli(
        "local:smollm2-135m", ["gui=openai:gui-expert", "embodied=openai:robot-expert"]
    )
    assert cfg.mode is RouteMode.EXPERT
    assert cfg.spec_for(Domain.GUI) == "openai:gui-expert"
    assert cfg.spec_for(Domain.EMBODIED) == "openai:robot-expert"
    assert cfg.spec_for(Domain.EDUCATION) == "local:smollm2-135m"


def test_expert_without_default_refuses_unrouted_domains() -> None:
    cfg = RouteConfig.from_cli(None, ["gui=openai:gui-expert"])
    catalog = IntentCatalog.builtin()
    router = Router(cfg)
    router.check([catalog.get("gui_task_reconstruction")])
    with pytest.raises(ConfigError, match="no model for domain 'embodied'"):
        router.check([catalog.get("robot_fault_recovery")])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((None, None), "give a model"),
        (("m", ["gui"]), "expected DOMAIN=MODEL"),
        (("m", ["kitchen=openai:x"]), "experts.kitchen"),
    ],
)
def test_bad_cli_routing(args: tuple, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        RouteConfig.from_cli(*args)


def test_routing_config_file(tmp_path: Path) -> None:
    path = tmp_path / "route.yaml"
    path.write_text(
        "route:\n  mode: expert\n  default: local:smollm2-135m\n  experts:\n    gui: openai:gui\n"
    )
    cfg = RouteConfig.from_file(path)
    assert cfg.experts == {Domain.GUI: "openai:gui"} and cfg.default == "local:smollm2-135m"
    path.write_text("mode: omni\ndefault: openai:x\nexperts: {gui: openai:gui}\n")
    with pytest.raises(ConfigError, match="omni routing uses one model"):
        RouteConfig.from_file(path)
    with pytest.raises(ConfigError, match="does not exist"):
        RouteConfig.from_file(tmp_path / "none.yaml")


SID = "stream:ep-1"
ROBOT = {
    "id": SID,
    "modality": "robot",
    "fps": 30.0,
    "frame_count": 300,
    "metadata": {"task": "Pick up the cup"},
}
KEYFRAMES = {
    "id": f"{SID}/cand-k", "stream_id": SID, "kind": "keyframes", "camera": "cam", "fps": 30.0,
    "frame_count": 300, "span": {"start": 0, "end": 299, "t_start": 0.0, "t_end": 9.97},
    "frames": [10, 80, 150, 220, 290], "why": "uniform", "payload": {},
}  # fmt: skip
SEG = {
    "id": "stream:v/cand-seg", "stream_id": "stream:v", "kind": "dynamic_segment", "camera": "video",
    "fps": 24.0, "frame_count": 282, "span": {"start": 10, "end": 200, "t_start": 0.4, "t_end": 8.3},
    "frames": [20, 60, 100, 140, 180], "why": "motion", "payload": {},
}  # fmt: skip
VIDEO = {"id": "stream:v", "modality": "video", "fps": 24.0, "frame_count": 282, "metadata": {}}

ROBOT_ANSWER = {
    "input_video": {"start": 0, "end": 120}, "next_subtask": "grasp the cup with the right hand",
    "question": "What should the robot do next?", "answer": "Close the right hand around the cup.",
    "reasoning": "The hand has reached the cup and is still open.",
}  # fmt: skip
WORLD_ANSWER = {
    "input_frames": [20, 60], "output_frames": [140], "question": "What happens next in this clip?",
    "answer": "The person reaches the table.", "reasoning": "They walk toward the table in the early frames.",
}  # fmt: skip


def test_expert_routing_sends_each_domain_to_its_expert_and_records_it() -> None:
    catalog = IntentCatalog.builtin()
    with (
        OpenAIServer(responder=lambda r: Reply.json(ROBOT_ANSWER)) as robot_srv,
        OpenAIServer(responder=lambda r: Reply.json(WORLD_ANSWER)) as world_srv,
    ):
        robot_spec, world_spec = f"{robot_srv.base_url}::robot", f"{world_srv.base_url}::world"
        cfg = RouteConfig.from_cli(world_spec, [f"embodied={robot_spec}"])
        stage = SynthesizeStage(cfg, catalog=catalog, send_images=False, text_only_evidence=True)
        items = [
            synth_item(KEYFRAMES, ROBOT, [], catalog.get("predict_next_subtask")),
            synth_item(SEG, VIDEO, [], catalog.get("world_model_prediction")),
        ]
        responses = [asyncio.run(stage.aprocess(it))[0] for it in items]
        assert robot_srv.request_count == 1 and world_srv.request_count == 1
    assert [r["model"] for r in responses] == [robot_spec, world_spec]
    assert {r["router"] for r in responses} == {"expert"}
    validate = ValidateStage(catalog)
    samples = [validate.process(r)[0] for r in responses]
    assert [s["route"]["model"] for s in samples] == [robot_spec, world_spec]
    assert {s["route"]["router"] for s in samples} == {"expert"}
    assert samples[0]["domain"] == "embodied" and samples[1]["domain"] == "aigc_world"
