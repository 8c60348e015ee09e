"""A released ClawForge claw environment (tool docs + world data, no code) → an E_spec/T_spec and the
binding of every released verb onto a compiled operation. No model is involved.

What comes from where:

- **Entities** (each a collection): every list of records in the world data (``data/<x>/<x>.json`` or
  ``data/<x>.json``, e.g. ``orders``, ``returns``, ``inventory``) with its fields, ids and the status
  values its records carry; every ``--<thing>-id`` argument of a verb that names no such collection (a
  ``cluster`` for ``--cluster-id``), seeded with the ids the scenarios' gold actions name; and, for a write
  verb that names no record (``generate-analysis``, ``play``), the records it produces (``analysis``).
  Accounts, contacts and attachments are world data of their own (the C.2 lists).
- **Statuses**: the values the records carry, plus what a verb moves a record to (``approve-return`` →
  ``approved``, from the verb's past participle), cancel-like ones last.
- **Rules**: the SKILL.md policy bullets; one the rule language can state (``Refunds over $100 require
  manager approval`` → an ``approval`` rule) carries its kind, the others stay prose and are reported as
  not enforced.
- **Scenarios**: the released scenario files (task prompt, time) and the docs' scenario ids; a gold action
  that moves a record to a status becomes a scoring rule ``<record>.status == <value>``.
- **Tools** (T_spec): one per visible verb with the verb's own name (``adjust_inventory``) and parameters
  (type, required, choices, help); the side effect comes from :func:`.clawforge.verb_side_effect`.

Each tool gets a *binding* (how :mod:`.clawforge_package.released` runs it on the compiled package): read
one record (``get``), list/filter a collection (``list``), move a record to a status (``transition``),
change a record's fields (``update``), create a record of what the verb produces (``create``), or one of
the workspace reads every claw environment has (``summary``, ``scenarios``, ``task``, ``attachments``).
"""

from __future__ import annotations

import ast
import json
import keyword
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dataclaw.envcraft.synth.spec import (
    Account,
    Attachment,
    BusinessRule,
    Contact,
    Entity,
    ESpec,
    ParamDecl,
    Parameters,
    Returns,
    ScoringRule,
    SpecScenario,
    StateField,
    ToolDecl,
    TSpec,
    WorldData,
    WorldRecord,
)

BASE_TIME = "2026-06-15T09:00:00+00:00"
_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
_SKIP_ARGS = frozenset({"scenario_id", "session_id", "state_root", "show_bindings", "show_task", "overwrite"})
_SESSION_VERBS = frozenset({"reset", "reset_rollout", "prepare_rollout", "create_session", "reset_session"})
_WORKSPACE_READS = {
    "session_summary": "summary",
    "summary": "summary",
    "info": "summary",
    "list_scenarios": "scenarios",
}
_LIST_WORDS = frozenset({"list", "search", "find", "filter", "browse", "query"})
_CREATE_WORDS = frozenset(
    {
        "generate",
        "create",
        "produce",
        "compose",
        "draft",
        "export",
        "add",
        "build",
        "make",
        "schedule",
        "book",
    }
)
_RUNTIME_COMMANDS = {"task": "the environment CLI's own `task` command shows the task and workspace"}
_GROUP_VERBS = frozenset({"alerts", "monitoring", "notifications", "reports", "sensors", "trends"})
_RESERVED_ATTRS = frozenset({"created_at", "updated_at", "session", "limit", "query"})
_PARTICIPLE = {
    "approve": "approved",
    "reject": "rejected",
    "cancel": "cancelled",
    "close": "closed",
    "ship": "shipped",
    "receive": "received",
    "inspect": "inspected",
    "resolve": "resolved",
    "archive": "archived",
    "deny": "denied",
    "confirm": "confirmed",
    "complete": "completed",
    "deliver": "delivered",
    "escalate": "escalated",
    "acknowledge": "acknowledged",
    "revoke": "revoked",
    "assign": "assigned",
    "reserve": "reserved",
    "release": "released",
    "publish": "published",
    "submit": "submitted",
    "flag": "flagged",
    "label": "labeled",
    "block": "blocked",
    "lock": "locked",
    "unlock": "unlocked",
    "finalize": "finalized",
    "classify": "classified",
    "verify": "verified",
    "review": "reviewed",
}
_CANCEL = ("cancel", "reject", "declin", "denied", "revok", "fail", "void")
_APPROVAL = re.compile(
    r"^(?P<what>[a-z ]+?)s? (?:over|above|exceeding|greater than) \$?(?P<value>[\d,.]+) "
    r"(?:require|need)s? (?:an? )?(?P<role>[a-z]+) approval",
    re.I,
)


def snake(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(text).lower()).strip("_")


def entity_name(text: str) -> str:
    """A usable entity name: snake case, never a Python keyword (``return`` → ``return_record``)."""
    name = snake(text)
    return f"{name}_record" if keyword.iskeyword(name) or not name[:1].isalpha() else name


def singular(name: str) -> str:
    for plural, one in (("ies", "y"), ("sses", "ss"), ("ches", "ch"), ("shes", "sh"), ("xes", "x")):
        if name.endswith(plural):
            return name[: -len(plural)] + one
    if name.endswith("s") and not name.endswith(("ss", "us", "is")):
        return name[:-1]
    return name


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "string"


@dataclass
class EntityPlan:
    """An entity being gathered: its collection, id field, attributes, statuses and records."""

    name: str
    collection: str
    id_field: str
    source: str
    attributes: dict[str, str] = field(default_factory=dict)
    docs: dict[str, str] = field(default_factory=dict)
    statuses: list[str] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    flow: list[str] = field(default_factory=list)

    def add_attr(self, name: str, kind: str, doc: str = "") -> None:
        if name in _RESERVED_ATTRS or not re.match(r"^[a-z][a-z0-9_]{0,47}$", name):
            return
        self.attributes.setdefault(name, kind)
        if doc and name not in self.docs:
            self.docs[name] = doc


@dataclass
class ReleaseSpec:
    """What :func:`build_release_spec` makes: the spec, the bindings and the report's parts."""

    e_spec: ESpec
    t_spec: TSpec
    bindings: dict[str, dict[str, Any]]
    released: list[dict[str, Any]]
    """Every visible verb's tool: name, verb, description, params (schema, required, description)."""
    dropped: list[dict[str, str]]
    """Verbs and rules that are not reproduced, each with why."""
    rules: list[dict[str, Any]]
    """Every rule found: text, kind ('' = prose only) and why when it has none."""
    attachments: dict[str, str]
    scenarios: list[dict[str, Any]]


# ---- side effects of ClawForge verbs ----------------------------------------------------------------------

READ_WORDS = frozenset(
    {"get", "list", "search", "show", "view", "find", "lookup", "query", "read", "fetch", "describe",
     "check", "status", "summary", "session", "task", "compare", "preview", "inspect", "count", "browse",
     "filter", "verify", "validate", "estimate", "calculate", "analyze", "analyse", "recommend", "explain",
     "evaluate", "diff", "track", "monitor", "help", "info", "peek", "load", "match", "rank", "score",
     "screen", "aggregate", "provide", "review", "traffic"}
)  # fmt: skip
WRITE_WORDS = frozenset(
    {"create", "add", "update", "set", "delete", "remove", "approve", "reject", "adjust", "assign", "cancel",
     "book", "send", "post", "write", "edit", "modify", "move", "archive", "close", "open", "arm", "disarm",
     "lock", "unlock", "revoke", "grant", "reclaim", "reserve", "release", "receive", "ship", "submit",
     "mark", "tag", "untag", "link", "unlink", "merge", "split", "schedule", "reschedule", "generate",
     "produce", "deny", "allow", "block", "unblock", "enable", "disable", "start", "stop", "pause",
     "resume", "play", "next", "previous", "seek", "switch", "toggle", "turn", "record", "log", "save",
     "store", "upload", "import", "export", "publish", "notify", "escalate", "resolve", "refund", "pay",
     "transfer", "apply", "register", "enroll", "confirm", "flag", "label", "rename", "reset", "clear",
     "extract", "plan", "optimize", "draft", "reply", "forward", "attach", "commit", "rollback", "restore",
     "acknowledge", "finalize", "classify", "fill", "control", "arrive", "reroute", "media"}
)  # fmt: skip
_HELP_WRITE = re.compile(
    r"\b(create|update|delete|remove|approve|record|write|store|save|set|mark|log)s?\b", re.I
)


# ---- side effects of ClawForge verbs -------------------------------------------------------------------


def verb_side_effect(verb: dict[str, Any], gold_actions: set[str]) -> tuple[str, str]:
    """(``read``/``write``, where that came from) for one tool-doc verb. ClawForge's ``role`` is only
    trusted when it says ``read``; ``produce``/``guard``/``other`` are decided from the docs."""
    action = str(verb.get("action") or verb.get("verb", "")).replace("-", "_")
    words = [w for w in re.split(r"[-_\s]+", str(verb.get("verb") or action).lower()) if w]
    role = str(verb.get("role") or "")
    if role == "read":
        return "read", "docs: role read"
    if action in gold_actions:
        return "write", "docs: a scenario's gold action"
    if words and words[0] in WRITE_WORDS:
        return "write", f"docs: verb '{words[0]}'"
    if words and words[0] in READ_WORDS:
        return "read", f"docs: verb '{words[0]}'"
    help_words = re.findall(r"[a-z]+", str(verb.get("help") or "").lower())
    lead = help_words[0].removesuffix("s") if help_words else ""
    if lead in WRITE_WORDS:
        return "write", f"docs: help '{help_words[0]}'"
    if lead in READ_WORDS:
        return "read", f"docs: help '{help_words[0]}'"
    hit = next((w for w in words if w in WRITE_WORDS), None)
    if hit:
        return "write", f"docs: verb word '{hit}'"
    if _HELP_WRITE.search(str(verb.get("help") or "")):
        return "write", "docs: help text"
    return "read", f"docs: role {role or 'none'} with no write verb (a read, so no chain ends on it)"


def _gold_action_types(docs: dict[str, Any]) -> set[str]:
    out: set[str] = set()
    for actions in (docs.get("gold_actions_by_scenario") or {}).values():
        for a in actions or []:
            parsed = _literal_dict(a)
            if parsed and parsed.get("action_type"):
                out.add(str(parsed["action_type"]))
    return out


def _literal_dict(text: Any) -> dict[str, Any] | None:
    """ClawForge writes gold actions as Python dict reprs inside JSON strings."""
    if isinstance(text, dict):
        return text
    try:
        value = ast.literal_eval(str(text))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


# ---- world data ------------------------------------------------------------------------------------------


def _lists(path: Path) -> dict[str, list[dict[str, Any]]]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    if isinstance(raw, list):
        raw = {path.stem: raw}
    if not isinstance(raw, dict):
        return {}
    return {
        snake(k): [r for r in v if isinstance(r, dict)]
        for k, v in raw.items()
        if isinstance(v, list) and v and all(isinstance(r, dict) for r in v)
    }


def read_world(world: Path | None) -> dict[str, Any]:
    """A claw world-data folder → ``{"collections": {name: [records]}, "accounts", "contacts",
    "attachments": {path: text}, "scenarios": [scenario docs]}``."""
    out: dict[str, Any] = {
        "collections": {},
        "accounts": [],
        "contacts": [],
        "attachments": {},
        "scenarios": [],
    }
    if world is None or not (world / "data").is_dir():
        return out
    data = world / "data"
    for path in sorted(data.rglob("*.json")):
        rel = path.relative_to(data)
        if rel.parts[0] == "scenarios":
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError):
                continue
            if isinstance(doc, dict):
                out["scenarios"].append(doc)
            continue
        for name, rows in _lists(path).items():
            if name in ("accounts", "contacts"):
                out[name] += rows
            else:
                out["collections"].setdefault(name, []).extend(rows)
    for path in sorted((data / "attachments").glob("*")) if (data / "attachments").is_dir() else []:
        if path.is_file():
            out["attachments"][path.name] = path.read_text(encoding="utf-8", errors="replace")[:20000]
    return out


def _id_field(name: str, rows: list[dict[str, Any]]) -> str:
    ent = singular(name)
    keys = list(rows[0])
    for cand in (f"{ent}_id", "id", *[k for k in keys if k.endswith("_id")], "sku", "code", "name", *keys):
        if cand in keys and len({str(r.get(cand)) for r in rows}) == len(rows):
            return cand
    return f"{ent}_id"


def _status_values(rows: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(str(r["status"]) for r in rows if isinstance(r.get("status"), str)))


# ---- verbs -----------------------------------------------------------------------------------------------


def tool_name(verb: dict[str, Any]) -> str:
    return snake(verb.get("action") or verb.get("verb") or "")


def verb_params(verb: dict[str, Any]) -> list[dict[str, Any]]:
    """The verb's arguments as tool parameters (``--quantity-change`` → ``quantity_change``), each once."""
    out: dict[str, dict[str, Any]] = {}
    for a in verb.get("args") or []:
        name = snake(str(a.get("name", "")).lstrip("-"))
        if not name or name in out or name in _SKIP_ARGS or not re.match(r"^[a-z]", name):
            continue
        schema: dict[str, Any] = {"type": _TYPES.get(str(a.get("type")), "string")}
        if a.get("choices"):
            schema["enum"] = list(a["choices"])
        help_ = str(a.get("help") or "").strip()
        desc = help_ or f"the {name.replace('_', ' ')}"
        p = {"name": name, "schema": schema, "required": bool(a.get("required")), "description": desc}
        if a.get("has_default") and a.get("default") is not None:
            p["default"] = a["default"]
        out[name] = p
    return list(out.values())


def _noun(name: str, words: frozenset[str]) -> str:
    toks = name.split("_")
    rest = toks[1:] if len(toks) > 1 and toks[0] in words else toks
    return "_".join(rest)


def _gold(docs: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for sid, actions in (docs.get("gold_actions_by_scenario") or {}).items():
        for a in actions or []:
            d = _literal_dict(a)
            if d:
                out.append({**d, "_scenario": sid})
    return out


def _rule_of(text: str, entities: dict[str, EntityPlan]) -> tuple[BusinessRule | None, str]:
    """A SKILL.md policy bullet → a rule-language rule, or None and why not."""
    m = _APPROVAL.match(text.strip())
    if m:
        what = singular(snake(m["what"]).split("_")[-1])
        ent = next((e for e in entities.values() if what in (e.name, singular(e.collection))), None) or next(
            (e for e in entities.values() if any(what in a and "amount" in a for a in e.attributes)), None
        )
        amount = next(
            (a for a in (ent.attributes if ent else {}) if what in a and ("amount" in a or "total" in a)),
            None,
        ) or next((a for a in (ent.attributes if ent else {}) if "amount" in a), None)
        approved = next((s for s in (ent.statuses if ent else []) if s.startswith("approv")), None)
        if ent and amount and approved:
            rid = snake(f"{ent.name}_{m['role']}_approval")
            value = float(m["value"].replace(",", ""))
            return BusinessRule(
                rule_id=rid,
                description=text,
                entities=[ent.name],
                kind="approval",
                entity=ent.name,
                on=approved,
                field=amount,
                op=">",
                value=value,
                role=snake(m["role"]),
            ), ""
        return None, f"names {m['what']!r}, but no entity has an amount and an approved status"
    flow = next(iter(_flows(text)), None)
    if flow:
        ent = next((e for e in entities.values() if e.flow == flow), None)
        if ent is not None:
            return None, f"lifecycle: enforced as the {ent.collection} state machine"
        return None, "a status flow no entity's statuses follow"
    if re.search(r"\bwithin \d+ (day|hour|minute)s?\b", text, re.I):
        return None, "a time window: the rule language has no time-based kind"
    return None, "prose: no rule-language kind states it"


_FLOW = re.compile(r"\(?([a-z_/]+(?:\s*->\s*[a-z_/]+){2,})\)?")


def _flows(skill: str) -> list[list[str]]:
    """Status flows a SKILL.md spells out (``requested -> pending_review -> approved/rejected -> …``), each
    as its statuses in order (alternatives in the order given)."""
    out = []
    for m in _FLOW.finditer(skill):
        out.append([s for part in m[1].split("->") for s in part.strip().split("/") if s])
    return out


def _policy_bullets(skill: str) -> list[str]:
    out, on = [], False
    for line in skill.splitlines():
        if line.startswith("#"):
            on = bool(re.search(r"polic|rule|constraint|guideline", line, re.I))
            continue
        if on and line.strip().startswith(("-", "*")):
            out.append(line.strip().lstrip("-* ").strip())
    return out


# ---- the spec --------------------------------------------------------------------------------------------


def build_release_spec(env: str, docs: dict[str, Any], world: Path | None) -> ReleaseSpec:
    """The spec and bindings of one released claw environment (see the module docstring)."""
    data = read_world(world)
    gold = _gold(docs)
    gold_types = {str(g.get("action_type")) for g in gold}
    entities: dict[str, EntityPlan] = {}
    by_id: dict[str, EntityPlan] = {}
    # 1. the world data's collections
    for cname, rows in data["collections"].items():
        ent = singular(cname)
        if ent == cname:
            ent = f"{cname}_item"
        idf = _id_field(cname, rows)
        e = EntityPlan(entity_name(ent), snake(cname), idf, "world data")
        for r in rows:
            for k, v in r.items():
                e.add_attr(snake(k), _kind(v))
        e.statuses = _status_values(rows)
        e.records = rows
        entities[e.name] = e
        by_id[idf] = e
        by_id.setdefault(f"{e.name}_id", e)
    verbs = [v for v in docs.get("visible_verbs", []) if isinstance(v, dict) and v.get("verb")]
    effects = {tool_name(v): verb_side_effect(v, gold_types)[0] for v in verbs}
    # 2. entities named by id arguments
    for v in verbs:
        for p in verb_params(v):
            n = p["name"]
            if not n.endswith("_id") or n in by_id or (n in ("user_id",) and "users" in data["collections"]):
                continue
            ent = entity_name(n[: -len("_id")]) if n[: -len("_id")] else ""
            if not ent or ent in ("scenario", "session"):
                continue
            e = entities.get(ent) or EntityPlan(
                ent, ent + "s" if not ent.endswith("s") else ent + "_records", n, "verb arguments"
            )
            e.add_attr(n, "string", f"the {ent.replace('_', ' ')} id")
            entities.setdefault(ent, e)
            by_id[n] = e
    # entities a lookup verb names by another key (``get-stock --symbol``: a stock, by its symbol)
    for v in verbs:
        name, params = tool_name(v), verb_params(v)
        req = [p["name"] for p in params if p["required"]]
        first, _, noun = name.partition("_")
        if first not in ("get", "show", "view", "fetch") or len(req) != 1 or req[0] in by_id or not noun:
            continue
        ent = entity_name(singular(noun))
        if ent in entities or req[0].endswith("_id") or ("_" in noun and noun.split("_")[0] in ("all", "or")):
            continue
        e = EntityPlan(ent, ent + "_records" if ent.endswith("s") else ent + "s", req[0], "verb arguments")
        e.add_attr(req[0], "string", f"the {ent.replace('_', ' ')} {req[0].replace('_', ' ')}")
        entities[ent] = e
        by_id[req[0]] = e
    # attachments: records the verbs read by their own argument (--attachment-path / --attachment-id)
    att = next(
        (
            p["name"]
            for v in verbs
            for p in verb_params(v)
            if p["name"] in ("attachment_path", "attachment_id")
        ),
        None,
    )
    if att is not None:
        e = entities.get("attachment") or EntityPlan("attachment", "attachments", att, "world data")
        e.add_attr(att, "string", "the attachment")
        e.add_attr("filename", "string", "the attachment's file name")
        e.add_attr("content", "string", "the attachment's text")
        for fname, text in data["attachments"].items():
            key = fname if att.endswith("_path") else Path(fname).stem
            e.records.append({e.id_field: key, "filename": fname, "content": text[:4000]})
        e.source = "world data" if data["attachments"] else "verb arguments"
        entities["attachment"] = e
        by_id[att] = e
    # an argument-made entity gets a record for every id the world data refers to (customer_id values)
    for e in [e for e in entities.values() if e.source == "verb arguments"]:
        have = {str(r.get(e.id_field)) for r in e.records}
        for other in entities.values():
            for r in other.records if other is not e else []:
                val = r.get(e.id_field)
                if isinstance(val, str) and val and val not in have:
                    have.add(val)
                    e.records.append({e.id_field: val})
    # 3. records the gold actions name (ids of argument-made entities)
    for g in gold:
        for k, val in g.items():
            if not (isinstance(val, str) and k.startswith("target_")):
                continue
            key = k.removeprefix("target_")
            e = by_id.get(key) or by_id.get(f"{key}_id")
            if (
                e is not None
                and e.source == "verb arguments"
                and val not in {r[e.id_field] for r in e.records}
            ):
                e.records.append({e.id_field: val})
    # 4. what each verb does
    bindings: dict[str, dict[str, Any]] = {}
    released: list[dict[str, Any]] = []
    dropped: list[dict[str, str]] = []
    for v in verbs:
        name = tool_name(v)
        params = verb_params(v)
        effect = effects[name]
        released.append(
            {
                "name": name,
                "verb": v["verb"],
                "description": str(v.get("help") or "").strip() or v["verb"].replace("-", " "),
                "side_effect": effect,
                "params": params,
            }
        )
        if not re.match(r"^[a-z][a-z0-9_]{0,63}$", name):
            dropped.append({"tool": v["verb"], "why": "its name is not a usable tool name"})
            continue
        if name in _SESSION_VERBS:
            dropped.append({"tool": v["verb"], "why": "session management: the runtime owns sessions"})
            continue
        if name in _RUNTIME_COMMANDS:
            dropped.append({"tool": v["verb"], "why": f"runtime command: {_RUNTIME_COMMANDS[name]}"})
            continue
        if name in _WORKSPACE_READS:
            bindings[name] = {"kind": _WORKSPACE_READS[name], "side_effect": "read"}
            continue
        if name in _GROUP_VERBS and not params:
            bindings[name] = {"kind": "summary", "side_effect": "read"}
            continue
        ids = [p["name"] for p in params if p["name"] in by_id]
        id_param = ids[0] if ids else None
        target = by_id[id_param] if id_param else None
        others = [p for p in params if p["name"] != id_param]
        words = frozenset(READ_WORDS | WRITE_WORDS)
        first = name.split("_")[0]
        if effect == "read":
            listing = first in _LIST_WORDS or target is None
            if not listing:
                bindings[name] = {
                    "kind": "get",
                    "entity": target.name,
                    "id_param": id_param,
                    "side_effect": "read",
                }
                continue
            coll = _match_entity(_noun(name, words), params, entities, strict=True) or target
            coll = coll or _match_entity(_noun(name, words), params, entities)
            if coll is None:
                coll = _ensure_output(entities, _noun(name, words) or name, params)
            filters = [p["name"] for p in params]
            bindings[name] = {"kind": "list", "entity": coll.name, "side_effect": "read", "filters": filters}
            continue
        if first in _CREATE_WORDS:
            noun = _noun(name, frozenset(WRITE_WORDS))
            if noun and (target is None or entity_name(singular(noun)) != target.name):
                out = _ensure_output(entities, singular(noun), params, creates=True)
                bindings[name] = {"kind": "create", "entity": out.name, "side_effect": "write"}
                continue
        # writes
        if target is not None:
            status = _PARTICIPLE.get(first)
            new_status = next((p["name"] for p in others if p["name"] in ("status", "new_status")), None)
            for p in others:
                if p["name"] != new_status:
                    target.add_attr(p["name"], p["schema"]["type"], p["description"])
            target.add_attr("last_action", "string", "the last released verb applied to the record")
            if status:
                if status not in target.statuses:
                    target.statuses.append(status)
                bindings[name] = {
                    "kind": "transition",
                    "entity": target.name,
                    "id_param": id_param,
                    "target": status,
                    "side_effect": "write",
                }
            elif new_status:
                choices = next((p["schema"].get("enum") for p in others if p["name"] == new_status), None)
                for s in choices or []:
                    if s not in target.statuses:
                        target.statuses.append(s)
                bindings[name] = {
                    "kind": "transition",
                    "entity": target.name,
                    "id_param": id_param,
                    "status_param": new_status,
                    "side_effect": "write",
                }
            else:
                bindings[name] = {
                    "kind": "update",
                    "entity": target.name,
                    "id_param": id_param,
                    "side_effect": "write",
                }
            continue
        noun = _noun(name, frozenset(WRITE_WORDS)) or name
        out = _ensure_output(entities, noun, params, creates=True)
        bindings[name] = {"kind": "create", "entity": out.name, "side_effect": "write"}
    for v in docs.get("hidden_verbs", []) or []:
        dropped.append(
            {"tool": str(v.get("verb")), "why": "hidden verb (session management), not an agent tool"}
        )
    # an entity with fewer than two open statuses has no lifecycle of its own (the compiler would give it
    # a default one): a verb that would move it to a status records the action on it instead
    for name, b in bindings.items():
        e = entities.get(b.get("entity", ""))
        if b["kind"] == "transition" and b.get("target") and e is not None:
            if sum(not any(c in s for c in _CANCEL) for s in e.statuses if s != b["target"]) < 1:
                e.statuses.remove(b["target"])
                bindings[name] = {**b, "kind": "update"}
                del bindings[name]["target"]
    # a released flow (SKILL.md: "requested -> pending_review -> approved/rejected -> …") orders a lifecycle
    flows = _flows(_text(world / "SKILL.md") if world else "")
    # statuses: the values the records carry first, then verb targets; cancel-like ones last
    for e in entities.values():
        keep = list(dict.fromkeys(e.statuses))
        flow = next((f for f in flows if len(set(f) & set(keep)) >= 2), None)
        if flow is not None:
            keep = [x for x in flow if x in keep or not any(c in x for c in _CANCEL)] + [
                x for x in keep if x not in flow
            ]
            e.flow = flow
        e.statuses = sorted(
            keep, key=lambda s: (flow.index(s) if flow and s in flow else _rank(s) * 100, keep.index(s))
        )
        if e.statuses:
            e.add_attr("status", "string", "the record's status")
    # rules
    skill = _text(world / "SKILL.md") if world else ""
    rules, rule_rows = [], []
    for i, text in enumerate(_policy_bullets(skill)):
        rule, why = _rule_of(text, entities)
        if rule is None:
            rules.append(BusinessRule(rule_id=f"policy_{i + 1}", description=text))
            if why.startswith("lifecycle:"):
                rule_rows.append(
                    {"text": text, "kind": "lifecycle", "enforced_by": "state machine", "why": why}
                )
            else:
                rule_rows.append({"text": text, "kind": "", "why": why})
        else:
            rules.append(rule)
            rule_rows.append({"text": text, "kind": rule.kind, "rule_id": rule.rule_id})
    # scenarios
    scen_docs = {str(s.get("scenario_id")): s for s in data["scenarios"] if s.get("scenario_id")}
    sids = [s for s in docs.get("scenario_ids") or [] if s] or list(scen_docs) or [f"{env}_default"]
    sids += [s for s in scen_docs if s not in sids]
    scenarios: list[SpecScenario] = []
    scen_rows: list[dict[str, Any]] = []
    for sid in sids:
        sdoc = scen_docs.get(sid, {})
        prompt = str(sdoc.get("task_prompt") or "").strip() or (
            f"Work in the {env.replace('_', ' ')} environment ({sid.replace('_', ' ')})."
        )
        rules_text = _scoring_rules(gold, sid, entities)
        scenarios.append(
            SpecScenario(
                scenario_id=snake(sid),
                task_prompt=prompt[:2000],
                base_time=str(sdoc.get("current_time") or BASE_TIME),
                entities=list(entities)[:4],
                scoring_rules=[ScoringRule(dimension="goal", weight=1.0, rule=r) for r in rules_text],
            )
        )
        scen_rows.append({"scenario_id": snake(sid), "released_prompt": bool(sdoc), "goal_rules": rules_text})
    e_entities = [
        Entity(
            name=e.name,
            description=f"{e.name.replace('_', ' ')} ({e.source})",
            id_field=e.id_field,
            attributes=[
                {"name": a, "type": t, "description": e.docs.get(a, "")} for a, t in e.attributes.items()
            ],
            statuses=e.statuses,
        )
        for e in entities.values()
    ]
    records = [
        WorldRecord(
            record_id=str(r.get(e.id_field)),
            entity=e.name,
            fields={snake(k): v for k, v in r.items() if v is not None},
        )
        for e in entities.values()
        for r in e.records
        if r.get(e.id_field) is not None
    ]
    readme = _text(world / "README.md") if world else ""
    first = next((ln.strip() for ln in readme.splitlines() if ln.strip() and not ln.startswith("#")), "")
    e_spec = ESpec(
        environment_name=snake(env),
        task_description=(first or f"The released ClawForge environment {env}.")[:2000],
        domains=["claw"],
        entities=e_entities,
        state_fields=[
            StateField(name=e.collection, kind="collection", entity=e.name) for e in entities.values()
        ],
        business_rules=rules,
        world_data=WorldData(
            accounts=[
                Account(
                    account_id=str(a.get("account_id") or f"account_{i}"),
                    name=str(a.get("display_name") or a.get("name") or a.get("account_id") or ""),
                    role=str(a.get("department") or a.get("role") or ""),
                )
                for i, a in enumerate(data["accounts"])
            ],
            contacts=[
                Contact(
                    contact_id=str(c.get("contact_id") or f"contact_{i}"),
                    name=str(c.get("name") or ""),
                    role=str(c.get("type") or c.get("role") or ""),
                )
                for i, c in enumerate(data["contacts"])
            ],
            attachments=[
                Attachment(attachment_id=snake(Path(p).stem), filename=p, content=t[:2000])
                for p, t in data["attachments"].items()
            ],
            records=records,
        ),
        scenarios=scenarios,
    )
    t_spec = TSpec(
        tools=[_decl(r, bindings.get(r["name"]), entities) for r in released if r["name"] in bindings]
    )
    return ReleaseSpec(e_spec, t_spec, bindings, released, dropped, rule_rows, data["attachments"], scen_rows)


def _match_entity(
    noun: str, params: list[dict[str, Any]], entities: dict[str, EntityPlan], *, strict: bool = False
) -> EntityPlan | None:
    """The collection a listing verb reads: by its noun, else by the attributes its filters name;
    ``strict``: only an entity named by the noun (``list-ledger-entries`` → ``ledger_entry``)."""
    if strict:
        want = {entity_name(singular(noun)), entity_name(noun), snake(noun)}
        return next((e for e in entities.values() if e.name in want or e.collection in want), None)
    toks = set(noun.split("_")) - {""}
    best, score = None, 0
    for e in entities.values():
        names = {e.name, e.collection, singular(e.collection), *e.name.split("_"), *e.collection.split("_")}
        s = 3 * len(toks & names) + sum(1 for p in params if p["name"] in e.attributes)
        if s > score:
            best, score = e, s
    return best


def _ensure_output(
    entities: dict[str, EntityPlan], noun: str, params: list[dict[str, Any]], creates: bool = False
) -> EntityPlan:
    """The entity of what a verb produces (``generate-analysis`` → ``analysis``), made when missing; a
    creating verb's arguments become its attributes."""
    ent = entity_name(noun or "record")
    e = entities.get(ent)
    if e is None:
        coll = ent + "_records" if ent.endswith("s") else ent + "s"
        e = EntityPlan(ent, coll, f"{ent}_id", "verb output")
        e.add_attr(f"{ent}_id", "string", f"the {ent.replace('_', ' ')} id")
        entities[ent] = e
    if creates:
        e.add_attr("title", "string", "what the record is")
        for p in params:
            e.add_attr(p["name"], p["schema"]["type"], p["description"])
    return e


def _scoring_rules(gold: list[dict[str, Any]], sid: str, entities: dict[str, EntityPlan]) -> list[str]:
    """``<record>.status == <value>`` for the scenario's gold actions that move a named record to a status
    its entity has."""
    out = []
    for g in gold:
        if g.get("_scenario") != sid:
            continue
        status = g.get("new_status") or _PARTICIPLE.get(str(g.get("action_type", "")).split("_")[0])
        for k, val in g.items():
            if k.startswith("target_") and isinstance(val, str) and status:
                ent = next(
                    (e for e in entities.values() if any(r.get(e.id_field) == val for r in e.records)), None
                )
                if ent is not None and status in ent.statuses:
                    out.append(f"{val}.status == {status}")
    return out


def _decl(r: dict[str, Any], binding: dict[str, Any] | None, entities: dict[str, EntityPlan]) -> ToolDecl:
    props = {}
    for p in r["params"]:
        s = p["schema"]
        props[p["name"]] = ParamDecl(
            type=s["type"], description=p["description"], enum=s.get("enum"), default=p.get("default")
        )
    ent = entities.get((binding or {}).get("entity", ""))
    write = r["side_effect"] == "write"
    return ToolDecl(
        name=r["name"],
        description=r["description"][:300],
        parameters=Parameters(properties=props, required=[p["name"] for p in r["params"] if p["required"]]),
        returns=Returns(description="the result"),
        side_effect="write" if write else "read",
        modifies_state=write,
        state_fields_affected=[ent.collection] if ent and write else [],
    )


_STAGES = (
    ("pending", "new", "open", "draft", "request", "created", "queued", "todo", "planned", "idle"),
    ("review", "processing", "progress", "active", "received", "assigned", "scheduled", "running"),
    (),
    ("deliver", "complet", "closed", "done", "resolv", "refund", "archiv", "finish", "paid"),
)


def _rank(status: str) -> int:
    """Where a status sits in a lifecycle (the compiler's forward edges follow this order): waiting ones
    first, work in progress, verb outcomes, finished ones, cancel-like ones last."""
    if any(c in status for c in _CANCEL):
        return 5
    if any(w in status for w in ("out_for", "transit", "partial")):
        return 2
    for i, words in enumerate(_STAGES):
        if any(w in status for w in words):
            return i
    return 2


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def count_dropped(dropped: list[dict[str, str]]) -> dict[str, int]:
    return dict(Counter(d["why"].split(":")[0] for d in dropped))
