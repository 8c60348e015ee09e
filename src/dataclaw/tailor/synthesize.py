"""Schema-constrained synthesis (paper A.3 steps 2–3, §3.4): candidate + intent → request → response.

A request packages one candidate for one intent: the intent's prompt rendered over a *request context*
(frame ranges, sampled frames with their times, anchors as text, GUI fragments, lecture text), the
sampled frames as images when the model takes images, and the intent's schema specialised to the
candidate (e.g. the freeze frame bounded by the observation range) sent as structured output. Anchors
always go as text, so text-only models (the embedded default included) work from anchors alone.

GUI reconstruction requests shuffle the genuine fragments and mix in distractors (other trajectories of
the run first, the bundled pool last), deterministically from the run seed and the candidate id; all
fragments are rendered alike (:func:`dataclaw.tailor.mining.gui.render_fragment`), so a distractor cannot
be told by its form.

:class:`SynthesizeStage` writes one response record per (candidate, intent) to ``responses.jsonl``: the
prompt, the frames sent, the specialised schema, the raw text, the parsed output, model, router, tokens,
cost and a request hash. Responses go through the model's sqlite cache, and the stage is resumable per
record, so a resumed run never pays for an answer twice.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections import OrderedDict
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar

import yaml

from dataclaw.core.errors import ConfigError
from dataclaw.core.ids import child_id, stable_hash
from dataclaw.media.errors import MediaError
from dataclaw.media.video import sample_indices
from dataclaw.models import ModelOutputError, ModelRequestError
from dataclaw.pipeline.stage import Record, Resources, Result, Stage
from dataclaw.tailor.intents.base import Intent, TemplateError, lookup, render
from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.mining.gui import (
    BUNDLED,
    fragment_steps,
    pick_distractors,
    pool_fragment,
    render_fragment,
    shown_features,
)
from dataclaw.tailor.records import Route, Sample, Turn
from dataclaw.tailor.route import RouteConfig, Router

RESPONSES = "responses"
DISTRACTORS = Path(__file__).parent / "intents" / "data" / "gui_distractors.yaml"
GUI_ACTIONS = frozenset(
    {"click", "double_click", "right_click", "middle_click", "drag", "scroll", "typing", "shortcut"}
)


class SynthIssue(StrEnum):
    """Why a candidate could not be turned into a response."""

    BAD_RECORD = "bad_record"
    INTENT_MISMATCH = "intent_mismatch"
    """The candidate lacks what the intent needs (a range, fragments, frames)."""
    MODEL_REFUSED = "model_refused"
    """The model rejected the request itself (e.g. longer than its context)."""
    MEDIA_ERROR = "media_error"


# ------------------------------------------------------------------------------------------------
# the request context


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


def load_distractors(path: Path = DISTRACTORS) -> list[dict[str, Any]]:
    """The bundled pool of unrelated GUI fragments, as fragments (see :func:`mine_gui.pool_fragment`)."""
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


def _gui_fragments(
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
    payload = cand.get("payload") or {}
    if cand["kind"] == "lecture_segment":
        ctx["lecture"] = {
            "title": meta.get("title", ""), "slide": payload.get("slide"),
            "slide_text": payload.get("slide_text", ""), "transcript": payload.get("transcript", ""),
        }  # fmt: skip
    if cand["kind"] == "gui_task":
        ctx.update(_gui_fragments(cand, anchors, intent, distractor_pool or [], seed))
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


# ------------------------------------------------------------------------------------------------
# requests

FOOTER = (
    "Answer with one JSON object that follows the required schema. Frame indices are stream frame numbers."
)


def build_messages(intent: Intent, ctx: dict[str, Any]) -> list[dict[str, Any]]:
    system = render(intent.prompt.system, ctx, f"intent {intent.id} prompt.system")
    user = render(intent.prompt.user, ctx, f"intent {intent.id} prompt.user")
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"{user.rstrip()}\n\n{FOOTER}"},
    ]


def load_frames(stream: dict[str, Any], indices: list[int], camera: str | None, max_side: int) -> list[bytes]:
    """Decoded frames as JPEG bytes, resized to fit ``max_side`` (blocking: run in a thread)."""
    from dataclaw.media.image import encode_image, resize_for_model
    from dataclaw.tailor.streams.base import Stream
    from dataclaw.tailor.streams.source import StreamSource

    with StreamSource(Stream.model_validate(stream)) as source:
        frames = source.frames(indices, camera)
    return [encode_image(resize_for_model(f, max_side=max_side), "JPEG", 85) for f in frames]


class FrameCache:
    """Encoded frames of recent requests: several intents applied to one candidate (four to a robot
    episode's keyframes) send the same frames, which are decoded once. Thread-safe; at most ``size``
    entries (a dozen JPEGs each)."""

    def __init__(self, size: int = 32) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[Any, ...], list[bytes]] = OrderedDict()
        self._lock = threading.Lock()
        self._busy: dict[tuple[Any, ...], threading.Lock] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"size": self.size}  # locks and decoded frames stay in the process that made them

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["size"])  # type: ignore[misc]

    def get(
        self, stream: dict[str, Any], indices: list[int], camera: str | None, max_side: int
    ) -> list[bytes]:
        key = (stream["id"], camera, tuple(indices), max_side)
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
            busy = self._busy.setdefault(key, threading.Lock())
        with busy:  # one decode per key; others wait for it
            with self._lock:
                if key in self._entries:
                    return self._entries[key]
            frames = load_frames(stream, indices, camera, max_side)
            with self._lock:
                self._entries[key] = frames
                self._busy.pop(key, None)
                while len(self._entries) > self.size:
                    self._entries.popitem(last=False)
            return frames


def response_id(candidate_id: str, intent_id: str) -> str:
    return child_id(candidate_id, "resp", intent_id, label=intent_id)


def synth_item(
    candidate: dict[str, Any],
    stream: dict[str, Any],
    anchors: list[dict[str, Any]],
    intent: Intent,
    intent_choice: dict[str, Any] | None = None,
) -> Record:
    """One unit of synthesis work: a candidate, its stream and anchors, and the intent to apply."""
    return {
        "id": response_id(candidate["id"], intent.id),
        "intent": intent.id,
        "candidate": candidate,
        "stream": stream,
        "anchors": anchors,
        "intent_choice": intent_choice or {"intent": intent.id, "method": "explicit"},
    }


class SynthesizeStage(Stage):
    """Synthesis item → response record (``responses.jsonl``), or a reject with a :class:`SynthIssue`.

    Transient model failures (unreachable, timeouts, rate limits, a replay miss) raise, so the item is
    not marked done and a rerun retries it; a finished answer is cached and recorded, never re-asked.
    """

    name: ClassVar[str] = RESPONSES
    resources: ClassVar[Resources] = Resources.ASYNC

    def __init__(
        self,
        route: RouteConfig,
        *,
        catalog: IntentCatalog | None = None,
        seed: int = 0,
        distractor_pool: list[dict[str, Any]] | None = None,
        router: Router | None = None,
        send_images: bool = True,
    ) -> None:
        self.route = route
        self.catalog = catalog
        self.seed = seed
        self.pool = distractor_pool if distractor_pool is not None else load_distractors()
        self.router = router
        self.send_images = send_images
        self.frames = FrameCache()

    def setup(self) -> None:
        if self.catalog is None:
            self.catalog = IntentCatalog.builtin()
        if self.router is None:
            self.router = Router(self.route)
        self.router.warm()

    def prepare(
        self, item: Record, intent: Intent
    ) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
        """(context, specialised schema, messages) of one item."""
        ctx = build_context(
            intent, item["candidate"], item["stream"], item.get("anchors") or [], seed=self.seed,
            distractor_pool=self.pool,
        )  # fmt: skip
        return ctx, intent.schema_for(ctx), build_messages(intent, ctx)

    async def aprocess(self, item: Record) -> Result:
        if self.catalog is None or self.router is None:
            self.setup()
        assert self.catalog is not None and self.router is not None
        try:
            intent = self.catalog.get(item["intent"])
            cand = item["candidate"]
        except (KeyError, ConfigError) as exc:
            return self.reject(item, SynthIssue.BAD_RECORD, f"synthesis item unusable: {exc}")
        if not intent.applies(cand["kind"], item["stream"].get("modality")):
            return self.reject(
                item,
                SynthIssue.INTENT_MISMATCH,
                f"intent {intent.id} does not apply to a {cand['kind']} candidate",
            )
        try:
            ctx, schema, messages = self.prepare(item, intent)
        except TemplateError as exc:
            return self.reject(item, SynthIssue.INTENT_MISMATCH, str(exc))
        model, decision = self.router.route(intent)
        indices = ctx["frame_indices"]
        images: list[bytes] = []
        if self.send_images and indices and model.backend.supports_images:
            try:
                images = await asyncio.to_thread(
                    self.frames.get, item["stream"], indices, cand.get("camera"), intent.frames.max_side
                )
            except (MediaError, ConfigError, OSError, ValueError) as exc:  # one bad video is data
                return self.reject(item, SynthIssue.MEDIA_ERROR, f"frames {indices}: {exc}")
        params = {"temperature": intent.request.temperature, "max_tokens": intent.request.max_tokens}
        key = {"model": decision.model, "messages": messages, "schema": schema, "params": params}
        request_hash = stable_hash({**key, "images": bool(images)}, length=16)
        record: dict[str, Any] = {
            "id": item["id"], "candidate_id": cand["id"], "stream_id": cand["stream_id"], "intent": intent.id,
            "domain": str(intent.domain), "model": decision.model, "router": str(decision.router),
            "intent_choice": item.get("intent_choice") or {}, "request_hash": request_hash, "seed": self.seed,
            "messages": messages, "images": len(images), "frames": indices, "schema": schema, "context": ctx,
        }  # fmt: skip
        try:
            done = await model.complete(messages, schema=schema, images=images or None, **params)
        except ModelRequestError as exc:
            return self.reject(item, SynthIssue.MODEL_REFUSED, str(exc), model=decision.model)
        except ModelOutputError as exc:
            record.update(raw_text=exc.raw_text, output=_loose_json(exc.raw_text), error=str(exc))
            record.update(usage={}, cost_usd=0.0, cached=False, latency_s=0.0)
            return [record]
        record.update(
            raw_text=done.text, output=done.parsed, error=None, usage=done.usage.model_dump(),
            cost_usd=done.cost_usd, cached=done.cached, latency_s=round(done.latency_s, 4),
        )  # fmt: skip
        return [record]


def _loose_json(text: str | None) -> Any:
    """The answer decoded as JSON when it is JSON at all (schema checks happen in validation)."""
    if not text:
        return None
    s = text.strip()
    if s.startswith("```"):
        s = s.split("\n", 1)[-1].rsplit("```", 1)[0]
    try:
        value = json.loads(s)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# ------------------------------------------------------------------------------------------------
# samples


def _param(value: Any, ctx: dict[str, Any], where: str) -> Any:
    """A materialiser parameter: ``"{{ a.b }}"`` alone keeps the value's type; other strings render."""
    if isinstance(value, str):
        s = value.strip()
        if s.startswith("{{") and s.endswith("}}") and s.count("{{") == 1:
            try:
                return lookup(ctx, s[2:-2].strip())
            except KeyError:
                raise TemplateError(f"{where}: '{s}' is not in the output or context") from None
        return render(value, ctx, where)
    if isinstance(value, dict):
        return {k: _param(v, ctx, where) for k, v in value.items()}
    if isinstance(value, list):
        return [_param(v, ctx, where) for v in value]
    return value


def build_sample(response: dict[str, Any], intent: Intent, checks: list[str]) -> Sample:
    """The :class:`Sample` of a validated response: conversation turns from the intent's template and a
    materialisation plan (which clips, freeze videos and stills to write) in ``provenance``."""
    from dataclaw.tailor.validate import sample_id

    ctx = {**response["context"], "output": response["output"]}
    turns = [
        Turn(role=t.role, content=render(t.content, ctx, f"intent {intent.id} conversation"))
        for t in intent.conversation
    ]
    plan = []
    for step in intent.materialisers:
        params = _param(step.params, ctx, f"intent {intent.id} materialiser {step.name}")
        plan.append(
            {
                "materialiser": step.name,
                "stream_id": response["stream_id"],
                "camera": ctx["stream"].get("camera"),
                **params,
            }
        )
    return Sample(
        id=sample_id(response["candidate_id"], intent.id),
        intent=intent.id,
        domain=str(intent.domain),
        stream_id=response["stream_id"],
        candidate_id=response["candidate_id"],
        output=response["output"],
        conversation=turns,
        route=Route(
            model=response["model"],
            router=response["router"],
            intent_choice=response.get("intent_choice") or {},
        ),
        provenance={
            "response_id": response["id"],
            "request_hash": response["request_hash"],
            "seed": response.get("seed", 0),
            "anchor_ids": ctx.get("anchor_ids", []),
            "frames": response.get("frames", []),
            "materialize": plan,
            "usage": response.get("usage", {}),
            "cost_usd": response.get("cost_usd", 0.0),
        },
        checks=dict.fromkeys(checks, True),
    )
