"""Chain → task text (EnvCraft §4.2): reverse-engineered instruction and persona-conditioned user turns
(the initial state and verifier are :mod:`.initial`'s).

Parameters are classified from the grounded run's data flow (a value picked from an earlier step's
output is *tool-derived*, anything the user could name is *user-specified*). The model writes only the
natural language, under a JSON schema, with a token budget per call; the prompts state the essentials
only (the steps in order, the user-specified values, an abstract description of each tool-derived value)
so a small model can follow them.

Every answer is checked, and one that fails is resampled a bounded number of times at a temperature
above 0 with a seed derived from the record, so reruns agree and the response cache holds: invalid JSON
(a runaway string cut off at the budget), degenerate text (too short, mostly the values list, repeating
itself, copying the prompt, a template slot, a date or id the job does not have, fewer than half of the
user-specified values) or a revealed tool-derived value. After the last try the failure is a reject
with its reason. Leaking a tool-derived value is never repaired, only rejected (information hiding).

User-specified values must be stated exactly (the paper states them explicitly; a paraphrased id makes
the task unsolvable). Where the model's text omits some (never most: that text is rejected as not about
the job), the code appends them in one plain sentence ("Details: strategy cancel, start
2026-04-16T10:00.") — in the user turns, to the turn that covers the step the value belongs to — and
records each addition (``values_added``, the task's ``metadata.values_added_by_code``) so users can
filter such tasks out. ``strict=True`` adds nothing and rejects with ``missing_user_value`` instead.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from dataclaw.core.ids import stable_hash
from dataclaw.envcraft.tasks.tool.execute import TOOL, USER

MIN_TEXT, MAX_TEXT = 20, 2000
TRIES = 3
"""Model calls per text at most: the first greedy, the others sampled."""
RETRY_TEMPERATURE = 0.8
INSTRUCTION_TOKENS = 200
TURN_TOKENS, TURNS_BASE_TOKENS = 80, 40
FREQUENCY_PENALTY = 0.3
"""Mild and OpenAI-standard (llama.cpp and vLLM take it too): damps the loops small models fall into."""
_MIN_WORDS = 4
_PLACEHOLDER = re.compile(r"\[[^\]]{0,40}\]|\{\{|<[a-z _-]{1,30}>")
"""Template slots a small model leaves in place of content: [event name], {{step}}, <message>."""
_VALUE_LIKE = re.compile(r"[\w.:+-]*\d[\w.:+-]*\w(?<=[\w.:+-]{3})")
"""Tokens of 3+ characters with a digit (dates, times, ids): they must come from the job, not be made up."""
_LABEL_KEYS = ("title", "name", "subject", "summary", "label", "display_name")


class SynthReason(StrEnum):
    """Why a grounded chain did not become a task."""

    VERIFIER_EMPTY = "verifier_empty"
    VERIFIER_GOLD_FAILS = "verifier_gold_fails"
    VERIFIER_TRIVIAL = "verifier_initial_passes"
    NO_DISTRACTORS = "no_distractors"
    MODEL_ERROR = "model_error"
    MISSING_USER_VALUE = "missing_user_value"
    LEAKED_TOOL_VALUE = "leaked_tool_value"
    BAD_TEXT = "bad_text"
    BAD_TURNS = "bad_turns"


class SynthError(Exception):
    def __init__(self, reason: SynthReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


INSTRUCTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    # no string length bounds: llama.cpp turns them into grammars too large to compile; checked in code
    "properties": {"message": {"type": "string"}},
    "required": ["message"],
    "additionalProperties": False,
}


def turns_schema(max_turns: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "messages": {
                "type": "array",
                "minItems": 1,
                "maxItems": max_turns,
                "items": {"type": "string"},
            }
        },
        "required": ["messages"],
        "additionalProperties": False,
    }


# ---- parameters and values -------------------------------------------------------------------------


def _leaves(value: Any) -> list[str]:
    """The surface forms a value must show in text: strings and numbers, recursively; booleans and
    nulls have no canonical wording and are not checked."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, int):
        return [str(value)]
    if isinstance(value, float):
        return [str(int(value))] if value.is_integer() else [repr(value)]
    if isinstance(value, list):
        return [s for v in value for s in _leaves(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _leaves(v)]
    return []


def classify(steps: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(user-specified, tool-derived) parameter records ``{step, tool, param, value}``."""
    user, derived = [], []
    for i, st in enumerate(steps):
        for name, source in st["sources"].items():
            rec = {"step": i, "tool": st["tool"], "param": name, "value": st["params"][name]}
            (user if source == USER else derived if source == TOOL else []).append(rec)
    return user, derived


def check_text(
    texts: list[str], user: list[dict[str, Any]], derived: list[dict[str, Any]]
) -> tuple[list[str], list[str]]:
    """(user-specified values missing from ``texts``, tool-derived values leaked into them)."""
    blob = "\n".join(texts).lower()
    user_forms = {s for r in user for s in _leaves(r["value"])}
    missing = sorted(s for s in user_forms if s.lower() not in blob)
    secret = {s for r in derived for s in _leaves(r["value"]) if len(s) >= 3} - user_forms
    leaked = sorted(s for s in secret if s.lower() in blob)
    return missing, leaked


def _values(user: list[dict[str, Any]]) -> list[str]:
    return sorted({s for r in user for s in _leaves(r["value"])})


def _prose(text: str, values: list[str]) -> list[str]:
    """The words of ``text`` besides the values (lower case, letters only)."""
    rest = text.lower()
    for v in sorted(values, key=len, reverse=True):
        rest = rest.replace(v.lower(), " ")
    return re.findall(r"[^\W\d_]{2,}", rest)


def _grams(words: list[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def degenerate(
    text: str,
    values: list[str],
    min_words: int = _MIN_WORDS,
    copied_from: tuple[str, ...] = (),
    job: str | None = "",
) -> str | None:
    """Why ``text`` is not usable prose, or None: too few words of its own besides the values (a text
    that is mostly the values list), four words repeated three times or six words twice, more often
    than in ``job`` (a generation loop; ``job=None`` skips this), or five words in a row taken from
    ``copied_from`` (the prompt's rules)."""
    words = _prose(text, values)
    if len(words) < min_words:
        return f"has {len(words)} words besides the values"
    own = _prose(job, values) if job is not None else words
    for n, times in ((4, 3), (6, 2)):  # beyond what the job itself repeats
        grams = _grams(words, n) - _grams(own, n)
        if grams and max(grams.values()) >= times:
            return f"repeats {' '.join(grams.most_common(1)[0][0])!r}"
    copied = set(_grams(words, 5)) & {g for src in copied_from for g in _grams(_prose(src, []), 5)}
    if copied:
        return f"copies the prompt ({' '.join(sorted(copied)[0])!r})"
    return None


# ---- prompts --------------------------------------------------------------------------------------


def _words(name: str) -> str:
    return name.replace("_", " ").replace("-", " ").strip()


def _find_record(output: Any, value: Any, depth: int = 0) -> tuple[dict[str, Any], str] | None:
    """The first dict in ``output`` holding ``value`` under some key: (that dict, the key)."""
    if depth > 6:
        return None
    if isinstance(output, dict):
        for k, v in output.items():
            if v == value and not isinstance(v, dict | list):
                return output, k
        children: Any = output.values()
    elif isinstance(output, list):
        children = output
    else:
        return None
    for child in children:
        found = _find_record(child, value, depth + 1)
        if found:
            return found
    return None


def describe_derived(rec: dict[str, Any], steps: list[dict[str, Any]], secrets: set[str]) -> str:
    """An abstract description of a tool-derived value that never states it: the record it was found
    in, by that record's title or name where it has one ("the event 'Board demo rehearsal'")."""
    j = steps[rec["step"]]["derived_from"].get(rec["param"], 0)
    fallback = f"the {_kind(rec['param'])} from the {_words(steps[j]['tool'])} result"
    found = _find_record(steps[j]["output"], rec["value"])
    if found is None:
        return fallback
    record, key = found
    label = next(
        (record[k] for k in _LABEL_KEYS if isinstance(record.get(k), str) and 0 < len(record[k]) <= 80),
        None,
    )
    if label is None or any(s.lower() in label.lower() for s in secrets):
        return fallback
    own = next((k for k in record if k == "id" or k.endswith("_id")), key)
    kind = _words(key[:-3] if key.endswith("_id") else key)
    if own == key:
        return f"the {kind} {_quoted(label)}"
    return f"the {kind} of the {_words(own[:-3] if own.endswith('_id') else own)} {_quoted(label)}"


def _quoted(value: Any) -> str:
    """A value as the prompts show it: bare, or in single quotes when it has spaces; a list as its
    items. Never in double quotes: a small model copies them and so ends its JSON string early."""
    if isinstance(value, list):
        return ", ".join(_quoted(v) for v in value) or "none"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return f"'{text}'" if " " in text else text


def _kind(name: str) -> str:
    return _words(name[:-3] if name.endswith("_id") else name)


def step_phrase(i: int, steps: list[dict[str, Any]], secrets: set[str]) -> str:
    """What step ``i`` does in plain words, built from the tool and parameter names: its
    user-specified values as they are, its hidden values described ('resolve the conflict of the
    event 'Board demo' with strategy cancel')."""
    st = steps[i]
    verb, _, obj = _words(st["tool"].rsplit(".", 1)[-1]).partition(" ")  # cross-env tools: env.tool
    head, ids, rest = f"{verb} the {obj}" if obj else verb, [], []
    for name, value in st["params"].items():
        source = st["sources"].get(name)
        if source not in (TOOL, USER):
            continue
        if source == USER and not name.endswith("_id"):
            rest.append(f"{_words(name)} {_quoted(value)}")
            continue
        if source == TOOL:
            phrase = describe_derived({"step": i, "param": name, "value": value}, steps, secrets)
        else:
            phrase = f"the {_kind(name)} {_quoted(value)}"
        if obj and _kind(name) == obj and head.endswith(f"the {obj}"):
            head = f"{verb} {phrase}"
        else:
            ids.append(phrase)
    text = head + "".join(f" of {p}" if n == 0 else f" and {p}" for n, p in enumerate(ids))
    if rest:
        text += " with " + (", ".join(rest[:-1]) + " and " + rest[-1] if len(rest) > 1 else rest[0])
    return text


INSTRUCTION_RULES = (
    "Write the user's message to the assistant. Keep every value exactly as written; describe a thing "
    "without a value (like 'the event ...') the same way, never with an id."
)
TURNS_RULES = (
    "Write the 1 to {n} short messages the user sends the assistant one after another, each after "
    "the assistant has done the part before. Keep every value exactly as written."
)
COPY_SOURCES = (INSTRUCTION_RULES, TURNS_RULES)
"""Prompt text that must not come back as the answer (a small model's favourite failure)."""


def _job(grounded: dict[str, Any], derived: list[dict[str, Any]]) -> list[str]:
    secrets = {s for r in derived for s in _leaves(r["value"]) if len(s) >= 3}
    return [step_phrase(i, grounded["steps"], secrets) for i in range(len(grounded["steps"]))]


def instruction_prompt(grounded: dict[str, Any], derived: list[dict[str, Any]]) -> str:
    """The job as one sentence of steps in order, and the rules: short and plain, so a small model
    can follow it. The environment's documentation is not sent: small models copy long context."""
    job = ", then ".join(_job(grounded, derived))
    return f"A user wants an AI assistant to {job}.\n\n{INSTRUCTION_RULES}"


def turns_prompt(
    instruction: str, persona: str, grounded: dict[str, Any], derived: list[dict[str, Any]]
) -> str:
    """The persona, the composite request and its steps: the decomposition of §4.2."""
    steps = "\n".join(f"{i + 1}. {p}" for i, p in enumerate(_job(grounded, derived)))
    rules = TURNS_RULES.format(n=len(grounded["steps"]))
    return f"The user: {persona}\nTheir request: {instruction}\nIts steps:\n{steps}\n\n{rules}"


def pick_persona(matcher: Any, env_doc: str, seed_key: str) -> dict[str, str]:
    """One of the top-five personas for the environment, chosen reproducibly from ``seed_key``."""
    top = matcher.top(env_doc)
    persona, score = random.Random(seed_key).choice(top)
    return {"id": persona.id, "description": persona.description, "similarity": round(score, 4)}


# ---- generation -----------------------------------------------------------------------------------


async def _ask(
    model: Any,
    prompt: str,
    schema: dict[str, Any],
    max_tokens: int,
    seed_key: str,
    check: Callable[[Any], SynthError | None],
    tries: int,
) -> tuple[Any, int]:
    """(the first answer ``check`` accepts, tries used). An invalid answer is resampled; after the last
    try its failure is raised. Only an unreachable or refusing model fails at once."""
    from dataclaw.models.errors import ModelError, ModelOutputError

    failure: SynthError | None = None
    for attempt in range(max(1, tries)):
        params: dict[str, Any] = {
            "max_tokens": max_tokens,
            "temperature": 0.0,
            "frequency_penalty": FREQUENCY_PENALTY,
        }
        if attempt:
            params["temperature"] = RETRY_TEMPERATURE
            params["seed"] = int(stable_hash([seed_key, attempt], 8), 16) % 2**31
        try:
            done = await model.complete([{"role": "user", "content": prompt}], schema=schema, **params)
        except ModelOutputError as exc:
            failure = SynthError(SynthReason.MODEL_ERROR, str(exc))
            continue
        except ModelError as exc:
            raise SynthError(SynthReason.MODEL_ERROR, str(exc)) from None
        failure = check(done.parsed)
        if failure is None:
            return done.parsed, attempt + 1
    assert failure is not None
    raise SynthError(failure.reason, f"{failure} (after {max(1, tries)} tries)")


def _details(missing: list[str], owners: dict[str, dict[str, Any]]) -> str:
    return "Details: " + ", ".join(f"{_words(owners[v]['param'])} {v}" for v in missing) + "."


def _owners(user: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each user-specified surface form → the first parameter record that holds it (step order)."""
    out: dict[str, dict[str, Any]] = {}
    for r in user:
        for s in _leaves(r["value"]):
            out.setdefault(s, r)
    return out


class _Texts:
    """The checks and value completion for one record's texts."""

    def __init__(self, grounded: dict[str, Any], strict: bool) -> None:
        self.user, self.derived = classify(grounded["steps"])
        self.values = _values(self.user)
        self.owners = _owners(self.user)
        self.n_steps = len(grounded["steps"])
        self.strict = strict
        self.job = ", then ".join(_job(grounded, self.derived))  # as the instruction prompt has it
        self.job_lower = self.job.lower()

    def common(self, texts: list[str], what: str, bad: SynthReason) -> SynthError | None:
        """Placeholders, leaks, the user-specified values (with ``strict`` all must be stated, else
        more than half: the code completes a minority, never a text that is not about the job) and
        value-like tokens (dates, ids) that are not in the job: a miscopied value would contradict
        the one the code adds."""
        texts = [t.lower() for t in texts]
        if any(_PLACEHOLDER.search(t) for t in texts):
            return SynthError(bad, f"{what} have a template placeholder")
        missing, leaked = check_text(texts, self.user, self.derived)
        if leaked:
            return SynthError(SynthReason.LEAKED_TOOL_VALUE, f"{what} reveal tool-derived {leaked[:3]}")
        if missing and self.strict:
            return SynthError(SynthReason.MISSING_USER_VALUE, f"{what} omit user-specified {missing[:3]}")
        if self.values and 2 * len(missing) >= len(self.values):
            return SynthError(
                bad,
                f"{what} state only {len(self.values) - len(missing)} of "
                f"{len(self.values)} user-specified values",
            )
        invented = sorted({w for t in texts for w in _VALUE_LIKE.findall(t) if w not in self.job_lower})
        if invented:
            return SynthError(bad, f"{what} state values the job does not have {invented[:3]}")
        return None

    def check_instruction(self, parsed: Any) -> SynthError | None:
        text = parsed["message"].strip()
        if not MIN_TEXT <= len(text) <= MAX_TEXT:
            return SynthError(SynthReason.BAD_TEXT, f"instruction has {len(text)} characters")
        why = degenerate(text, self.values, copied_from=COPY_SOURCES, job=self.job)
        if why:
            return SynthError(SynthReason.BAD_TEXT, f"instruction {why}")
        return self.common([text], "instruction", SynthReason.BAD_TEXT)

    def check_turns(self, parsed: Any) -> SynthError | None:
        turns = [t.strip() for t in parsed["messages"]]
        if not turns or any(not t or len(t) > MAX_TEXT for t in turns):
            return SynthError(SynthReason.BAD_TURNS, "the decomposition has an empty or overlong turn")
        if len({t.lower() for t in turns}) < len(turns):
            return SynthError(SynthReason.BAD_TURNS, "the decomposition repeats a turn")
        # loops are looked for in each turn (turns for repeated steps may well repeat each other)
        why = degenerate(" \n ".join(turns), self.values, copied_from=COPY_SOURCES, job=None) or next(
            (
                f"turn {i + 1} {w}"
                for i, t in enumerate(turns)
                if (w := degenerate(t, self.values, 1, job=self.job))
            ),
            None,
        )
        if why:
            return SynthError(SynthReason.BAD_TURNS, f"user turns: {why}")
        return self.common(turns, "user turns", SynthReason.BAD_TURNS)

    def complete_instruction(self, text: str) -> tuple[str, list[dict[str, Any]]]:
        """``text`` with the user-specified values it omits appended, and what was appended."""
        missing, _ = check_text([text], self.user, self.derived)
        if not missing:
            return text, []
        added = [self._added(v, "instruction") for v in missing]
        return f"{text.rstrip()} {_details(missing, self.owners)}", added

    def complete_turns(self, turns: list[str]) -> tuple[list[str], list[dict[str, Any]]]:
        """Missing values go to the turn covering their step (turn k of K covers steps in order)."""
        missing, _ = check_text(turns, self.user, self.derived)
        by_turn: dict[int, list[str]] = {}
        for v in missing:
            by_turn.setdefault(self.owners[v]["step"] * len(turns) // self.n_steps, []).append(v)
        out, added = list(turns), []
        for k, vals in sorted(by_turn.items()):
            out[k] = f"{out[k].rstrip()} {_details(vals, self.owners)}"
            added += [{**self._added(v, "user_turns"), "turn": k} for v in vals]
        return out, added

    def _added(self, value: str, where: str) -> dict[str, Any]:
        r = self.owners[value]
        return {"in": where, "step": r["step"], "param": r["param"], "value": value}


async def write_text(
    model: Any,
    grounded: dict[str, Any],
    persona: dict[str, str],
    *,
    strict: bool = False,
    tries: int = TRIES,
) -> dict[str, Any]:
    """Composite instruction + multi-turn decomposition, both checked; raises :class:`SynthError`.

    Returns ``{instruction, user_turns, user, derived, values_added, tries}``: ``values_added`` lists
    the user-specified values the code appended (always empty with ``strict``, which rejects instead)
    and ``tries`` the model calls each text took."""
    t = _Texts(grounded, strict)
    seed_key = str(grounded.get("id") or stable_hash(grounded["steps"]))
    prompt = instruction_prompt(grounded, t.derived)
    parsed, n1 = await _ask(
        model, prompt, INSTRUCTION_SCHEMA, INSTRUCTION_TOKENS, f"{seed_key}/i", t.check_instruction, tries
    )
    instruction, added = t.complete_instruction(parsed["message"].strip())
    # the model's own words: a 'Details:' sentence in the request would only be copied into a turn
    prompt = turns_prompt(parsed["message"].strip(), persona["description"], grounded, t.derived)
    budget = TURNS_BASE_TOKENS + TURN_TOKENS * t.n_steps
    turns_parsed, n2 = await _ask(
        model, prompt, turns_schema(t.n_steps), budget, f"{seed_key}/t", t.check_turns, tries
    )
    turns, added_turns = t.complete_turns([m.strip() for m in turns_parsed["messages"]])
    return {
        "instruction": instruction,
        "user_turns": turns,
        "user": t.user,
        "derived": t.derived,
        "values_added": added + added_turns,
        "tries": {"instruction": n1, "user_turns": n2},
    }
