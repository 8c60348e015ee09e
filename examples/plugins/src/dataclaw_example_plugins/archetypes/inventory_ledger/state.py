"""The repository layer: the stock room's items from ``data/items.json`` and the session template."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"
REASONS = ("received", "sold", "damaged", "count_correction")


def _default_state() -> dict[str, Any]:
    items = json.loads((DATA / "items.json").read_text(encoding="utf-8"))
    return {"items": {i["sku"]: i for i in items}, "ledger": []}


# The template every session is deep-copied from (never mutated: the runtime copies it).
DEFAULT_STATE: dict[str, Any] = _default_state()
