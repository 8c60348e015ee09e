"""Selection, not luck (issue 27): N generations per request, one re-ask with the failed checks, the best
passing answer kept; never a failing answer turned into a sample.

The model is a real OpenAI-compatible server on loopback (``tests/support/openai_server.py``) reached
through the real client and response cache; the answers are the real robot_fault_recovery request's.
"""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from dataclaw.models import get_model
from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.synthesis.route import RouteConfig
from dataclaw.tailor.synthesis.select import Selection, generate, judge, rank, retry_message, warnings
from dataclaw.tailor.synthesis.stage import SynthesizeStage, synth_item
from dataclaw.tailor.validation.base import Failure, ValidationIssue
from dataclaw.tailor.validation.stage import ValidateStage, check_answer
from support.openai_server import OpenAIServer, Reply

ROBOT = {
    "id": "stream:ep-1", "modality": "robot", "fps": 30.0, "frame_count": 393,
    "metadata": {"task": "Pick up the yellow bottle on the table."},
}  # fmt: skip
FAULT = {
    "id": "stream:ep-1/cand-fault", "stream_id": "stream:ep-1", "kind": "fault_window", "camera": "cam",
    "fps": 30.0, "frame_count": 393, "observation": {"start": 48, "end": 137, "t_start": 1.6, "t_end": 4.57},
    "future": {"start": 138, "end": 227, "t_start": 4.6, "t_end": 7.57},
    "observation_frames": [53, 76, 98, 121], "future_frames": [149, 194], "why": "test", "payload": {},
}  # fmt: skip
GOOD = {
    "fault_type": "approach_stall",
    "input_video": {"start": 60, "end": 130},
    "freeze_frame": 100,
    "repeat_count": 30,
    "output_video": {"start": 140, "end": 220},
    "output_image": 190,
    "question": "The robot froze while reaching for the bottle. What went wrong and how should it recover?",
    "answer": "It stalled on approach; resume the reach and close the hand. <video_gen> <image_recall>",
    "reasoning": "The hand stops moving for many frames before contact; the future shows the grasp.",
}
# the embedded model's real answer shape to this request: a question that is no question, a freeze frame
# outside the observation range
BAD = {**GOOD, "question": "10.27, answer: ", "freeze_frame": 300}


@pytest.fixture()
def request_parts(tmp_path: Path) -> tuple[Any, dict, dict, list]:
    catalog = IntentCatalog.builtin()
    intent = catalog.get("robot_fault_recovery")
    stage = SynthesizeStage(RouteConfig.omni("replay:unused.jsonl"), catalog=catalog, distractor_pool=[])
    ctx, schema, messages = stage.prepare(synth_item(FAULT, ROBOT, [], intent), intent)
    return intent, ctx, schema, messages


def run_generate(
    server: OpenAIServer, parts: tuple, selection: Selection, cache: bool = False, seed: int = 0
) -> Any:
    intent, ctx, schema, messages = parts
    model = get_model(f"{server.base_url}::m", cache=cache)

    async def check(output: Any) -> list[Failure]:
        return check_answer(intent, output, ctx, schema)

    async def go() -> Any:
        try:
            params = {"temperature": intent.request.temperature, "max_tokens": intent.request.max_tokens}
            return await generate(model, messages, schema, [], params, check, ctx, selection, seed)
        finally:
            await model.aclose()

    return asyncio.run(go())


def test_each_generation_is_its_own_request_and_the_passing_one_is_kept(request_parts, tmp_path, monkeypatch):
    monkeypatch.setenv("DATACLAW_CACHE_DIR", str(tmp_path / "cache"))
    # greedy answer bad (in the schema's shape: cached like any answer), sampled answer good
    shaped_bad = {**GOOD, "question": "10.27, answer: "}
    responder = lambda req: Reply.json(GOOD if req.body.get("seed") is not None else shaped_bad)  # noqa: E731
    with OpenAIServer(responder=responder) as server:
        out = run_generate(server, request_parts, Selection(n=2, retries=1), cache=True, seed=5)
        bodies = server.chat_bodies()
        assert len(bodies) == 2  # no re-ask: one passed
        assert sorted(b.get("seed") or 0 for b in bodies) == [0, 6]  # the greedy one sends none
        assert sorted(b["temperature"] for b in bodies) == [0.0, 0.7]
        assert out.chosen.index == 1 and out.chosen.passed and out.attempt.output == GOOD
        rec = out.record()
        assert rec["selection"] == {"chosen": 1, "passed": 1, "asked": 2, "retried": False}
        assert [g["passed"] for g in rec["generations"]] == [False, True]
        assert rec["generations"][0]["failures"][0]["reason"] == "not_a_question"
        # a second run is served by the cache: two distinct cached answers, not one answer twice
        again = run_generate(server, request_parts, Selection(n=2, retries=1), cache=True, seed=5)
        assert len(server.chat_bodies()) == 2 and again.attempt.output == GOOD


def test_no_passing_answer_is_re_asked_once_with_its_failures(request_parts):
    def responder(req: Any) -> Reply:
        last = req.body["messages"][-1]["content"]
        return Reply.json(GOOD if "Your answer failed these checks" in str(last) else BAD)

    with OpenAIServer(responder=responder) as server:
        out = run_generate(server, request_parts, Selection(n=2, retries=1))
        bodies = server.chat_bodies()
    assert len(bodies) == 3
    follow = bodies[2]["messages"]
    assert follow[-2]["role"] == "assistant" and json.loads(follow[-2]["content"]) == BAD
    ask = follow[-1]["content"]
    # the failed checks, most severe first: the freeze frame (structure) before the question (content)
    assert ask.index("freeze") < ask.index("not a question")
    assert out.chosen.retry and out.chosen.passed and out.attempt.output == GOOD


def test_nonsense_in_the_right_shape_is_never_chosen_into_a_sample(request_parts):
    """Every answer fails (the re-ask too): the least bad is kept and the validate stage still rejects it
    for its most severe failure — selection picks, it does not pass."""
    worse = {**BAD, "output_image": 5}  # also an image outside the future range: more failures
    replies = iter([BAD, worse, worse])
    with OpenAIServer(responder=lambda req: Reply.json(next(replies))) as server:
        out = run_generate(server, request_parts, Selection(n=2, retries=1))
    assert len(out.attempts) == 3 and not any(g.passed for g in out.ranked)
    assert out.attempt.output == BAD  # fewer failures at the same worst tier
    intent, ctx, schema, messages = request_parts
    rec = {"id": "r", "candidate_id": FAULT["id"], "stream_id": ROBOT["id"], "intent": intent.id,
           "model": "m", "router": "omni", "request_hash": "h", "messages": messages, "schema": schema,
           "context": ctx, "frames": ctx["frame_indices"], **out.record()}  # fmt: skip
    reject = ValidateStage(IntentCatalog.builtin()).process(rec)
    assert reject.reason == "freeze_outside_observation"
    assert {f["reason"] for f in reject.detail["failures"]} >= {
        "freeze_outside_observation",
        "not_a_question",
    }


def test_a_raw_newline_inside_a_string_is_read_not_unparsable(request_parts):
    """The 8 'unparsable' answers were complete JSON with a raw newline in a string; read, then checked."""
    good_text = json.dumps(GOOD).replace("; resume", ";\nresume").replace('"answer": "It', '"answer": "It')
    assert "\n" in good_text
    long_q = {**GOOD, "question": "x" * 400}  # over the schema's maxLength: valid JSON, wrong shape
    bad_text = json.dumps(long_q).replace("; resume", ";\nresume")
    replies = iter([good_text, bad_text])
    with OpenAIServer(responder=lambda req: Reply.text(next(replies))) as server:
        good = run_generate(server, request_parts, Selection(n=1, retries=0))
        bad = run_generate(server, request_parts, Selection(n=1, retries=0))
    assert good.chosen.passed and "\n" in good.attempt.output["answer"]
    assert bad.attempt.output is not None and bad.attempt.error  # read as JSON, refused by its schema
    assert bad.chosen.failures[0].reason == ValidationIssue.SCHEMA_INVALID


def test_rank_prefers_fewer_warnings_then_coverage_then_sane_length(request_parts):
    _, ctx, schema, _ = request_parts
    copied = {**GOOD, "reasoning": GOOD["answer"]}  # reasoning = answer word for word: a warning
    plain = copy.deepcopy(GOOD)
    gens = [judge(0, copied, [], ctx, schema), judge(1, plain, [], ctx, schema)]
    assert gens[0].warnings and not gens[1].warnings
    assert rank(gens)[0].index == 1
    # equal warnings: the answer whose words the evidence holds wins
    grounded = {**GOOD, "question": "The robot froze reaching for the yellow bottle on the table. Why?"}
    drift = {**GOOD, "question": "The machine paused near some object somewhere. Why?"}
    a, b = judge(0, drift, [], ctx, schema), judge(1, grounded, [], ctx, schema)
    assert b.coverage > a.coverage and rank([a, b])[0].index == 1
    # a failing answer never outranks a passing one, whatever its score
    failing = judge(0, grounded, [Failure(ValidationIssue.TOO_LITTLE_TEXT, "x", "min_words")], ctx, schema)
    assert rank([failing, judge(1, copied, [], ctx, schema)])[0].index == 1


def test_warnings_flag_a_text_cut_at_its_max_length():
    schema = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 40}}}
    assert warnings({"answer": "a" * 39}, schema) == ["answer: 39 characters of at most 40 (cut off?)"]
    assert warnings({"answer": "a short answer"}, schema) == []


def test_retry_message_lists_failures_most_severe_first():
    fails = [
        Failure(ValidationIssue.TOO_LITTLE_TEXT, "key_concept: 1 words, need 2", "min_words"),
        Failure(
            ValidationIssue.INDEX_OUT_OF_RANGE, "freeze_frame: frame 900 is outside 0..392", "frame_indices"
        ),
    ]
    text = retry_message(fails)
    assert text.index("frame 900") < text.index("key_concept")


def test_generations_and_seeds_are_part_of_the_response_id():
    from dataclaw.tailor.pipeline import TailorRunConfig, response_id

    it = IntentCatalog.builtin().get("describe_current_subtask")
    one = TailorRunConfig(route=RouteConfig.omni("local:smollm2-135m"), intents=[it.id])
    two = TailorRunConfig(route=RouteConfig.omni("local:smollm2-135m"), intents=[it.id], generations=2)
    assert response_id("stream:s/cand-k", it, one, "c") != response_id("stream:s/cand-k", it, two, "c")
    with pytest.raises(Exception, match="generations must be >= 1"):
        TailorRunConfig(route=RouteConfig.omni("local:smollm2-135m"), intents=[it.id], generations=0)


def test_the_validate_stage_reuses_the_kept_answers_verdict_only_under_the_same_check_version(request_parts):
    from dataclaw.tailor.validation.stage import check_version, recorded_failures

    intent, ctx, schema, messages = request_parts
    rec = {"id": "r", "candidate_id": FAULT["id"], "stream_id": ROBOT["id"], "intent": intent.id,
           "model": "m", "router": "omni", "request_hash": "h", "messages": messages, "schema": schema,
           "context": ctx, "frames": ctx["frame_indices"], "output": BAD}  # fmt: skip
    stale = {**rec, "checks": {"version": "from-another-intent-version", "failures": []}}
    assert recorded_failures(stale, intent) is None
    reject = ValidateStage(IntentCatalog.builtin()).process(stale)  # checked again: still rejected
    assert reject.reason == "freeze_outside_observation"
    fails = [f.to_dict() for f in check_answer(intent, BAD, ctx, schema)]
    same = {**rec, "checks": {"version": check_version(intent, schema), "failures": fails}}
    assert [f.reason for f in recorded_failures(same, intent)] == [f["reason"] for f in fails]
    assert ValidateStage(IntentCatalog.builtin()).process(same).reason == reject.reason


def test_a_changed_gate_makes_recorded_verdicts_stale(request_parts, monkeypatch) -> None:
    """Verdicts recorded before a validator's code changed are not reused on resume: the check version
    covers the validators' source, not only dataclaw's version (a gate added within a release would
    otherwise never see the answers a resumed run already kept)."""
    from dataclaw.tailor.validation import stage

    intent, _, schema, _ = request_parts
    before = stage.check_version(intent, schema)
    assert stage.check_version(intent, schema) == before  # stable within one code base
    monkeypatch.setattr(stage, "_gates_digest", lambda: "another-gate-code")
    assert stage.check_version(intent, schema) != before
