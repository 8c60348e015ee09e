"""Archetype retrieval: realistic specs rank the expected archetype first; top two; pins, fallback, the
prompt block; deterministic."""

from __future__ import annotations

import pytest

from dataclaw.core.errors import ConfigError
from dataclaw.envcraft.scenarios import load_catalogue
from dataclaw.envcraft.synth import ESpec, TSpec, prompt_section, retrieve, score_all
from dataclaw.envcraft.synth.retrieval import stem


def _spec(name: str, description: str, entities: dict[str, list[str]], tools: list[tuple[str, str]]) -> tuple:
    e = ESpec.model_validate(
        {
            "environment_name": name,
            "task_description": description,
            "entities": [
                {
                    "name": n,
                    "id_field": attrs[0],
                    "attributes": [{"name": a, "type": "string"} for a in attrs],
                }
                for n, attrs in entities.items()
            ],
            "state_fields": [{"name": f"{n}s", "kind": "collection", "entity": n} for n in entities],
        }
    )
    t = TSpec.model_validate(
        {
            "tools": [
                {"name": tn, "description": td, "side_effect": "read", "modifies_state": False}
                for tn, td in tools
            ]
        }
    )
    return e, t


SPECS = {
    "temporal_scheduling": _spec(
        "team_calendar",
        "Book meeting rooms and manage calendars across time zones.",
        {"calendar": ["calendar_id", "timezone", "working_hours"], "event": ["event_id", "start", "end"]},
        [("find_free_slots", "Availability of a calendar on a date."), ("resolve_conflict", "Fix overlaps.")],
    ),
    "transactional_workspace": _spec(
        "helpdesk",
        "Support desk where agents log in and work a ticket queue.",
        {"ticket": ["ticket_id", "title", "assignee"], "comment": ["comment_id", "body"]},
        [("login", "Authenticate an account."), ("add_comment", "Comment on a ticket.")],
    ),
    "event_triggering": _spec(
        "home_automation",
        "IFTTT-style rules: when a trigger event matches a condition, run actions.",
        {"rule": ["rule_id", "trigger", "condition"], "event": ["event_id", "source"]},
        [("inject_event", "Fire an event through the rules."), ("list_actions", "The action log.")],
    ),
    "stream_processing": _spec(
        "telemetry_bus",
        "Publish telemetry to typed streams; subscribers acknowledge delivered events.",
        {"stream": ["stream_id", "schema"], "subscription": ["subscription_id", "filter"]},
        [("publish", "Publish to a stream."), ("acknowledge", "Ack pending events.")],
    ),
    "workflow_orchestration": _spec(
        "release_pipeline",
        "CI/CD pipelines of stages with dependencies run by workers, with retry and rollback.",
        {"pipeline": ["pipeline_id", "stages"], "worker": ["worker_id", "capabilities"]},
        [("run_stage", "Run one stage."), ("rollback", "Compensate completed stages.")],
    ),
    "state_machine": _spec(
        "loan_origination",
        "Loan applications move through a guarded lifecycle state machine with approval transitions.",
        {"application": ["application_id", "state"], "machine": ["machine_id", "transitions"]},
        [("transition", "Move an application to a target state."), ("approve", "Approve a loan.")],
    ),
    "bilateral_matching": _spec(
        "talent_marketplace",
        "Match candidate resumes to jobs by weighted criteria and rank the matches.",
        {"candidate": ["candidate_id", "skills"], "job": ["job_id", "requirements"]},
        [("run_matching", "Score candidates against jobs."), ("accept_match", "Accept a match.")],
    ),
    "human_agent_interaction": _spec(
        "support_chat",
        "A customer chats with the agent; discover the hidden persona and intent before patience runs out.",
        {"conversation": ["conversation_id", "mood"], "message": ["message_id", "text"]},
        [("send_message", "Reply to the customer."), ("summarize_conversation", "Summarise the dialogue.")],
    ),
    "cross_tool_pipeline": _spec(
        "media_monitoring",
        "Ingest sources, transcribe audio and video, aggregate with dedup and render a markdown digest.",
        {"source": ["source_id", "format"], "job": ["job_id", "type"]},
        [("ingest_source", "Register and parse a source."), ("render_report", "Render the summary.")],
    ),
}


@pytest.mark.parametrize("expected", sorted(SPECS))
def test_realistic_spec_retrieves_its_archetype_first(expected: str) -> None:
    e, t = SPECS[expected]
    found = retrieve(e, t)
    assert 1 <= len(found) <= 2 and found[0].name == expected, [(r.name, r.score, r.matched) for r in found]
    assert all(r.score >= 1 for r in found) and (len(found) == 1 or found[0].score > found[1].score)
    assert not found[0].fallback and found[0].matched


def test_catalogue_scenarios_retrieve_what_their_descriptions_say() -> None:
    cat = load_catalogue()
    expect = {
        "scheduling_reminders": "temporal_scheduling",
        "reservation_booking": "temporal_scheduling",
        "support_ticketing": "transactional_workspace",
        "workflow_job_scheduling": "workflow_orchestration",
        "sensor_device_management": "stream_processing",
        "travel_compliance_booking_closure": "state_machine",
        "end_to_end_interview_process_hosting": "bilateral_matching",
        "cross_modal_content_transcription_summarization": "cross_tool_pipeline",
        "home_office_security_patrol": "event_triggering",
        "churn_warning_proactive_retention": "human_agent_interaction",
    }
    for sid, name in expect.items():
        assert retrieve(cat.get(sid).text())[0].name == name, sid


def test_pins_fallback_and_prompt_block() -> None:
    e, t = SPECS["temporal_scheduling"]
    pinned = retrieve(e, t, pinned=["stream_processing"])
    assert [r.name for r in pinned] == ["stream_processing", "temporal_scheduling"] and pinned[0].pinned
    with pytest.raises(ConfigError, match="unknown archetype 'teleport'"):
        retrieve(e, t, pinned=["teleport"])
    (fallback,) = retrieve("Quantum widget frobnicator.")
    assert fallback.name == "transactional_workspace" and fallback.fallback and fallback.score == 0
    block = prompt_section(retrieve(e, t))
    assert block.startswith("## Archetype 6: Multi-Resource Temporal Scheduling\n")
    assert "four-strategy taxonomy" in block and "envcraft/archetypes/temporal_scheduling/ (" in block
    rec = retrieve(e, t)[0].to_dict()
    assert rec["name"] == "temporal_scheduling" and "temporal_scheduling/env.py" in rec["reference_files"]


def test_scoring_is_deterministic_and_stems_word_forms() -> None:
    text = "Schedules, scheduling and a scheduled meeting; bookings for rooms."
    assert score_all(text) == score_all(text)
    assert stem("scheduling") == stem("schedules") == stem("schedule")
    assert stem("bookings") == stem("booking") == "book"
    assert stem("station") != stem("state")
    top = score_all(text)[0]
    assert top.name == "temporal_scheduling" and {"schedule", "meeting", "room", "booking"} <= set(
        top.matched
    )


def test_at_most_the_top_two_of_many_matches() -> None:
    text = "Calendar events trigger rules that publish to a stream and start pipeline stages on workers."
    positive = [r.name for r in score_all(text) if r.score > 0]
    assert len(positive) >= 4
    assert [r.name for r in retrieve(text)] == positive[:2]
