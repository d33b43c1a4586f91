"""Pricing table -> USD for a usage record. Prices are per million tokens, from config.json.

A model without a price is an error at start-up (`PricingError`), never a silent $0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from eval.errors import SkillMutatorError

PRICE_KEYS = ("input", "output", "cacheWrite", "cacheRead")


class PricingError(SkillMutatorError, ValueError):
    """A model has no (or a malformed) price in config.json 'pricing'."""


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cache_write: float
    cache_read: float


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0


def parse_pricing(table: Mapping[str, object], where: str = "config.json pricing") -> dict[str, Price]:
    prices: dict[str, Price] = {}
    for model, entry in table.items():
        if not isinstance(entry, Mapping):
            raise PricingError(f"{where}.{model}: expected an object with {', '.join(PRICE_KEYS)}")
        values = []
        for key in PRICE_KEYS:
            value = entry.get(key)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value < math.inf:
                raise PricingError(f"{where}.{model}.{key}: expected a non-negative number of USD per "
                                   f"million tokens, got {value!r}")
            values.append(float(value))
        prices[model] = Price(*values)
    return prices


def price_for(prices: Mapping[str, Price], model: str) -> Price:
    """Exact match first, then the longest priced name that prefixes the model id (dated snapshots)."""
    if model in prices:
        return prices[model]
    candidates = [name for name in prices if model.startswith(name)]
    if not candidates:
        raise PricingError(f"model {model!r} has no price; add it to config.json 'pricing' as "
                           f'"{model}": {{"input": ..., "output": ..., "cacheWrite": ..., "cacheRead": ...}}')
    return prices[max(candidates, key=len)]


def usd(price: Price, usage: Usage) -> float:
    return (usage.input_tokens * price.input + usage.output_tokens * price.output
            + usage.cache_creation_input_tokens * price.cache_write
            + usage.cache_read_input_tokens * price.cache_read) / 1_000_000

