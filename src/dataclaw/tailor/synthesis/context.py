"""The request context (paper A.3 step 2): everything a prompt, the schema bounds and the validators may
refer to, built from one candidate, its stream and anchors for one intent.

Frame ranges, the frames to show with their times (the intent's frame plan), anchors as text (so text-only
models, the embedded default included, work from anchors alone), GUI events and fragments, lecture text,
and the evidence text grounding checks compare an answer against. The context is stored in the response
record, so validation needs nothing else and can be audited later.
"""

from __future__ import annotations

from typing import Any

from dataclaw.media.video import sample_indices
from dataclaw.tailor.intents.base import Intent
from dataclaw.tailor.synthesis.fragments import gui_fragments

GUI_ACTIONS = frozenset(
    {"click", "double_click", "right_click", "middle_click", "drag", "scroll", "typing", "shortcut"}
)


def _anchor_text(a: dict[str, Any]) -> str:
    """A short human-readable summary of an anchor's payload."""
    p = a.get("payload") or {}
    parts: list[str] = []
    target = p.get("target")
    if isinstance(target, dict) and target.get("title"):
        parts.append(f"'{target['title']}'")
    for key in ("text", "message", "description", "title", "combo", "hand", "app", "url", "page"):
        value = p.get(key)
        if value not in (None, "", []) and not isinstance(value, dict | list):
            parts.append(f"{key}={value}" if key in ("hand", "page", "combo") else str(value))
    if "nx" in p and "ny" in p:
        parts.append(f"at ({p['nx']:.3f}, {p['ny']:.3f})")
    if "frame" in p:
        parts.append(f"frames {p['frame']}-{p.get('frame_end', p['frame'])}")
    if "energy" in p:
        parts.append(f"energy {p['energy']}")
    return " ".join(parts)[:200]


def _anchor_line(a: dict[str, Any]) -> str:
    span = f"{a['t']:.2f}" + (f"-{a['t_end']:.2f}" if a.get("t_end") is not None else "")
    return f"{span} s {a['kind']}: {_anchor_text(a)}".rstrip(": ")


WINDOW_KINDS = frozenset({"hand_close", "hand_open", "stall", "segment"})
"""Proprioception anchor kinds kept in the context as frame windows (the ``anchor_window`` validator)."""


def _window(a: dict[str, Any], fps: float | None) -> dict[str, Any]:
    """An anchor as ``{kind, source, start, end}`` in frames (its exact frames when it has them)."""
    p = a.get("payload") or {}
    t_end = a.get("t_end") if a.get("t_end") is not None else a["t"]
    start = p.get("frame", round(a["t"] * fps) if fps else 0)
    end = p.get("frame_end", round(t_end * fps) if fps else start)
    return {"kind": a["kind"], "source": a.get("source"), "start": int(start), "end": int(end)}


FACT_KEYS = ("window", "text", "message", "caption", "description", "title", "app", "url")
"""Payload keys whose text is a fact a claim can be checked against (window titles, OCR, typing …)."""
MAX_FACTS = 300


def _facts(anchors: list[dict[str, Any]], span: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Text-bearing anchors that are not GUI actions (those are ``events``) as ``{kind, source, t, text}``
    for the ``anchor_agreement`` validator: window titles, OCR'd screen text inside the candidate's time
    span, typing, captions; each text once, at most :data:`MAX_FACTS`."""
    lo, hi = (span or {}).get("t_start"), (span or {}).get("t_end")
    seen: set[tuple[str, str]] = set()
    out: list[dict[str, Any]] = []
    for a in anchors:
        if a["kind"] in GUI_ACTIONS or a["kind"] in WINDOW_KINDS:
            continue
        if a["kind"] == "ocr_text" and lo is not None and hi is not None and not lo - 1 <= a["t"] <= hi + 1:
            continue
        p = a.get("payload") or {}
        text = next((str(p[k]) for k in FACT_KEYS if isinstance(p.get(k), str) and p[k].strip()), "")
        if text and (a["kind"], text) not in seen and len(out) < MAX_FACTS:
            seen.add((a["kind"], text))
            out.append({"kind": a["kind"], "source": a.get("source"), "t": a["t"], "text": text[:300]})
    return out


def _event(i: int, a: dict[str, Any]) -> dict[str, Any]:
    p = a.get("payload") or {}
    target = p.get("target")
    title = target.get("title") if isinstance(target, dict) else target
    text = p.get("text") or p.get("message") or p.get("combo") or ""
    return {
        "i": i, "kind": a["kind"], "t": a["t"], "x": p.get("nx"), "y": p.get("ny"),
        "target": title or "", "text": str(text), "anchor_id": a["id"],
    }  # fmt: skip


def _event_line(e: dict[str, Any]) -> str:
    where = f" at ({e['x']:.3f}, {e['y']:.3f})" if e["x"] is not None and e["y"] is not None else ""
    what = f" '{e['target']}'" if e["target"] else ""
    text = f" text={e['text']!r}" if e["text"] else ""
    return f"[{e['i']}] {e['t']:.2f} s {e['kind']}{what}{where}{text}"


def plan_frames(
    intent: Intent, cand: dict[str, Any], stream: dict[str, Any], events: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The frames to show: ``{"index", "t", "role"}`` from the intent's frame plan, at most ``max_frames``."""
    fps = cand.get("fps") or stream.get("fps")
    picked: list[tuple[int, str]] = []
    for src in intent.frames.sources:
        if src in ("observation_frames", "future_frames", "frames"):
            role = {"observation_frames": "observation", "future_frames": "future", "frames": "keyframe"}[src]
            picked.extend((int(i), role) for i in cand.get(src) or [])
        elif src == "fragments" and fps:
            n = int(stream.get("frame_count") or 0)
            picked.extend((min(n - 1, round(e["t"] * fps)), f"event {e['i']}") for e in events)
        elif src == "slide":
            page = (cand.get("payload") or {}).get("slide")
            if isinstance(page, int) and page >= 1:
                picked.append((page - 1, f"slide {page}"))
    picked = list(dict.fromkeys(picked))
    picked = [picked[i] for i in sample_indices(len(picked), intent.frames.max_frames)]
    return [{"index": i, "t": round(i / fps, 3) if fps else None, "role": role} for i, role in picked]


def build_context(
    intent: Intent,
    cand: dict[str, Any],
    stream: dict[str, Any],
    anchors: list[dict[str, Any]],
    *,
    seed: int = 0,
    distractor_pool: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Everything the prompt, the schema bounds and the validators may refer to (JSON-ready)."""
    meta = stream.get("metadata") or {}
    task = meta.get("task") or meta.get("instruction") or (cand.get("payload") or {}).get("instruction") or ""
    anchors = sorted(anchors, key=lambda a: (a["t"], a["kind"]))
    events = [_event(i, a) for i, a in enumerate(a for a in anchors if a["kind"] in GUI_ACTIONS)]
    frames = plan_frames(intent, cand, stream, events)
    n = int(cand.get("frame_count") or stream.get("frame_count") or 0)
    shown = [a for a in anchors if a["kind"] not in ("ocr_text", "motion")] or anchors
    ctx: dict[str, Any] = {
        "intent": {"id": intent.id, "title": intent.title, "domain": str(intent.domain)},
        "stream": {
            "id": stream["id"], "modality": stream.get("modality"), "task": task, "fps": stream.get("fps"),
            "frame_count": n, "duration": stream.get("duration"), "camera": cand.get("camera"),
        },
        "candidate": {"id": cand["id"], "kind": cand["kind"], "why": cand.get("why", "")},
        "task": task or "(no instruction recorded)",
        "frames": frames,
        "frame_indices": [f["index"] for f in frames],
        "frame_lines": [
            f"frame {f['index']}" + (f" ({f['t']:.2f} s)" if f["t"] is not None else "") + f", {f['role']}"
            for f in frames
        ],
        "anchor_lines": [_anchor_line(a) for a in shown[: intent.request.max_anchors]] or ["(none)"],
        "anchor_ids": [a["id"] for a in anchors],
        "anchor_windows": [_window(a, stream.get("fps")) for a in anchors if a["kind"] in WINDOW_KINDS],
        "events": events,
        "event_lines": [_event_line(e) for e in events] or ["(none)"],
        "event_kinds": sorted({e["kind"] for e in events}) or ["click"],
        "n_events": len(events),
        "max_event": max(len(events) - 1, 0),
    }  # fmt: skip
    for name, key in (("obs", "observation"), ("fut", "future"), ("span", "span")):
        if cand.get(key):
            ctx[name] = dict(cand[key])
    for name in ("observation_frames", "future_frames"):
        ctx[name] = list(cand.get(name) or [])
    ctx["facts"] = _facts(anchors, ctx.get("span"))
    payload = cand.get("payload") or {}
    if cand["kind"] == "lecture_segment":
        ctx["lecture"] = {
            "title": meta.get("title", ""), "slide": payload.get("slide"),
            "slide_text": payload.get("slide_text", ""), "transcript": payload.get("transcript", ""),
        }  # fmt: skip
    if cand["kind"] == "gui_task":
        ctx.update(gui_fragments(cand, anchors, intent, distractor_pool or [], seed))
    evidence = [
        task,
        *(_anchor_text(a) for a in anchors),
        *(str(v) for v in (ctx.get("lecture") or {}).values()),
    ]
    genuine = [f for f in ctx.get("fragments", []) if f.get("source") is None]
    evidence += [f["description"] for f in genuine]
    evidence += [st["instruction"] for f in genuine for st in f["steps"] if st.get("instruction")]
    ctx["evidence_text"] = " ".join(e for e in evidence if e)
    return ctx
