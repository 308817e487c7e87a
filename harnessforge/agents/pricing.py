"""List prices of hosted models, so runs can stop at a cost budget and report what they spent.

USD per million tokens, as published by Anthropic and OpenAI (update when they move).
Models not listed (self-hosted vLLM/SGLang models, newer names) cost 0.0 and are *unpriced*: the run
warns, its summaries say `cost_unknown`, and only the token budget can stop it. Add them to `PRICES`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..models.trajectory import Usage


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cache_read: float  # a prompt token served from the cache
    cache_write: float | None = None  # a prompt token written to the cache (None: billed as input)


def _anthropic(inp: float, out: float) -> Price:
    return Price(inp, out, cache_read=inp * 0.1, cache_write=inp * 1.25)


PRICES: dict[str, Price] = {
    "claude-opus-4-6": _anthropic(5, 25),  # 4.6 models: the same list prices as 4.5 at release
    "claude-sonnet-4-6": _anthropic(3, 15),
    "claude-opus-4-5": _anthropic(5, 25),
    "claude-opus-4-1": _anthropic(15, 75),
    "claude-opus-4": _anthropic(15, 75),
    "claude-sonnet-4-5": _anthropic(3, 15),
    "claude-sonnet-4": _anthropic(3, 15),
    "claude-3-7-sonnet": _anthropic(3, 15),
    "claude-haiku-4-5": _anthropic(1, 5),
    "claude-3-5-haiku": _anthropic(0.8, 4),
    "gpt-5": Price(1.25, 10, 0.125),
    "gpt-5-mini": Price(0.25, 2, 0.025),
    "gpt-4.1": Price(2, 8, 0.5),
    "gpt-4.1-mini": Price(0.4, 1.6, 0.1),
    "gpt-4o": Price(2.5, 10, 1.25),
    "gpt-4o-mini": Price(0.15, 0.6, 0.075),
    "o3": Price(2, 8, 0.5),
    "o4-mini": Price(1.1, 4.4, 0.275),
}

# A snapshot date ("-20251001", "-2025-04-14") or "-latest" names the same priced model.
_SNAPSHOT = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


def price_of(model: str) -> Price | None:
    """The price of `model`, ignoring a provider prefix (`anthropic/...`) and a snapshot suffix."""
    name = _SNAPSHOT.sub("", model.rsplit("/", 1)[-1].lower())
    return PRICES.get(name)


def priced(model: str) -> bool:
    """Whether `model`'s calls have a cost here (False: they count as $0, so cost budgets cannot stop them)."""
    return price_of(model) is not None


def unpriced_warning(model: str) -> str:
    return (
        f"warning: model {model!r} has no price in harnessforge/agents/pricing.py: its calls count as $0, so "
        "max_cost_per_milestone_usd and max_cost_per_run_usd cannot stop this run (max_tokens_per_milestone "
        "still does), and summaries say cost_unknown"
    )


def cost_usd(model: str, usage: Usage, cache_write: int = 0) -> float:
    """Cost of one call. `usage.input` counts all prompt tokens: `cached` and `cache_write` among them."""
    price = price_of(model)
    if price is None:
        return 0.0
    fresh = max(usage.input - usage.cached - cache_write, 0)
    write = price.input if price.cache_write is None else price.cache_write
    total = fresh * price.input + usage.cached * price.cache_read + cache_write * write + usage.output * price.output
    return round(total / 1_000_000, 8)
