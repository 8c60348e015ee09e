"""Grounding gates by meaning (issue 27): what an answer says must agree with what it selected and with
the anchors of its stream.

The quality checks (:mod:`.quality`) look at a text on its own; these gates relate the fields of one
answer to each other and to the evidence, so that plausible garbage in the right shape fails:

- ``selected_frames``: every frame, time or step a text names lies in what the answer itself selected
  (its key frames, frame lists, clip ranges, steps) and inside the candidate window. "The critical moment
  is frame 434" with key frames 266–406 fails, even when frame 434 was among the frames shown.
- ``cross_field_duplicate``: a field that copies another (reasoning = answer word for word, a step that
  is the title) or nearly does (the same words in nearly the same order, or the same content words).
- ``anchor_agreement``: a claim naming an object, app, value or action the anchors contradict fails with
  the anchor named: an object's colour the task names otherwise, a manipulated object the task does not
  hold ("picking up a blue ball" for "Pick up the yellow bottle"), an application no recorded window,
  event or screen text shows while they show others, a setting's value the task / screen text / typing
  gives otherwise, a GUI action kind the event log never recorded, text the answer says was typed (a
  label it says was clicked) that the event log's typing (click targets) and the screen text (OCR) never
  show; and against what was said (transcript
  and slide anchors): a quotation neither the transcript nor the slide text has, a time outside the
  segment's transcript anchors, another slide than the segment's, a key concept the segment never
  mentions. It fails only on a contradiction: a claim the anchors say nothing about passes (a segment's
  key concept is the exception: it must be something the segment says).

:func:`grounding_status` says whether a sample's text could be checked against anchors at all: a video
with only shot and motion anchors (no task, events, proprioception, transcript or screen text) has
nothing to check a description against, and its samples are marked ``unchecked`` (no image–text model
is installed offline to check them instead), never silently counted as grounded.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from dataclaw.tailor.validation.base import Failure, ValidationIssue, register_validator, values_at
from dataclaw.tailor.validation.quality import mentions
from dataclaw.tailor.validation.severity import Severity, register_severity

for _reason in (
    ValidationIssue.OUTSIDE_CANDIDATE_WINDOW,
    ValidationIssue.STEP_NOT_SELECTED,
    ValidationIssue.CONTRADICTS_ANCHOR,
):
    register_severity(_reason, Severity.GROUNDING)  # text that disagrees with its evidence
for _reason in (ValidationIssue.DUPLICATE_FIELDS, ValidationIssue.NEAR_DUPLICATE_FIELDS):
    register_severity(_reason, Severity.CONTENT)  # a field that says nothing new, like duplicate_steps

# ------------------------------------------------------------------------------------------------
# shared helpers


def _texts(output: Any, fields: list[str]) -> list[tuple[str, str]]:
    return [(w, v) for path in fields for w, v in values_at(output, path) if isinstance(v, str)]


def _fps(ctx: dict[str, Any]) -> float | None:
    fps = (ctx.get("stream") or {}).get("fps")
    return float(fps) if isinstance(fps, int | float) and fps > 0 else None


def _quote(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return f"'{text if len(text) <= limit else text[: limit - 1] + '…'}'"


# ------------------------------------------------------------------------------------------------
# selected frames


@dataclass
class _Selection:
    """What an answer selected: single frames and frame ranges, with the paths that hold them."""

    points: list[int]
    ranges: list[tuple[int, int]]
    described: str

    def holds(self, frame: int, tol: int) -> bool:
        return any(abs(frame - p) <= tol for p in self.points) or any(
            lo - tol <= frame <= hi + tol for lo, hi in self.ranges
        )


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _selection(output: Any, paths: list[str]) -> _Selection:
    points: list[int] = []
    ranges: list[tuple[int, int]] = []
    parts: list[str] = []
    for path in paths:
        got_pts: list[int] = []
        got_rng: list[tuple[int, int]] = []
        for _, value in values_at(output, path):
            for v in value if isinstance(value, list) else [value]:
                if _is_int(v):
                    got_pts.append(v)
                elif isinstance(v, dict) and _is_int(v.get("start")) and _is_int(v.get("end")):
                    got_rng.append((min(v["start"], v["end"]), max(v["start"], v["end"])))
        points += got_pts
        ranges += got_rng
        shown = [str(p) for p in got_pts] + [f"{lo}–{hi}" for lo, hi in got_rng]
        if shown:
            parts.append(f"{path} {', '.join(shown[:8])}{' …' if len(shown) > 8 else ''}")
    return _Selection(points, ranges, "; ".join(parts))


def _window(ctx: dict[str, Any], names: list[str]) -> list[tuple[str, int, int]]:
    out = []
    for name in names:
        rng = ctx.get(name)
        if isinstance(rng, dict) and _is_int(rng.get("start")) and _is_int(rng.get("end")):
            out.append((name, rng["start"], rng["end"]))
    return out


_ORDINAL_FRAME = re.compile(r"\b(?:the\s+)?(\d+)(?:st|nd|rd|th)\s+frame\b", re.IGNORECASE)


def _named_frames(text: str, fps: float | None) -> list[tuple[int, int, str, bool]]:
    """Frames a text names (:func:`~.quality.mentions`: "frame 434", times, "00:12"), plus ordinals ("the
    434th frame"), in text order: ``(frame, position, span, from_a_time)``."""
    found = mentions(text, fps)
    found += [(int(m.group(1)), m.start(1), m.group().strip(), False) for m in _ORDINAL_FRAME.finditer(text)]
    return sorted(found, key=lambda x: x[1])


_STEP = re.compile(r"\bsteps?\s*(?:#|no\.?|number)?\s*(\d+)\b", re.IGNORECASE)


def _step_numbers(output: Any, path: str) -> set[int]:
    """Step numbers an answer has: 1..n for a list, plus explicit ``step`` values of its items."""
    found = values_at(output, path)
    if len(found) == 1 and isinstance(found[0][1], list):
        items = found[0][1]
        return set(range(1, len(items) + 1)) | {i["step"] for i in items if isinstance(i, dict) and
                                                 _is_int(i.get("step"))}  # fmt: skip
    return set()


@register_validator("selected_frames")
def check_selected_frames(
    output: Any, ctx: dict[str, Any], fields: list[str], selected: list[str],
    window: list[str] | None = None, steps: str | None = None, tolerance: int = 0,
    time_tolerance_s: float = 0.5, cite_anchors: bool = True,
) -> list[Failure]:  # fmt: skip
    """Every frame or time named in the texts at ``fields`` lies inside the candidate ``window`` (context
    ranges, default ``span`` or else ``obs`` + ``fut``) and in what the answer selected at ``selected``
    (its own paths: ``key_frames``, ``input_frames``, ``input_video``, ``steps[].frame`` …; a list of
    frames is those frames, a ``{start, end}`` a range) give or take ``tolerance`` frames
    (``time_tolerance_s`` for times). With ``steps`` (a path to the answer's list of steps or actions),
    "step k" must name one of them. With ``cite_anchors``, a frame that is exactly the start or end of a
    proprioception anchor ("the hand closes between frames 90 and 136") is a cited fact, not a claim
    about an unselected frame, and passes inside the window."""
    fps = _fps(ctx)
    time_tol = max(tolerance, round(time_tolerance_s * fps)) if fps else tolerance
    names = window if window is not None else (["span"] if "span" in ctx else ["obs", "fut"])
    win = _window(ctx, names)
    sel = _selection(output, selected)
    have_steps = _step_numbers(output, steps) if steps else set()
    cited = {
        int(a[k]) for a in ctx.get("anchor_windows") or [] if isinstance(a, dict) and cite_anchors
        for k in ("start", "end") if _is_int(a.get(k))
    }  # fmt: skip
    out: list[Failure] = []
    for where, text in _texts(output, fields):
        for frame, _, span, timed in _named_frames(text, fps):
            what = f"the time {_quote(span)} (frame {frame})" if timed else f"frame {frame}"
            tol = time_tol if timed else tolerance
            if win and not any(lo - tol <= frame <= hi + tol for _, lo, hi in win):
                bounds = ", ".join(f"{n} {lo}–{hi}" for n, lo, hi in win)
                out.append(
                    Failure(
                        ValidationIssue.OUTSIDE_CANDIDATE_WINDOW,
                        f"{where}: names {what}, outside the candidate window ({bounds})",
                        span=span,
                    )
                )
                break
            if (sel.points or sel.ranges) and not sel.holds(frame, tol) and frame not in cited:
                out.append(
                    Failure(
                        ValidationIssue.FRAME_NOT_SELECTED,
                        f"{where}: names {what}, which the answer did not select ({sel.described})",
                        span=span,
                    )
                )
                break
        if steps and have_steps:
            for m in _STEP.finditer(text):
                k = int(m.group(1))
                if k not in have_steps:
                    out.append(
                        Failure(
                            ValidationIssue.STEP_NOT_SELECTED,
                            f"{where}: names step {k}, but the answer's {steps} has steps "
                            f"{min(have_steps)}–{max(have_steps)}",
                            span=m.group(),
                        )
                    )
                    break
    return out


# ------------------------------------------------------------------------------------------------
# cross-field duplicates

_LETTERS = re.compile(r"[a-z]+")
STOPWORDS = frozenset(
    "a an the and or but of to in on at by for with from into onto over under up down out off is are was "
    "were be been being am do does did done has have had it its it's this that these those there here then "
    "than so as if while which who whom whose what when where why how all any each both some such very can "
    "could should would will shall may might must s not no yes i you he she we they them his her their our "
    "my your me us him".split()
)


def _stem(word: str) -> str:
    """A crude stem so "picking", "picks" and "pick" (or "current" / "currently") count as one word."""
    for suffix in ("ingly", "edly", "ing", "ly", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_stems(text: str) -> set[str]:
    return {_stem(w) for w in _LETTERS.findall(text.lower()) if w not in STOPWORDS and len(w) > 1}


def similarity(a: str, b: str) -> tuple[float, float]:
    """``(sequence ratio of the words, Jaccard of the content-word stems)`` of two texts."""
    wa, wb = _LETTERS.findall(a.lower()), _LETTERS.findall(b.lower())
    seq = difflib.SequenceMatcher(None, wa, wb, autojunk=False).ratio() if wa and wb else 0.0
    ca, cb = content_stems(a), content_stems(b)
    jac = len(ca & cb) / len(ca | cb) if ca and cb else 0.0
    return seq, jac


@register_validator("cross_field_duplicate")
def check_cross_field_duplicate(
    output: Any, ctx: dict[str, Any], pairs: list[list[str]], min_words: int = 2, max_ratio: float = 0.8,
    max_overlap: float | None = 0.8, min_content_words: int = 4,
) -> list[Failure]:  # fmt: skip
    """For each ``[a, b]`` in ``pairs`` (paths; ``steps[].text`` compares every step): a text at ``b`` that
    is a text at ``a`` word for word (letters only, case ignored; at least ``min_words`` words), or
    nearly: the word sequences match ``max_ratio`` or more (difflib ratio), or, with ``max_overlap``,
    the content words (stems, at least ``min_content_words`` in each) overlap that much (Jaccard) — a
    reasoning that restates the answer in other function words gives no reason."""
    out: list[Failure] = []
    for pair in pairs:
        a_path, b_path = pair
        for wa, ta in _texts(output, [a_path]):
            for wb, tb in _texts(output, [b_path]):
                if wa == wb:
                    continue
                na, nb = _LETTERS.findall(ta.lower()), _LETTERS.findall(tb.lower())
                if len(na) < min_words or len(nb) < min_words:
                    continue
                if na == nb:
                    out.append(
                        Failure(
                            ValidationIssue.DUPLICATE_FIELDS,
                            f"{wb} repeats {wa} word for word: {_quote(tb)}",
                            span=tb,
                        )
                    )
                    break
                seq, jac = similarity(ta, tb)
                ca, cb = content_stems(ta), content_stems(tb)
                near_words = seq >= max_ratio
                near_content = (
                    max_overlap is not None
                    and min(len(ca), len(cb)) >= min_content_words
                    and jac >= max_overlap
                )
                if near_words or near_content:
                    how = (
                        f"{seq:.0%} of the words in the same order, limit {max_ratio:.0%}"
                        if near_words
                        else f"{jac:.0%} of the content words shared, limit {max_overlap:.0%}"
                    )
                    out.append(
                        Failure(
                            ValidationIssue.NEAR_DUPLICATE_FIELDS,
                            f"{wb} nearly repeats {wa} ({how}): {_quote(tb)} vs {_quote(ta)}",
                            span=tb,
                        )
                    )
                    break
    return out


# ------------------------------------------------------------------------------------------------
# agreement with anchors


@dataclass(frozen=True)
class Evidence:
    """One piece of anchor text and the anchor it came from, as a message names it."""

    name: str
    text: str


def evidence_of(ctx: dict[str, Any]) -> list[Evidence]:
    """The anchor texts of a request context, each with its anchor's name: the task, GUI events (target,
    typed text), text facts (window titles, OCR, typing, transcript: ``ctx["facts"]``), lecture text."""
    out: list[Evidence] = []
    task = ctx.get("task")
    if isinstance(task, str) and task and not task.startswith("(no instruction"):
        out.append(Evidence("the task anchor", task))
    for e in ctx.get("events") or []:
        if isinstance(e, dict):
            text = " ".join(str(e.get(k) or "") for k in ("target", "text")).strip()
            if text:
                out.append(
                    Evidence(f"GUI event [{e.get('i')}] {e.get('kind')} at {e.get('t', 0):.2f} s", text)
                )
    for f in ctx.get("facts") or []:
        if isinstance(f, dict) and isinstance(f.get("text"), str) and f["text"].strip():
            t = f.get("t")
            at = f" at {t:.2f} s" if isinstance(t, int | float) else ""
            out.append(Evidence(f"{f.get('kind')} anchor{at}", f["text"]))
    lecture = ctx.get("lecture") or {}
    for key in ("title", "slide_text", "transcript"):
        if isinstance(lecture.get(key), str) and lecture[key].strip():
            out.append(Evidence(f"the lecture's {key.replace('_', ' ')}", lecture[key]))
    return out


COLOURS = frozenset(
    "red orange yellow green blue purple violet pink brown black white grey gray silver golden gold beige "
    "cyan magenta turquoise".split()
)
_NP_STOP = STOPWORDS | frozenset("left right side top bottom near next front behind".split())
_MANIP = re.compile(
    r"\b(?:pick(?:s|ed|ing)?\s+up|grasp\w*|grab\w*|hold(?:s|ing)?|held|lift\w*|plac(?:e|es|ed|ing)|"
    r"put(?:s|ting)?|push\w*|pull\w*|carr(?:y|ies|ied|ying)|mov(?:e|es|ed|ing)|reach\w*\s+for)\s+"
    r"(?:the\s+|a\s+|an\s+|its\s+|one\s+)?((?:[a-z]+\s+){0,2}[a-z]+)",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z]+")


def _colour_nouns(text: str) -> list[tuple[str, str, str]]:
    """``(colour, head noun, span)`` for "yellow bottle", "blue plastic cup": a colour word and the last
    of the (at most two) words after it before a function word or punctuation."""
    out = []
    for m in re.finditer(r"\b(" + "|".join(sorted(COLOURS)) + r")\b((?:\s+[a-z]+){1,2})", text, re.I):
        words = []
        for w in m.group(2).lower().split():
            if w in _NP_STOP or w in COLOURS:
                break
            words.append(w)
        if words:
            colour = m.group(1).lower()
            out.append(
                ("grey" if colour == "gray" else colour, _stem(words[-1]), f"{m.group(1)} {' '.join(words)}")
            )
    return out


def _manipulated(text: str) -> list[tuple[str | None, str, str]]:
    """``(colour or None, head noun, span)`` of the objects a text picks up, holds, places, moves …"""
    out = []
    for m in _MANIP.finditer(text):
        raw: list[str] = []
        for w in m.group(1).split():
            if w.lower() in _NP_STOP:
                break
            raw.append(w)
        words = [w.lower() for w in raw]
        colours = [w for w in words if w in COLOURS]
        nouns = [w for w in words if w not in COLOURS]
        if nouns:
            span = f"{text[m.start() : m.start(1)]}{' '.join(raw)}".strip()
            out.append((colours[0] if colours else None, _stem(nouns[-1]), span))
    return out


APPS: dict[str, tuple[str, ...]] = {
    "Excel": ("excel",), "PowerPoint": ("powerpoint",), "Microsoft Word": ("microsoft word", "ms word"),
    "Outlook": ("outlook",), "Chrome": ("chrome",), "Firefox": ("firefox",), "Safari": ("safari",),
    "Microsoft Edge": ("microsoft edge", "msedge"), "Notepad": ("notepad",),
    "File Explorer": ("file explorer",), "VS Code": ("vs code", "vscode", "visual studio code"),
    "Photoshop": ("photoshop",), "GIMP": ("gimp",), "Slack": ("slack",), "Spotify": ("spotify",),
    "Thunderbird": ("thunderbird",), "LibreOffice": ("libreoffice",),
    "Microsoft Teams": ("microsoft teams", "ms teams"), "Zoom": ("zoom meeting",),
    "Settings": ("settings",), "Terminal": ("terminal",), "VLC": ("vlc",), "Discord": ("discord",),
}  # fmt: skip
"""Applications a GUI text may name (name → how it is written, lower case). ``Settings`` and
``Terminal`` are general words: they count as evidence of an app, but a text naming them is not a claim
(only the distinctive names are checked)."""
GENERIC_APPS = frozenset({"Settings", "Terminal"})


def _apps_in(text: str) -> set[str]:
    low = text.lower()
    return {app for app, forms in APPS.items() if any(re.search(rf"\b{re.escape(f)}\b", low) for f in forms)}


_VALUE = re.compile(r"\b([a-z]{3,})\s*(?:\s+to|=|:)\s*(\d+(?:\.\d+)?\s*(?:%|x\s*\d+)?)", re.IGNORECASE)
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:\s*x\s*\d+)?")


_NOT_SETTINGS = frozenset("frame frames step steps from time second seconds".split())


def _values(text: str) -> list[tuple[str, str, str]]:
    """``(setting, value, span)``: "brightness to 78", "scale: 125%", "resolution to 1680x1050"."""
    out = []
    for m in _VALUE.finditer(text):
        label = m.group(1).lower()
        if label in STOPWORDS or label in _NOT_SETTINGS:
            continue
        value = re.sub(r"\s+", "", m.group(2).lower()).rstrip("%")
        out.append((_stem(label), value, m.group().strip()))
    return out


_ACTION_WORDS: dict[str, re.Pattern[str]] = {
    "double_click": re.compile(r"\bdouble[- ]?click\w*", re.I),
    "right_click": re.compile(r"\bright[- ]?click\w*", re.I),
    "drag": re.compile(r"\b(?:drag(?:s|ged|ging)?|drag and drop)\b", re.I),
    "scroll": re.compile(r"\bscroll(?:s|ed|ing)?\b", re.I),
    "typing": re.compile(r"\b(?:typ(?:es|ed|ing)|enters? the text)\b", re.I),
}
"""GUI action words and the event kind each claims (``right-click`` → ``right_click``)."""


@register_validator("anchor_agreement")
def check_anchor_agreement(
    output: Any, ctx: dict[str, Any], fields: list[str],
    checks: list[str] | None = None,
) -> list[Failure]:  # fmt: skip
    """Claims in the texts at ``fields`` that the anchors contradict (``checks``, default all):
    ``colour`` (an object the anchors name in one colour, called another, and never in the anchors'
    colour anywhere in the answer: "the green bottle next to the yellow bottle" is two bottles),
    ``object`` (a manipulated object whose colour and noun no anchor has, while the task names what is
    manipulated), ``app`` (a named application no window, event, screen text or task shows, while they
    show others), ``value`` (a setting set to a value the anchors give otherwise, a value no anchor shows
    anywhere), ``action`` (a GUI action kind the recorded event log, which has events, never holds),
    ``typed`` (quoted text the answer says was typed, entered or searched for that no typing event and no
    anchor text holds, when the log has typing), ``clicked`` (a quoted label the answer says was clicked
    that no click target of the log, which names every click's target, and no anchor text holds),
    ``quote`` (a quotation of two or more words that neither the transcript nor the slide text says, its
    words in order), ``time`` (a time outside the segment's transcript anchors, 10 s of slack; streams
    without frames only), ``slide`` (a slide number other than the segment's index or page), ``concept``
    (a ``key_concept`` / ``concept`` / ``topic`` none of whose words the segment's transcript or slide
    text says; the lecture's title does not count). A claim the anchors say nothing about passes:
    only contradictions fail."""
    wanted = set(checks or CHECKS)
    evidence = evidence_of(ctx)
    texts = _texts(output, fields)
    whole = " ".join(t for _, t in texts)
    out: list[Failure] = []
    for where, text in texts:
        for name in CHECKS:
            if name in wanted:
                fail = CHECKS[name](where, text, ctx, evidence, whole)
                if fail:
                    out.append(fail)
    return out


def _colour_check(
    where: str, text: str, ctx: dict[str, Any], evidence: list[Evidence], whole: str
) -> Failure | None:
    said: dict[str, list[tuple[str, Evidence, str]]] = {}
    for ev in evidence:
        for colour, noun, span in _colour_nouns(ev.text):
            said.setdefault(noun, []).append((colour, ev, span))
    also = {(c, n) for c, n, _ in _colour_nouns(whole)}
    for colour, noun, span in _colour_nouns(text):
        known = said.get(noun)
        if known and all(c != colour and (c, noun) not in also for c, _, _ in known):
            _, ev, where_span = known[0]
            return Failure(
                ValidationIssue.CONTRADICTS_ANCHOR,
                f"{where}: says {_quote(span)}, but {ev.name} says {_quote(where_span)}",
                span=span,
            )
    return None


def _object_check(
    where: str, text: str, ctx: dict[str, Any], evidence: list[Evidence], whole: str
) -> Failure | None:
    task = [ev for ev in evidence if ev.name == "the task anchor"]
    targets = [(c, n, s, ev) for ev in task for c, n, s in _manipulated(ev.text)]
    if not targets:
        return None
    words = {_stem(w) for ev in evidence for w in _WORD.findall(ev.text.lower())}
    for colour, noun, span in _manipulated(text):
        if colour is None or noun in words or colour in words:
            continue
        _, _, tspan, ev = targets[0]
        return Failure(
            ValidationIssue.CONTRADICTS_ANCHOR,
            f"{where}: says {_quote(span)}, but {ev.name} says {_quote(tspan)} and no anchor names a "
            f"{colour} {noun}",
            span=span,
        )
    return None


def _app_check(
    where: str, text: str, ctx: dict[str, Any], evidence: list[Evidence], whole: str
) -> Failure | None:
    if (ctx.get("stream") or {}).get("modality") != "gui":
        return None
    claimed = _apps_in(text) - GENERIC_APPS
    if not claimed:
        return None
    seen: dict[str, Evidence] = {}
    windows = []
    for ev in evidence:
        for app in _apps_in(ev.text):
            seen.setdefault(app, ev)
        if ev.name.startswith("window_change"):
            windows.append(ev.text)
    if not seen and not windows:
        return None  # the anchors name no application: nothing to contradict
    for app in sorted(claimed - set(seen)):
        shown = [f"{a} ({e.name})" for a, e in sorted(seen.items())][:4]
        if windows:
            shown.append(f"windows {', '.join(dict.fromkeys(windows))} (window_change anchors)")
        return Failure(
            ValidationIssue.CONTRADICTS_ANCHOR,
            f"{where}: names the application {app}, which no anchor shows; the anchors show "
            f"{'; '.join(shown)}",
            span=app,
        )
    return None


def _value_check(
    where: str, text: str, ctx: dict[str, Any], evidence: list[Evidence], whole: str
) -> Failure | None:
    known: dict[str, list[tuple[str, Evidence, str]]] = {}
    for ev in evidence:
        for label, value, span in _values(ev.text):
            known.setdefault(label, []).append((value, ev, span))
    anywhere = {re.sub(r"\s+", "", n) for ev in evidence for n in _NUMBER.findall(ev.text.lower())}
    for label, value, span in _values(text):
        given = known.get(label)
        if given and all(v != value for v, _, _ in given) and value not in anywhere:
            _, ev, espan = given[0]
            return Failure(
                ValidationIssue.CONTRADICTS_ANCHOR,
                f"{where}: says {_quote(span)}, but {ev.name} says {_quote(espan)}",
                span=span,
            )
    return None


def _action_check(
    where: str, text: str, ctx: dict[str, Any], evidence: list[Evidence], whole: str
) -> Failure | None:
    events = [e for e in ctx.get("events") or [] if isinstance(e, dict)]
    if not events:
        return None
    kinds = Counter(str(e.get("kind")) for e in events)
    for kind, pattern in _ACTION_WORDS.items():
        m = pattern.search(text)
        if m and kind not in kinds:
            log = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
            return Failure(
                ValidationIssue.CONTRADICTS_ANCHOR,
                f"{where}: says {_quote(m.group())}, but the GUI event log ({len(events)} events: {log}) "
                f"has no {kind}",
                span=m.group(),
            )
    return None


# ---- what was said: transcript and slide anchors (lecture segments, any stream with a transcript)


@dataclass(frozen=True)
class _Talk:
    """What a segment's transcript and slide anchors say: the spoken text, when (first and last
    transcript anchor, seconds), the slide shown (its index as the prompt gives it) and its text."""

    said: str
    t0: float | None
    t1: float | None
    slide: int | None
    slide_text: str

    @property
    def text(self) -> str:
        return f"{self.said} {self.slide_text}"

    def named(self) -> str:
        """The anchors a message names: "the transcript (50.7–98.1 s) or slide 2's text"."""
        parts = []
        if self.said:
            parts.append(f"the transcript ({self.t0:.1f}–{self.t1:.1f} s)" if self.t0 is not None else
                         "the transcript")  # fmt: skip
        if self.slide_text:
            parts.append(f"slide {self.slide}'s text" if self.slide is not None else "the slide text")
        return " or ".join(parts)


def _as_int(v: Any) -> int | None:
    if _is_int(v):
        return int(v)
    return int(v) if isinstance(v, str) and v.strip().isdigit() else None


def _talk(ctx: dict[str, Any]) -> _Talk | None:
    """The transcript and slide anchors of a request context, None when it has neither."""
    lecture = ctx.get("lecture") or {}
    spoken = [f for f in ctx.get("facts") or [] if isinstance(f, dict) and f.get("kind") == "transcript"]
    said = str(lecture.get("transcript") or "") or " ".join(str(f.get("text") or "") for f in spoken)
    times = [float(f["t"]) for f in spoken if isinstance(f.get("t"), int | float)]
    slide_text = str(lecture.get("slide_text") or "")
    if not said.strip() and not slide_text.strip():
        return None
    t0, t1 = (min(times), max(times)) if times else (None, None)
    return _Talk(said, t0, t1, _as_int(lecture.get("slide")), slide_text)


_QUOTE = re.compile(r"[\"“”]([^\"“”]{3,200})[\"“”]|(?<![A-Za-z])[‘']([^'‘’]{3,200})['’](?![A-Za-z])")
_ALNUM = re.compile(r"[a-z0-9]+")


def _said_in(quote: str, text: str, slack: float = 0.8) -> bool:
    """Whether ``text`` says ``quote``: its words in order, at least ``slack`` of them, within a stretch
    not much longer than the quote (so scattered common words do not make a quotation)."""
    q, t = _ALNUM.findall(quote.lower()), _ALNUM.findall(text.lower())
    if not q:
        return True
    n = len(q)
    for i in range(len(t)):
        window = t[i : i + 2 * n + 2]
        if q[0] not in window[:2] and not (set(q) & set(window[:1])):
            continue
        blocks = difflib.SequenceMatcher(None, q, window, autojunk=False).get_matching_blocks()
        if sum(b.size for b in blocks) >= slack * n:
            return True
    return False


def _quote_check(
    where: str, text: str, ctx: dict[str, Any], evidence: list[Evidence], whole: str
) -> Failure | None:
    talk = _talk(ctx)
    if talk is None:
        return None
    for m in _QUOTE.finditer(text):
        quote = (m.group(1) or m.group(2)).strip()
        if len(_ALNUM.findall(quote.lower())) < 2 or _said_in(quote, talk.text):
            continue
        return Failure(
            ValidationIssue.CONTRADICTS_ANCHOR,
            f"{where}: quotes {_quote(quote)}, which is not in {talk.named()}",
            span=m.group(),
        )
    return None


TALK_TIME_TOLERANCE_S = 10.0
"""How far past its last transcript anchor a segment may still run (a transcript anchor marks where a
spoken line starts)."""


def _time_check(
    where: str, text: str, ctx: dict[str, Any], evidence: list[Evidence], whole: str
) -> Failure | None:
    talk = _talk(ctx)
    if talk is None or talk.t0 is None or talk.t1 is None or _fps(ctx):
        return None  # a stream with frames: selected_frames checks its times against the window
    lo, hi = talk.t0 - TALK_TIME_TOLERANCE_S, talk.t1 + TALK_TIME_TOLERANCE_S
    for seconds, _, span, timed in mentions(text, 1.0):
        if timed and not lo <= seconds <= hi:
            return Failure(
                ValidationIssue.CONTRADICTS_ANCHOR,
                f"{where}: names the time {_quote(span)} ({seconds} s), but this segment's transcript "
                f"anchors run {talk.t0:.1f}–{talk.t1:.1f} s",
                span=span,
            )
    return None


_SLIDE = re.compile(r"\bslides?\s*(?:#|no\.?|number)?\s*(\d+)\b", re.IGNORECASE)


def _slide_check(
    where: str, text: str, ctx: dict[str, Any], evidence: list[Evidence], whole: str
) -> Failure | None:
    talk = _talk(ctx)
    if talk is None or talk.slide is None:
        return None
    shown = {talk.slide, talk.slide + 1}  # the index the prompt gives, or the page number
    for m in _SLIDE.finditer(text):
        if int(m.group(1)) not in shown:
            return Failure(
                ValidationIssue.CONTRADICTS_ANCHOR,
                f"{where}: names slide {m.group(1)}, but the slide anchor of this segment is slide "
                f"{talk.slide} (page {talk.slide + 1})",
                span=m.group(),
            )
    return None


CONCEPT_FIELDS = frozenset({"key_concept", "concept", "topic"})
"""Fields that name what a segment teaches: at least one of their content words must be said in it."""


def _stems_of(text: str) -> set[str]:
    return {_stem(w) for w in _ALNUM.findall(text.lower()) if w not in STOPWORDS and len(w) > 2}


def _mentioned(word: str, said: set[str]) -> bool:
    """``word`` (a stem) is said: the same stem, or one is the start of the other and 5+ letters long
    ("commit" / "commitment", "crypto" / "cryptocurrency")."""
    return word in said or any(
        min(len(word), len(w)) >= 5 and (w.startswith(word) or word.startswith(w)) for w in said
    )


def _concept_check(
    where: str, text: str, ctx: dict[str, Any], evidence: list[Evidence], whole: str
) -> Failure | None:
    talk = _talk(ctx)
    if talk is None or re.sub(r"\[\d+\]", "", where).rsplit(".", 1)[-1] not in CONCEPT_FIELDS:
        return None
    words = {w for w in _stems_of(text) if not w.isdigit()}
    if not words or any(_mentioned(w, _stems_of(talk.text)) for w in words):
        return None
    return Failure(
        ValidationIssue.CONTRADICTS_ANCHOR,
        f"{where}: names the concept {_quote(text)}, which this segment never mentions: no "
        f"{', '.join(sorted(words))} in {talk.named()}",
        span=text,
    )


# ---- what was typed: the GUI event log's typing (and the screen's text)

_TYPED = re.compile(
    r"\b(?:typ(?:e|es|ed|ing)|enter(?:s|ed|ing)?|input(?:s|ted|ting)?|search(?:es|ed|ing)?\s+for|"
    r"writ(?:e|es|ing)|fill(?:s|ed|ing)?\s+in)\s+(?:in\s+)?(?:the\s+(?:text|word|value|name|query)\s+)?"
    r"[\"“‘']([^\"”’']{1,120})[\"”’']",
    re.IGNORECASE,
)


def _norm(text: str) -> str:
    return " ".join(_ALNUM.findall(text.lower()))


def _typed_check(
    where: str, text: str, ctx: dict[str, Any], evidence: list[Evidence], whole: str
) -> Failure | None:
    typing = [
        e for e in ctx.get("events") or []
        if isinstance(e, dict) and e.get("kind") in ("typing", "type") and str(e.get("text") or "").strip()
    ]  # fmt: skip
    if not typing:
        return None  # no recorded typing: nothing to contradict
    shown = [_norm(str(e["text"])) for e in typing] + [_norm(ev.text) for ev in evidence]
    for m in _TYPED.finditer(text):
        claimed = _norm(m.group(1))
        if not claimed or any(claimed in s for s in shown):
            continue
        log = "; ".join(
            f"[{e.get('i')}] at {e.get('t', 0):.2f} s {_quote(str(e['text']), 40)}" for e in typing[:4]
        )
        return Failure(
            ValidationIssue.CONTRADICTS_ANCHOR,
            f"{where}: says it types {_quote(m.group(1))}, but the GUI event log types only {log} "
            "(typing events) and no screen text shows it",
            span=m.group(),
        )
    return None


_CLICKED = re.compile(
    r"\b(?:(?:double|right)[- ]?)?(?:click(?:s|ed|ing)?|tap(?:s|ped|ping)?)\s+(?:on\s+)?(?:the\s+)?"
    r"[\"“‘']([^\"”’']{1,80})[\"”’']",
    re.IGNORECASE,
)
CLICK_KINDS = frozenset({"click", "double_click", "right_click", "middle_click"})


def _clicked_check(
    where: str, text: str, ctx: dict[str, Any], evidence: list[Evidence], whole: str
) -> Failure | None:
    clicks = [e for e in ctx.get("events") or [] if isinstance(e, dict) and e.get("kind") in CLICK_KINDS]
    if not clicks or not all(str(e.get("target") or "").strip() for e in clicks):
        return None  # a click without a recorded target: the log does not say what every click hit
    targets = [_norm(str(e["target"])) for e in clicks]
    shown = targets + [_norm(ev.text) for ev in evidence]
    for m in _CLICKED.finditer(text):
        claimed = _norm(m.group(1))
        if not claimed or any(claimed in s for s in shown) or any(t and t in claimed for t in targets):
            continue
        listed = ", ".join(dict.fromkeys(_quote(str(e["target"]), 40) for e in clicks))
        return Failure(
            ValidationIssue.CONTRADICTS_ANCHOR,
            f"{where}: says it clicks {_quote(m.group(1))}, but the GUI event log's {len(clicks)} clicks hit "
            f"only {listed} and no screen text shows it",
            span=m.group(),
        )
    return None


CHECKS = {
    "colour": _colour_check, "object": _object_check, "app": _app_check, "value": _value_check,
    "action": _action_check, "quote": _quote_check, "time": _time_check, "slide": _slide_check,
    "concept": _concept_check, "typed": _typed_check, "clicked": _clicked_check,
}  # fmt: skip
"""The contradictions ``anchor_agreement`` looks for, by name (its ``checks`` parameter)."""


# ------------------------------------------------------------------------------------------------
# whether a sample could be checked at all

GROUNDING_VALIDATORS = frozenset(
    {"anchor_agreement", "anchor_window", "grounded_actions", "grounded_text", "permutation"}
)
"""Validators that compare an answer's content with anchors (not only with its own frames)."""


def content_evidence(ctx: dict[str, Any]) -> list[str]:
    """What a request context holds that says what the stream shows: the task, GUI events, proprioception
    windows, text facts, lecture text. Shot and motion anchors say when, not what."""
    have = []
    if isinstance(ctx.get("task"), str) and ctx["task"] and not ctx["task"].startswith("(no instruction"):
        have.append("task")
    if ctx.get("events"):
        have.append("events")
    if any(isinstance(a, dict) and a.get("source") == "proprio" for a in ctx.get("anchor_windows") or []):
        have.append("proprioception")
    if ctx.get("facts"):
        have.append("text anchors")
    if any((ctx.get("lecture") or {}).get(k) for k in ("slide_text", "transcript")):
        have.append("lecture text")
    return have


def grounding_status(ctx: dict[str, Any], validators: list[str]) -> str:
    """``"anchors"`` when the intent runs a grounding gate and the stream has content anchors to check
    the text against; ``"unchecked"`` otherwise (a video with shot and motion anchors only: no local
    image–text model is installed to check it instead)."""
    if GROUNDING_VALIDATORS & set(validators) and content_evidence(ctx):
        return "anchors"
    return "unchecked"
