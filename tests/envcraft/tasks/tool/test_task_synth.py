"""Chain grounding, parameter classification, information-hiding checks and persona matching."""

from __future__ import annotations

import asyncio
import json

import pytest

from dataclaw.envcraft import archetypes
from dataclaw.envcraft.graph import ChainSampler, build_tool_graph
from dataclaw.envcraft.tasks import GroundingError, check_text, classify, ground_chain
from dataclaw.envcraft.tasks.tool.execute import GroundReason, harvest
from dataclaw.envcraft.tasks.tool.initial import build_verifier
from dataclaw.envcraft.tasks.tool.stages import task_record
from dataclaw.envcraft.tasks.tool.synth import (
    COPY_SOURCES,
    SynthError,
    SynthReason,
    degenerate,
    instruction_prompt,
    turns_prompt,
    write_text,
)
from dataclaw.models import get_model
from support.openai_server import OpenAIServer, Reply

ENV = "temporal_scheduling"


@pytest.fixture(scope="module")
def derived_chain() -> dict:
    """A grounded chain where some parameter value came from an earlier tool output."""
    env_cls = archetypes.get(ENV).env_cls
    chains = ChainSampler([build_tool_graph(archetypes.get(ENV))]).sample(60, seed=11)
    for i, c in enumerate(chains):
        try:
            g = ground_chain(env_cls, list(c.steps), seed=i)
        except GroundingError:
            continue
        if any(s == "tool" for st in g["steps"] for s in st["sources"].values()):
            build_verifier(g)  # must also be a valid task
            return {**g, "seed": i}
    pytest.fail("no grounded chain with a tool-derived parameter in 60 samples")


def test_grounding_is_deterministic_and_records_the_data_flow(derived_chain) -> None:
    env_cls = archetypes.get(ENV).env_cls
    steps = [s["tool"] for s in derived_chain["steps"]]
    again = ground_chain(env_cls, steps, seed=derived_chain["seed"])
    assert again == {k: v for k, v in derived_chain.items() if k != "seed"}
    for i, st in enumerate(derived_chain["steps"]):
        for name, src in st["sources"].items():
            if src == "tool":
                j = st["derived_from"][name]
                assert j < i
                assert str(st["params"][name]) in str(derived_chain["steps"][j]["output"])
    assert derived_chain["steps"][-1]["side_effect"] == "write"
    assert derived_chain["initial_state"] != derived_chain["final_state"]


def test_a_step_that_always_fails_rejects_the_chain() -> None:
    env_cls = archetypes.get("transactional_workspace").env_cls
    with pytest.raises(GroundingError) as err:
        ground_chain(env_cls, ["resolve_ticket"], seed=0, setup_budget=0)  # nobody logged in, no setup
    assert err.value.reason is GroundReason.STEP_ERROR


def test_check_text_finds_missing_and_leaked_values() -> None:
    user = [{"step": 0, "tool": "t", "param": "title", "value": "Quarterly review"}]
    derived = [{"step": 1, "tool": "t", "param": "event_id", "value": "E-204"}]
    assert check_text(["Book the quarterly review please"], user, derived) == ([], [])
    assert check_text(["Book it please"], user, derived) == (["Quarterly review"], [])
    assert check_text(["Book Quarterly review, event E-204"], user, derived) == ([], ["E-204"])


def test_classify_splits_by_source(derived_chain) -> None:
    user, derived = classify(derived_chain["steps"])
    assert derived and all(r["step"] > 0 for r in derived)
    assert {(r["step"], r["param"]) for r in user}.isdisjoint({(r["step"], r["param"]) for r in derived})


def _persona() -> dict:
    return {"id": "executive-assistant", "description": "An executive assistant who schedules meetings."}


def _record() -> dict:
    """A grounded chain by hand: the event id comes from step 1's output (tool-derived), the calendar,
    strategy and start are the user's."""
    event = {"event_id": "E-101", "title": "Platform team standup", "priority": 3}
    return {
        "id": "env:x/chain-1/grounded-1",
        "steps": [
            {
                "tool": "list_events",
                "params": {"calendar_id": "room-berlin-spree"},
                "sources": {"calendar_id": "user"},
                "derived_from": {},
                "output": {"events": [event, {"event_id": "E-102", "title": "Board demo"}]},
            },
            {
                "tool": "resolve_conflict",
                "params": {"event_id": "E-101", "strategy": "reschedule", "new_start": "2026-04-16T10:00"},
                "sources": {"event_id": "tool", "strategy": "user", "new_start": "user"},
                "derived_from": {"event_id": 0},
                "output": {"event": {**event, "start": "2026-04-16T08:00:00Z"}},
            },
        ],
    }


GOOD = (
    "Please move the platform team standup in room-berlin-spree with strategy reschedule to 2026-04-16T10:00."
)
TURNS = [
    "Can you check the events in room-berlin-spree for me?",
    "Please reschedule the standup to 2026-04-16T10:00.",
]


def _write(server: OpenAIServer, record: dict | None = None, **kw) -> dict:
    model = get_model(f"{server.base_url}::t", cache=False)
    return asyncio.run(write_text(model, record or _record(), _persona(), **kw))


def test_the_prompts_state_user_values_and_describe_hidden_ones() -> None:
    rec = _record()
    _, derived = classify(rec["steps"])
    prompt = instruction_prompt(rec, derived)
    assert "room-berlin-spree" in prompt and "2026-04-16T10:00" in prompt
    assert "the event 'Platform team standup'" in prompt and "E-101" not in prompt
    assert '"' not in prompt.split("\n")[0]  # no double quotes: a small model copies them into its JSON
    turns = turns_prompt(GOOD, "An executive assistant.", rec, derived)
    assert "E-101" not in turns and "1. list the events of the calendar room-berlin-spree" in turns


def test_invalid_json_is_resampled_with_a_seed_from_the_record() -> None:
    with OpenAIServer() as server:
        server.enqueue(
            Reply.text('{"message": "2026-04-14,2026-04-16T10:00,2026-04-14,2026-04-16T10:00,2026-04'),
            Reply.json({"message": GOOD}),
            Reply.json({"messages": TURNS}),
        )
        text = _write(server)
        bodies = server.chat_bodies()
    assert text["instruction"] == GOOD and text["user_turns"] == TURNS
    assert text["tries"] == {"instruction": 2, "user_turns": 1} and text["values_added"] == []
    first, second = bodies[0], bodies[1]
    assert first["temperature"] == 0.0 and "seed" not in first
    assert second["temperature"] > 0 and isinstance(second["seed"], int)
    assert all(b["max_tokens"] <= 256 for b in bodies)  # bounded: a runaway string ends early
    with OpenAIServer() as server:  # a rerun asks the same: the response cache keeps working
        server.enqueue(Reply.text("not json"), Reply.json({"message": GOOD}), Reply.json({"messages": TURNS}))
        _write(server)
        assert server.chat_bodies()[1]["seed"] == second["seed"]


def test_omitted_user_values_are_added_by_code_and_recorded() -> None:
    short = "Please move the platform team standup in room-berlin-spree with strategy reschedule."
    turns = ["Can you check the events in room-berlin-spree?", "Please reschedule the standup."]
    with OpenAIServer() as server:
        server.enqueue(Reply.json({"message": short}), Reply.json({"messages": turns}))
        text = _write(server)
    assert text["instruction"] == short + " Details: new start 2026-04-16T10:00."
    assert text["user_turns"] == [turns[0], turns[1] + " Details: new start 2026-04-16T10:00."]
    assert text["values_added"] == [
        {"in": "instruction", "step": 1, "param": "new_start", "value": "2026-04-16T10:00"},
        {"in": "user_turns", "step": 1, "param": "new_start", "value": "2026-04-16T10:00", "turn": 1},
    ]
    with OpenAIServer(default=Reply.json({"message": short})) as server:
        with pytest.raises(SynthError) as err:
            _write(server, strict=True)
        assert server.request_count == 3  # resampled, then rejected: nothing added
    assert err.value.reason is SynthReason.MISSING_USER_VALUE and "2026-04-16T10:00" in str(err.value)


def test_task_record_carries_what_the_code_added() -> None:
    rec = {**_record(), "env": "e", "env_module": "m", "scenario_id": "s", "initial_state": {}}
    rec |= {"verifier": {}, "chain_id": "c", "write_fields": [], "distractors": {}, "verifier_check": {}}
    added = [{"in": "instruction", "step": 1, "param": "new_start", "value": "2026-04-16T10:00"}]
    text = {"instruction": GOOD, "user_turns": TURNS, "user": [], "derived": [], "values_added": added}
    task = task_record(rec, {"id": "p"}, text | {"tries": {"instruction": 1, "user_turns": 1}}, "m")
    assert task["metadata"]["values_added_by_code"] == added
    assert task["metadata"]["text_tries"] == {"instruction": 1, "user_turns": 1}


def test_a_leaked_tool_derived_value_is_rejected_never_repaired(derived_chain) -> None:
    leak = Reply.json({"message": GOOD.replace("the platform team standup", "event E-101")})
    with OpenAIServer(default=leak) as server:
        with pytest.raises(SynthError) as err:
            _write(server)
        assert server.request_count == 3
    assert err.value.reason is SynthReason.LEAKED_TOOL_VALUE and "E-101" in str(err.value)
    user, derived = classify(derived_chain["steps"])
    secret = next(str(r["value"]) for r in derived if len(str(r["value"])) >= 3)
    values = "; ".join(str(r["value"]) for r in user)
    leak = Reply.json({"message": f"Please handle {values} and also {secret} for me, thank you."})
    with OpenAIServer(default=leak) as server:
        with pytest.raises(SynthError) as err:
            _write(server, derived_chain)
    assert err.value.reason is SynthReason.LEAKED_TOOL_VALUE


@pytest.mark.parametrize(
    ("message", "why"),
    [
        ("2026-04-16T10:00, room-berlin-spree, reschedule, 2026-04-16T10:00", "words besides the values"),
        (
            "Reschedule in room-berlin-spree at 2026-04-16T10:00 and remove the event from the calendar, "
            "remove the event from the calendar, remove the event from the calendar, remove the event",
            "repeats",
        ),
        ("Please handle [event name] in room-berlin-spree, reschedule at 2026-04-16T10:00.", "placeholder"),
        (
            "Please move the standup in room-berlin-spree with reschedule to 2026-04-18T11:00.",
            "does not have",
        ),
        ("Please fix my calendar in room-berlin-spree as soon as you possibly can.", "only 1 of 3"),
    ],
)
def test_degenerate_text_is_rejected_after_the_tries(message: str, why: str) -> None:
    with OpenAIServer(default=Reply.json({"message": message})) as server:
        with pytest.raises(SynthError) as err:
            _write(server)
        assert server.request_count == 3
    assert err.value.reason is SynthReason.BAD_TEXT and why in str(err.value)
    assert "after 3 tries" in str(err.value)


def test_degenerate_turns_are_rejected() -> None:
    for turns, why in (
        (["Same thing, room-berlin-spree."] * 2, "repeats a turn"),
        (["2026-04-16T10:00"], "words"),
    ):
        with OpenAIServer() as server:
            server.enqueue(Reply.json({"message": GOOD}), *[Reply.json({"messages": turns})] * 3)
            with pytest.raises(SynthError) as err:
                _write(server)
        assert err.value.reason is SynthReason.BAD_TURNS and why in str(err.value)


def test_degenerate_detects_loops_and_value_lists() -> None:
    values = ["E-109", "cancel"]
    assert degenerate("Please cancel the event E-109 for me today.", values) is None
    assert "words" in degenerate("E-109 cancel E-109", values)
    assert "repeats" in degenerate("go to the room, go to the room, go to the room, go to the room", [])
    assert "copies" in degenerate(COPY_SOURCES[0], [], copied_from=COPY_SOURCES)


def test_a_model_that_refuses_the_request_is_a_reject_without_retries() -> None:
    with OpenAIServer(default=Reply.error(400, "bad request")) as server:
        with pytest.raises(SynthError) as err:
            _write(server)
        bodies = server.chat_bodies()
        # sent once, never retried (the models layer may probe the endpoint once to name the cause)
        assert sum(b == bodies[0] for b in bodies) == 1
    assert err.value.reason is SynthReason.MODEL_ERROR


def test_good_text_passes_and_the_prompt_hides_tool_derived_values(derived_chain, task_text_writer) -> None:
    _, derived = classify(derived_chain["steps"])
    with OpenAIServer(responder=task_text_writer) as server:
        text = _write(server, derived_chain)
        prompts = [b["messages"][-1]["content"] for b in server.chat_bodies()]
    assert len(prompts) == 2 and "executive assistant" in prompts[1]
    for r in derived:
        if isinstance(r["value"], str) and len(r["value"]) >= 3:
            assert r["value"] not in prompts[0] and r["value"] not in prompts[1]
    assert 1 <= len(text["user_turns"]) <= len(derived_chain["steps"])
    assert text["values_added"] == [] and text["tries"] == {"instruction": 1, "user_turns": 1}


@pytest.mark.slow
def test_personas_match_environments_by_embedding() -> None:
    from dataclaw.envcraft.tasks.tool.personas import PersonaMatcher, env_document, load_personas

    assert len(load_personas()) >= 30
    matcher = PersonaMatcher()
    top = matcher.top(env_document(archetypes.get("workflow_orchestration").env_cls))
    assert len(top) == 5
    assert {"release-manager", "site-reliability-engineer", "devops-engineer"} & {p.id for p, _ in top[:2]}
    sched = matcher.top(env_document(archetypes.get("temporal_scheduling").env_cls))
    assert sched[0][0].id != top[0][0].id


def test_synth_cli_strict_text_rejects_what_the_default_completes(tmp_path, capsys) -> None:
    from dataclaw.cli.app import _run

    run = tmp_path / "run"
    assert _run(["tasks", "sample", "--out", str(run), "-n", "3", "--seed", "0", "--env", ENV]) == 0
    vague = Reply.json({"message": "Please sort out my calendar conflicts for this week, thank you."})
    with OpenAIServer(default=vague) as server:
        args = ["tasks", "synth", "--run", str(run), "--model", f"{server.base_url}::t", "--strict-text"]
        assert _run(args) == 1  # no task made: exit 1, why in one line (issue 27)
    assert "0 tasks: all " in capsys.readouterr().err
    rejects = [json.loads(x) for x in (run / "rejects.jsonl").read_text().splitlines()]
    text_rejects = {r["reason"] for r in rejects if r["stage"] == "tasks"}
    assert text_rejects == {"missing_user_value"}
    assert not (run / "tasks.jsonl").exists() or not (run / "tasks.jsonl").read_text().strip()


def test_missing_values_go_to_the_turn_that_covers_their_step() -> None:
    rec = _record()
    rec["steps"].append(
        {
            "tool": "get_event",
            "params": {"event_id": "E-101", "note": "check the room"},
            "sources": {"event_id": "tool", "note": "user"},
            "derived_from": {"event_id": 0},
            "output": {},
        }
    )
    request = "Please move the platform team standup in room-berlin-spree, reschedule it to 2026-04-16T10:00."
    turns = ["Please look at the events in room-berlin-spree.", "Reschedule the standup to 2026-04-16T10:00."]
    with OpenAIServer() as server:
        server.enqueue(Reply.json({"message": request}), Reply.json({"messages": turns}))
        text = _write(server, rec)
    # 3 steps over 2 turns: turn 1 covers step 0, turn 2 steps 1 and 2 (where the note belongs)
    assert text["instruction"] == request + " Details: note check the room."
    assert text["user_turns"] == [turns[0], turns[1] + " Details: note check the room."]
    assert [(a["in"], a.get("turn"), a["step"]) for a in text["values_added"]] == [
        ("instruction", None, 2),
        ("user_turns", 1, 2),
    ]
    turns = [
        "Please look at my calendar events.",
        "Reschedule the standup to 2026-04-16T10:00, check the room.",
    ]
    with OpenAIServer() as server:
        server.enqueue(Reply.json({"message": request}), Reply.json({"messages": turns}))
        text = _write(server, rec)
    assert text["user_turns"] == [turns[0] + " Details: calendar id room-berlin-spree.", turns[1]]


def test_harvested_values_are_found_by_name_and_suffix_as_they_grow() -> None:
    """Lookups are remembered (the soundness suite looks a state's values up thousands of times) and
    forgotten when a value is added; a caller's list never changes what the next lookup finds."""
    values = harvest({"tickets": {"T-1": {"kb_article_id": "KB-1"}}, "article_id": "A-7"})
    assert values.lookup("ticket_id") == ["T-1"]
    found = values.lookup("article_id")
    assert found == ["A-7", "KB-1"]
    found.append("junk")
    assert values.lookup("article_id") == ["A-7", "KB-1"]
    values.add("legacy_article_id", "L-3")
    values.add("article_id", "A-7")  # already there: nothing new
    assert values.lookup("article_id") == ["A-7", "KB-1", "L-3"]
