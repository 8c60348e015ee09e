"""A model that must see, sees (issue 27): an intent declares what its model must perceive
(:attr:`~dataclaw.tailor.intents.base.Intent.perceive`), and a request whose model cannot see the frames
or images a visual intent needs is refused — the whole run before it starts (:func:`refuse_blind`), one
request when it turns out on the way (:class:`~dataclaw.tailor.synthesis.stage.SynthesizeStage`) — unless
the user allows text-only evidence, in which case each such answer is marked ``evidence: text_only`` and
every sample and export keeps the mark.

Whether a model takes images is what its endpoint's probe found (``models check``: two one-colour images
whose colours a model that sees names; the embedded model is text-only without asking); a response
records what its request actually carried (``images``, and ``sent``: images, the frames they are, bytes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dataclaw.core.errors import ConfigError
from dataclaw.tailor.intents.base import Intent

TEXT_ONLY = "text_only"
"""The evidence mark of an answer to a visual intent made without seeing any frame or image."""
PERCEIVED = "perceived"
"""The evidence mark of an answer whose model was sent every kind of input its intent must perceive."""
OPT_IN = "--text-only-evidence"


class BlindModelError(ConfigError):
    """A visual intent is routed to a model that cannot see (or images are off), and text-only evidence
    was not allowed: the run is refused before it starts."""


def sent_record(intent: Intent, indices: list[int], images: list[bytes], sent: int) -> dict[str, Any]:
    """What a request actually carried — ``images`` (count), ``sent`` (``images``, the ``frames`` they are,
    ``bytes``) — and the ``evidence`` mark: ``text_only`` when the intent must see and nothing visual was
    sent (the model was text-only, images were off, or they were dropped), else ``perceived``."""
    sent = max(0, min(sent, len(images)))
    evidence = TEXT_ONLY if intent.needs_vision and sent == 0 else PERCEIVED
    return {
        "images": sent,
        "sent": {"images": sent, "frames": indices[:sent], "bytes": sum(len(b) for b in images[:sent])},
        "perceive": [str(p) for p in intent.perceive],
        "evidence": evidence,
    }


def _blind_why(model: str, send_images: bool, sees: bool, detail: str = "") -> str:
    if not send_images:
        return "images are off (--send-images never / --no-images)"
    if not sees:
        return f"model {model} is text-only" + (f" ({detail})" if detail else " (it takes no images)")
    return "the candidate has no frame to show"


def blind_reason(intent: Intent, model: str, send_images: bool, sees: bool) -> str:
    """One line: why a visual intent's request would reach its model without anything to see."""
    return (
        f"intent {intent.id} must see {'/'.join(intent.seen)}, but {_blind_why(model, send_images, sees)}; "
        f"use a model that takes images, or allow text-only evidence ({OPT_IN}: samples marked "
        "evidence: text_only)"
    )


def vision_of(capabilities: Mapping[str, Any]) -> dict[str, bool]:
    """Model string → whether it takes images, from the probed capabilities of each (``Capabilities``
    or its JSON dump)."""
    out = {}
    for spec, caps in capabilities.items():
        value = caps.get("images") if isinstance(caps, Mapping) else getattr(caps, "images", None)
        if value is not None:
            out[spec] = bool(value)
    return out


def _detail(caps: Any) -> str:
    detail = (caps.get("detail") if isinstance(caps, Mapping) else getattr(caps, "detail", None)) or {}
    text = str(detail.get("images") or detail.get("chat") or "")
    return "" if text.startswith("no server") else text[:160]


def refuse_blind(
    routed: Iterable[tuple[Intent, str]],
    capabilities: Mapping[str, Any],
    *,
    send_images: bool,
    text_only_evidence: bool,
) -> list[tuple[str, str]]:
    """The (intent, model) pairs whose model cannot see what the intent must perceive. Raises
    :class:`BlindModelError` (one line naming them, why, and the opt-in) unless ``text_only_evidence``,
    in which case the pairs are returned: their samples will be marked ``evidence: text_only``."""
    vision = vision_of(capabilities)
    blind: dict[tuple[str, str], str] = {}
    seen: dict[str, list[str]] = {}
    for intent, model in routed:
        sees = send_images and vision.get(model, True)
        if intent.needs_vision and not sees:
            caps = capabilities.get(model)
            blind[(intent.id, model)] = _blind_why(model, send_images, False, _detail(caps) if caps else "")
            seen[intent.id] = [str(p) for p in intent.seen]
    if blind and not text_only_evidence:
        by_why: dict[str, list[str]] = {}
        for (intent_id, _), why in sorted(blind.items()):
            by_why.setdefault(why, []).append(intent_id)
        parts = []
        for why, ids in by_why.items():
            kinds = "/".join(dict.fromkeys(k for i in ids for k in seen[i]))
            parts.append(f"intent{'s' if len(ids) > 1 else ''} {', '.join(ids)} must see {kinds}, but {why}")
        raise BlindModelError(
            "; ".join(parts) + f": use a model that takes images, or pass {OPT_IN} to make these samples "
            "from text alone (each marked evidence: text_only)"
        )
    return sorted(blind)
