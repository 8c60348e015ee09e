"""E_spec/T_spec validation by code: a valid spec passes, each referential error is caught by its code,
the model-facing schemas agree with the pydantic models, and T_spec is the runtime's C.3 shape."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest

from dataclaw.envcraft import archetypes
from dataclaw.envcraft.synth import (
    ESpec,
    IssueCode,
    ToolDecl,
    TSpec,
    check_spec,
    entities_schema,
    state_schema,
    t_spec_schema,
)
from dataclaw.envcraft.synth.spec import COMPACT, answer_to_tools


def _spec(e: dict[str, Any]) -> ESpec:
    return ESpec.model_validate({**e, "environment_name": "helpdesk", "task_description": "Support desk."})


def test_valid_spec_has_no_issues(e_answer: dict, t_answer: dict) -> None:
    assert check_spec(_spec(e_answer), TSpec.model_validate(t_answer)) == []


def test_answers_fit_the_model_schemas(e_answer: dict, t_answer: dict, split, tool_answer) -> None:
    ents, state = split(e_answer)
    jsonschema.validate(ents, entities_schema())
    attrs = {e["name"]: [a["name"] for a in e["attributes"]] for e in ents["entities"]}
    jsonschema.validate(state, state_schema(attrs))
    unknown_entity = copy.deepcopy(state)
    unknown_entity["scenarios"][0]["entities"] = ["ticket", "customer"]
    with pytest.raises(jsonschema.ValidationError):  # entity references are an enum of the entities
        jsonschema.validate(unknown_entity, state_schema(attrs))
    unstored = copy.deepcopy(state)
    unstored["collections"] = unstored["collections"][1:]
    with pytest.raises(jsonschema.ValidationError):  # one collection per entity, no fewer
        jsonschema.validate(unstored, state_schema(attrs))
    state["world_data"]["records"][0]["fields"]["colour"] = "red"
    with pytest.raises(jsonschema.ValidationError):  # a record's fields are its entity's attributes
        jsonschema.validate(state, state_schema(attrs))
    answer = tool_answer(t_answer)
    jsonschema.validate(answer, t_spec_schema(["tickets", "agents", "audit_log"]))
    assert TSpec.model_validate(answer_to_tools(answer)) == TSpec.model_validate(t_answer)  # back to C.3
    bad = dict(t_answer["tools"][1], state_fields_affected=["nowhere"])
    with pytest.raises(jsonschema.ValidationError):  # the enum keeps a constrained model in the E_spec
        jsonschema.validate(tool_answer({"tools": [t_answer["tools"][0], bad]}), t_spec_schema(["tickets"]))
    compact = t_spec_schema(["tickets", "audit_log"], COMPACT)
    small = copy.deepcopy(answer)
    small["tools"][1]["parameters"] = small["tools"][1]["parameters"][:1]  # compact: one parameter a tool
    small["tools"][1]["state_fields_affected"] = ["tickets"]  # ... and one affected field
    jsonschema.validate(small, compact)  # one read tool, then one write tool
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(answer, compact)
    with pytest.raises(jsonschema.ValidationError):  # the compact tuple fixes the side effects
        jsonschema.validate({"tools": small["tools"][::-1]}, compact)


def _set(path: str, value: Any) -> Callable[[dict, dict], None]:
    """Mutator: set ``e.<path>`` or ``t.<path>`` (dots and integer indices)."""

    def apply(e: dict, t: dict) -> None:
        root, *keys = path.split(".")
        node: Any = e if root == "e" else t
        for k in keys[:-1]:
            node = node[int(k)] if k.isdigit() else node[k]
        last = keys[-1]
        node[int(last) if last.isdigit() else last] = value

    return apply


def _dup_tool(e: dict, t: dict) -> None:
    t["tools"].append(dict(t["tools"][1]))


def _dup_entity(e: dict, t: dict) -> None:
    e["entities"].append(dict(e["entities"][1]))
    e["state_fields"].append({"name": "agents2", "kind": "collection", "entity": "agent", "description": ""})


CASES: list[tuple[str, Callable[[dict, dict], None], IssueCode, str]] = [
    ("tool field unknown", _set("t.tools.1.state_fields_affected", ["tickets", "ledger"]),
     IssueCode.UNKNOWN_STATE_FIELD, "tools[1].state_fields_affected[1]"),
    ("scenario entity unknown", _set("e.scenarios.0.entities", ["ticket", "customer"]),
     IssueCode.UNKNOWN_ENTITY, "scenarios[0].entities[1]"),
    ("state field entity unknown", _set("e.state_fields.1.entity", "robot"),
     IssueCode.UNKNOWN_ENTITY, "state_fields[1].entity"),
    ("rule entity unknown", _set("e.business_rules.0.entities", ["invoice"]),
     IssueCode.UNKNOWN_ENTITY, "business_rules[0].entities[0]"),
    ("record entity unknown", _set("e.world_data.records.0.entity", "invoice"),
     IssueCode.UNKNOWN_ENTITY, "world_data.records[0].entity"),
    ("record field unknown", _set("e.world_data.records.0.fields", {"ticket_id": "t1", "colour": "red"}),
     IssueCode.UNKNOWN_ATTRIBUTE, "world_data.records[0].fields.colour"),
    ("id field unknown", _set("e.entities.0.id_field", "id"), IssueCode.UNKNOWN_ATTRIBUTE,
     "entities[0].id_field"),
    ("attachment unknown", _set("e.scenarios.0.required_attachments", ["refund_policy"]),
     IssueCode.UNKNOWN_REFERENCE, "scenarios[0].required_attachments[0]"),
    ("entity not stored", _set("e.state_fields.1", {"name": "queue_size", "kind": "counter", "entity": ""}),
     IssueCode.UNSTORED_ENTITY, "entities[1]"),
    ("collection without entity", _set("e.state_fields.1.entity", ""), IssueCode.UNKNOWN_ENTITY,
     "state_fields[1].entity"),
    ("duplicate tool", _dup_tool, IssueCode.DUPLICATE_ID, "tools"),
    ("duplicate entity", _dup_entity, IssueCode.DUPLICATE_ID, "entities"),
    ("duplicate attribute", _set("e.entities.1.attributes.1.name", "agent_id"), IssueCode.DUPLICATE_ID,
     "entities[1].attributes"),
    ("duplicate scenario", lambda e, t: e["scenarios"].append(dict(e["scenarios"][0])),
     IssueCode.DUPLICATE_ID, "scenarios"),
    ("tool name not an identifier", _set("t.tools.0.name", "List Tickets"), IssueCode.BAD_IDENTIFIER,
     "tools[0].name"),
    ("tool name a keyword", _set("t.tools.0.name", "import"), IssueCode.BAD_IDENTIFIER, "tools[0].name"),
    ("reserved state field", _set("e.state_fields.2.name", "actions"), IssueCode.RESERVED_NAME,
     "state_fields[2].name"),
    ("no read tool", _set("t.tools.0", None), IssueCode.NO_READ_TOOL, "tools"),
    ("no write tool", _set("t.tools.1", None), IssueCode.NO_WRITE_TOOL, "tools"),
    ("affected field twice", _set("t.tools.1.state_fields_affected", ["tickets", "tickets"]),
     IssueCode.DUPLICATE_ID, "tools[1].state_fields_affected"),
    ("read tool with fields", _set("t.tools.0.state_fields_affected", ["tickets"]), IssueCode.BAD_SIDE_EFFECT,
     "tools[0].state_fields_affected"),
    ("write tool without fields", _set("t.tools.1.state_fields_affected", []), IssueCode.BAD_SIDE_EFFECT,
     "tools[1].state_fields_affected"),
    ("modifies_state disagrees", _set("t.tools.1.modifies_state", False), IssueCode.BAD_SIDE_EFFECT,
     "tools[1].modifies_state"),
    ("required parameter missing", _set("t.tools.1.parameters.required", ["ticket_id", "note"]),
     IssueCode.BAD_PARAMETER, "tools[1].parameters.required"),
    ("parameter named session", _set("t.tools.1.parameters.properties.session", {"type": "string"}),
     IssueCode.RESERVED_NAME, "tools[1].parameters.properties.session"),
    ("bad base time", _set("e.scenarios.0.base_time", "next Monday"), IssueCode.BAD_TIME,
     "scenarios[0].base_time"),
    ("zero weight", _set("e.scenarios.0.scoring_rules.0.weight", 0), IssueCode.BAD_WEIGHT,
     "scenarios[0].scoring_rules[0].weight"),
    ("gold and stale", _set("e.scenarios.0.stale_facts", ["t1 is priority 1"]), IssueCode.CONTRADICTION,
     "scenarios[0]"),
    ("no scenarios", _set("e.scenarios", []), IssueCode.EMPTY, "scenarios"),
    ("blank gold fact", _set("e.scenarios.0.gold_facts", [" "]), IssueCode.EMPTY,
     "scenarios[0].gold_facts[0]"),
    ("no gold facts", _set("e.scenarios.0.gold_facts", []), IssueCode.EMPTY, "scenarios[0].gold_facts"),
    ("forbidden sequence names an unknown tool",
     _set("e.constraints", {"forbidden_action_sequences": [["assign_ticket", "close_ticket"]]}),
     IssueCode.UNKNOWN_TOOL, "constraints.forbidden_action_sequences[0][1]"),
    ("long text", _set("e.entities.0.description", "x" * 2001), IssueCode.TEXT_TOO_LONG,
     "entities[0].description"),
]  # fmt: skip


@pytest.mark.parametrize(("label", "mutate", "code", "path"), CASES, ids=[c[0] for c in CASES])
def test_each_error_is_caught(
    e_answer: dict, t_answer: dict, label: str, mutate: Callable, code: IssueCode, path: str
) -> None:
    mutate(e_answer, t_answer)
    t_answer["tools"] = [t for t in t_answer["tools"] if t is not None]
    issues = check_spec(_spec(e_answer), TSpec.model_validate(t_answer))
    assert (code, path) in {(i.code, i.path) for i in issues}, [i.line() for i in issues]
    assert all(i.message for i in issues)


def test_unknown_reference_message_lists_what_is_declared(e_answer: dict, t_answer: dict) -> None:
    t_answer["tools"][1]["state_fields_affected"] = ["ledger"]
    (issue,) = check_spec(_spec(e_answer), TSpec.model_validate(t_answer))
    assert issue.line() == (
        "unknown_state_field at tools[1].state_fields_affected[0]: state field 'ledger' is not declared "
        "(declared: agents, audit_log, tickets)"
    )


@pytest.mark.parametrize("name", archetypes.names())
def test_t_spec_is_the_runtime_unified_schema(name: str) -> None:
    """Every archetype tool's C.3 schema (``ToolSpec.unified_schema``) parses as a ToolDecl and renders back
    unchanged: T_spec and the runtime speak one format, so a compiler can target it."""
    for unified in archetypes.get(name).env_cls.tools.unified_schemas():
        assert ToolDecl.model_validate(unified).unified_schema() == unified


def test_embedded_models_get_compact_bounds(e_answer: dict) -> None:
    from dataclaw.envcraft.synth.expand import limits_for
    from dataclaw.envcraft.synth.spec import COMPACT, FULL

    assert limits_for("local:smollm2-135m") is COMPACT and limits_for("openai:gpt-4o") is FULL
    compact = entities_schema(COMPACT)
    ent = compact["properties"]["entities"]
    assert ent["maxItems"] == 1 and ent["items"]["properties"]["attributes"]["maxItems"] == 4
    assert ent["items"]["properties"]["description"] == {"type": "string", "minLength": 1, "maxLength": 80}
    scenarios = state_schema({"ticket": ["ticket_id"]}, COMPACT)["properties"]["scenarios"]
    assert scenarios["items"]["properties"]["gold_facts"] == {
        "type": "array",
        "items": {"type": "string", "minLength": 1, "maxLength": 80},
        "maxItems": 1,
        "minItems": 1,
    }
    with pytest.raises(jsonschema.ValidationError):  # two entities are over the compact bound
        jsonschema.validate({"domains": ["helpdesk"], "entities": e_answer["entities"]}, compact)
    assert len(t_spec_schema(["tickets"], COMPACT)["properties"]["tools"]["prefixItems"]) == 2
    assert t_spec_schema(["tickets"])["properties"]["tools"]["maxItems"] == 10


def test_tool_answer_conversion(t_answer: dict, tool_answer) -> None:
    answer = tool_answer(t_answer)
    answer["tools"][1]["parameters"][0]["default"] = "t1"  # a required parameter's default means nothing
    tools = answer_to_tools(answer)["tools"]
    assert tools[1]["parameters"]["required"] == ["ticket_id", "agent_id"]
    assert "default" not in tools[1]["parameters"]["properties"]["ticket_id"]
    assert tools[0]["parameters"]["properties"]["status"]["default"] == "open"  # optional keeps its default
    answer["tools"][1]["parameters"].append(dict(answer["tools"][1]["parameters"][0]))
    with pytest.raises(ValueError, match="parameter 'ticket_id' is declared twice"):
        answer_to_tools(answer)
