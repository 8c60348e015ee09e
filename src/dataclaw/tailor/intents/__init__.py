"""Intents: what training sample to build from a candidate (data files in ``catalog/``) and how fuzzy
requests resolve to them. See :mod:`.base`, :mod:`.registry` and :mod:`.fuzzy`."""

from dataclaw.tailor.intents.base import Domain, Intent, load_intent, render, specialise
from dataclaw.tailor.intents.registry import IntentCatalog

__all__ = ["Domain", "Intent", "IntentCatalog", "load_intent", "render", "specialise"]
