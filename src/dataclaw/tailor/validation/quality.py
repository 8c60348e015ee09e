"""Quality validators: checks that stop plausible garbage a schema cannot see (issue "Tailor quality").

A schema-valid answer can still be useless on a human read: a question that echoes the prompt
("Sampled frames (in time order): …"), six identical steps, reasoning that loops, a frame named outside
the frames shown, a grasp placed where the hand never closed. (Frames named outside what the answer
itself selected — "the critical moment is frame 434" with key frames 266–406, when 434 was shown — and
fields that copy each other or contradict the anchors are the grounding gates of :mod:`.grounding`.)
The paper asks for post-hoc verification against the factual anchors (B.2.1 "structural verification &
grounding") and names temporal hallucination as a real failure of strong models too (E.2); these
validators make those checks deterministic. Each is registered in the validator registry like the
A.3.4 checks, named in intents with parameters, and reports a :class:`ValidationIssue` plus the
offending span of text.

- ``repetition``: character and word n-gram repetition ratios exactly as data-juicer defines them
  (``character_repetition_filter``, ``word_repetition_filter``: default ``rep_len`` 10, kept range
  0.0–0.5), the same sentence twice in one text, and list items (steps, motion phases) that say the same
  thing once digits and punctuation are ignored.
- ``prompt_echo``: the share of a text's words covered by word n-grams of the prompt's own template
  text or of the anchor / frame lines it was shown.
- ``question_form``: a field that is a question reads as one (ends with "?" or opens with an
  interrogative or an ask verb).
- ``temporal_consistency``: every frame number or time point a text names lies within the frames given
  by ``within`` (in the built-in intents: the frames shown, or the candidate's range), and before / after /
  then between two named frames agree with their order.
- ``anchor_window``: a grasp / release / stall the text (or a frame field, or a step) places at a frame
  lies inside the matching proprioception anchor (``hand_close`` / ``hand_open`` / ``stall``), within a
  tolerance.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import string
from collections import Counter
from typing import Any

from dataclaw.core.errors import ConfigError
from dataclaw.tailor.validation.base import Failure, ValidationIssue, register_validator, values_at

# ------------------------------------------------------------------------------------------------
# helpers


def _texts(output: Any, fields: list[str]) -> list[tuple[str, str]]:
    """``(where, text)`` for every string at ``fields`` (``a``, ``a[]``, ``a[].b``)."""
    return [(w, v) for path in fields for w, v in values_at(output, path) if isinstance(v, str)]


def _values(output: Any, ctx: dict[str, Any], path: str) -> list[Any]:
    """Values at a context path (``frame_indices``, ``obs``) or an output path (``output.key_frames``)."""
    if path.startswith("output."):
        return [v for _, v in values_at(output, path[len("output.") :])]
    return [v for _, v in values_at(ctx, path)]


def _intervals(value: Any) -> list[tuple[int, int]]:
    """Frame intervals held by a value: ``{start, end}``, an int, or a list (its min..max span; a list of
    ranges gives one interval each)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [(value, value)]
    if isinstance(value, dict) and isinstance(value.get("start"), int) and isinstance(value.get("end"), int):
        return [(min(value["start"], value["end"]), max(value["start"], value["end"]))]
    if isinstance(value, list):
        ints = [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
        out = [(min(ints), max(ints))] if ints else []
        return out + [iv for v in value if isinstance(v, dict) for iv in _intervals(v)]
    return []


def _fps(ctx: dict[str, Any]) -> float | None:
    fps = (ctx.get("stream") or {}).get("fps")
    return float(fps) if isinstance(fps, int | float) and fps > 0 else None


# data-juicer's word refinement (ops/common/helper_func.py ``words_refinement`` with
# ``strip_chars=SPECIAL_CHARACTERS``): split on whitespace, lower-case, strip punctuation, digits and
# whitespace from both ends of each word, drop what is left empty.
_STRIP = string.punctuation + string.digits + string.whitespace + "–—‘’“”…·•«»"


def dj_words(text: str) -> list[str]:
    return [w for w in (t.lower().strip(_STRIP) for t in text.split()) if w]


def char_rep_ratio(text: str, n: int = 10) -> tuple[float, str]:
    """data-juicer ``character_repetition_filter`` statistic: character n-grams counted, the
    ``floor(sqrt(#distinct))`` most frequent ones that occur more than once summed over all n-grams.
    Returns ``(ratio, most repeated n-gram)``."""
    grams = Counter(text[i : i + n] for i in range(len(text) - n + 1))
    if not grams:
        return 0.0, ""
    freqs = sorted(grams.values(), reverse=True)
    singles = sum(1 for f in freqs if f == 1)
    k = min(int(math.sqrt(len(freqs))), len(freqs) - singles)
    total = sum(freqs)
    top = grams.most_common(1)[0][0] if k else ""
    return (sum(freqs[:k]) / total if total else 0.0), top


def word_rep_ratio(text: str, n: int = 10) -> tuple[float, str]:
    """data-juicer ``word_repetition_filter`` statistic: word n-grams (refined words) counted, the
    occurrences of those seen more than once over all n-grams. Returns ``(ratio, most repeated n-gram)``."""
    words = dj_words(text)
    grams = Counter(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
    total = sum(grams.values())
    if not total:
        return 0.0, ""
    repeated = sum(f for f in grams.values() if f > 1)
    gram, count = grams.most_common(1)[0]
    return repeated / total, gram if count > 1 else ""


_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_NORM_DROP = re.compile(r"[^a-z]+")


def _norm(text: str) -> str:
    """Letters only, lower case, single spaces: two items equal under it say the same thing."""
    return " ".join(_NORM_DROP.sub(" ", text.lower()).split())


# ------------------------------------------------------------------------------------------------
# repetition


@register_validator("repetition")
def check_repetition(
    output: Any, ctx: dict[str, Any], fields: list[str] | None = None, items: list[str] | None = None,
    char_rep_len: int = 10, char_max_ratio: float = 0.5, word_rep_len: int = 10,
    word_max_ratio: float = 0.5, min_sentence_words: int = 4,
) -> list[Failure]:  # fmt: skip
    """Texts at ``fields`` whose character or word n-gram repetition ratio exceeds the maximum
    (data-juicer's statistics and default range), or which hold one sentence of at least
    ``min_sentence_words`` words twice; lists at ``items`` (``steps[].text``, ``motion_plan[]``) whose
    items repeat each other once digits and punctuation are ignored."""
    out: list[Failure] = []
    for where, text in _texts(output, fields or []):
        ratio, gram = char_rep_ratio(text, char_rep_len)
        if ratio > char_max_ratio:
            out.append(
                Failure(
                    ValidationIssue.REPETITIVE_TEXT,
                    f"{where}: character {char_rep_len}-gram repetition ratio {ratio:.2f} > {char_max_ratio}",
                    span=gram,
                )
            )
            continue
        ratio, gram = word_rep_ratio(text, word_rep_len)
        if ratio > word_max_ratio:
            out.append(
                Failure(
                    ValidationIssue.REPETITIVE_TEXT,
                    f"{where}: word {word_rep_len}-gram repetition ratio {ratio:.2f} > {word_max_ratio}",
                    span=gram,
                )
            )
            continue
        seen: set[str] = set()
        for sentence in _SENTENCE.split(text):
            key = _norm(sentence)
            if len(key.split()) < min_sentence_words:
                continue
            if key in seen:
                out.append(
                    Failure(
                        ValidationIssue.DUPLICATE_SENTENCE,
                        f"{where}: the same sentence appears twice",
                        span=sentence.strip(),
                    )
                )
                break
            seen.add(key)
    for path in items or []:
        found = values_at(output, path)
        firsts: dict[str, str] = {}
        for where, value in found:
            key = _norm(value) if isinstance(value, str) else ""
            if not key:
                continue
            if key in firsts:
                out.append(
                    Failure(
                        ValidationIssue.DUPLICATE_STEPS,
                        f"{where} repeats {firsts[key]} ({len(found)} items at {path})",
                        span=value,
                    )
                )
                break
            firsts[key] = where
    return out


# ------------------------------------------------------------------------------------------------
# prompt echo

_TOKEN = re.compile(r"[a-z0-9]+")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _echo_sources(ctx: dict[str, Any], blocks: list[str]) -> list[str]:
    pieces = [p for p in ctx.get("prompt_template") or [] if isinstance(p, str)]
    for path in blocks:
        for _, value in values_at(ctx, path):
            if isinstance(value, list):
                pieces.extend(str(v) for v in value)
            elif isinstance(value, str):
                pieces.extend(value.splitlines())
    return pieces


@register_validator("prompt_echo")
def check_prompt_echo(
    output: Any, ctx: dict[str, Any], fields: list[str], blocks: list[str] | None = None, ngram: int = 4,
    max_ratio: float = 0.5,
) -> list[Failure]:  # fmt: skip
    """Texts at ``fields`` of which more than ``max_ratio`` of the words lie in word ``ngram``-grams of
    the prompt's template text (its fixed wording, without the filled-in values) or of the context
    ``blocks`` it was shown (default the anchor and frame lines). The task text is not a source, so
    restating the task is not an echo."""
    pieces = _echo_sources(ctx, ["anchor_lines", "frame_lines"] if blocks is None else blocks)
    grams = _grams(tuple(pieces), ngram)
    out: list[Failure] = []
    if not grams:
        return out
    for where, text in _texts(output, fields):
        toks = _tokens(text)
        if len(toks) < ngram:
            continue
        covered = [False] * len(toks)
        for i in range(len(toks) - ngram + 1):
            if tuple(toks[i : i + ngram]) in grams:
                covered[i : i + ngram] = [True] * ngram
        ratio = sum(covered) / len(toks)
        if ratio > max_ratio:
            out.append(
                Failure(
                    ValidationIssue.PROMPT_ECHO,
                    f"{where}: {ratio:.0%} of its words repeat the prompt (limit {max_ratio:.0%})",
                    span=" ".join(_longest_run(toks, covered)),
                )
            )
    return out


@functools.lru_cache(maxsize=256)
def _grams(pieces: tuple[str, ...], n: int) -> frozenset[tuple[str, ...]]:
    """Word n-grams of the prompt pieces (not across pieces); an intent's template recurs, so cached."""
    grams: set[tuple[str, ...]] = set()
    for piece in pieces:
        toks = _tokens(piece)
        grams.update(tuple(toks[i : i + n]) for i in range(len(toks) - n + 1))
    return frozenset(grams)


def _longest_run(toks: list[str], covered: list[bool]) -> list[str]:
    best: tuple[int, int] = (0, 0)
    start = None
    for i, c in enumerate([*covered, False]):
        if c and start is None:
            start = i
        elif not c and start is not None:
            if i - start > best[1] - best[0]:
                best = (start, i)
            start = None
    return toks[best[0] : best[1]]


# ------------------------------------------------------------------------------------------------
# question form

ASK_WORDS = frozenset(
    "what why how which where when who whom whose is are was were do does did can could should would "
    "will shall may might has have had describe explain identify name predict tell list give state "
    "determine estimate compare order".split()
)
_PLACEHOLDER = re.compile(r"<[a-z_0-9]+>")


@register_validator("question_form")
def check_question_form(output: Any, ctx: dict[str, Any], fields: list[str]) -> list[Failure]:
    """Each text at ``fields`` is a question: it ends with "?" or opens with an interrogative or an ask
    verb (What, Why, How, Is, Describe, Predict …) — but "How to …" without "?" is a title. Media
    placeholders are ignored."""
    out = []
    for where, text in _texts(output, fields):
        bare = _PLACEHOLDER.sub(" ", text).strip().rstrip("\"'” )]")
        words = _tokens(bare)
        if bare.endswith("?") or (words[:1] and words[0] in ASK_WORDS and words[:2] != ["how", "to"]):
            continue  # "How to do the task" is a title, not a question
        out.append(Failure(ValidationIssue.NOT_A_QUESTION, f"{where}: not a question", span=text))
    return out


# ------------------------------------------------------------------------------------------------
# temporal consistency

_NUM = r"\d+(?:\.\d+)?"
_FRAME = re.compile(
    r"\bframes?\s*(?:#|no\.?|number|index)?\s*(\d+)"
    r"((?:\s*(?:,|and|or|to|through|until|[-–—])\s*(?:frame\s*)?\d+\b)*)",
    re.IGNORECASE,
)
_TIME_RANGE = re.compile(rf"\b({_NUM})\s*[-–—]\s*({_NUM})\s*(?:s|secs?|seconds?)\b", re.IGNORECASE)
_TIME_AT = re.compile(
    rf"(?:\b(?:at|around|about|by|from|until|till|to|between|and|near|time)\s+|\()~?\s*({_NUM})\s*"
    r"(?:s|secs?|seconds?)\b",
    re.IGNORECASE,
)
_CLOCK = re.compile(r"\b(\d{1,2}):([0-5]\d)(?:\.(\d+))?\b")
_INT = re.compile(r"\d+")

FORWARD = ("then", "followed by", "afterwards", "afterward", "next", "later", "subsequently", "before",
           "prior to", "earlier than", "leading to", "until")  # fmt: skip
BACKWARD = ("after", "following", "later than", "preceded by", "once")
_FORWARD = re.compile(r"\b(" + "|".join(FORWARD) + r")\b", re.IGNORECASE)
_BACKWARD = re.compile(r"\b(" + "|".join(BACKWARD) + r")\b", re.IGNORECASE)


def mentions(text: str, fps: float | None) -> list[tuple[int, int, str, bool]]:
    """Frames a text names, in text order: ``(frame, position, span, from_a_time)``; times (``at 3.2 s``,
    ``1.60-4.57 s``, ``00:12``) become frames at ``fps`` (skipped without one). Durations ("for 2
    seconds") are not time points and are not read."""
    found: list[tuple[int, int, str, bool]] = []
    for m in _FRAME.finditer(text):
        base = m.start(1)
        for n in _INT.finditer(text[m.start(1) : m.end()]):
            found.append((int(n.group()), base + n.start(), m.group().strip(), False))
    if fps:
        taken: list[tuple[int, int]] = []
        for m in _TIME_RANGE.finditer(text):
            taken.append(m.span())
            for g in (1, 2):
                found.append((round(float(m.group(g)) * fps), m.start(g), m.group().strip(), True))
        for m in _TIME_AT.finditer(text):
            if any(a <= m.start(1) < b for a, b in taken):
                continue
            found.append((round(float(m.group(1)) * fps), m.start(1), m.group().strip(), True))
        for m in _CLOCK.finditer(text):
            seconds = int(m.group(1)) * 60 + int(m.group(2)) + float(f"0.{m.group(3) or 0}")
            found.append((round(seconds * fps), m.start(), m.group(), True))
    return sorted(found, key=lambda x: x[1])


def _inside(frame: int, intervals: list[tuple[int, int]], tol: int) -> bool:
    return any(lo - tol <= frame <= hi + tol for lo, hi in intervals)


@register_validator("temporal_consistency")
def check_temporal_consistency(
    output: Any, ctx: dict[str, Any], fields: list[str], within: list[str] | None = None,
    tolerance: int = 0, time_tolerance_s: float = 0.5, max_gap_words: int = 12,
) -> list[Failure]:  # fmt: skip
    """Every frame number or time point named in the texts at ``fields`` lies within the frames the
    sample selected (``within``: context or ``output.`` paths, default ``frame_indices``; ranges count as
    their span, lists as min..max) give or take ``tolerance`` frames (``time_tolerance_s`` for times,
    which are coarser); and where an ordering word (then, before, after, followed by …) stands between
    two named frames at most ``max_gap_words`` words apart, their order agrees with it."""
    fps = _fps(ctx)
    intervals = [iv for path in within or ["frame_indices"] for v in _values(output, ctx, path)
                 for iv in _intervals(v)]  # fmt: skip
    time_tol = max(tolerance, round(time_tolerance_s * fps)) if fps else tolerance
    shown = ", ".join(f"{lo}–{hi}" if lo != hi else str(lo) for lo, hi in sorted(intervals))
    out: list[Failure] = []
    for where, text in _texts(output, fields):
        found = mentions(text, fps)
        if intervals:
            for frame, _, span, timed in found:
                if not _inside(frame, intervals, time_tol if timed else tolerance):
                    what = f"time '{span}' (frame {frame})" if timed else f"frame {frame}"
                    out.append(
                        Failure(
                            ValidationIssue.FRAME_NOT_SELECTED,
                            f"{where}: names {what}, outside the selected frames {shown}",
                            span=span,
                        )
                    )
                    break
        for (a, pa, _, _), (b, pb, _, _) in itertools.pairwise(found):
            between = text[pa + len(str(a)) : pb]
            if a == b or len(between.split()) > max_gap_words:
                continue
            fwd, back = _FORWARD.search(between), _BACKWARD.search(between)
            if bool(fwd) == bool(back):
                continue
            if (fwd and a > b) or (back and a < b):
                word = (fwd or back).group()  # type: ignore[union-attr]
                out.append(
                    Failure(
                        ValidationIssue.ORDER_CONTRADICTS_FRAMES,
                        f"{where}: '{word}' puts frame {a} {'before' if fwd else 'after'} frame {b}",
                        span=text[max(0, pa - 40) : pb + len(str(b))].strip(),
                    )
                )
                break
    return out


# ------------------------------------------------------------------------------------------------
# anchor windows

EVENT_WORDS: dict[str, re.Pattern[str]] = {
    "grasp": re.compile(
        r"\b(grasp\w*|grip(?:s|ped|ping)?|grab\w*|picks? up|picked up|picking up|"
        r"clos(?:e|es|ed|ing) (?:its |the |his |her )?(?:hand|gripper|fingers))\b",
        re.IGNORECASE,
    ),
    "release": re.compile(
        r"\b(releas\w*|lets? go|drops?|dropped|"
        r"open(?:s|ed|ing)? (?:its |the |his |her )?(?:hand|gripper|fingers))\b",
        re.IGNORECASE,
    ),
    "stall": re.compile(r"\b(stall\w*|freez\w*|frozen|hesitat\w*|paus\w*|stuck|halt\w*)\b", re.IGNORECASE),
}
"""Words that place a grasp, a release or a stall in the text."""

DEFAULT_EVENTS: dict[str, Any] = {"grasp": ["hand_close"], "release": ["hand_open"], "stall": ["stall"]}
"""Each event's proprioception anchor kinds (``dataclaw.tailor.anchors.proprio``)."""


def _event_windows(
    output: Any, ctx: dict[str, Any], events: dict[str, Any]
) -> tuple[dict[str, list[tuple[int, int]]], bool]:
    """Windows per event: from anchors of the named kinds (``ctx["anchor_windows"]``) or, for an event
    mapped to a path (``output.freeze_frame``: a stall the sample synthesises), that path's frames.
    Also whether the stream has proprioception anchors at all."""
    anchors = [a for a in ctx.get("anchor_windows") or [] if isinstance(a, dict)]
    proprio = any(a.get("source") == "proprio" for a in anchors)
    windows: dict[str, list[tuple[int, int]]] = {}
    for event, spec in events.items():
        if isinstance(spec, str):
            windows[event] = [iv for v in _values(output, ctx, spec) for iv in _intervals(v)]
        elif isinstance(spec, list):
            windows[event] = [(int(a["start"]), int(a["end"])) for a in anchors if a.get("kind") in spec]
        else:
            raise ConfigError(f"anchor_window: event '{event}' maps to {spec!r}: give anchor kinds or a path")
    return windows, proprio


def _event_near(text: str, pos: int, max_words: int) -> str | None:
    """The event word that places the frame at ``pos``: the nearest one before it in the same sentence
    ("grasps the bottle at frame 100"), else the nearest after it ("at frame 100 it grasps"), at most
    ``max_words`` words away."""
    lo = max(text.rfind(c, 0, pos) for c in ".;!?\n") + 1
    hi = min([i for i in (text.find(c, pos) for c in ".;!?\n") if i >= 0] or [len(text)])
    best: tuple[int, int, str] | None = None
    for event, pattern in EVENT_WORDS.items():
        for m in pattern.finditer(text, lo, hi):
            a, b = sorted((m.start(), pos))
            gap = len(text[a:b].split()) - 1
            key = (0 if m.start() < pos else 1, gap, event)
            if gap <= max_words and (best is None or key < best):
                best = key
    return best[2] if best else None


@register_validator("anchor_window")
def check_anchor_window(
    output: Any, ctx: dict[str, Any], fields: list[str] | None = None,
    frame_fields: dict[str, str] | None = None, items: str | None = None, text_key: str = "text",
    frame_key: str = "frame", events: dict[str, Any] | None = None, tolerance: int | None = None,
    tolerance_s: float = 0.5, max_words: int = 8,
) -> list[Failure]:  # fmt: skip
    """A grasp / release / stall placed at a frame lies inside a matching proprioception anchor
    (``hand_close`` / ``hand_open`` / ``stall``; ``events`` remaps, e.g. ``stall: output.freeze_frame``
    for a stall the sample synthesises) give or take ``tolerance`` frames (default ``tolerance_s``
    seconds). Placed by: a frame or time named within ``max_words`` words of an event word in the texts
    at ``fields``; a frame field in ``frame_fields`` (``{path: event}``); a list of steps at ``items``
    whose ``text_key`` names the event and ``frame_key`` holds the frame. A stream without
    proprioception anchors has nothing to check against and passes."""
    fps = _fps(ctx)
    tol = tolerance if tolerance is not None else (round(tolerance_s * fps) if fps else 0)
    windows, proprio = _event_windows(output, ctx, {**DEFAULT_EVENTS, **(events or {})})
    claims: list[tuple[str, str, int, str]] = []  # (where, event, frame, span)
    for where, text in _texts(output, fields or []):
        for frame, pos, span, _ in mentions(text, fps):
            event = _event_near(text, pos, max_words)
            if event:
                claims.append((where, event, frame, span))
    for path, event in (frame_fields or {}).items():
        for where, value in values_at(output, path):
            if isinstance(value, int) and not isinstance(value, bool):
                claims.append((where, event, value, f"{path} = {value}"))
    if items:
        for where, step in values_at(output, items):
            if not isinstance(step, dict) or not isinstance(step.get(text_key), str):
                continue
            frame = step.get(frame_key)
            if not isinstance(frame, int) or isinstance(frame, bool):
                continue
            found = [e for e, p in EVENT_WORDS.items() if p.search(step[text_key])]
            if len(found) == 1:
                claims.append((where, found[0], frame, step[text_key]))
    out: list[Failure] = []
    for where, event, frame, span in claims:
        spec = {**DEFAULT_EVENTS, **(events or {})}.get(event)
        found = windows.get(event, [])
        if isinstance(spec, list) and not proprio:
            continue  # no proprioception for this stream: nothing to check against
        if _inside(frame, found, tol):
            continue
        near = ", ".join(f"{lo}–{hi}" for lo, hi in found[:6]) or "none recorded"
        out.append(
            Failure(
                ValidationIssue.OUTSIDE_ANCHOR,
                f"{where}: {event} at frame {frame} lies outside every matching anchor "
                f"({near}; ±{tol} frames)",
                span=span,
            )
        )
    return out
