"""GUI multi-event filtering and initial subtask proposal (paper A.3.2, Stages 1 and 2).

Stage 1 looks for five signals, conservatively (a class other than ``none`` needs two of them):

- the instruction has several action goals;
- it has sequential markers ("first", "then", "after that", …);
- the trajectory crosses applications, windows, pages or URLs (window/URL changes seen in the recording,
  the applications and websites the publisher lists in AgentNet ``meta_info`` and its own
  ``multi_application_or_website`` flag; each action of a trajectory without a window log is placed in
  the listed application its low-level instruction names);
- similar operations repeat over several objects (an action pattern of two or more kinds repeated
  three times, or an instruction that applies one verb to a list or to "each"/"every"/"all");
- the screen shows phase changes (shot boundaries in a recording; OCR text turnover between steps).

and classifies the trajectory as ``none`` / ``sequential`` / ``parallel`` / ``hybrid``. Stage 2 proposes
fragments: sequential tasks split at stage boundaries (context switches, phase changes, long pauses),
parallel ones at the repetitions of the repeated pattern, hybrid ones first into stages and then into
the repetitions inside each stage. Fragments are contiguous, non-overlapping and cover all actions, as
A.3.4 requires of the final decomposition. This is scaffolding for the model, not final supervision.
(Stage 3, the reconstruction request, is :mod:`dataclaw.tailor.synthesis.fragments`.)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from dataclaw.tailor.anchors.base import Anchor
from dataclaw.tailor.anchors.gui import INSTRUCTION_KEY, target_of
from dataclaw.tailor.mining.base import Miner, StreamView, register_miner
from dataclaw.tailor.records import Candidate, CandidateKind

GUI_MODALITIES = frozenset({"gui", "trajectory"})


class MultiEvent(StrEnum):
    """Stage-1 class of a GUI trajectory (A.3.2)."""

    NONE = "none"
    SEQUENTIAL = "sequential"
    PARALLEL = "parallel"
    HYBRID = "hybrid"


ACTION_VERBS = frozenset(
    """open close click select choose type enter write fill search find go navigate visit browse set
    change adjust turn switch enable disable toggle add remove delete create make rename move copy paste
    save download upload install uninstall send reply forward share post sort filter format insert edit
    update replace check uncheck mark star pin launch start stop play pause log sign submit book buy
    order scroll drag zoom resize print export import increase decrease apply configure connect view
    read show hide lock unlock archive label schedule email mail message invite attach tag assign""".split()
)
SEQUENTIAL_MARKERS = re.compile(
    r"\b(first(ly)?|then|after\s+that|afterwards?|next|finally|subsequently|once\s+(done|finished)|"
    r"followed\s+by|before\s+that|and\s+then|lastly|second(ly)?|third(ly)?)\b",
    re.IGNORECASE,
)
LEADING_MARKER = re.compile(
    r"^(?:(?:and|so)\s+)?(?:first(?:ly)?|then|next|finally|lastly|after\s+that|afterwards?|second(?:ly)?|"
    r"third(?:ly)?)\b[\s,]*",
    re.IGNORECASE,
)
PARALLEL_MARKERS = re.compile(r"\b(each|every|all\s+(of\s+)?the|both|respectively|one\s+by\s+one)\b", re.I)
CLAUSE_SPLIT = re.compile(
    r";\s*|,(?!\d)\s*|\.(?=\s|$)\s*|\s+(?:and\s+then|and|then|after\s+that|afterwards|next|finally)\s+", re.I
)
"""Clause boundaries: a full stop only before a space or the end, a comma not inside a number, so file
names, e-mail addresses, URLs and numbers (``report.final.pdf``, ``a.b@c.com``, ``1,000``) stay whole."""
CONTEXT_KEYS = ("app", "application", "window", "window_title", "url", "page", "domain")
GUI_SOURCE = "gui"  # the GUI event parser (dataclaw.tailor.anchors.gui)
CONTEXT_KINDS = frozenset({"window_change", "app_switch", "url_change"})
META_CONTEXT_KEYS = ("applications", "websites")
"""AgentNet ``meta_info`` lists of the applications and websites a trajectory uses."""


def instruction_goals(instruction: str) -> list[str]:
    """Clauses of ``instruction`` that carry an action verb (one per goal), in order."""
    goals: list[str] = []
    for clause in CLAUSE_SPLIT.split(instruction or ""):
        clause = LEADING_MARKER.sub("", (clause or "").strip(" '\"")).strip()
        words = re.findall(r"[a-z]+", clause.lower())
        if words and any(w in ACTION_VERBS for w in words[:3]):
            goals.append(clause)
    return goals


def _context(a: Anchor) -> str | None:
    for key in CONTEXT_KEYS:
        value = a.payload.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _target(a: Anchor) -> str:
    return target_of(a.payload)


def declared_contexts(metadata: Mapping[str, Any]) -> tuple[list[str], bool | None]:
    """The applications and websites the publisher lists for a trajectory (AgentNet ``meta_info``), in
    order without repeats, and its ``complexity.multi_application_or_website`` flag (None when absent)."""
    meta = metadata.get("meta_info")
    if not isinstance(meta, Mapping):
        return [], None
    names = [
        n.strip()
        for key in META_CONTEXT_KEYS
        for n in meta.get(key) or []
        if isinstance(n, str) and n.strip()
    ]
    complexity = meta.get("complexity")
    flag = complexity.get("multi_application_or_website") if isinstance(complexity, Mapping) else None
    return list(dict.fromkeys(names)), flag if isinstance(flag, bool) else None


def mentioned_context(a: Anchor, names: Sequence[str], typed: Sequence[str] = ()) -> str | None:
    """The first of ``names`` (declared applications/websites) that the action's low-level instruction
    mentions, leaving out the ``typed`` text of its step ("Type 'SPOTIFY' in the search bar" types the
    word in a search engine; it does not happen in Spotify)."""
    text = a.payload.get(INSTRUCTION_KEY)
    if not names or not isinstance(text, str):
        return None
    for t in typed:
        text = re.sub(re.escape(t), " ", text, flags=re.IGNORECASE)
    found = [
        (m.start(), name)
        for name in names
        if (m := re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE))
    ]
    return min(found)[1] if found else None


def action_events(anchors: Sequence[Anchor]) -> list[Anchor]:
    """The GUI parser's action anchors (clicks, typing, shortcuts, …), not its context changes, in the
    order they were done (a trajectory step's actions share its time: their order in the step decides)."""
    return sorted(
        (a for a in anchors if a.source == GUI_SOURCE and a.kind not in CONTEXT_KINDS),
        key=lambda a: (a.t, a.payload.get("index_in_step", 0), a.id),
    )


def event_contexts(
    anchors: Sequence[Anchor], events: Sequence[Anchor], declared: Sequence[str] = ()
) -> list[str | None]:
    """The application/window/URL each action happened in: what the action's own payload says, else the
    latest context before it: a context-change anchor (the top-window log) or a ``declared``
    application that an action's low-level instruction names (trajectories have no window log)."""
    changes = sorted((a for a in anchors if a.kind in CONTEXT_KINDS), key=lambda a: a.t)
    typed: dict[Any, list[str]] = {}
    for ev in events:
        if isinstance(ev.payload.get("text"), str) and ev.payload["text"].strip():
            typed.setdefault(ev.payload.get("step", ev.id), []).append(ev.payload["text"].strip())
    out: list[str | None] = []
    j, current = 0, None
    for ev in events:
        while j < len(changes) and changes[j].t <= ev.t:
            current = _context(changes[j]) or current
            j += 1
        current = mentioned_context(ev, declared, typed.get(ev.payload.get("step", ev.id), ())) or current
        out.append(_context(ev) or current)
    return out


def context_changes(anchors: Sequence[Anchor], t0: float, t1: float) -> list[Anchor]:
    """The window/app/URL changes a trajectory's actions happened under: every change inside ``t0``–``t1``
    and the last one before ``t0`` (the window the first action was done in). A candidate carries them
    so that what an answer says about applications can be checked against the windows really shown."""
    changes = sorted((a for a in anchors if a.kind in CONTEXT_KINDS), key=lambda a: a.t)
    before = [a for a in changes if a.t < t0][-1:]
    return [*before, *(a for a in changes if t0 <= a.t <= t1)]


def repeated_pattern(kinds: Sequence[str], min_repeats: int = 3) -> tuple[tuple[str, ...], list[int]] | None:
    """The longest action-kind n-gram (2–4 kinds, at least two distinct) that occurs ``min_repeats``
    times without overlap, with its start positions; None when there is none."""
    for n in (4, 3, 2):
        best: tuple[tuple[str, ...], list[int]] | None = None
        grams: dict[tuple[str, ...], list[int]] = {}
        for i in range(len(kinds) - n + 1):
            gram = tuple(kinds[i : i + n])
            if len(set(gram)) < 2:
                continue
            starts = grams.setdefault(gram, [])
            if not starts or i >= starts[-1] + n:
                starts.append(i)
        for gram, starts in grams.items():
            if len(starts) >= min_repeats and (best is None or len(starts) > len(best[1])):
                best = (gram, starts)
        if best:
            return best
    return None


@dataclass
class Signals:
    """Stage-1 evidence; each field is what was found (empty/zero = signal absent)."""

    goals: list[str]
    sequential_markers: list[str]
    contexts: list[str]
    context_switches: list[int]
    pattern: tuple[tuple[str, ...], list[int]] | None
    parallel_markers: list[str]
    phase_changes: list[Anchor]
    per_event: list[str | None]
    declared: list[str] = field(default_factory=list)
    """applications and websites the publisher lists (AgentNet ``meta_info``)"""
    declared_multi: bool | None = None
    """the publisher's own ``multi_application_or_website`` flag"""

    @property
    def multi_goal(self) -> bool:
        return len(self.goals) >= 2

    @property
    def crosses_contexts(self) -> bool:
        """Seen switching contexts, or declared to use several (the publisher's flag when it gives one,
        else two listed applications/websites)."""
        declared = self.declared_multi if self.declared_multi is not None else len(self.declared) >= 2
        return len(set(self.contexts)) >= 2 or declared

    @property
    def repeated(self) -> bool:
        return self.pattern is not None or bool(self.parallel_markers and self.multi_goal)

    def fired(self) -> list[str]:
        names = {
            "multiple_goals": self.multi_goal,
            "sequential_markers": bool(self.sequential_markers),
            "context_switches": self.crosses_contexts,
            "repeated_operations": self.repeated,
            "phase_changes": bool(self.phase_changes),
        }
        return [k for k, v in names.items() if v]

    def classify(self) -> MultiEvent:
        """Conservative: two signals at least, then sequential/parallel evidence decide the class."""
        if len(self.fired()) < 2:
            return MultiEvent.NONE
        seq = bool(self.sequential_markers) or (
            self.multi_goal and (self.crosses_contexts or bool(self.phase_changes))
        )
        par = self.repeated
        if seq and par:
            return MultiEvent.HYBRID
        if seq:
            return MultiEvent.SEQUENTIAL
        if par:
            return MultiEvent.PARALLEL
        return MultiEvent.NONE


def text_turnover(anchors: Sequence[Anchor], threshold: float = 0.2) -> list[Anchor]:
    """OCR phase changes: the first OCR line of each screenshot whose word set overlaps the previous
    screenshot's by less than ``threshold`` (Jaccard)."""
    by_t: dict[float, list[Anchor]] = {}
    for a in anchors:
        if a.kind == "ocr_text":
            by_t.setdefault(a.t, []).append(a)
    out: list[Anchor] = []
    prev: set[str] | None = None
    for t in sorted(by_t):
        words = {w for a in by_t[t] for w in re.findall(r"[a-z]{3,}", str(a.payload.get("text", "")).lower())}
        if prev is not None and (prev | words):
            if len(prev & words) / len(prev | words) < threshold:
                out.append(by_t[t][0])
        prev = words
    return out


def gather_signals(
    instruction: str,
    anchors: Sequence[Anchor],
    events: Sequence[Anchor],
    metadata: Mapping[str, Any] | None = None,
) -> Signals:
    """Stage-1 signals of one trajectory (``metadata``: the stream's, for AgentNet ``meta_info``)."""
    declared, declared_multi = declared_contexts(metadata or {})
    contexts: list[str] = []
    switches: list[int] = []
    last: str | None = None
    per_event = event_contexts(anchors, events, declared)
    for i, ctx in enumerate(per_event):
        if ctx is None:
            continue
        contexts.append(ctx)
        if last is not None and ctx != last:
            switches.append(i)
        last = ctx
    phases = [a for a in anchors if a.kind == "shot_boundary"] + text_turnover(anchors)
    return Signals(
        goals=instruction_goals(instruction),
        sequential_markers=[m.group(0) for m in SEQUENTIAL_MARKERS.finditer(instruction or "")],
        contexts=contexts,
        context_switches=switches,
        pattern=repeated_pattern([e.kind for e in events]),
        parallel_markers=[m.group(0) for m in PARALLEL_MARKERS.finditer(instruction or "")],
        phase_changes=sorted(phases, key=lambda a: a.t),
        per_event=per_event,
        declared=declared,
        declared_multi=declared_multi,
    )


def _stage_cuts(events: Sequence[Anchor], sig: Signals, k: int) -> list[int]:
    """The ``k - 1`` best stage boundaries (an index i cuts before events[i]), in order.

    Score: a context switch 2, a phase change between the two events 1 (times its confidence), and the
    pause before the event relative to the longest pause (0–1).
    """
    if k <= 1 or len(events) < 2:
        return []
    gaps = [events[i].t - events[i - 1].t for i in range(1, len(events))]
    longest = max(gaps) or 1.0
    scores: dict[int, float] = {}
    for i in range(1, len(events)):
        s = gaps[i - 1] / longest
        s += 2.0 if i in sig.context_switches else 0.0
        s += sum(p.confidence for p in sig.phase_changes if events[i - 1].t < p.t <= events[i].t)
        scores[i] = s
    best = sorted(scores, key=lambda i: (-scores[i], i))[: k - 1]
    return sorted(best)


def _fragment(
    index: int, events: Sequence[Anchor], label: str, kind: str, pos: dict[str, int], sig: Signals
) -> dict[str, Any]:
    """One proposed fragment: actions ``event_range`` (inclusive positions in the action list), and the
    application most of its actions happened in (None when unknown)."""
    apps = [c for c in (sig.per_event[pos[e.id]] for e in events) if c]
    return {
        "index": index,
        "label": label,
        "structure": kind,
        "event_range": [pos[events[0].id], pos[events[-1].id]],
        "t_start": events[0].t,
        "t_end": max(e.t_end if e.t_end is not None else e.t for e in events),
        "app": max(dict.fromkeys(apps), key=apps.count) if apps else None,
        "anchor_ids": [e.id for e in events],
    }


def _split_parallel(events: Sequence[Anchor], pattern: tuple[str, ...]) -> list[tuple[list[Anchor], str]]:
    """Blocks starting at each occurrence of ``pattern``; actions before the first form a setup block."""
    kinds = [e.kind for e in events]
    starts = [
        i for i in range(len(kinds) - len(pattern) + 1) if tuple(kinds[i : i + len(pattern)]) == pattern
    ]
    picked: list[int] = []
    for s in starts:
        if not picked or s >= picked[-1] + len(pattern):
            picked.append(s)
    if not picked:
        return [(list(events), "stage")]
    bounds = ([0] if picked[0] > 0 else []) + picked + [len(events)]
    blocks: list[tuple[list[Anchor], str]] = []
    for j in range(len(bounds) - 1):
        chunk = list(events[bounds[j] : bounds[j + 1]])
        target = next((_target(e) for e in chunk if _target(e)), "")
        name = "setup" if bounds[j] < picked[0] else f"repeat on {target}" if target else "repeat"
        blocks.append((chunk, name))
    return blocks


def propose_subtasks(events: Sequence[Anchor], sig: Signals, cls: MultiEvent) -> list[dict[str, Any]]:
    """Stage-2 fragments of a multi-event trajectory (empty for ``none``)."""
    if cls is MultiEvent.NONE or not events:
        return []
    pos = {e.id: i for i, e in enumerate(events)}
    if cls is MultiEvent.PARALLEL and sig.pattern:
        blocks = _split_parallel(events, sig.pattern[0])
        frags = [_fragment(i, b, name, "parallel", pos, sig) for i, (b, name) in enumerate(blocks)]
    else:
        k = max(2, len(sig.goals), len(set(sig.contexts)))
        k = min(k, len(events))
        bounds = [0, *_stage_cuts(events, sig, k), len(events)]
        stages = [events[bounds[j] : bounds[j + 1]] for j in range(len(bounds) - 1)]
        labels = (
            sig.goals
            if len(sig.goals) == len(stages)
            else [sig.per_event[bounds[j]] or f"stage {j + 1}" for j in range(len(stages))]
        )
        frags = []
        for stage, label in zip(stages, labels, strict=True):
            if cls is MultiEvent.HYBRID and sig.pattern:
                blocks = _split_parallel(stage, sig.pattern[0])
                if len(blocks) > 1:
                    frags.extend(
                        _fragment(len(frags), b, f"{label}: {name}", "parallel", pos, sig)
                        for b, name in blocks
                    )
                    continue
            frags.append(_fragment(len(frags), stage, label, "sequential", pos, sig))
    return frags


@register_miner
class GuiTasks(Miner):
    """One ``gui_task`` candidate per GUI trajectory that Stage 1 finds multi-event (A.3.2).

    ``keep_single``: also emit single-goal trajectories (class ``none``, no subtasks), e.g. for intents
    that want plain GUI grounding data. ``use_meta_info``: count the applications and websites the
    publisher lists (AgentNet ``meta_info``) as contexts; off, only switches seen in the events count.
    """

    name: ClassVar[str] = "gui_task"
    kind: ClassVar[CandidateKind] = CandidateKind.GUI_TASK

    def __init__(self, keep_single: bool = False, min_events: int = 2, use_meta_info: bool = True) -> None:
        self.keep_single = keep_single
        self.min_events = min_events
        self.use_meta_info = use_meta_info

    def applies_to(self, stream: StreamView) -> bool:
        return stream.modality in GUI_MODALITIES

    def mine(self, stream: StreamView, anchors: Sequence[Anchor]) -> list[Candidate]:
        events = action_events(anchors)
        if len(events) < self.min_events:
            self.note(f"{len(events)} GUI actions < min_events {self.min_events}")
            return []
        sig = gather_signals(
            stream.instruction or "", anchors, events, stream.metadata if self.use_meta_info else None
        )
        cls = sig.classify()
        if cls is MultiEvent.NONE and not self.keep_single:
            fired = sig.fired()
            self.note(
                f"Stage 1 found {len(fired)} multi-event signal(s) ({', '.join(fired) or 'none'}) < 2 needed;"
                " keep_single is off"
            )
            return []
        subtasks = propose_subtasks(events, sig, cls)
        t0 = events[0].t
        t1 = max(e.t_end if e.t_end is not None else e.t for e in events)
        span = None
        if stream.fps and stream.frame_count:
            start = stream.frame_of(t0)
            span = stream.frange(start, max(start, stream.frame_of(t1)))
        used = [*events, *sig.phase_changes, *context_changes(anchors, t0, t1)]
        fired = sig.fired()
        why = (
            f"{cls.value}: signals {', '.join(fired) or 'none'} ({len(sig.goals)} goals, "
            f"{len(set(sig.contexts))} contexts"
            + (f" of {len(sig.declared)} declared ({', '.join(sig.declared)})" if sig.declared else "")
            + f", {len(sig.phase_changes)} phase changes"
            + (f", pattern {'+'.join(sig.pattern[0])} x{len(sig.pattern[1])}" if sig.pattern else "")
            + f"); {len(subtasks)} proposed fragments over {len(events)} actions"
        )
        payload = {
            "instruction": stream.instruction,
            "multi_event": cls.value,
            "signals": fired,
            "goals": sig.goals,
            "sequential_markers": sig.sequential_markers,
            "contexts": list(dict.fromkeys(sig.contexts)),
            "declared_contexts": sig.declared,
            "repeated_pattern": list(sig.pattern[0]) if sig.pattern else None,
            "subtasks": subtasks,
            "events": len(events),
        }
        return [
            self.candidate(
                stream,
                [cls.value, len(events), t0, t1],
                label=cls.value,
                camera=stream.camera,
                fps=stream.fps,
                frame_count=stream.frame_count,
                span=span,
                t_start=t0,
                t_end=t1,
                anchor_ids=[a.id for a in used],
                why=why,
                payload=payload,
            )
        ]
