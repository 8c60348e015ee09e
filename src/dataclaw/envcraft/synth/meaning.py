"""Meaning gates on an E_spec (issue 26 item 2): is the spec *about* the scenario it was written for?

:func:`~.spec.check_spec` proves a spec well-formed; a weak model still writes well-formed nonsense: one
entity called ``ticket_id`` or ``d3jbjhjhjhj``, a rule ``business_rules_1`` that says ``business_rules_1``,
tools ``read``/``write`` for a scenario about escalations and refunds. These gates judge the meaning,
deterministically (no model, stdlib only, a few milliseconds per spec):

- entity names are domain nouns: not ids (``ticket_id``), digits (``dynamics_2023_2024_``), keyboard noise
  (``d3jbjhjhjhj``: character statistics: vowel-less or long consonant runs, repeated short units, keyboard
  rows), the environment's own name, a generic placeholder (``claw``, ``item``, ``entity``) or a phrase
  (``pet_patients_and_owners``); an entity holds something besides its id;
- the description's content words are covered by the spec's names (entities, attributes, statuses, state
  fields, tools, parameters and their enum values; never its free prose, which a model can copy): the
  ``coverage`` figure, and below ``min_coverage`` an issue naming what is missing;
- several related entities where the description names several things (its plural nouns);
- rules exist and are concrete: not empty, not their own id restated, not the description restated, and about
  something the spec holds;
- tools go beyond CRUD where the description names operations (refund, assign, escalate, reconcile, approve…):
  every such operation has a tool that performs it.

    report = check_spec_meaning(spec_record, scenario.description, env_name=scenario.id)
    report.passed, report.coverage, report.missing, [i.code for i in report.issues]

``spec`` is a spec record (``e_spec`` + ``t_spec``), an invalid-spec reject (``detail.e_spec``/``t_spec``),
or a bare E_spec dict (tools under ``tools`` when present).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

MIN_COVERAGE = 0.5
"""Default share of the description's content words a spec's names must cover."""
MAX_SHOWN = 12
"""Terms named in one message, at most."""


class MeaningCode(StrEnum):
    """What a meaning gate found (machine-readable; a repair prompt shows it with its sentence)."""

    ENTITY_IS_ID = "entity_is_id"
    ENTITY_HAS_DIGITS = "entity_has_digits"
    ENTITY_IS_NOISE = "entity_is_noise"
    ENTITY_IS_ENV_NAME = "entity_is_env_name"
    ENTITY_IS_PLACEHOLDER = "entity_is_placeholder"
    ENTITY_IS_PHRASE = "entity_is_phrase"
    HOLLOW_ENTITY = "hollow_entity"
    NOISE_NAME = "noise_name"
    """An attribute, tool or parameter name is keyboard noise."""
    LOW_COVERAGE = "low_coverage"
    SINGLE_ENTITY = "single_entity"
    UNRELATED_ENTITIES = "unrelated_entities"
    NO_RULES = "no_rules"
    PLACEHOLDER_RULE = "placeholder_rule"
    VAGUE_RULE = "vague_rule"
    GENERIC_TOOL = "generic_tool"
    MISSING_OPERATION = "missing_operation"


PARTS: dict[str, frozenset[MeaningCode]] = {
    "entities": frozenset(
        {
            MeaningCode.ENTITY_IS_ID,
            MeaningCode.ENTITY_HAS_DIGITS,
            MeaningCode.ENTITY_IS_NOISE,
            MeaningCode.ENTITY_IS_ENV_NAME,
            MeaningCode.ENTITY_IS_PLACEHOLDER,
            MeaningCode.ENTITY_IS_PHRASE,
            MeaningCode.HOLLOW_ENTITY,
            MeaningCode.SINGLE_ENTITY,
            MeaningCode.UNRELATED_ENTITIES,
        }
    ),
    "state": frozenset({MeaningCode.NO_RULES, MeaningCode.PLACEHOLDER_RULE, MeaningCode.VAGUE_RULE}),
    "tools": frozenset({MeaningCode.GENERIC_TOOL, MeaningCode.MISSING_OPERATION, MeaningCode.LOW_COVERAGE}),
}
"""Which answer of spec expansion (entities, state, tools) can fix each code (``noise_name``: the part
its path names)."""


@dataclass
class MeaningIssue:
    """One meaning problem: its code, a sentence a user (and a repairing model) understands, where."""

    code: str
    message: str
    path: str = ""

    def line(self) -> str:
        return f"{self.code} at {self.path}: {self.message}" if self.path else f"{self.code}: {self.message}"


@dataclass
class MeaningReport:
    """The gates' verdict on one spec: its issues, the description's coverage and what is not covered."""

    issues: list[MeaningIssue] = field(default_factory=list)
    coverage: float = 1.0
    missing: list[str] = field(default_factory=list)
    terms: int = 0
    """How many content words the description has (the coverage's denominator)."""
    min_coverage: float = MIN_COVERAGE

    @property
    def passed(self) -> bool:
        return not self.issues

    def codes(self) -> list[str]:
        return sorted({i.code for i in self.issues})

    def for_part(self, part: str) -> list[MeaningIssue]:
        """The issues the answer ``part`` (entities, state, tools) can fix."""
        return [i for i in self.issues if part_of(i) == part]

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "coverage": self.coverage,
            "min_coverage": self.min_coverage,
            "terms": self.terms,
            "missing": list(self.missing),
            "codes": self.codes(),
            "issues": [{"code": i.code, "message": i.message, "path": i.path} for i in self.issues],
        }


def part_of(issue: MeaningIssue) -> str:
    """The spec-expansion answer that can fix ``issue``."""
    for part, codes in PARTS.items():
        if issue.code in codes:
            return part
    if issue.path.startswith("tools"):
        return "tools"
    if issue.path.startswith(("business_rules", "state_fields", "scenarios", "world_data")):
        return "state"
    return "entities"


# ---- words ---------------------------------------------------------------------------------------------

STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing down during each either etc few for from further had has
    have having he her here hers him his how i if in into is it its itself just may me might more most must
    my no nor not now of off on once only or other our ours out over own per same she should so some such
    than that the their theirs them then there these they this those through to too under until up upon us
    very via was we were what when where whether which while who whom whose why will with within without
    would you your yours e g eg ie i.e e.g including include includes included like using use used uses
    based related various different multiple several many much new given certain specific relevant
    api apis support supports supporting supported system systems environment environments platform
    platforms application applications app apps tool tools management manage manages managing managed
    handling handle handles functionality functionalities feature features capability capabilities
    operation operations information info data detail details end real time workflow
    workflows process processes processing task tasks their own one two three way ways well able need needs
    must shall each every type types kind kinds general common full simple basic automated automatic
    automatically smart personal daily online digital""".split()
)
"""Function words and the framing every catalogue description uses ("APIs supporting … management")."""

PLACEHOLDERS = frozenset(
    """claw item items entity entities object objects thing things record records resource resources element
    elements value values field fields data info information main default test tests example
    examples sample samples foo bar baz qux temp tmp misc other others stuff entry entries node nodes
    creation update updates deletion retrieval operation operations action actions collection collections
    business rule rules dimension scenario scenarios task_prompt state status list lists type
    types name names unknown none null todo tbd placeholder dummy string integer number boolean array
    qwerty asdf lorem ipsum xyz abc""".split()
)
"""Entity names that name no domain thing."""

RUNTIME_NOUNS = frozenset("scenario scenarios session task attachment attachments summary workspace".split())
"""What every environment's runtime holds (C.1): a tool named for one (``list_scenarios``) names a thing."""

ID_SUFFIXES = ("id", "ids", "uuid", "key", "pk", "no", "num", "number", "code", "ref")

CRUD = frozenset(
    """list get read write create add new insert update set edit modify patch change delete remove drop
    search find fetch query view show lookup retrieve save put post upsert""".split()
)
"""Verbs of generic record access."""

WRITE_OPS = frozenset(
    """refund assign reassign escalate reconcile approve reject deny decline cancel book reserve schedule
    reschedule ship dispatch deliver invoice bill pay transfer notify remind acknowledge resolve reopen
    archive publish unpublish submit review inspect prescribe verify validate merge sync backup restore
    export import exchange replace allocate release lock unlock suspend activate deactivate enable disable
    revoke grant renew extend confirm enroll onboard offboard hire terminate invite subscribe unsubscribe
    upload download authorize audit triage prioritize classify categorize dispute settle withdraw deposit
    redeem adjust quarantine mute snooze arm disarm checkin checkout reorder restock vaccinate admit
    discharge diagnose appeal deploy provision rollback retry""".split()
)
"""Operations that change state: a write tool must perform each one the description names. Words that are
mostly nouns or settings in descriptions (order, return, report, alert, route, promotion, discount, sign,
configuration, completion) are left out."""

CHECK_OPS = frozenset("inspect review audit verify validate triage diagnose".split())
"""Operations that may only look (an ``inspect_return`` that reads performs inspection): any tool named for
one performs it."""

CRUD_CLASSES: dict[str, frozenset[str]] = {
    "create": frozenset("create creation add new insert register post".split()),
    "update": frozenset("update edit modify change set patch upsert".split()),
    "delete": frozenset("delete deletion remove removal drop".split()),
    "read": frozenset("read get list search find fetch query view show lookup retrieve retrieval".split()),
}
"""Record-access words of a description: covered by any tool whose name uses a word of the same class
(``ticket creation`` by ``add_ticket``)."""

_SUFFIXES = (
    ("izations", ""),
    ("ization", ""),
    ("ications", ""),
    ("ication", ""),
    ("iations", ""),
    ("iation", ""),
    ("ations", ""),
    ("ation", ""),
    ("ating", ""),
    ("ated", ""),
    ("ates", ""),
    ("ments", ""),
    ("ment", ""),
    ("ings", ""),
    ("ing", ""),
    ("ions", ""),
    ("ion", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("ers", ""),
    ("er", ""),
    ("als", ""),
    ("al", ""),
    ("ed", ""),
    ("ate", ""),
)


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light English stemmer: enough to meet ``creation``/``create``, ``escalation``/``escalated``,
    ``invoices``/``invoice``, ``shipped``/``shipment``/``ship`` and ``statuses``/``status``."""
    w = word.lower()
    if len(w) <= 3:
        return w
    if w.endswith("es") and len(w) > 4 and (w[-3] in "sxz" or w[-4:-2] in ("ch", "sh")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is", "ies")) and len(w) > 3:
        w = w[:-1]
    for suffix, repl in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: len(w) - len(suffix)] + repl
            break
    if len(w) > 4 and w[-1] in "eiy":
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiou":
        w = w[:-1]
    return w


@functools.lru_cache(maxsize=65536)
def same_stem(a: str, b: str) -> bool:
    """Two stems name one thing: equal, one extends the other by at most three letters (``analys`` /
    ``analysis``), or they share a long prefix (``prescrib``/``prescript``)."""
    if a == b:
        return True
    short, long_ = sorted((a, b), key=len)
    if len(short) >= 5 and long_.startswith(short) and len(long_) - len(short) <= 3:
        return True
    n = 0
    for x, y in zip(short, long_, strict=False):
        if x != y:
            break
        n += 1
    return n >= 6 and n >= 0.85 * len(short)


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD = re.compile(r"[A-Za-z][A-Za-z']*")


def words(text: str) -> list[str]:
    """Lower-case words of prose or identifiers (``snake_case``, ``kebab-case``, ``camelCase``; digits
    split words and are dropped)."""
    text = _CAMEL.sub(" ", str(text))
    return [w.lower().strip("'").removesuffix("'s") for w in _WORD.findall(text) if w.strip("'")]


def content_words(text: str) -> list[str]:
    """Words that carry meaning: no stop word, at least three letters."""
    return [w for w in words(text) if len(w) >= 3 and w not in STOP_WORDS]


# ---- keyboard noise ------------------------------------------------------------------------------------

_VOWELS = set("aeiouy")
_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_KEY_RUNS = frozenset(row[i : i + 5] for r in _ROWS for row in (r, r[::-1]) for i in range(len(row) - 4))
_REPEAT = re.compile(r"([a-z]{1,3})\1{2,}")
_ACRONYMS = frozenset(
    """sku skus crm pdf pdfs url urls html xml csv sms mms gps kpi kpis hr rsvp dns ssn vpn nfc tcp http https
    ssh sql ftp smtp mfa ttl crl cdn dvd cd tv pc sdk jwt vcs dms lms erp hvac""".split()
)


@functools.lru_cache(maxsize=65536)
def noise_reason(token: str) -> str:
    """Why a word looks like keyboard noise ("" when it does not): no vowel, a long consonant run, a short
    unit repeated, a run of neighbouring keys."""
    t = token.lower()
    letters = "".join(c for c in t if c.isalpha())
    if len(letters) < 4 or letters in _ACRONYMS:
        return ""
    if not _VOWELS & set(letters):
        return "it has no vowel"
    run = longest = 0
    for c in letters:
        run = 0 if c in _VOWELS else run + 1
        longest = max(longest, run)
    if longest >= 6:
        return f"it has {longest} consonants in a row"
    m = _REPEAT.search(letters)
    if m and len(m.group(0)) >= 6:
        return f"it repeats {m.group(1)!r}"
    for i in range(len(letters) - 4):
        if letters[i : i + 5] in _KEY_RUNS:
            return f"it runs along the keyboard ({letters[i : i + 5]!r})"
    return ""


def is_noise(name: str) -> str:
    """Why an identifier is keyboard noise ("" when no part of it is)."""
    for part in re.split(r"[_\-\s]+|(?<=[a-z])(?=[0-9])|(?<=[0-9])(?=[a-z])", str(name).lower()):
        why = noise_reason(part)
        if why:
            return f"{part!r}: {why}"
    return ""


# ---- reading a spec ------------------------------------------------------------------------------------


def _parts(spec: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(E_spec dict, C.3 tools) from a spec record, an invalid-spec reject or a bare E_spec."""
    if not isinstance(spec, dict):
        return {}, []
    body = spec
    if "e_spec" not in spec and isinstance(spec.get("detail"), dict) and "e_spec" in spec["detail"]:
        body = spec["detail"]
    if "e_spec" in body:
        e = body.get("e_spec") or {}
        t = body.get("t_spec") or []
    else:
        e, t = body, body.get("tools") or []
    if isinstance(t, dict):
        t = t.get("tools") or []
    tools = [x for x in t if isinstance(x, dict)]
    return (e if isinstance(e, dict) else {}), tools


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [x for x in _list(value) if isinstance(x, dict)]


@dataclass
class _Names:
    """The spec's names, by where they stand (what coverage counts: names, never free prose; ``enums`` only
    say which operation a write tool performs)."""

    entities: list[str] = field(default_factory=list)
    attributes: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    state_fields: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    params: list[str] = field(default_factory=list)
    enums: list[str] = field(default_factory=list)

    def all(self) -> Iterator[str]:
        # parameter enum values are left out: a list of the description's words costs a model nothing
        for group in (
            self.entities,
            self.attributes,
            self.statuses,
            self.state_fields,
            self.tools,
            self.params,
        ):
            yield from group


def _names(e: dict[str, Any], tools: list[dict[str, Any]]) -> _Names:
    out = _Names()
    for ent in _dicts(e.get("entities")):
        out.entities.append(str(ent.get("name", "")))
        out.attributes += [str(a.get("name", "")) for a in _dicts(ent.get("attributes"))]
        out.statuses += [str(s) for s in _list(ent.get("statuses"))]
    out.state_fields = [str(f.get("name", "")) for f in _dicts(e.get("state_fields"))]
    for t in tools:
        out.tools.append(str(t.get("name", "")))
        props = (t.get("parameters") or {}).get("properties") or {}
        if isinstance(props, dict):
            for name, decl in props.items():
                out.params.append(str(name))
                if isinstance(decl, dict):
                    out.enums += [str(v) for v in _list(decl.get("enum")) if isinstance(v, str)]
    return out


def _vocab(names: Iterable[str]) -> set[str]:
    """Stems of the words of the names that are not keyboard noise."""
    out: set[str] = set()
    for name in names:
        if is_noise(name):
            continue
        out |= {stem(w) for w in words(name) if len(w) >= 3}
    return out


def _covered(term: str, vocab: set[str]) -> bool:
    return any(same_stem(term, v) for v in vocab)


def _show(items: Iterable[str]) -> str:
    items = list(items)
    more = f" and {len(items) - MAX_SHOWN} more" if len(items) > MAX_SHOWN else ""
    return ", ".join(items[:MAX_SHOWN]) + more


# ---- the gates -----------------------------------------------------------------------------------------


_FRAMING = frozenset({"and", "or", "the", "of", "env", "envs", "environment", "environments", "system"})


def _name_stems(name: str) -> set[str]:
    return {stem(w) for w in words(name) if len(w) >= 3 and w not in _FRAMING}


def _is_env_name(name: str, env_stems: set[str]) -> bool:
    """An entity named after its environment: the same words (``scheduling_and_reminders`` in
    scheduling_reminders), three or more of them, or with ``env`` (``home_security_patrol_env``)."""
    own = _name_stems(name)
    if not own or not own <= env_stems:
        return False
    return own == env_stems or len(own) >= 3 or bool({"env", "envs", "environment"} & set(words(name)))


def _entity_issues(e: dict[str, Any], env_name: str) -> list[MeaningIssue]:
    out: list[MeaningIssue] = []
    env_stems = _name_stems(env_name)
    for i, ent in enumerate(_dicts(e.get("entities"))):
        name = str(ent.get("name", ""))
        path = f"entities[{i}].name"
        toks = [t for t in re.split(r"[_\-\s]+", name.lower()) if t]
        letters = [w for w in words(name)]
        id_field = str(ent.get("id_field", ""))
        found: tuple[MeaningCode, str] | None = None
        why = is_noise(name)
        if why:
            found = (
                MeaningCode.ENTITY_IS_NOISE,
                f"entity {name!r} is keyboard noise ({why}); name the domain thing it holds, e.g. ticket",
            )
        elif any(c.isdigit() for c in name) or name.endswith("_") or name.startswith("_"):
            found = (
                MeaningCode.ENTITY_HAS_DIGITS,
                f"entity {name!r} has digits or stray underscores; name it with plain words, e.g. invoice",
            )
        elif (toks and toks[-1] in ID_SUFFIXES) or name == id_field:
            noun = "_".join(toks[:-1]) or "the thing it identifies"
            found = (
                MeaningCode.ENTITY_IS_ID,
                f"entity {name!r} is an id, not a thing; name the entity ({noun}) and keep the id as "
                "its id_field",
            )
        elif name == env_name or (env_stems and _is_env_name(name, env_stems)):
            found = (
                MeaningCode.ENTITY_IS_ENV_NAME,
                f"entity {name!r} is the environment's own name; name the records it stores instead",
            )
        elif name.lower() in PLACEHOLDERS or (letters and all(w in PLACEHOLDERS for w in letters)):
            found = (
                MeaningCode.ENTITY_IS_PLACEHOLDER,
                f"entity {name!r} is a placeholder; name a domain thing of this scenario",
            )
        elif "and" in toks or "or" in toks or len(toks) > 3:
            found = (
                MeaningCode.ENTITY_IS_PHRASE,
                f"entity {name!r} is a phrase that lumps several things together; declare one entity "
                "per thing, related by ids",
            )
        if found:
            out.append(MeaningIssue(found[0].value, found[1], path))
        attrs = [str(a.get("name", "")) for a in _dicts(ent.get("attributes"))]
        if not [a for a in attrs if a != id_field]:
            out.append(
                MeaningIssue(
                    MeaningCode.HOLLOW_ENTITY.value,
                    f"entity {name!r} holds nothing but its id; give it the attributes its records carry",
                    f"entities[{i}].attributes",
                )
            )
        for j, attr in enumerate(attrs):
            why = is_noise(attr)
            if why:
                out.append(
                    MeaningIssue(
                        MeaningCode.NOISE_NAME.value,
                        f"attribute {attr!r} of {name!r} is keyboard noise ({why}); use a domain word",
                        f"entities[{i}].attributes[{j}].name",
                    )
                )
    return out


def _plural_nouns(description: str) -> list[str]:
    """Words of the description that name countable things (plurals, operations and framing words left
    out): the entities it names."""
    out: list[str] = []
    seen: set[str] = set()
    for w in content_words(description):
        if len(w) < 4 or not w.endswith("s") or w.endswith(("ss", "us", "is", "ous")):
            continue
        s = stem(w)
        one = w[:-3] + "y" if w.endswith("ies") else w[:-1]
        if s in seen or w in PLACEHOLDERS or w in ABSTRACT or one in CRUD or one in VERBISH or _crud_class(w):
            continue
        seen.add(s)
        out.append(w)
    return out


VERBISH = frozenset(
    """refund book issue take give make need allow let help handle run check track log support manage
    offer provide require include contain enable keep send bring store process record""".split()
)
"""Singulars whose plural in a description is mostly a verb ("the clinic issues invoices")."""
ABSTRACT = frozenset(
    """constraints transitions structures functions interactions series logistics histories requirements
    conditions capabilities preferences settings insights trends metrics analytics statistics needs
    rules results outcomes levels changes""".split()
)
"""Plurals of a description that name no record type."""
GENERIC_ATTRIBUTES = frozenset(
    """name title label description notes note status type kind category created updated deleted time
    timestamp date at by id ids value amount count total items item data info details metadata tags
    location address email phone""".split()
)
"""Attribute words two entities can share without a value flowing between them."""


def _related(a: dict[str, Any], b: dict[str, Any], tools: list[dict[str, Any]]) -> bool:
    """Does a value flow between two entities: one holds the other's id or name in an attribute, both hold
    a domain attribute of one meaning (user.temperature_preference, weather.temperature), or a tool takes
    both ids."""

    def attr_names(ent: dict[str, Any]) -> list[str]:
        return [str(x.get("name", "")) for x in _dicts(ent.get("attributes"))]

    def domain_stems(ent: dict[str, Any]) -> set[str]:
        id_field = str(ent.get("id_field", ""))
        return {
            stem(w)
            for n in attr_names(ent)
            if n != id_field
            for w in words(n)
            if len(w) >= 3 and w not in GENERIC_ATTRIBUTES
        }

    for x, y in ((a, b), (b, a)):
        key = {stem(w) for w in words(str(y.get("name", ""))) if len(w) >= 3}
        y_id = str(y.get("id_field", ""))
        for attr in attr_names(x):
            if attr == str(x.get("id_field", "")):
                continue
            if attr == y_id or {stem(w) for w in words(attr) if len(w) >= 3} & key:
                return True
    if domain_stems(a) & domain_stems(b):
        return True
    ids = {str(a.get("id_field", "")), str(b.get("id_field", ""))} - {""}
    for t in tools:
        props = (t.get("parameters") or {}).get("properties") or {}
        if len(ids) == 2 and isinstance(props, dict) and ids <= set(props):
            return True
    return False


def _relation_issues(e: dict[str, Any], description: str, tools: list[dict[str, Any]]) -> list[MeaningIssue]:
    ents = _dicts(e.get("entities"))
    things = _plural_nouns(description)
    if len(ents) < 2:
        if len(things) >= 2:
            have = ", ".join(repr(str(x.get("name", ""))) for x in ents) or "none"
            return [
                MeaningIssue(
                    MeaningCode.SINGLE_ENTITY.value,
                    f"the description names several things ({_show(things)}) but the spec declares one "
                    f"entity ({have}); declare each as its own entity, related by ids",
                    "entities",
                )
            ]
        return []
    for i, a in enumerate(ents):
        if any(_related(a, b, tools) for b in ents[i + 1 :]):
            return []
    names = ", ".join(str(x.get("name", "")) for x in ents)
    return [
        MeaningIssue(
            MeaningCode.UNRELATED_ENTITIES.value,
            f"no entity refers to another ({names}); give one an attribute holding another's id, "
            "e.g. appointment.patient_id",
            "entities",
        )
    ]


_TEMPLATE = re.compile(r"\{\{|\}\}|<[a-z_]+>|\bTODO\b|\.\.\.|lorem ipsum", re.I)


def _structured(rule: dict[str, Any]) -> bool:
    """A rule of the rule language (a ``kind``: the compiler enforces it, :func:`.spec.check_spec` checks
    its fields); a rule without a kind is prose only and judged by its text."""
    return bool(rule.get("kind"))


def _rule_issues(e: dict[str, Any], description: str, names: _Names) -> list[MeaningIssue]:
    rules = _dicts(e.get("business_rules"))
    if not rules:
        return [
            MeaningIssue(
                MeaningCode.NO_RULES.value,
                "the spec has no business rule; add one that decides which changes are valid, e.g. "
                "'a refund over 100 needs a manager's approval'",
                "business_rules",
            )
        ]
    out: list[MeaningIssue] = []
    vague: list[MeaningIssue] = []
    concrete = 0
    held = _vocab([*names.entities, *names.attributes, *names.statuses, *names.state_fields, *names.tools])
    desc = {stem(w) for w in content_words(description)}
    for i, rule in enumerate(rules):
        text = str(rule.get("description", "")).strip()
        rid = str(rule.get("rule_id", ""))
        path = f"business_rules[{i}].description"
        if _structured(rule):
            concrete += 1
            continue
        stems = [stem(w) for w in content_words(text)]
        own = {stem(w) for w in words(rid)} | {stem(w) for w in ("business", "rule", "rules")}
        why = ""
        if not text:
            why = "it is empty"
        elif _TEMPLATE.search(text):
            why = "it is a template, not a rule"
        elif is_noise(text.replace(" ", "_")):
            why = "it is keyboard noise"
        elif not set(stems) - own:
            why = f"it only restates its id {rid!r}"
        elif len(stems) < 3:
            why = "it is too short to say what is allowed"
        elif len(stems) >= 5 and desc and len(set(stems) & desc) / len(set(stems)) >= 0.8:
            why = "it restates the scenario description"
        if why:
            out.append(
                MeaningIssue(
                    MeaningCode.PLACEHOLDER_RULE.value,
                    f"rule {rid!r} is a placeholder ({why}); say what is allowed or refused, over the "
                    "entities, e.g. 'a prescription needs a vet's approval'",
                    path,
                )
            )
        elif not any(_covered(s, held) for s in stems):
            vague.append(
                MeaningIssue(
                    MeaningCode.VAGUE_RULE.value,
                    f"rule {rid!r} names nothing the environment holds; say which entity, attribute or "
                    "status it constrains",
                    path,
                )
            )
        else:
            concrete += 1
    # a real sentence about nothing the spec holds ("do not inspect implementation files") is guidance, not
    # junk: it fails the spec only when no rule at all is concrete
    return out + (vague if not concrete else [])


def _tool_issues(tools: list[dict[str, Any]], description: str, names: _Names) -> list[MeaningIssue]:
    out: list[MeaningIssue] = []
    domain = _vocab([*names.entities, *names.attributes, *names.state_fields])
    example = _example(names, "ticket")
    for i, t in enumerate(tools):
        name = str(t.get("name", ""))
        why = is_noise(name)
        toks = [w for w in words(name) if len(w) >= 2]
        if why:
            out.append(
                MeaningIssue(
                    MeaningCode.NOISE_NAME.value,
                    f"tool {name!r} is keyboard noise ({why}); name it verb_object, e.g. refund_order",
                    f"tools[{i}].name",
                )
            )
        elif not toks or (
            all(w in CRUD or (w in PLACEHOLDERS and w not in RUNTIME_NOUNS) for w in toks)
            and not any(_covered(stem(w), domain) for w in toks)
        ):
            out.append(
                MeaningIssue(
                    MeaningCode.GENERIC_TOOL.value,
                    f"tool {name!r} names no domain thing; name it verb_object, e.g. get_{example}",
                    f"tools[{i}].name",
                )
            )
        props = (t.get("parameters") or {}).get("properties") or {}
        for p in props if isinstance(props, dict) else ():
            why = is_noise(p)
            if why:
                out.append(
                    MeaningIssue(
                        MeaningCode.NOISE_NAME.value,
                        f"parameter {p!r} of {name!r} is keyboard noise ({why}); use a domain word",
                        f"tools[{i}].parameters.properties.{p}",
                    )
                )
    writes: set[str] = set()
    every: set[str] = set()
    for t in tools:
        every |= {stem(w) for w in words(str(t.get("name", ""))) if len(w) >= 3}
        if t.get("side_effect") == "write" or t.get("modifies_state") is True:
            writes |= {stem(w) for w in words(str(t.get("name", ""))) if len(w) >= 3}
            props = (t.get("parameters") or {}).get("properties") or {}
            for decl in props.values() if isinstance(props, dict) else ():
                if isinstance(decl, dict):
                    writes |= {stem(w) for v in _list(decl.get("enum")) for w in words(str(v)) if len(w) >= 3}
    missing = [
        op for op in operations(description) if not _covered(stem(op), every if op in CHECK_OPS else writes)
    ]
    if missing:
        ent = _example(names, "record")
        like = ", ".join(f"{op}_{ent}" for op in missing[:3])
        out.append(
            MeaningIssue(
                MeaningCode.MISSING_OPERATION.value,
                f"the description names operations no tool performs ({_show(missing)}); add tools "
                f"beyond list/get/create/update that do them, e.g. {like}",
                "tools",
            )
        )
    return out


def _example(names: _Names, default: str) -> str:
    """A clean entity name of the spec for an example in a message (``default`` when it has none)."""
    for n in names.entities:
        toks = [t for t in n.split("_") if t]
        while len(toks) > 1 and toks[-1] in ID_SUFFIXES:
            toks = toks[:-1]  # ticket_id names a ticket
        if toks and not is_noise(n) and not any(c.isdigit() for c in n) and toks[-1] not in ID_SUFFIXES:
            return "_".join(toks)
    return default


def operations(description: str) -> list[str]:
    """The state-changing operations a description names (``escalation`` → escalate), in its order."""
    out: list[str] = []
    for w in content_words(description):
        s = stem(w)
        op = next((op for op, op_stem in _OP_STEMS if same_stem(s, op_stem)), None)
        if op and op not in out:
            out.append(op)
    return out


_OP_STEMS = tuple((op, stem(op)) for op in sorted(WRITE_OPS))


@functools.lru_cache(maxsize=65536)
def _crud_class(word: str) -> str:
    s = stem(word)
    return next((c for c, ws in CRUD_CLASSES.items() if any(same_stem(s, stem(w)) for w in ws)), "")


def _coverage(description: str, names: _Names) -> tuple[float, list[str], int]:
    """Share of the description's content words (by stem) that the spec's names use; a record-access word
    (creation, editing, search) counts when a tool name uses a word of its class."""
    vocab = _vocab(names.all())
    classes = {_crud_class(w) for t in names.tools if not is_noise(t) for w in words(t)} - {""}
    terms: dict[str, str] = {}
    for w in content_words(description):
        terms.setdefault(stem(w), w)
    if not terms:
        return 1.0, [], 0
    missing = [w for s, w in terms.items() if not _covered(s, vocab) and _crud_class(w) not in classes]
    return round(1 - len(missing) / len(terms), 3), missing, len(terms)


def check_spec_meaning(
    spec: dict[str, Any], description: str, *, env_name: str = "", min_coverage: float = MIN_COVERAGE
) -> MeaningReport:
    """Run every meaning gate on ``spec`` against the scenario ``description`` (``env_name``: the
    environment's name, which an entity must not repeat). Never raises on a malformed spec: what is not
    there is judged as absent."""
    e, tools = _parts(spec)
    env_name = env_name or str(e.get("environment_name", ""))
    names = _names(e, tools)
    coverage, missing, n_terms = _coverage(description, names)
    issues = _entity_issues(e, env_name)
    issues += _relation_issues(e, description, tools)
    issues += _rule_issues(e, description, names)
    issues += _tool_issues(tools, description, names)
    if coverage < min_coverage:
        issues.append(
            MeaningIssue(
                MeaningCode.LOW_COVERAGE.value,
                f"the spec's names cover {coverage:.0%} of the description's words (at least "
                f"{min_coverage:.0%} needed); not covered: {_show(missing)}",
                "coverage",
            )
        )
    return MeaningReport(
        issues=issues, coverage=coverage, missing=missing, terms=n_terms, min_coverage=min_coverage
    )
