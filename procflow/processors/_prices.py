"""The bundled model price table ``CostGuardProcessor`` multiplies usage by (US dollars per 1M tokens).

List prices as published by the providers for standard (non-batch) calls, checked in 2025; they change,
so pass your own with ``CostGuardProcessor(prices={...})`` — your entries take precedence. Dated model
ids (``gpt-4o-2024-08-06``, ``claude-sonnet-4-20250514``) match the longest listed prefix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from procflow.errors import ConfigurationError

__all__ = ["DEFAULT_MODEL_PRICES", "ModelPrice", "find_price"]


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """Dollars per million tokens: input, output and (when discounted) cached input.

    Reasoning tokens are billed as output tokens (they are part of ``output_tokens`` in procflow's
    usage); cached input tokens are part of ``input_tokens`` and billed at ``cached_input`` instead.
    """

    input: float
    output: float
    cached_input: float | None = None

    def __post_init__(self) -> None:
        for name in ("input", "output", "cached_input"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int | float) or value < 0):
                raise ConfigurationError(f"ModelPrice.{name} must be a non-negative number, got {value!r}")

    def cost(self, *, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0) -> float:
        """Dollars for this usage."""
        cached = min(max(cached_input_tokens, 0), max(input_tokens, 0))
        cached_rate = self.input if self.cached_input is None else self.cached_input
        fresh = max(input_tokens, 0) - cached
        return (fresh * self.input + cached * cached_rate + max(output_tokens, 0) * self.output) / 1e6


_P = ModelPrice

DEFAULT_MODEL_PRICES: Mapping[str, ModelPrice] = MappingProxyType(
    {
        # OpenAI
        "gpt-5": _P(1.25, 10.0, 0.125),
        "gpt-5-mini": _P(0.25, 2.0, 0.025),
        "gpt-5-nano": _P(0.05, 0.40, 0.005),
        "gpt-4.1": _P(2.0, 8.0, 0.50),
        "gpt-4.1-mini": _P(0.40, 1.60, 0.10),
        "gpt-4.1-nano": _P(0.10, 0.40, 0.025),
        "gpt-4o": _P(2.50, 10.0, 1.25),
        "gpt-4o-mini": _P(0.15, 0.60, 0.075),
        "o3": _P(2.0, 8.0, 0.50),
        "o3-mini": _P(1.10, 4.40, 0.55),
        "o4-mini": _P(1.10, 4.40, 0.275),
        # Anthropic
        "claude-opus-4-1": _P(15.0, 75.0, 1.50),
        "claude-opus-4": _P(15.0, 75.0, 1.50),
        "claude-sonnet-4-5": _P(3.0, 15.0, 0.30),
        "claude-sonnet-4": _P(3.0, 15.0, 0.30),
        "claude-3-7-sonnet": _P(3.0, 15.0, 0.30),
        "claude-3-5-sonnet": _P(3.0, 15.0, 0.30),
        "claude-haiku-4-5": _P(1.0, 5.0, 0.10),
        "claude-3-5-haiku": _P(0.80, 4.0, 0.08),
        "claude-3-haiku": _P(0.25, 1.25, 0.03),
    }
)
"""Bundled prices by model id (provider prefixes such as ``openai/`` are ignored when matching)."""


def find_price(table: Mapping[str, ModelPrice], *, provider: str | None, model_id: str) -> ModelPrice | None:
    """The price for a model: ``provider/model_id`` or ``model_id`` exactly, else the longest prefix."""
    if provider:
        exact = table.get(f"{provider}/{model_id}")
        if exact is not None:
            return exact
    exact = table.get(model_id)
    if exact is not None:
        return exact
    best: str | None = None
    for name in table:
        bare = name.rsplit("/", 1)[-1]
        if "/" in name and provider and not name.startswith(f"{provider}/"):
            continue
        fits = model_id.startswith(bare) and model_id[len(bare) : len(bare) + 1] in ("-", "@", ":", ".")
        if fits and (best is None or len(bare) > len(best.rsplit("/", 1)[-1])):
            best = name
    return None if best is None else table[best]
