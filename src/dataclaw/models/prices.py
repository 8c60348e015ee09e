"""Token prices are configuration, not code: ``prices.yaml`` in this package, overridable by the caller."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dataclaw.core.errors import ConfigError
from dataclaw.models.types import Usage

DEFAULT_PRICES_FILE = Path(__file__).with_name("prices.yaml")


@dataclass(frozen=True)
class Price:
    """USD per one million input and output tokens."""

    input: float
    output: float

    def cost(self, usage: Usage) -> float:
        return (usage.prompt_tokens * self.input + usage.completion_tokens * self.output) / 1_000_000


def _parse_price(name: str, value: Any, origin: str) -> Price:
    if isinstance(value, Price):
        return value
    if isinstance(value, list | tuple) and len(value) == 2:
        value = {"input": value[0], "output": value[1]}
    if not isinstance(value, dict) or set(value) != {"input", "output"}:
        raise ConfigError(
            f"{origin}: price of {name!r} must be {{input: <usd/1M>, output: <usd/1M>}}, got {value!r}"
        )
    try:
        price = Price(float(value["input"]), float(value["output"]))
    except (TypeError, ValueError):
        raise ConfigError(f"{origin}: price of {name!r} must be numbers, got {value!r}") from None
    if price.input < 0 or price.output < 0:
        raise ConfigError(f"{origin}: price of {name!r} is negative")
    return price


def _load_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ConfigError(f"price file {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"price file {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"price file {path} must map model names to prices")
    return data


class PriceTable:
    """Model name → :class:`Price`. Lookups match exact names first, then dated snapshots of a listed
    name (``gpt-4o-2024-08-06``, ``gpt-4o-latest``), so ``gpt-4o`` never prices ``gpt-4o-mini``."""

    def __init__(self, prices: dict[str, Price]) -> None:
        self.prices = dict(prices)

    @classmethod
    def load(
        cls, overrides: PriceTable | dict[str, Any] | str | os.PathLike[str] | None = None
    ) -> PriceTable:
        """Bundled prices, updated with ``overrides`` (a table, a mapping, or a YAML file path)."""
        if isinstance(overrides, PriceTable):
            return overrides
        table = {
            k: _parse_price(k, v, str(DEFAULT_PRICES_FILE))
            for k, v in _load_yaml(DEFAULT_PRICES_FILE).items()
        }
        if overrides is None:
            return cls(table)
        if isinstance(overrides, str | os.PathLike):
            origin, items = str(overrides), _load_yaml(Path(overrides))
        else:
            origin, items = "prices", overrides
        table.update({k: _parse_price(k, v, origin) for k, v in items.items()})
        return cls(table)

    def lookup(self, model_name: str) -> Price | None:
        """The price of ``model_name`` or None when it has none (then it costs 0 and is reported unpriced)."""
        if model_name in self.prices:
            return self.prices[model_name]
        base, sep, suffix = model_name.partition("-")
        while sep:
            if (suffix[:1].isdigit() or suffix == "latest") and base in self.prices:
                return self.prices[base]
            head, sep, suffix = suffix.partition("-")
            base = f"{base}-{head}"
        return None
