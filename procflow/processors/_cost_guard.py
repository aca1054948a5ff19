"""``CostGuardProcessor``: a spend limit over a time window, from provider usage × a price table."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from procflow._logging import log
from procflow._messages._tool_json import tool_args_text
from procflow._messages.request_context import JUDGE_USAGE_KEY
from procflow._messages.results import Usage
from procflow.cache import CounterStore, InMemoryCounterStore
from procflow.errors import CacheError, ConfigurationError
from procflow.processors._args import ProcessLLMRequestArgs, ProcessLLMResponseArgs, ProcessorArgs
from procflow.processors._base import ProcessorViolation, ViolationCallback, notify_violation
from procflow.processors._prices import DEFAULT_MODEL_PRICES, ModelPrice, find_price
from procflow.processors._prompt_budget import PromptCosts
from procflow.processors._tokens import TiktokenCounter

__all__ = ["CostGuardProcessor", "CostScope", "CostStrategy", "parse_window"]

CostScope = Literal["run", "resource", "thread"]
"""Whose spend is limited: one ``generate()``/``stream()`` call, a resource (user), or a thread."""

CostStrategy = Literal["block", "warn"]
"""``block`` stops model calls once the limit is reached; ``warn`` only reports it."""

_NANO = 1_000_000_000
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_WINDOW = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_MAX_WINDOW = 366 * 86400
_DELTAS = frozenset({"text-delta", "reasoning-delta"})
_ESTIMATE = TiktokenCounter()  # loads o200k_base on the first estimate only


def parse_window(window: str | float) -> float:
    """Seconds in a window given as ``"90m"``, ``"1h"``, ``"30d"``, ``"2w"`` or a number of seconds."""
    if isinstance(window, int | float) and not isinstance(window, bool):
        seconds = float(window)
    else:
        match = _WINDOW.match(str(window))
        if match is None:
            raise ConfigurationError(
                f"window must look like '1h', '30d' or '365d' (units s, m, h, d, w), got {window!r}"
            )
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if not 0 < seconds <= _MAX_WINDOW:
        raise ConfigurationError(f"window must be between 1s and 366d, got {window!r}")
    return seconds


class CostGuardProcessor:
    """Limits what model calls cost, per run, resource or thread, over a sliding time window.

    After every model step the provider's usage is priced (``prices`` over the bundled
    :data:`DEFAULT_MODEL_PRICES`) and added to a counter in ``store``; before every model call the
    window's spend is read, and with ``strategy="block"`` a spend at or over ``max_cost`` stops the call
    with a tripwire. ``on_violation`` fires at most once per request for the soft threshold
    (``warn_at_percent``) and once for the hard one, with the spend in ``detail``. A model missing
    from the table is logged once (``cost_guard_unknown_model``) and its calls are not counted. A call
    a guard blocked counts too; one cut before the model reported its usage is priced from an
    estimate (``o200k_base`` counts of the prompt sent and of the output that passed). The
    judge calls of LLM-backed guards (recorded under ``JUDGE_USAGE_KEY`` in the request context) are
    priced and counted too, at the next model call or step end.

    Args:
        max_cost: The limit in dollars.
        scope: ``"run"`` (one call; no store needed), ``"resource"`` or ``"thread"`` (read from the
            request context; a request without that id is limited as a run, with a warning).
        window: How far back spend counts: ``"1h"`` … ``"365d"``.
        strategy: ``"block"`` or ``"warn"``.
        warn_at_percent: The soft threshold in percent of ``max_cost`` (``None``: none).
        store: Where spend accumulates (default: in this process); a
            :class:`~procflow.cache.RedisCounterStore` shares one budget between app instances.
        prices: Extra or replacement prices by model id (``"my-model"`` or ``"provider/my-model"``).
        id: The processor id (default ``"cost-guard"``).
    """

    def __init__(
        self,
        *,
        max_cost: float,
        scope: CostScope = "run",
        window: str | float = "30d",
        strategy: CostStrategy = "block",
        warn_at_percent: float | None = 80.0,
        store: CounterStore | None = None,
        prices: Mapping[str, ModelPrice] | None = None,
        id: str = "cost-guard",
    ) -> None:
        if isinstance(max_cost, bool) or not isinstance(max_cost, int | float) or max_cost <= 0:
            raise ConfigurationError(f"max_cost must be a positive number of dollars, got {max_cost!r}")
        if scope not in ("run", "resource", "thread"):
            raise ConfigurationError(f"scope must be 'run', 'resource' or 'thread', got {scope!r}")
        if strategy not in ("block", "warn"):
            raise ConfigurationError(f"strategy must be 'block' or 'warn', got {strategy!r}")
        if warn_at_percent is not None and not 0 < warn_at_percent < 100:
            raise ConfigurationError(f"warn_at_percent must be between 0 and 100, got {warn_at_percent!r}")
        self.id = id
        self.max_cost = float(max_cost)
        self.scope: CostScope = scope
        self.window = window if isinstance(window, str) else f"{window:g}s"
        self.window_seconds = parse_window(window)
        self.strategy: CostStrategy = strategy
        self.warn_at_percent = warn_at_percent
        self.store: CounterStore = store if store is not None else InMemoryCounterStore()
        self.prices: dict[str, ModelPrice] = {**DEFAULT_MODEL_PRICES, **(prices or {})}
        self.on_violation: ViolationCallback | None = None
        self._unknown: set[str] = set()

    async def process_llm_request(self, args: ProcessLLMRequestArgs) -> None:
        """Before the model call: block (or report) once the window's spend reached ``max_cost``."""
        judged = self._judge_cost(args)
        spent = await (self._add(args, judged) if judged > 0 else self._spent(args))
        if spent is None:
            return
        if spent >= self.max_cost and self.strategy == "block":
            detail = self._detail(args, spent, "hard")
            args.abort(
                f"Cost limit of ${self.max_cost:.2f} reached for this {self.scope} in the last "
                f"{self.window} (${spent:.4f} spent); raise max_cost or wait for the window to pass",
                metadata=detail,
            )
        await self._report(args, spent)

    async def process_llm_response(self, args: ProcessLLMResponseArgs) -> None:
        """After a model step: price its usage and add it to the window (cache replays cost nothing)."""
        if args.from_cache:
            return
        cost = self._step_cost(args) + self._judge_cost(args)
        if cost <= 0:
            return
        spent = await self._add(args, cost)
        if spent is not None:
            await self._report(args, spent)

    # -- spend -------------------------------------------------------------------------------------

    async def _add(self, args: ProcessorArgs, cost: float) -> float | None:
        """Add ``cost`` to the run and to the store; return the window's spend (``None``: store down)."""
        amount = round(cost * _NANO)
        args.state["run"] = args.state.get("run", 0) + amount
        key = self._key(args)
        if key is None:
            return float(args.state["run"]) / _NANO
        try:
            return await self.store.add(key, amount, window=self.window_seconds) / _NANO
        except CacheError as exc:
            log.warning("cost_guard_store_unavailable", processor_id=self.id, error=type(exc).__name__)
            return None

    def _step_cost(self, args: ProcessLLMResponseArgs) -> float:
        finish = next((c for c in reversed(args.chunks) if c.type == "finish"), None)
        if finish is None:
            return 0.0
        model = args.model
        provider = str(getattr(model, "provider", "") or "")
        model_id = str(getattr(model, "model_id", "") or "")
        usage = finish.payload.get("usage")
        if usage is None:  # a tripwire cut the stream before the model reported what it used
            usage = self._estimate(args)
        return self._price(provider, model_id, usage)

    def _estimate(self, args: ProcessLLMResponseArgs) -> Usage:
        """The usage of a cut call: ``o200k_base`` counts of the prompt sent and of the output read.

        The prompt counts as :class:`TokenLimiter` counts it (3 tokens of framing per message, 85 per
        file); the output is the text, reasoning and tool calls that passed before the tripwire.
        """
        costs = PromptCosts(_ESTIMATE, message_overhead=3, file_tokens=85)
        chunks = args.chunks
        output = costs.text("".join(str(c.payload.get("text") or "") for c in chunks if c.type in _DELTAS))
        for chunk in chunks:
            if chunk.type == "tool-call":
                payload = chunk.payload
                output += costs.text(str(payload.get("tool_name", "")))
                output += costs.text(tool_args_text(payload.get("args") or {}))
        usage = Usage(input_tokens=sum(costs.prompt(args.prompt)), output_tokens=output)
        log.debug("cost_guard_usage_estimated", processor_id=self.id, **usage.to_dict())
        return usage

    def _judge_cost(self, args: ProcessorArgs) -> float:
        """What LLM-backed guards spent on their judge calls since last time (their usage records)."""
        records = args.request_context.get(JUDGE_USAGE_KEY)
        if not isinstance(records, list):
            return 0.0
        seen = args.state.get("judged", 0)
        args.state["judged"] = len(records)
        return sum(
            self._price(
                str(getattr(r, "provider", "") or ""),
                str(getattr(r, "model_id", "") or ""),
                getattr(r, "usage", None),
            )
            for r in records[seen:]
        )

    def _price(self, provider: str, model_id: str, usage: Any) -> float:
        usage = usage if isinstance(usage, Usage) else _usage(usage)
        price = find_price(self.prices, provider=provider, model_id=model_id)
        if price is None:
            name = f"{provider}/{model_id}"
            if name not in self._unknown:
                self._unknown.add(name)
                log.warning(
                    "cost_guard_unknown_model",
                    processor_id=self.id,
                    model=name,
                    fix="CostGuardProcessor(prices={'<model id>': ModelPrice(input=..., output=...)})",
                )
            return 0.0
        return price.cost(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cached_input_tokens=usage.cached_input_tokens,
        )

    # -- internals ---------------------------------------------------------------------------------

    def _scope_id(self, args: ProcessorArgs) -> str | None:
        context = args.request_context
        value = context.resource_id if self.scope == "resource" else context.thread_id
        if value is None and not args.state.get("no_id_warned"):
            args.state["no_id_warned"] = True
            log.warning("cost_guard_missing_scope_id", processor_id=self.id, scope=self.scope)
        return value

    def _key(self, args: ProcessorArgs) -> str | None:
        if self.scope == "run":
            return None
        scope_id = self._scope_id(args)
        return None if scope_id is None else f"{self.id}:{self.scope}:{scope_id}"

    async def _spent(self, args: ProcessorArgs) -> float | None:
        key = self._key(args)
        if key is None:
            return float(args.state.get("run", 0)) / _NANO
        try:
            return await self.store.total(key, window=self.window_seconds) / _NANO
        except CacheError as exc:
            log.warning("cost_guard_store_unavailable", processor_id=self.id, error=type(exc).__name__)
            return None

    async def _report(self, args: ProcessorArgs, spent: float) -> None:
        """Fire ``on_violation`` once per request for each threshold the spend reached.

        With ``strategy="block"`` the hard threshold is reported by the tripwire that blocks the next call.
        """
        state = args.state
        if spent >= self.max_cost and self.strategy == "warn" and not state.get("hard"):
            state["hard"] = state["soft"] = True
            await self._notify(args, spent, "hard")
            return
        soft = self.warn_at_percent
        if soft is not None and spent >= self.max_cost * soft / 100 and not state.get("soft"):
            state["soft"] = True
            await self._notify(args, spent, "soft")

    async def _notify(self, args: ProcessorArgs, spent: float, threshold: str) -> None:
        detail = self._detail(args, spent, threshold)
        what = "reached" if threshold == "hard" else f"passed {self.warn_at_percent:g}% of"
        message = f"Spend {what} the ${self.max_cost:.2f} limit for this {self.scope} in {self.window}"
        await notify_violation(self, ProcessorViolation(processor_id=self.id, message=message, detail=detail))

    def _detail(self, args: ProcessorArgs, spent: float, threshold: str) -> dict[str, Any]:
        return {
            "threshold": threshold,
            "spent": round(spent, 9),
            "max_cost": self.max_cost,
            "percent": round(100 * spent / self.max_cost, 2),
            "scope": self.scope,
            "scope_id": None if self.scope == "run" else self._scope_id(args),
            "window": self.window,
            "strategy": self.strategy,
        }


def _usage(value: Any) -> Usage:
    if not isinstance(value, Mapping):
        return Usage()
    return Usage(
        input_tokens=int(value.get("input_tokens") or 0),
        output_tokens=int(value.get("output_tokens") or 0),
        reasoning_tokens=int(value.get("reasoning_tokens") or 0),
        cached_input_tokens=int(value.get("cached_input_tokens") or 0),
    )
