"""The inventory-ledger environment: the Environment subclass the runtime serves."""

from __future__ import annotations

from typing import Any, ClassVar

from dataclaw.envcraft.runtime import Environment, Evaluator, ToolSet

from . import stock
from .evaluator import EVALUATOR
from .state import DEFAULT_STATE


class InventoryLedger(Environment):
    """A stock room: items with a quantity per SKU, changed only by adjustments that carry a reason and
    land in an append-only ledger; an adjustment that would take stock below zero is refused."""

    name: ClassVar[str] = "inventory_ledger"
    env_var_prefix: ClassVar[str] = "LEDGER"
    DEFAULT_STATE: ClassVar[dict[str, Any]] = DEFAULT_STATE
    tools: ClassVar[ToolSet] = ToolSet.from_modules(stock)
    evaluator: ClassVar[Evaluator] = EVALUATOR
