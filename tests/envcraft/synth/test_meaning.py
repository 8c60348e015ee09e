"""Meaning gates on specs (issue 26 item 2): the garbage the embedded model wrote fails, for the reasons a
reader would give; hand-written specs and specs built from ClawForge's released environments pass; each
gate on its own, with the adversarial spec that tries to slip past it."""

from __future__ import annotations

import asyncio
import copy
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from dataclaw.envcraft.scenarios import load_catalogue
from dataclaw.envcraft.synth.meaning import (
    MeaningCode,
    MeaningReport,
    check_spec_meaning,
    is_noise,
    operations,
    same_stem,
    stem,
)
from dataclaw.envcraft.synth.spec import ESpec, TSpec, answer_to_spec, answer_to_tools, check_spec

CATALOGUE = load_catalogue()
FIXTURES = Path(__file__).parent / "fixtures" / "compile"
CLAWFORGE = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "clawforge"

VET = (
    "A veterinary clinic: owners bring their pets as patients; the front desk books appointments, vets "
    "write prescriptions that need a vet's approval, and the clinic issues invoices, takes payments and "
    "refunds overpaid invoices."
)


def _codes(report: MeaningReport) -> set[str]:
    return {i.code for i in report.issues}


def _attr(name: str, type_: str = "string", description: str = "") -> dict[str, Any]:
    return {"name": name, "type": type_, "description": description}


def _entity(name: str, id_field: str, attrs: list[str], statuses: list[str] = ()) -> dict[str, Any]:
    typed = [_attr(a.split(":")[0], a.split(":")[1] if ":" in a else "string") for a in attrs]
    return {
        "name": name,
        "description": f"A {name.replace('_', ' ')}.",
        "id_field": id_field,
        "attributes": [_attr(id_field), *typed],
        "statuses": list(statuses),
    }


def _tool(name: str, effect: str, params: dict[str, str], fields: list[str] = (), **enums: list[str]) -> dict:
    props = {p: {"type": t, "description": p.replace("_", " ")} for p, t in params.items()}
    for p, values in enums.items():
        props[p]["enum"] = values
    return {
        "name": name,
        "description": name.replace("_", " ").capitalize() + ".",
        "parameters": {"type": "object", "properties": props, "required": list(params)},
        "returns": {"type": "object", "description": "the result", "success_keys": ["result"]},
        "side_effect": effect,
        "modifies_state": effect == "write",
        "state_fields_affected": list(fields) if effect == "write" else [],
    }


def _scenario(sid: str, prompt: str, entities: list[str]) -> dict[str, Any]:
    return {
        "scenario_id": sid,
        "task_prompt": prompt,
        "base_time": "2026-03-02T09:00:00Z",
        "entities": entities,
        "gold_facts": [prompt],
        "scoring_rules": [{"dimension": "outcome", "weight": 1.0, "rule": "the goal state is reached"}],
    }


def vet_clinic() -> dict[str, Any]:
    """A hand-written veterinary clinic: five related entities, concrete rules, operations as tools."""
    e = {
        "environment_name": "vet_clinic",
        "task_description": VET,
        "domains": ["veterinary_clinic"],
        "entities": [
            _entity("owner", "owner_id", ["name", "phone", "balance:number"]),
            _entity("patient", "patient_id", ["owner_id", "species", "name", "weight_kg:number"]),
            _entity("vet", "vet_id", ["name", "licence"]),
            _entity(
                "appointment",
                "appointment_id",
                ["patient_id", "vet_id", "starts_at"],
                ["booked", "checked_in", "done", "cancelled"],
            ),
            _entity(
                "prescription",
                "prescription_id",
                ["patient_id", "vet_id", "drug", "dose_mg:number"],
                ["draft", "approved", "dispensed"],
            ),
            _entity(
                "invoice",
                "invoice_id",
                ["owner_id", "appointment_id", "amount:number", "paid:number"],
                ["open", "paid", "refunded"],
            ),
        ],
        "state_fields": [
            {"name": n + "s", "kind": "collection", "entity": n, "description": f"all {n}s"}
            for n in ("owner", "patient", "vet", "appointment", "prescription", "invoice")
        ]
        + [{"name": "payments", "kind": "log", "entity": "", "description": "every payment and refund"}],
        "business_rules": [
            {
                "rule_id": "prescription_needs_approval",
                "description": "A prescription is dispensed only after a vet has approved it.",
                "entities": ["prescription", "vet"],
            },
            {
                "rule_id": "refund_only_overpaid",
                "description": "An invoice is refunded at most the amount paid above its total.",
                "entities": ["invoice"],
            },
            {
                "rule_id": "one_slot_per_vet",
                "description": "A vet has at most one appointment starting at the same time.",
                "entities": ["appointment", "vet"],
            },
        ],
        "world_data": {
            "records": [
                {"record_id": "o1", "entity": "owner", "fields": {"owner_id": "o1", "name": "Ana"}},
                {"record_id": "p1", "entity": "patient", "fields": {"patient_id": "p1", "owner_id": "o1"}},
            ]
        },
        "scenarios": [
            _scenario("refund_overpaid", "Refund the overpaid part of Ana's invoice.", ["invoice", "owner"]),
        ],
    }
    t = [
        _tool("list_appointments", "read", {"vet_id": "string"}),
        _tool("get_patient", "read", {"patient_id": "string"}),
        _tool("get_invoice", "read", {"invoice_id": "string"}),
        _tool(
            "book_appointment",
            "write",
            {"patient_id": "string", "vet_id": "string", "starts_at": "string"},
            ["appointments"],
        ),
        _tool(
            "write_prescription",
            "write",
            {"patient_id": "string", "drug": "string", "dose_mg": "number"},
            ["prescriptions"],
        ),
        _tool(
            "approve_prescription",
            "write",
            {"prescription_id": "string", "vet_id": "string"},
            ["prescriptions"],
        ),
        _tool("issue_invoice", "write", {"appointment_id": "string", "amount": "number"}, ["invoices"]),
        _tool(
            "take_payment", "write", {"invoice_id": "string", "amount": "number"}, ["invoices", "payments"]
        ),
        _tool(
            "refund_invoice", "write", {"invoice_id": "string", "amount": "number"}, ["invoices", "payments"]
        ),
    ]
    return {"scenario_id": "vet_clinic", "e_spec": e, "t_spec": t}


def support_ticketing() -> dict[str, Any]:
    """The catalogue's support ticketing, written as an RL user would want it."""
    e = {
        "environment_name": "support_ticketing",
        "task_description": CATALOGUE.get("support_ticketing").description,
        "domains": ["customer_support"],
        "entities": [
            _entity("customer", "customer_id", ["name", "tier"]),
            _entity("agent", "agent_id", ["name", "queue_id"]),
            _entity("service_queue", "queue_id", ["name", "sla_hours:integer"]),
            _entity(
                "ticket",
                "ticket_id",
                ["customer_id", "queue_id", "assignee", "title", "priority:integer"],
                ["open", "in_progress", "escalated", "resolved", "closed"],
            ),
        ],
        "state_fields": [
            {"name": "customers", "kind": "collection", "entity": "customer"},
            {"name": "agents", "kind": "collection", "entity": "agent"},
            {"name": "queues", "kind": "collection", "entity": "service_queue"},
            {"name": "tickets", "kind": "collection", "entity": "ticket"},
        ],
        "business_rules": [
            {
                "rule_id": "escalate_urgent_only",
                "description": "Only a ticket with priority 1 or a breached SLA may be escalated.",
                "entities": ["ticket"],
            },
            {
                "rule_id": "assignee_serves_queue",
                "description": "A ticket is assigned only to an agent who serves the ticket's queue.",
                "entities": ["ticket", "agent"],
            },
        ],
        "scenarios": [_scenario("escalate_vpn", "Escalate the urgent VPN ticket.", ["ticket"])],
    }
    t = [
        _tool("list_tickets", "read", {"status": "string"}),
        _tool("get_ticket", "read", {"ticket_id": "string"}),
        _tool("create_ticket", "write", {"customer_id": "string", "title": "string"}, ["tickets"]),
        _tool("assign_ticket", "write", {"ticket_id": "string", "agent_id": "string"}, ["tickets"]),
        _tool(
            "update_ticket_status",
            "write",
            {"ticket_id": "string", "status": "string"},
            ["tickets"],
            status=["in_progress", "resolved", "closed"],
        ),
        _tool("set_priority", "write", {"ticket_id": "string", "priority": "integer"}, ["tickets"]),
        _tool("escalate_ticket", "write", {"ticket_id": "string", "reason": "string"}, ["tickets"]),
        _tool("move_to_queue", "write", {"ticket_id": "string", "queue_id": "string"}, ["tickets"]),
    ]
    return {"scenario_id": "support_ticketing", "e_spec": e, "t_spec": t}


# ---- ClawForge's released environments, as a spec built from their tool docs and world data ----------


def _singular(word: str) -> str:
    return re.sub(r"ies$", "y", word) if word.endswith("ies") else word.removesuffix("s")


def release_spec(env: str) -> tuple[dict[str, Any], str]:
    """(spec, description) of a released ClawForge environment, built without a model: entities from its
    world data files (their records' fields and statuses), tools from the tool docs' verbs, rules from
    SKILL.md's bullet lists, the description from README.md's prose."""
    world = CLAWFORGE / "envs" / env
    docs = json.loads((CLAWFORGE / "tool_docs" / f"{env}.json").read_text())
    entities = []
    for path in sorted((world / "data").rglob("*.json")):
        if "scenarios" in path.parts or path.name in ("accounts.json", "contacts.json"):
            continue
        body = json.loads(path.read_text())
        key, records = next(((k, v) for k, v in body.items() if isinstance(v, list)), (None, []))
        records = records or ([body] if isinstance(body, dict) else [])
        if not records or not isinstance(records[0], dict):
            continue
        name = _singular(key or path.stem)
        id_field = next((k for k in records[0] if k.endswith("_id") and _singular(name) in k), "")
        id_field = id_field or next((k for k in records[0] if k.endswith(("_id", "sku"))), f"{name}_id")
        attrs = [k for k in records[0] if k != id_field]
        statuses = sorted({str(r["status"]) for r in records if isinstance(r.get("status"), str)})
        entities.append(_entity(name, id_field, attrs, statuses))
    tools = []
    for v in docs["visible_verbs"]:
        effect = "read" if v["role"] == "read" else "write"
        params = {a["name"].lstrip("-").replace("-", "_"): "string" for a in v["args"]}
        tools.append(_tool(v["action"], effect, params, [f"{entities[0]['name']}s"] if entities else []))
    skill = (world / "SKILL.md").read_text()
    bullets = [ln[2:].strip() for ln in skill.splitlines() if ln.startswith("- ") and "`" not in ln]
    rules = [
        {"rule_id": f"policy_{i}", "description": text, "entities": []} for i, text in enumerate(bullets)
    ]
    readme = (world / "README.md").read_text().split("## Session Model")[0]
    description = " ".join(ln for ln in readme.splitlines() if ln.strip() and not ln.startswith("#"))
    e = {"environment_name": env, "entities": entities, "business_rules": rules}
    return {"scenario_id": env, "e_spec": e, "t_spec": tools}, description


RELEASED = sorted(p.name for p in (CLAWFORGE / "envs").glob("*") if (p / "data").is_dir())


@pytest.mark.skipif(not RELEASED, reason="ClawForge release data not present")
@pytest.mark.parametrize("env", RELEASED)
def test_a_spec_built_from_a_released_clawforge_environment_passes(env: str) -> None:
    spec, description = release_spec(env)
    report = check_spec_meaning(spec, description, env_name=env)
    assert report.passed, [i.line() for i in report.issues]
    assert report.coverage >= 0.5 and report.terms >= 10


# ---- good specs pass ---------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [vet_clinic, support_ticketing])
def test_hand_written_good_specs_are_valid_and_pass(make) -> None:
    spec = make()
    e = ESpec.model_validate(spec["e_spec"])
    t = TSpec.model_validate({"tools": spec["t_spec"]})
    assert check_spec(e, t) == []
    report = check_spec_meaning(spec, e.task_description, env_name=spec["scenario_id"])
    assert report.passed, [i.line() for i in report.issues]
    assert report.coverage >= 0.6
    assert report.to_dict()["passed"] is True and report.to_dict()["issues"] == []


def test_the_bare_e_spec_and_the_reject_form_read_the_same() -> None:
    spec = vet_clinic()
    record = check_spec_meaning(spec, VET)
    bare = check_spec_meaning({**spec["e_spec"], "tools": spec["t_spec"]}, VET)
    reject = check_spec_meaning({"reason": "invalid_spec", "detail": spec}, VET)
    assert record.to_dict() == bare.to_dict() == reject.to_dict()


# ---- what the embedded model wrote fails -------------------------------------------------------------


def _part(answer: dict[str, Any]) -> str:
    return "tools" if "tools" in answer else "entities" if "entities" in answer else "state"


def _replayed(recording: Path) -> tuple[dict[str, Any], str, str]:
    """The spec SmolLM2-135M wrote: each part's last recorded answer (the one spec expansion kept: a
    repair replaces the answer before it), merged as spec expansion merges them. Read from the recording
    rather than replayed, so a change of prompt or schema elsewhere does not lose the model's words."""
    sid = recording.stem.removeprefix("smollm2_").removeprefix("invalid_")
    scenario = CATALOGUE.get(sid)
    answers: dict[str, dict[str, Any]] = {}
    for line in recording.read_text().splitlines():
        rec = json.loads(line)
        try:
            answer = json.loads(rec["generation"]["text"])
        except ValueError:
            continue
        if isinstance(answer, dict):
            answers[_part(answer)] = answer
    merged: dict[str, Any] = {}
    for name in ("entities", "state"):
        merged.update(answer_to_spec(answers.get(name) or {}))
    tools = answer_to_tools(answers["tools"])["tools"] if "tools" in answers else []
    return {"e_spec": merged, "t_spec": tools}, scenario.description, sid


RECORDED = sorted(FIXTURES.glob("smollm2_*.jsonl"))


@pytest.mark.parametrize("recording", RECORDED, ids=[p.stem for p in RECORDED])
def test_specs_the_embedded_model_wrote_fail(recording: Path) -> None:
    spec, description, sid = _replayed(recording)
    report = check_spec_meaning(spec, description, env_name=sid)
    assert not report.passed
    # every one is named for its entity, its rules and its coverage, not for one catch-all reason
    assert _codes(report) & {c.value for c in MeaningCode if c.value.startswith("entity_")} or _codes(
        report
    ) & {MeaningCode.SINGLE_ENTITY, MeaningCode.UNRELATED_ENTITIES}
    assert report.coverage < 0.5 and report.missing


def test_the_quickstart_garbage_fails_for_the_reasons_a_reader_gives() -> None:
    """The support-ticketing spec the embedded model wrote in a quickstart run (entity ``ticket_id``, rule
    ``business_rules_1`` = "business_rules_1", tools ``read``/``write``)."""
    spec, description, sid = _replayed(FIXTURES / "smollm2_support_ticketing.jsonl")
    assert [x["name"] for x in spec["e_spec"]["entities"]] == ["ticket_id"]
    report = check_spec_meaning(spec, description, env_name=sid)
    assert _codes(report) >= {
        MeaningCode.ENTITY_IS_ID,
        MeaningCode.PLACEHOLDER_RULE,
        MeaningCode.GENERIC_TOOL,
        MeaningCode.MISSING_OPERATION,
        MeaningCode.LOW_COVERAGE,
    }
    (ops,) = [i for i in report.issues if i.code == MeaningCode.MISSING_OPERATION]
    assert "assign" in ops.message and "escalate" in ops.message
    assert {"escalation", "queue", "assignment"} <= set(report.missing)


# ---- each gate on its own ----------------------------------------------------------------------------


def _with_entity(spec: dict[str, Any], index: int, name: str) -> dict[str, Any]:
    spec = copy.deepcopy(spec)
    spec["e_spec"]["entities"][index]["name"] = name
    return spec


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("d3jbjhjhjhj", MeaningCode.ENTITY_IS_NOISE),
        ("asdfghk", MeaningCode.ENTITY_IS_NOISE),
        ("xkcdqwrt", MeaningCode.ENTITY_IS_NOISE),
        ("dynamics_2023_2024_", MeaningCode.ENTITY_HAS_DIGITS),
        ("invoice2", MeaningCode.ENTITY_HAS_DIGITS),
        ("invoice_id", MeaningCode.ENTITY_IS_ID),
        ("vet_clinic", MeaningCode.ENTITY_IS_ENV_NAME),
        ("claw", MeaningCode.ENTITY_IS_PLACEHOLDER),
        ("item", MeaningCode.ENTITY_IS_PLACEHOLDER),
        ("entity", MeaningCode.ENTITY_IS_PLACEHOLDER),
        ("pet_patients_and_owners", MeaningCode.ENTITY_IS_PHRASE),
    ],
)
def test_entity_names_are_domain_nouns(name: str, code: MeaningCode) -> None:
    report = check_spec_meaning(_with_entity(vet_clinic(), 5, name), VET, env_name="vet_clinic")
    (issue,) = [i for i in report.issues if i.path == "entities[5].name"]
    assert issue.code == code and name in issue.message
    assert "\n" not in issue.message and "Traceback" not in issue.message


@pytest.mark.parametrize(
    "word",
    [
        "invoice",
        "prescription",
        "strengths",
        "rhythm",
        "sku",
        "html",
        "bookkeeper",
        "mississippi",
        "property",
    ],
)
def test_real_words_are_not_noise(word: str) -> None:
    assert is_noise(word) == ""


def test_an_entity_that_holds_only_its_id_is_hollow() -> None:
    spec = vet_clinic()
    vet = spec["e_spec"]["entities"][2]
    vet["attributes"] = vet["attributes"][:1]
    report = check_spec_meaning(spec, VET)
    assert [i.path for i in report.issues if i.code == MeaningCode.HOLLOW_ENTITY] == [
        "entities[2].attributes"
    ]


def test_one_entity_for_a_description_that_names_several_fails() -> None:
    """The clinic as the embedded model wrote it: one ``pet_patients_and_owners``; the appointments,
    prescriptions and invoices are gone."""
    spec = vet_clinic()
    spec["e_spec"]["entities"] = [_entity("pet_patients_and_owners", "pet_id", ["name", "owner"])]
    report = check_spec_meaning(spec, VET)
    (single,) = [i for i in report.issues if i.code == MeaningCode.SINGLE_ENTITY]
    assert all(w in single.message for w in ("appointments", "prescriptions", "invoices"))
    assert MeaningCode.ENTITY_IS_PHRASE in _codes(report)
    # a description that names one thing asks for one entity
    lone = check_spec_meaning(spec, "A thermostat with a target temperature.")
    assert MeaningCode.SINGLE_ENTITY not in _codes(lone)


def test_several_entities_must_be_related() -> None:
    spec = vet_clinic()
    for ent in spec["e_spec"]["entities"]:
        ent["attributes"] = [
            a for a in ent["attributes"] if a["name"] == ent["id_field"] or "_id" not in a["name"]
        ]
    assert check_spec_meaning(spec, VET).passed  # book_appointment(patient_id, vet_id) relates them
    spec["t_spec"] = [
        t for t in spec["t_spec"] if len([p for p in t["parameters"]["properties"] if p.endswith("_id")]) < 2
    ]
    report = check_spec_meaning(spec, VET)
    assert MeaningCode.UNRELATED_ENTITIES in _codes(report)


def test_coverage_names_what_is_missing_and_cannot_be_gamed_with_prose() -> None:
    spec = support_ticketing()
    description = spec["e_spec"]["task_description"]
    thin = copy.deepcopy(spec)
    thin["e_spec"]["entities"] = [_entity("ticket", "ticket_id", ["title"])]
    thin["e_spec"]["state_fields"] = [{"name": "tickets", "kind": "collection", "entity": "ticket"}]
    thin["t_spec"] = [_tool("get_ticket", "read", {"ticket_id": "string"})]
    # free prose (descriptions, rules, scenarios) restating the description buys no coverage
    for ent in thin["e_spec"]["entities"]:
        ent["description"] = description
    for t in thin["t_spec"]:
        t["description"] = description
    thin["e_spec"]["scenarios"][0]["task_prompt"] = description
    report = check_spec_meaning(thin, description, env_name="support_ticketing")
    (low,) = [i for i in report.issues if i.code == MeaningCode.LOW_COVERAGE]
    assert report.coverage < 0.5 and {"escalation", "queue", "priority"} <= set(report.missing)
    assert "escalation" in low.message and f"{report.coverage:.0%}" in low.message
    # the threshold is the caller's
    assert MeaningCode.LOW_COVERAGE not in _codes(check_spec_meaning(thin, description, min_coverage=0.1))


def test_description_words_as_noise_entities_game_nothing() -> None:
    """Adversarial: every description word appears in a name, but glued to keyboard noise (entities),
    or as a noise tool: the names are refused and their words do not count."""
    spec = support_ticketing()
    description = spec["e_spec"]["task_description"]
    words = ["customer", "ticketing", "creation", "assignment", "escalation", "priority", "queue"]
    gamed = copy.deepcopy(spec)
    gamed["e_spec"]["entities"] = [_entity(f"{w}_qxzvbnmk", f"{w}_qxzvbnmk_ref", ["sdfghjkl"]) for w in words]
    gamed["t_spec"] = [_tool(f"{w}_zxcvbq", "write", {"x": "string"}, ["tickets"]) for w in words]
    report = check_spec_meaning(gamed, description, env_name="support_ticketing")
    codes = _codes(report)
    assert {MeaningCode.ENTITY_IS_NOISE, MeaningCode.NOISE_NAME, MeaningCode.LOW_COVERAGE} <= codes
    assert {"creation", "assignment", "escalation", "priority"} <= set(report.missing)


def test_description_words_as_enum_values_game_nothing() -> None:
    """Adversarial: a parameter whose enum lists the description's words buys no coverage."""
    spec = support_ticketing()
    description = spec["e_spec"]["task_description"]
    thin = copy.deepcopy(spec)
    thin["e_spec"]["entities"] = [_entity("ticket", "ticket_id", ["title"])]
    thin["e_spec"]["state_fields"] = [{"name": "tickets", "kind": "collection", "entity": "ticket"}]
    words = ["customer", "creation", "assignment", "priority", "escalation", "service", "queue"]
    thin["t_spec"] = [_tool("get_ticket", "read", {"ticket_id": "string", "view": "string"}, view=words)]
    report = check_spec_meaning(thin, description)
    assert MeaningCode.LOW_COVERAGE in _codes(report) and {"escalation", "queue"} <= set(report.missing)


def test_description_words_as_hollow_entities_game_nothing() -> None:
    """Adversarial: one entity per description word, each holding nothing but its id."""
    spec = support_ticketing()
    description = spec["e_spec"]["task_description"]
    gamed = copy.deepcopy(spec)
    words = ["customer", "ticket", "assignment", "escalation", "priority", "queue", "service"]
    gamed["e_spec"]["entities"] = [_entity(w, f"{w}_id", []) for w in words]
    report = check_spec_meaning(gamed, description)
    assert len([i for i in report.issues if i.code == MeaningCode.HOLLOW_ENTITY]) == len(words)


@pytest.mark.parametrize(
    ("rule", "why"),
    [
        ({"rule_id": "business_rules_1", "description": "business_rules_1"}, "restates its id"),
        ({"rule_id": "business_rules", "description": "The rules are {{"}, "template"),
        ({"rule_id": "r1", "description": ""}, "empty"),
        ({"rule_id": "r2", "description": "Be careful."}, "too short"),
        ({"rule_id": "r3", "description": VET}, "restates the scenario description"),
    ],
)
def test_placeholder_rules_fail(rule: dict[str, Any], why: str) -> None:
    spec = vet_clinic()
    spec["e_spec"]["business_rules"] = [{**rule, "entities": []}]
    report = check_spec_meaning(spec, VET)
    (issue,) = [i for i in report.issues if i.code == MeaningCode.PLACEHOLDER_RULE]
    assert why in issue.message and issue.path == "business_rules[0].description"


def test_a_rule_about_nothing_the_environment_holds_is_vague_and_no_rules_fails() -> None:
    spec = vet_clinic()
    spec["e_spec"]["business_rules"] = [
        {"rule_id": "polite", "description": "Always be polite and friendly in every reply.", "entities": []}
    ]
    assert MeaningCode.VAGUE_RULE in _codes(check_spec_meaning(spec, VET))
    # next to a concrete rule, a vague one is guidance (a placeholder never is)
    spec["e_spec"]["business_rules"] += vet_clinic()["e_spec"]["business_rules"][:1]
    assert check_spec_meaning(spec, VET).passed
    spec["e_spec"]["business_rules"].append({"rule_id": "rule_2", "description": "rule_2"})
    assert _codes(check_spec_meaning(spec, VET)) == {MeaningCode.PLACEHOLDER_RULE}
    spec["e_spec"]["business_rules"] = []
    assert MeaningCode.NO_RULES in _codes(check_spec_meaning(spec, VET))


def test_a_structured_rule_is_concrete_by_its_kind() -> None:
    """A rule of the rule language (a ``kind``; check_spec checks its fields) is enforced, whatever its
    prose; without a kind, its filled fields do not save a placeholder text."""
    spec = vet_clinic()
    limit = {
        "rule_id": "refund_cap",
        "description": "",
        "kind": "limit",
        "entity": "invoice",
        "field": "paid",
        "op": "<=",
        "value": 500,
    }
    spec["e_spec"]["business_rules"] = [limit]
    assert check_spec_meaning(spec, VET).passed
    spec["e_spec"]["business_rules"] = [{**limit, "kind": "", "description": "refund_cap"}]
    assert _codes(check_spec_meaning(spec, VET)) == {MeaningCode.PLACEHOLDER_RULE}


def test_crud_only_tools_fail_where_the_description_names_operations() -> None:
    spec = vet_clinic()
    spec["t_spec"] = [t for t in spec["t_spec"] if not t["name"].startswith(("approve", "refund", "book"))]
    report = check_spec_meaning(spec, VET)
    (issue,) = [i for i in report.issues if i.code == MeaningCode.MISSING_OPERATION]
    for op in ("approve", "refund", "book"):
        assert op in issue.message
    # a read tool named after the operation does not perform it
    spec["t_spec"].append(_tool("refund_preview", "read", {"invoice_id": "string"}))
    (issue,) = [i for i in check_spec_meaning(spec, VET).issues if i.code == MeaningCode.MISSING_OPERATION]
    assert "refund" in issue.message
    # a write tool whose enum sets the state the operation names performs it
    spec["t_spec"].append(
        _tool(
            "set_invoice_status",
            "write",
            {"invoice_id": "string", "status": "string"},
            ["invoices"],
            status=["refunded", "approved", "booked"],
        )
    )
    assert MeaningCode.MISSING_OPERATION not in _codes(check_spec_meaning(spec, VET))


def test_generic_tool_names_fail() -> None:
    spec = vet_clinic()
    spec["t_spec"] += [_tool("read", "read", {"id": "string"}), _tool("write", "write", {}, ["invoices"])]
    report = check_spec_meaning(spec, VET)
    assert [i.path for i in report.issues if i.code == MeaningCode.GENERIC_TOOL] == [
        "tools[9].name",
        "tools[10].name",
    ]


def test_words_stems_and_operations() -> None:
    assert stem("creation") == stem("create") and stem("escalation") == stem("escalated") == stem("escalate")
    assert stem("invoices") == stem("invoice") and stem("statuses") == stem("status")
    assert stem("shipped") == stem("shipment") == stem("ship") and stem("deliveries") == stem("delivery")
    assert same_stem(stem("prescription"), stem("prescribe")) and same_stem(stem("analysis"), stem("analyse"))
    assert not same_stem(stem("restoration"), stem("restock")) and not same_stem(
        stem("retrieval"), stem("retry")
    )
    assert operations(VET) == ["book", "prescribe", "approve", "invoice", "pay", "refund"]
    assert operations(CATALOGUE.get("support_ticketing").description) == ["assign", "prioritize", "escalate"]


def test_malformed_specs_never_raise_and_the_gates_are_fast() -> None:
    for junk in ({}, {"e_spec": None}, {"entities": "x"}, {"e_spec": {"entities": [1, {"attributes": 3}]}}):
        report = check_spec_meaning(junk, VET)
        assert not report.passed
    assert check_spec_meaning({}, "").coverage == 1.0
    spec = vet_clinic()
    t0 = time.perf_counter()
    for _ in range(200):
        check_spec_meaning(spec, VET)
    assert (time.perf_counter() - t0) / 200 < 0.01


# ---- the hook: spec expansion repairs for meaning, and records the report -----------------------------


def _expand(path: Path, replies: list[Any], meaning_rounds: int = 1) -> tuple[Any, list[dict]]:
    """Spec expansion of support_ticketing against a scripted server (answers recorded to ``path``)."""
    from dataclaw.envcraft.synth.expand import expand_scenario
    from dataclaw.models import get_model
    from support.openai_server import OpenAIServer, Reply

    with OpenAIServer() as server:
        server.enqueue(*[r if isinstance(r, Reply) else Reply.json(r) for r in replies])
        live = get_model(f"{server.base_url}::writer", cache=False, record_to=path)
        result = asyncio.run(
            expand_scenario(
                live, CATALOGUE.get("support_ticketing"), repair_rounds=2, meaning_rounds=meaning_rounds
            )
        )
        bodies = server.chat_bodies()
    return result, bodies


def _id_named(ents: dict[str, Any]) -> dict[str, Any]:
    """The entities answer as the embedded model writes it: one entity named after its id."""
    bad = copy.deepcopy(ents)
    bad["entities"] = [dict(bad["entities"][0], name="ticket_id")]
    return bad


def test_a_meaning_repair_names_the_findings_and_keeps_a_better_answer(
    tmp_path: Path, e_answer: dict, t_answer: dict, split, tool_answer
) -> None:
    ents, state = split(e_answer)
    ents = _related(ents)
    result, bodies = _expand(tmp_path / "a.jsonl", [_id_named(ents), ents, state, tool_answer(t_answer)])
    assert result.valid and (result.repairs, result.meaning_repairs, result.calls) == (0, 1, 4)
    assert [e.name for e in result.e_spec.entities] == ["ticket", "agent"]
    repair = bodies[1]["messages"][1]["content"]
    assert "entity_is_id at entities[0].name: entity 'ticket_id' is an id" in repair
    assert "words of the scenario the spec does not use yet: " in repair and "escalation" in repair
    assert "uncovered_words" in repair
    assert '"name":"ticket_id"' in repair  # the previous answer is shown
    assert result.history[1] == {"part": "entities", "call": 2, "issues": [], "meaning": ["entity_is_id"]}
    # the final report is the spec's: the helpdesk has no escalate tool
    assert result.meaning is not None and not result.meaning.passed
    assert result.meaning.codes() == [MeaningCode.MISSING_OPERATION]


def test_a_meaning_repair_that_breaks_the_spec_or_is_no_better_is_not_kept(
    tmp_path: Path, e_answer: dict, t_answer: dict, split, tool_answer
) -> None:
    ents, state = split(e_answer)
    broken = copy.deepcopy(ents)
    broken["entities"][0]["id_field"] = "nope"  # invalid: the id field is not an attribute
    bad = _id_named(ents)
    bad_state = state_for_ticket_id(state)
    result, _ = _expand(tmp_path / "b.jsonl", [bad, broken, bad_state, tool_answer(t_answer)])
    assert result.valid and result.meaning_repairs == 1
    assert [e.name for e in result.e_spec.entities] == ["ticket_id"]  # the valid answer stands
    assert MeaningCode.ENTITY_IS_ID in result.meaning.codes()
    same, _ = _expand(tmp_path / "c.jsonl", [bad, bad, bad_state, tool_answer(t_answer)])
    assert same.valid and [e.name for e in same.e_spec.entities] == ["ticket_id"]


def test_without_meaning_rounds_nothing_changes_and_a_model_that_cannot_answer_keeps_the_spec(
    tmp_path: Path, e_answer: dict, t_answer: dict, split, tool_answer
) -> None:
    from dataclaw.envcraft.synth.expand import expand_scenario
    from dataclaw.models import get_model

    ents, state = split(e_answer)
    record = tmp_path / "d.jsonl"
    plain, bodies = _expand(record, [_id_named(ents), state_for_ticket_id(state), tool_answer(t_answer)], 0)
    assert plain.valid and (plain.calls, plain.meaning_repairs, len(bodies)) == (3, 0, 3)
    assert plain.meaning is not None and MeaningCode.ENTITY_IS_ID in plain.meaning.codes()
    # replayed with a meaning round: the recording has no answer for the repair (a non-fatal model
    # error): the valid spec stands, the failed ask is in the history, no other meaning round is tried
    replayed = asyncio.run(
        expand_scenario(
            get_model(f"replay:{record}"),
            CATALOGUE.get("support_ticketing"),
            repair_rounds=2,
            meaning_rounds=3,
        )
    )
    assert replayed.valid and replayed.e_spec == plain.e_spec and replayed.t_spec == plain.t_spec
    assert replayed.meaning_repairs == 1 and replayed.calls == 3
    (failed,) = [h for h in replayed.history if "error" in h]
    assert failed["part"] == "entities" and failed["meaning"] == ["entity_is_id"]


def state_for_ticket_id(state: dict[str, Any]) -> dict[str, Any]:
    """The state answer over the one entity ``ticket_id``."""
    out = copy.deepcopy(state)
    out["collections"] = [dict(out["collections"][0], entity="ticket_id")]
    out["scenarios"][0]["entities"] = ["ticket_id"]
    out["world_data"]["records"] = []
    for rule in out["business_rules"]:
        rule["entities"] = ["ticket_id"]
    return out


def _related(ents: dict[str, Any]) -> dict[str, Any]:
    """The helpdesk's entities with the ticket holding its agent's id (so the two are related)."""
    out = copy.deepcopy(ents)
    for a in out["entities"][0]["attributes"]:
        if a["name"] == "assignee":
            a["name"] = "agent_id"
    return out


def test_the_spec_stage_records_the_meaning_report(
    tmp_path: Path, e_answer: dict, t_answer: dict, split, tool_answer
) -> None:
    from dataclaw.core.store import RunStore
    from dataclaw.envcraft.synth import SpecStage, scenario_record
    from dataclaw.pipeline import run_stage
    from dataclaw.pipeline.executors import LocalExecutor

    ents, state = split(e_answer)
    record = tmp_path / "e.jsonl"
    _expand(record, [_id_named(ents), state_for_ticket_id(state), tool_answer(t_answer)], 0)
    with RunStore(tmp_path / "run") as store:
        stage = SpecStage(f"replay:{record}")  # a meaning round by default; the replay has no answer for it
        assert stage.meaning_rounds == 1
        run_stage(
            stage, [scenario_record(CATALOGUE.get("support_ticketing"))], store, LocalExecutor(workers=1)
        )
        (spec,) = store.records("specs")
    meaning = spec["meaning"]
    assert meaning["passed"] is False and "entity_is_id" in meaning["codes"]
    assert meaning["coverage"] == check_spec_meaning(spec, spec["scenario"]["description"]).coverage
    assert (
        meaning
        == check_spec_meaning(spec, spec["scenario"]["description"], env_name="support_ticketing").to_dict()
    )


@pytest.mark.slow
def test_the_embedded_model_gets_a_meaning_round_and_a_report() -> None:
    """SmolLM2-135M with one meaning round: the run ends with a report on whatever spec it wrote (it is
    too small to pass; the round is asked once and never costs the spec its validity)."""
    pytest.importorskip("llama_cpp")
    from dataclaw.envcraft.synth.expand import expand_scenario
    from dataclaw.models import get_model

    scenario = CATALOGUE.get("support_ticketing")
    model = get_model("local:smollm2-135m", cache=False)
    result = asyncio.run(expand_scenario(model, scenario, repair_rounds=2, meaning_rounds=1))
    assert result.meaning_repairs <= 1 and result.calls <= 3 + result.repairs + result.meaning_repairs
    if result.e_spec is not None:
        assert result.meaning is not None and result.meaning.to_dict()["codes"] == result.meaning.codes()
        assert not result.meaning.passed
    asked = [h for h in result.history if "meaning" in h]
    assert len(asked) == result.meaning_repairs
