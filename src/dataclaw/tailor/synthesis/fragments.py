"""GUI reconstruction requests (paper A.3.2 Stage 3): fragments as a request shows them, and distractors.

A reconstruction request shows fragments as lines, and its distractors must not be told apart by their
form: every fragment, genuine, from another trajectory of the run or from the bundled pool, is one
structure (``app``, ``description``, ``steps`` of action texts with the step's low-level instruction)
rendered by :func:`render_fragment`, without times, event numbers or coordinates (they would give the
order away and mark the fragments that came from elsewhere). Distractors come from the other trajectories
of the input set first and from the bundled list last, preferring fragments that carry what the genuine
ones carry (an application, low-level instructions); what not every shown fragment has is left out of all
of them. The genuine fragments are shuffled with the distractors deterministically from the run seed and
the candidate id.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from dataclaw.core.ids import stable_hash
from dataclaw.tailor.anchors.gui import INSTRUCTION_KEY, target_of
from dataclaw.tailor.intents.base import Intent

DISTRACTORS = Path(__file__).parents[1] / "intents" / "data" / "gui_distractors.yaml"
BUNDLED = "bundled"
"""``source`` of the distractors shipped with the package (the rest name the stream they came from)."""
POINTER_KINDS = frozenset({"click", "double_click", "right_click", "middle_click", "triple_click", "drag"})
"""Actions that act on a control (their ``target`` is shown only when every shown one has it)."""


def _keys_of(payload: Mapping[str, Any]) -> str:
    keys = payload.get("keys")
    joined = "+".join(str(k) for k in keys) if isinstance(keys, list) else keys
    return str(payload.get("combo") or joined or payload.get("key") or "")


def fragment_action(kind: str, payload: Mapping[str, Any]) -> dict[str, str]:
    """An action (an anchor's kind and payload, or a pool entry) as fragments hold it."""
    text = payload.get("text")
    return {"kind": kind, "target": target_of(payload), "keys": _keys_of(payload), "text": str(text or "")}


ACTION_PARTS: tuple[tuple[str, Callable[[Mapping[str, str]], str]], ...] = (
    ("targets", lambda a: f"'{a['target']}'" if a.get("target") else ""),
    ("", lambda a: a.get("keys") or ""),
    ("", lambda a: f"text={a['text']!r}" if a.get("text") else ""),
)
"""What an action line shows after the kind, in order, each with the feature that must be shown for it
(``""``: always). Never times, event numbers or coordinates."""
FEATURES: tuple[tuple[str, Callable[[Mapping[str, Any]], bool], bool], ...] = (
    ("app", lambda f: bool(f.get("app")), True),
    ("notes", lambda f: bool(f["steps"]) and all(s.get("instruction") for s in f["steps"]), True),
    (
        "targets",
        lambda f: any(
            a.get("target") for s in f["steps"] for a in s["actions"] if a["kind"] in POINTER_KINDS
        ),
        False,
    ),
)
"""Optional parts of a fragment: (name, whether a fragment has it, whether every shown fragment must
have it for a request to show it). Targets are shown when a genuine fragment has one: a recording names
most clicked controls but not all, an AgentNet trajectory none (and then no distractor may show one)."""


def action_text(action: Mapping[str, str], shown: set[str]) -> str:
    """``click 'Send'``, ``shortcut ctrl+c``, ``typing text='hi'``: one action as fragment lines show it."""
    parts = (render(action) for feature, render in ACTION_PARTS if not feature or feature in shown)
    return " ".join([action["kind"], *(p for p in parts if p)])


def fragment_steps(actions: Iterable[tuple[str, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """``(kind, payload)`` actions in order -> steps ``{"actions": [...], "instruction": …}``: the
    actions of one trajectory step (same payload ``step``) together, with the step's low-level
    instruction; every other action is a step of its own."""
    steps: list[dict[str, Any]] = []
    last: Any = None
    for kind, payload in actions:
        step = payload.get("step")
        if step is not None and step == last and steps:
            steps[-1]["actions"].append(fragment_action(kind, payload))
            continue
        note = payload.get(INSTRUCTION_KEY)
        steps.append(
            {
                "actions": [fragment_action(kind, payload)],
                "instruction": note.strip() if isinstance(note, str) and note.strip() else None,
            }
        )
        last = step
    return steps


def pool_fragment(entry: Mapping[str, Any], source: str = BUNDLED) -> dict[str, Any]:
    """A distractor-pool entry as a fragment. ``steps`` items are ``{kind, target?, keys?, text?,
    instruction?}`` (one action) or ``{actions: [...], instruction?}``; an action given as a string (the
    older ``actions: [str]`` entries) becomes its kind, shown as it is."""

    def action(a: Any) -> dict[str, str]:
        return fragment_action(a, {}) if isinstance(a, str) else fragment_action(str(a["kind"]), a)

    raw = entry.get("steps")
    if raw is None:
        raw = [{"actions": [a]} for a in entry.get("actions") or []]
    steps = []
    for step in raw:
        step = {"actions": [step]} if isinstance(step, str) else step
        acts = step["actions"] if "actions" in step else [step]
        steps.append({"actions": [action(a) for a in acts], "instruction": step.get("instruction") or None})
    return {
        "source": entry.get("source") or source,
        "app": entry.get("app") or None,
        "description": str(entry.get("description") or ""),
        "steps": steps,
    }


def fragment_features(fragment: Mapping[str, Any]) -> set[str]:
    """The optional parts (:data:`FEATURES`) a fragment has."""
    return {name for name, has, _ in FEATURES if has(fragment)}


def wanted_features(genuine: Sequence[Mapping[str, Any]]) -> set[str]:
    """What the genuine fragments show: a part all of them have, or (targets) that one of them has."""
    if not genuine:
        return set()
    return {name for name, has, every in FEATURES if (all if every else any)(has(f) for f in genuine)}


def pick_distractors(
    pool: Sequence[Mapping[str, Any]],
    genuine: Sequence[Mapping[str, Any]],
    k: int,
    rng: random.Random,
    stream_id: str | None,
) -> list[dict[str, Any]]:
    """``k`` distractors for the ``genuine`` fragments of stream ``stream_id`` (never its own). Other
    trajectories of the input set come first and the bundled list last, and fragments that have what
    all genuine ones have (an application, low-level instructions, targets) before those that lack it, so the
    request can show it for every fragment: the tiers are (run, fits), (bundled, fits), (run, lacks),
    (bundled, lacks), each sampled with ``rng``."""
    want = wanted_features(genuine)
    frags = [pool_fragment(d) for d in pool if d.get("source") != stream_id]
    picked: list[dict[str, Any]] = []
    for fits in (True, False):
        for run in (True, False):
            tier = [
                f for f in frags if (f["source"] != BUNDLED) is run and (want <= fragment_features(f)) is fits
            ]
            picked += rng.sample(tier, min(k - len(picked), len(tier)))
    return picked


def render_fragment(label: str, fragment: Mapping[str, Any], shown: set[str]) -> list[str]:
    """A fragment's lines: ``Fragment A (App):`` then one ``  - action; action — instruction`` line
    per step; the optional parts (:data:`FEATURES`) appear only when named in ``shown``."""
    app = f" ({fragment['app']})" if "app" in shown and fragment.get("app") else ""
    lines = [f"Fragment {label}{app}:"]
    for step in fragment["steps"]:
        note = f" — {step['instruction']}" if "notes" in shown and step.get("instruction") else ""
        lines.append(f"  - {'; '.join(action_text(a, shown) for a in step['actions'])}{note}")
    return lines


def shown_features(
    genuine: Sequence[Mapping[str, Any]], distractors: Sequence[Mapping[str, Any]] = ()
) -> set[str]:
    """The optional parts a request shows: of what the genuine fragments show, what every distractor
    has too where :data:`FEATURES` asks it of every fragment."""
    want = wanted_features(genuine)
    every = {name for name, _, all_of in FEATURES if all_of}
    return {n for n in want if n not in every or all(n in fragment_features(d) for d in distractors)}


def load_distractors(path: Path = DISTRACTORS) -> list[dict[str, Any]]:
    """The bundled pool of unrelated GUI fragments, as fragments (see :func:`pool_fragment`)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return [pool_fragment(f, BUNDLED) for f in data.get("fragments", [])]


def _steps_of(anchor_ids: list[str], anchors: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return fragment_steps(
        (anchors[a]["kind"], anchors[a].get("payload") or {}) for a in anchor_ids if a in anchors
    )


def run_distractors(
    candidates: list[dict[str, Any]], anchors: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """Fragments of every GUI task candidate of a run, usable as distractors for the other streams (in
    the same structure, hence the same lines, as a request's genuine fragments)."""
    out = []
    for c in candidates:
        if c.get("kind") != "gui_task":
            continue
        for f in (c.get("payload") or {}).get("subtasks") or []:
            steps = _steps_of(f.get("anchor_ids", []), anchors)
            if steps:
                out.append(
                    {
                        "source": c["stream_id"],
                        "app": f.get("app"),
                        "description": f.get("label", ""),
                        "steps": steps,
                    }
                )
    return out


def gui_fragments(
    cand: dict[str, Any], anchors: list[dict[str, Any]], intent: Intent, pool: list[dict[str, Any]], seed: int
) -> dict[str, Any]:
    """Genuine fragments (miner's subtasks) shuffled with distractors; labels A, B, … after shuffling.
    Every fragment is rendered by one function from one structure, showing only the optional parts
    (application, low-level instructions, targets) that all of them have."""
    subtasks = (cand.get("payload") or {}).get("subtasks") or []
    by_id = {a["id"]: a for a in anchors}
    genuine = [
        {
            "description": f.get("label", ""), "app": f.get("app"),
            "steps": _steps_of(f.get("anchor_ids", []), by_id), "genuine": True, "index": f["index"],
        }
        for f in subtasks
    ]  # fmt: skip
    rng = random.Random(stable_hash([seed, cand["id"], intent.id]))
    extra = pick_distractors(pool, genuine, intent.request.distractors, rng, cand.get("stream_id"))
    frags = genuine + [{**d, "genuine": False} for d in extra]
    if intent.request.shuffle_fragments:
        rng.shuffle(frags)
    labels = [chr(ord("A") + i) for i in range(len(frags))]
    for label, f in zip(labels, frags, strict=True):
        f["label"] = label
    order = [f["label"] for f in sorted((f for f in frags if f["genuine"]), key=lambda f: f["index"])]
    shown = shown_features(genuine, extra)
    lines = [line for f in frags for line in render_fragment(f["label"], f, shown)]
    return {
        "fragments": [{k: v for k, v in f.items() if k != "genuine"} for f in frags],
        "labels": labels,
        "answer_order": order,
        "distractor_labels": [f["label"] for f in frags if not f["genuine"]],
        "fragment_lines": lines,
        "n_fragments": len(genuine),
    }
