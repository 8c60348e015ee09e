"""Fuzzy intents (paper A.4.3): a vague request → one or more catalogue intents, with the reason.

"Make some training data from this video" names no intent. For each kind of candidate the run has,
the intents that can use it are ranked by embedding similarity between the request and each intent's
title and description (all-MiniLM-L6-v2, :mod:`dataclaw.models.embed`); the model then picks among the
top ``k`` and says why (structured output, the choice constrained to those ids). Without a model, or
when it fails, the nearest intent is taken and the reason says so. The choice is recorded in every
sample built from it (``Sample.route.intent_choice``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from dataclaw.models import ChatModel, ModelError
from dataclaw.models.embed import Embedder
from dataclaw.tailor.intents.base import Intent
from dataclaw.tailor.intents.registry import IntentCatalog


class IntentChoice(BaseModel):
    """How a fuzzy request was resolved for one kind of candidate."""

    request: str
    candidate_kind: str
    modality: str | None = None
    chosen: list[str] = Field(default_factory=list)
    reason: str = ""
    method: str = Field(description="embedding+model | embedding")
    scores: dict[str, float] = Field(default_factory=dict, description="similarity of each ranked intent")
    model: str | None = None


def _describe(intent: Intent) -> str:
    return f"{intent.title}. {intent.description}"


class FuzzyResolver:
    """Resolve vague requests against a catalogue (embedder + optional model)."""

    def __init__(
        self,
        catalog: IntentCatalog,
        embedder: Embedder | None = None,
        model: ChatModel | None = None,
        *,
        top_k: int = 3,
        max_choices: int = 2,
    ) -> None:
        self.catalog = catalog
        self.embedder = embedder or Embedder()
        self.model = model
        self.top_k = max(1, top_k)
        self.max_choices = max(1, max_choices)

    def rank(self, request: str, kind: str, modality: str | None = None) -> list[tuple[Intent, float]]:
        """Applicable intents, most similar to ``request`` first."""
        intents = self.catalog.for_candidate(kind, modality)
        if not intents:
            return []
        sims = self.embedder.similarity(request, [_describe(i) for i in intents])
        ranked = sorted(zip(intents, (float(s) for s in sims), strict=True), key=lambda p: (-p[1], p[0].id))
        return ranked

    async def aresolve(self, request: str, kind: str, modality: str | None = None) -> IntentChoice:
        """The intents to apply to ``kind`` candidates for ``request`` (empty when none applies)."""
        ranked = self.rank(request, kind, modality)[: self.top_k]
        scores = {i.id: round(s, 4) for i, s in ranked}
        base = {"request": request, "candidate_kind": kind, "modality": modality, "scores": scores}
        if not ranked:
            return IntentChoice(**base, method="embedding", reason=f"no intent applies to {kind} candidates")
        best, score = ranked[0]
        nearest = f"nearest intent by embedding similarity ({score:.2f})"
        if self.model is None or len(ranked) == 1:
            return IntentChoice(**base, chosen=[best.id], method="embedding", reason=nearest)
        try:
            done = await self.model.complete(
                self._messages(request, kind, ranked),
                schema=self._schema(ranked),
                temperature=0,
                max_tokens=200,
            )
        except ModelError as exc:
            reason = f"{nearest}; the model could not choose ({type(exc).__name__})"
            return IntentChoice(**base, chosen=[best.id], method="embedding", reason=reason)
        chosen = list(dict.fromkeys(done.parsed["intents"]))
        return IntentChoice(
            **base, chosen=chosen, method="embedding+model", reason=done.parsed["reason"], model=done.model
        )

    def _schema(self, ranked: list[tuple[Intent, float]]) -> dict[str, Any]:
        ids = [i.id for i, _ in ranked]
        return {
            "type": "object",
            "additionalProperties": False,
            "required": ["intents", "reason"],
            "properties": {
                "intents": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": min(self.max_choices, len(ids)),
                    "items": {"type": "string", "enum": ids},
                },
                "reason": {"type": "string", "minLength": 8, "maxLength": 300},
            },
        }

    def _messages(self, request: str, kind: str, ranked: list[tuple[Intent, float]]) -> list[dict[str, Any]]:
        options = "\n".join(f"- {i.id}: {_describe(i)}" for i, _ in ranked)
        return [
            {
                "role": "system",
                "content": "You are a data-construction assistant. Given a vague user request, choose which "
                "kinds of training data to build from the material, and say why in one sentence.",
            },
            {
                "role": "user",
                "content": f'Request: "{request}"\nMaterial: {kind.replace("_", " ")} candidates.\n'
                f"Options:\n{options}\n\nChoose 1 to {self.max_choices} option ids and give the reason.",
            },
        ]
