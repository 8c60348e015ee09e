"""The intent catalogue: built-ins cover the five domains, user intents load from files without code,
duplicates and bad files are refused clearly, templates and schema bounds resolve per request."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dataclaw.core.errors import ConfigError
from dataclaw.models.schema import check_schema
from dataclaw.tailor.intents.base import CATALOG, Domain, TemplateError, load_intent, render, specialise
from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.materialize import materializer_names
from dataclaw.tailor.validation.base import validator_names

BUILTIN = {
    "gui_task_reconstruction", "gui_action_extraction", "gui_task_decomposition", "robot_fault_recovery",
    "predict_next_subtask", "describe_current_subtask", "robot_tutorial", "video_generation_segment",
    "world_model_prediction", "vln_navigation", "world_knowledge_qa", "daily_tutorial", "interleaved_lesson",
}  # fmt: skip


@pytest.fixture(scope="module")
def catalog() -> IntentCatalog:
    return IntentCatalog.builtin()


def test_builtins_cover_the_five_domains(catalog: IntentCatalog) -> None:
    assert BUILTIN <= set(catalog.ids())
    assert {i.domain for i in catalog} == set(Domain)
    for intent in catalog:
        check_schema(intent.output_schema)
        assert intent.description and intent.conversation[-1].role == "assistant"
        assert {s.name for s in intent.validators} <= set(validator_names())
        assert {s.name for s in intent.materialisers} <= set(materializer_names()), intent.id


def test_candidate_kinds_select_intents(catalog: IntentCatalog) -> None:
    robot = {i.id for i in catalog.for_candidate("keyframes", "robot")}
    assert {"predict_next_subtask", "describe_current_subtask", "robot_tutorial"} <= robot
    assert [i.id for i in catalog.for_candidate("fault_window", "robot")] == ["robot_fault_recovery"]
    assert "vln_navigation" not in {i.id for i in catalog.for_candidate("dynamic_segment", "robot")}
    assert catalog.for_candidate("lecture_segment", "lecture")[0].id == "interleaved_lesson"


def user_intent(tmp_path: Path, **changes: object) -> Path:
    """A user intent written as a file: a copy of a built-in with another id."""
    data = yaml.safe_load((CATALOG / "world_knowledge_qa.yaml").read_text())
    data.update({"id": "my_safety_qa", "title": "Household safety question", **changes})
    path = tmp_path / "my_intent.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_user_intent_file_loads_without_code(tmp_path: Path) -> None:
    catalog = IntentCatalog.builtin()
    intent = catalog.resolve(str(user_intent(tmp_path)))
    assert intent.id == "my_safety_qa" and intent.source.endswith("my_intent.yaml")
    assert catalog.get("my_safety_qa") is intent
    assert catalog.resolve(str(tmp_path / "my_intent.yaml")) is intent  # same file twice: one intent


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    catalog = IntentCatalog.builtin()
    with pytest.raises(ConfigError, match="already defined"):
        catalog.add_file(user_intent(tmp_path, id="vln_navigation"))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"validators": [{"name": "no_such_check"}]}, "unknown validator 'no_such_check'"),
        ({"domain": "cooking"}, "domain"),
        ({"schema": {"type": "array"}}, "JSON object"),
        ({"schema": {"type": "object", "properties": {"a": {"type": "nope"}}}}, "not valid JSON Schema"),
        ({"id": "Bad Id"}, "id"),
    ],
)
def test_bad_intent_files_name_the_problem(tmp_path: Path, changes: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        load_intent(user_intent(tmp_path, **changes))
    assert "my_intent.yaml" in str(err.value)


def test_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_intent(tmp_path / "none.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_intent(bad)
    with pytest.raises(ConfigError, match="unknown intent 'nope'"):
        IntentCatalog.builtin().resolve("nope")


def test_templates_render_dotted_paths_lists_and_blocks() -> None:
    ctx = {"task": "Pick up the bottle", "lines": ["a", "b"], "output": {"steps": [{"t": "x"}, {"t": "y"}]}}
    assert render("{{ task }}: {{ lines }}", ctx) == "Pick up the bottle: a\nb"
    assert render("{{ each output.steps }}{{ n }}={{ item.t }};{{ end }}", ctx) == "1=x;2=y;"
    assert render("{{ output.steps[].t }}", ctx) == "x\ny"
    with pytest.raises(TemplateError, match="missing"):
        render("{{ missing }}", ctx)


def test_schema_is_specialised_per_request(catalog: IntentCatalog) -> None:
    intent = catalog.get("robot_fault_recovery")
    ctx = {"obs": {"start": 48, "end": 137}, "fut": {"start": 138, "end": 227}}
    schema = intent.schema_for(ctx)
    freeze = schema["properties"]["freeze_frame"]
    assert (freeze["minimum"], freeze["maximum"]) == (48, 137)
    assert freeze["enum"] == list(range(48, 138)), "small ranges are spelled out for grammar decoders"
    assert schema["properties"]["output_image"]["minimum"] == 138
    assert "minimum" not in intent.output_schema["properties"]["output_image"] or (
        intent.output_schema["properties"]["output_image"]["minimum"] == 0
    ), "the catalogue schema itself is not modified"
    check_schema(schema)
    labels = catalog.get("gui_task_reconstruction").schema_for({"labels": ["A", "B", "C"], "n_fragments": 2})
    assert labels["properties"]["ordered_labels"]["items"]["enum"] == ["A", "B", "C"]
    assert labels["properties"]["ordered_labels"]["maxItems"] == 2
    with pytest.raises(TemplateError, match=r"obs\.start"):
        intent.schema_for({"fut": ctx["fut"]})
    with pytest.raises(ConfigError, match="names no property"):
        specialise(intent.output_schema, {"nope": intent.bounds["freeze_frame"]}, ctx)


def test_a_user_intent_file_runs_through_synthesis_and_validation(tmp_path: Path, monkeypatch) -> None:
    """No code: a YAML file with stock validators is a working intent end to end."""
    import asyncio
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from dataclaw.tailor.synthesis.route import RouteConfig
    from dataclaw.tailor.synthesis.stage import SynthesizeStage, synth_item
    from dataclaw.tailor.validation.stage import ValidateStage
    from support.openai_server import OpenAIServer, Reply

    monkeypatch.setenv("DATACLAW_CACHE_DIR", str(tmp_path / "cache"))
    catalog = IntentCatalog.builtin()
    intent = catalog.resolve(str(user_intent(tmp_path)))
    seg = {
        "id": "stream:v/cand-seg", "stream_id": "stream:v", "kind": "dynamic_segment", "camera": "video",
        "fps": 24.0, "frame_count": 282, "span": {"start": 10, "end": 200, "t_start": 0.4, "t_end": 8.3},
        "frames": [20, 60, 100, 140, 180], "why": "motion", "payload": {},
    }  # fmt: skip
    stream = {"id": "stream:v", "modality": "video", "fps": 24.0, "frame_count": 282, "metadata": {}}
    good = {
        "question": "Why is the kettle unplugged before filling?", "answer": "To avoid an electric shock.",
        "reasoning": "Water and mains power together are dangerous.", "key_frames": [60, 100],
    }  # fmt: skip
    with OpenAIServer(responder=lambda req: Reply.json(good)) as server:
        stage = SynthesizeStage(
            RouteConfig.omni(f"{server.base_url}::m"),
            catalog=catalog,
            send_images=False,
            text_only_evidence=True,
        )
        [resp] = asyncio.run(stage.aprocess(synth_item(seg, stream, [], intent)))
    [sample] = ValidateStage(catalog).process(resp)
    assert sample["intent"] == "my_safety_qa" and sample["domain"] == "daily_life"
    assert sample["conversation"][1]["content"].endswith("To avoid an electric shock.")


def test_cli_lists_the_catalogue_with_user_intents(tmp_path: Path, capsys) -> None:
    import json

    from dataclaw.cli.app import _run

    assert _run(["tailor", "intents", "--json", "--intent", str(user_intent(tmp_path))]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {r["id"] for r in rows} == BUILTIN | {"my_safety_qa"}
    assert all("schema" in r and r["conversation"] for r in rows)
