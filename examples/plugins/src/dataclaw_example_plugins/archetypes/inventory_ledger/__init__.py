"""Inventory ledger (an archetype out of tree): stock levels per SKU that change only through reasoned
adjustments, each one written to an append-only ledger; stock never goes below zero."""

from .env import InventoryLedger

ENVIRONMENT = InventoryLedger

__all__ = ["ENVIRONMENT", "InventoryLedger"]
