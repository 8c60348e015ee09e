"""Fuzzy intents (A.4.3): vague requests resolve to catalogue intents by MiniLM similarity plus the model,
and the choice and its reason are recorded."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: makes `support` importable

from dataclaw.models import get_model
from dataclaw.models.embed import Embedder, minilm_path
from dataclaw.tailor.intents.fuzzy import FuzzyResolver
from dataclaw.tailor.intents.registry import IntentCatalog
from support.openai_server import OpenAIServer, Reply

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def resolver() -> FuzzyResolver:
    return FuzzyResolver(IntentCatalog.builtin(), Embedder())


def test_the_embedder_is_offline_and_normalised() -> None:
    assert (minilm_path() / "model.safetensors").is_file()
    emb = Embedder()
    vecs = emb.embed(["a robot arm grasps a cup", "a robot arm grasps a cup", "a lecture on calculus"])
    assert vecs.shape == (3, 384)
    assert abs(float((vecs[0] ** 2).sum()) - 1.0) < 1e-4
    sims = emb.similarity("a robot picks up a mug", ["a robot arm grasps a cup", "a lecture on calculus"])
    assert sims[0] > sims[1]


@pytest.mark.parametrize(
    ("request_text", "kind", "modality", "expected"),
    [
        ("I want clips with lots of motion to train my text-to-video generator", "dynamic_segment", "video",
         "video_generation_segment"),
        ("teach an agent to walk from the bed to the desk in this room", "dynamic_segment", "video",
         "vln_navigation"),
        ("data where the robot gets stuck and has to recover", "fault_window", "robot",
         "robot_fault_recovery"),
        ("what will the robot do next?", "keyframes", "robot", "predict_next_subtask"),
        ("shuffle the steps of this computer task and make the model put them back in order", "gui_task",
         "gui", "gui_task_reconstruction"),
    ],
)  # fmt: skip
def test_embedding_similarity_ranks_the_fitting_intent_first(
    resolver: FuzzyResolver, request_text: str, kind: str, modality: str, expected: str
) -> None:
    ranked = resolver.rank(request_text, kind, modality)
    assert ranked[0][0].id == expected, [(i.id, round(s, 3)) for i, s in ranked]
    choice = asyncio.run(resolver.aresolve(request_text, kind, modality))
    assert choice.chosen == [expected] and choice.method == "embedding"
    assert "embedding similarity" in choice.reason and choice.scores[expected] == max(choice.scores.values())


def test_the_model_chooses_among_the_top_k_and_says_why(resolver: FuzzyResolver, tmp_path: Path) -> None:
    seen: list[dict] = []

    def answer(req) -> Reply:
        seen.append(req.body)
        enum = req.body["response_format"]["json_schema"]["schema"]["properties"]["intents"]["items"]["enum"]
        return Reply.json({"intents": [enum[-1]], "reason": "The clip shows a walk through a room."})

    with OpenAIServer(responder=answer) as server:
        model = get_model(f"{server.base_url}::chooser", cache=False)
        fuzzy = FuzzyResolver(resolver.catalog, resolver.embedder, model, top_k=3)
        choice = asyncio.run(
            fuzzy.aresolve("make some training data from this video", "dynamic_segment", "video")
        )
    enum = seen[0]["response_format"]["json_schema"]["schema"]["properties"]["intents"]["items"]["enum"]
    assert len(enum) == 3 and set(enum) == set(choice.scores)
    assert choice.chosen == [enum[-1]] and choice.method == "embedding+model"
    assert choice.reason == "The clip shows a walk through a room." and choice.model.endswith("::chooser")
    assert "make some training data from this video" in seen[0]["messages"][1]["content"]


def test_a_failing_model_falls_back_to_the_nearest_intent(resolver: FuzzyResolver) -> None:
    with OpenAIServer(responder=lambda req: Reply.text("I would pick the second one")) as server:
        model = get_model(f"{server.base_url}::chooser", cache=False)
        fuzzy = FuzzyResolver(resolver.catalog, resolver.embedder, model)
        choice = asyncio.run(fuzzy.aresolve("robot stalls, recovery data", "keyframes", "robot"))
    assert choice.method == "embedding" and len(choice.chosen) == 1
    assert "could not choose" in choice.reason


def test_no_applicable_intent_chooses_nothing(resolver: FuzzyResolver) -> None:
    choice = asyncio.run(resolver.aresolve("anything", "no_such_kind"))
    assert choice.chosen == [] and "no intent applies" in choice.reason
