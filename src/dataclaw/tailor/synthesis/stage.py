"""Schema-constrained synthesis (paper A.3 steps 2–3, §3.4): candidate + intent → request → response.

A request packages one candidate for one intent: the intent's prompt rendered over a *request context*
(frame ranges, sampled frames with their times, anchors as text, GUI fragments, lecture text), the
sampled frames as images when the model takes images, and the intent's schema specialised to the
candidate (e.g. the freeze frame bounded by the observation range) sent as structured output. Anchors
always go as text, so text-only models (the embedded default included) work from anchors alone.

GUI reconstruction requests shuffle the genuine fragments and mix in distractors (other trajectories of
the run first, the bundled pool last), deterministically from the run seed and the candidate id; all
fragments are rendered alike (:func:`dataclaw.tailor.synthesis.fragments.render_fragment`), so a
distractor cannot be told by its form.

:class:`SynthesizeStage` writes one response record per (candidate, intent) to ``responses.jsonl``: the
prompt, the frames sent, the specialised schema, the raw text, the parsed output, model, router, tokens,
cost and a request hash. Responses go through the model's sqlite cache, and the stage is resumable per
record, so a resumed run never pays for an answer twice.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from enum import StrEnum
from typing import Any, ClassVar

from dataclaw.core.errors import ConfigError
from dataclaw.core.ids import stable_hash
from dataclaw.media.errors import MediaError
from dataclaw.models import ModelRequestError
from dataclaw.pipeline.stage import Record, Resources, Result, Stage
from dataclaw.tailor.intents.base import Intent, TemplateError
from dataclaw.tailor.intents.prompt import build_messages
from dataclaw.tailor.intents.registry import IntentCatalog
from dataclaw.tailor.records import response_id
from dataclaw.tailor.synthesis.context import build_context
from dataclaw.tailor.synthesis.fragments import load_distractors
from dataclaw.tailor.synthesis.perception import TEXT_ONLY, blind_reason, sent_record
from dataclaw.tailor.synthesis.route import RouteConfig, Router
from dataclaw.tailor.synthesis.select import Selection, generate
from dataclaw.tailor.validation.stage import check_answer, check_version

RESPONSES = "responses"


class SynthIssue(StrEnum):
    """Why a candidate could not be turned into a response."""

    BAD_RECORD = "bad_record"
    INTENT_MISMATCH = "intent_mismatch"
    """The candidate lacks what the intent needs (a range, fragments, frames)."""
    MODEL_REFUSED = "model_refused"
    """The model rejected the request itself (e.g. longer than its context)."""
    MEDIA_ERROR = "media_error"
    NOT_PERCEIVED = "not_perceived"
    """The intent's model must see frames or images, but none reached it (a text-only model, images off,
    no frame to show, or images dropped mid-run) and text-only evidence was not allowed."""


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
        text_only_evidence: bool = False,
        vision: dict[str, bool] | None = None,
        selection: Selection | None = None,
    ) -> None:
        self.route = route
        self.catalog = catalog
        self.seed = seed
        self.pool = distractor_pool if distractor_pool is not None else load_distractors()
        self.router = router
        self.send_images = send_images
        self.text_only_evidence = text_only_evidence
        """Answers to visual intents made without images are kept (marked ``evidence: text_only``)
        instead of rejected as ``not_perceived``."""
        self.vision = dict(vision or {})
        """Model string → whether it takes images, as probed before the run (else the backend's own)."""
        self.frames = FrameCache()
        self.selection = selection or Selection()
        """Generations per request, re-asks and the sampling temperature (:mod:`.select`)."""

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
        sees = self.send_images and self.vision.get(decision.model, True) and model.backend.supports_images
        if intent.needs_vision and not self.text_only_evidence and not (sees and indices):
            why = blind_reason(intent, decision.model, self.send_images, sees)
            return self.reject(item, SynthIssue.NOT_PERCEIVED, why, model=decision.model)
        if sees and indices:
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
            "messages": messages, "frames": indices, "schema": schema, "context": ctx,
        }  # fmt: skip

        async def check(output: Any) -> list[Any]:  # the validate stage's own checks (~1-2 ms)
            return check_answer(intent, output, ctx, schema)

        try:  # N generations, a re-ask when none passes, the best kept (select.py)
            outcome = await generate(
                model, messages, schema, images, params, check, ctx, self.selection, self.seed
            )
        except ModelRequestError as exc:
            return self.reject(item, SynthIssue.MODEL_REFUSED, str(exc), model=decision.model)
        record.update(sent_record(intent, indices, images, outcome.attempt.images_sent))
        record.update(outcome.record())
        failures = [f.to_dict() for f in outcome.chosen.failures]  # reused by the validate stage
        record["checks"] = {"version": check_version(intent, schema), "failures": failures}
        return self._perceived(item, intent, record)

    def _perceived(self, item: Record, intent: Intent, record: dict[str, Any]) -> Result:
        """``record``, or a ``not_perceived`` reject when a visual intent's images were dropped on the way
        (a server that refused them mid-run) and text-only evidence is not allowed. The answer stays in
        the response cache: a rerun with ``--text-only-evidence`` keeps it without paying again."""
        if record["evidence"] == TEXT_ONLY and not self.text_only_evidence:
            why = (
                f"intent {intent.id} must see {'/'.join(intent.seen)}, but model {record['model']} dropped "
                f"the {len(record['frames'])} frames it was given (it refused images) and answered from text "
                "only; use a model that takes images, or allow text-only evidence (--text-only-evidence)"
            )
            return self.reject(item, SynthIssue.NOT_PERCEIVED, why, model=record["model"])
        return [record]
