"""CostGuardProcessor: usage × prices accumulated per scope and window; block, warn, on_violation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from log_support import captured_logs

from procflow import Agent, ProcessorViolation, RequestContext, Usage, tool
from procflow.cache import InMemoryCounterStore, InMemoryServerCache
from procflow.errors import ConfigurationError
from procflow.memory import RESOURCE_ID_KEY, THREAD_ID_KEY
from procflow.processors import (
    DEFAULT_MODEL_PRICES,
    JUDGE_USAGE_KEY,
    CostGuardProcessor,
    ModelPrice,
    ProcessInputArgs,
    ResponseCache,
)
from procflow.testing import ScriptedModel, ScriptedStep

DOLLAR_PER_TOKEN = {"scripted-model": ModelPrice(input=1_000_000, output=1_000_000)}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def one_dollar_steps(n: int = 20) -> ScriptedModel:
    """Each answer costs $1 at DOLLAR_PER_TOKEN (one input token, no output)."""
    return ScriptedModel([ScriptedStep(text="ok", usage=Usage(input_tokens=1))] * n)


def guarded(
    model: ScriptedModel, guard: CostGuardProcessor, *more: Any
) -> tuple[Agent, list[ProcessorViolation]]:
    seen: list[ProcessorViolation] = []
    guard.on_violation = seen.append
    return Agent(id="a", model=model, input_processors=[*more, guard]), seen


def user(resource: str) -> RequestContext:
    return RequestContext({RESOURCE_ID_KEY: resource})


async def test_block_once_the_window_spend_reached_the_limit() -> None:
    """Three $1 requests pass; the fourth is stopped before the model is called."""
    model = one_dollar_steps()
    guard = CostGuardProcessor(max_cost=3, scope="resource", window="1h", prices=DOLLAR_PER_TOKEN)
    agent, seen = guarded(model, guard)
    results = [await agent.generate("Hi", request_context=user("u-1")) for _ in range(4)]
    assert [r.tripwire is None for r in results] == [True, True, True, False]
    assert model.calls == 3
    blocked = results[-1].tripwire
    assert blocked is not None and blocked.processor_id == "cost-guard" and "Cost limit" in blocked.reason
    assert [v.detail["threshold"] for v in seen] == ["soft", "hard"]  # soft at 80 % = $2.40
    assert seen[-1].detail["spent"] == 3 and seen[-1].detail["scope_id"] == "u-1"


async def test_each_resource_has_its_own_budget() -> None:
    """Another user's spend does not count against this one."""
    guard = CostGuardProcessor(max_cost=1, scope="resource", prices=DOLLAR_PER_TOKEN, warn_at_percent=None)
    agent, _ = guarded(one_dollar_steps(), guard)
    assert (await agent.generate("Hi", request_context=user("a"))).tripwire is None
    assert (await agent.generate("Hi", request_context=user("b"))).tripwire is None
    assert (await agent.generate("Hi", request_context=user("a"))).tripwire is not None


async def test_thread_scope_reads_the_thread_id() -> None:
    """``scope='thread'`` keys the spend by the request's thread id."""
    guard = CostGuardProcessor(max_cost=1, scope="thread", prices=DOLLAR_PER_TOKEN)
    agent, _ = guarded(one_dollar_steps(), guard)
    await agent.generate("Hi", request_context=RequestContext({THREAD_ID_KEY: "t-1"}))
    again = await agent.generate("Hi", request_context=RequestContext({THREAD_ID_KEY: "t-1"}))
    other = await agent.generate("Hi", request_context=RequestContext({THREAD_ID_KEY: "t-2"}))
    assert (again.tripwire is not None, other.tripwire is None) == (True, True)


async def test_spend_leaves_the_window() -> None:
    """Once the window passed, old spend no longer counts."""
    clock = Clock()
    guard = CostGuardProcessor(
        max_cost=1,
        scope="resource",
        window="1h",
        prices=DOLLAR_PER_TOKEN,
        store=InMemoryCounterStore(clock=clock),
    )
    agent, _ = guarded(one_dollar_steps(), guard)
    await agent.generate("Hi", request_context=user("u"))
    clock.now += 1800
    assert (await agent.generate("Hi", request_context=user("u"))).tripwire is not None
    clock.now += 3600
    assert (await agent.generate("Hi", request_context=user("u"))).tripwire is None


async def test_warn_reports_each_threshold_once_per_request_and_never_blocks() -> None:
    """With ``strategy='warn'`` calls go on; soft and hard thresholds fire once per request each."""
    model = one_dollar_steps()
    guard = CostGuardProcessor(
        max_cost=2, scope="resource", strategy="warn", warn_at_percent=50, prices=DOLLAR_PER_TOKEN
    )
    agent, seen = guarded(model, guard)
    per_request: list[list[str]] = []
    for _ in range(4):
        before = len(seen)
        result = await agent.generate("Hi", request_context=user("u"))
        assert result.tripwire is None
        per_request.append([v.detail["threshold"] for v in seen[before:]])
    assert model.calls == 4
    # r1 passes 50 % after its call; r2 starts there (soft) and reaches 100 % (hard); r3, r4 start over it.
    assert per_request == [["soft"], ["soft", "hard"], ["hard"], ["hard"]]
    assert [v.detail["spent"] for v in seen] == [1, 1, 2, 2, 3]
    assert all(v.processor_id == "cost-guard" and "limit" in v.message for v in seen)


async def test_run_scope_limits_one_call_across_its_tool_loop() -> None:
    """``scope='run'`` counts one call's steps and blocks the step after the limit."""

    @tool
    def lookup(term: str) -> str:
        """Look up."""
        return "found"

    step = ScriptedStep(tool_calls=[("lookup", {"term": "x"})], usage=Usage(input_tokens=1))
    model = ScriptedModel([step, step, step, "done"])
    guard = CostGuardProcessor(max_cost=2, prices=DOLLAR_PER_TOKEN)
    agent = Agent(id="a", model=model, tools=[lookup], input_processors=[guard])
    result = await agent.generate("Go")
    assert result.tripwire is not None and model.calls == 2
    assert (await agent.generate("Go again")).tripwire is None  # a new run starts at zero


async def test_unknown_model_is_one_clear_warning() -> None:
    """A model missing from the price table is logged once, naming it; its calls are not counted."""
    guard = CostGuardProcessor(max_cost=1)
    agent = Agent(id="a", model=one_dollar_steps(), input_processors=[guard])
    with captured_logs() as logs:
        for _ in range(3):
            assert (await agent.generate("Hi")).tripwire is None
    warnings = [e for e in logs if e["event"] == "cost_guard_unknown_model"]
    assert len(warnings) == 1 and warnings[0]["model"] == "scripted/scripted-model"
    assert "prices=" in warnings[0]["fix"]


async def test_cache_hits_cost_nothing() -> None:
    """A replayed answer adds no spend."""
    model = one_dollar_steps()
    guard = CostGuardProcessor(max_cost=2, scope="resource", prices=DOLLAR_PER_TOKEN)
    agent, _ = guarded(model, guard, ResponseCache(cache=InMemoryServerCache()))
    for _ in range(5):
        assert (await agent.generate("Same question", request_context=user("u"))).tripwire is None
    assert model.calls == 1


def test_bundled_prices_and_dated_model_ids() -> None:
    """Common models are priced; a dated id matches its family; user prices take precedence."""
    price = DEFAULT_MODEL_PRICES["gpt-4o-mini"]
    assert price.cost(input_tokens=1_000_000, output_tokens=1_000_000) == pytest.approx(0.75)
    assert price.cost(
        input_tokens=1_000_000, output_tokens=0, cached_input_tokens=1_000_000
    ) == pytest.approx(0.075)
    from procflow.processors._prices import find_price

    assert find_price(DEFAULT_MODEL_PRICES, provider="openai", model_id="gpt-4o-mini-2024-07-18") is price
    assert (
        find_price(DEFAULT_MODEL_PRICES, provider="anthropic", model_id="claude-sonnet-4-20250514")
        is (DEFAULT_MODEL_PRICES["claude-sonnet-4"])
    )
    mine = ModelPrice(input=0, output=0)
    guard = CostGuardProcessor(max_cost=1, prices={"gpt-4o-mini": mine})
    assert find_price(guard.prices, provider="openai", model_id="gpt-4o-mini") is mine


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_cost": 0}, "max_cost"),
        ({"max_cost": 1, "scope": "org"}, "scope"),
        ({"max_cost": 1, "window": "forever"}, "window"),
        ({"max_cost": 1, "window": "400d"}, "window"),
        ({"max_cost": 1, "strategy": "shout"}, "strategy"),
        ({"max_cost": 1, "warn_at_percent": 120}, "warn_at_percent"),
    ],
)
def test_bad_options_say_what_to_change(options: dict[str, Any], message: str) -> None:
    """Invalid options raise ConfigurationError naming the option."""
    with pytest.raises(ConfigurationError, match=message):
        CostGuardProcessor(**options)


@dataclass
class JudgeRecord:
    """The shape LLM-backed guards record for each judge call."""

    processor_id: str
    provider: str
    model_id: str
    usage: Usage


class FakeJudge:
    """An input guard that 'called' a judge model costing $1."""

    id = "fake-judge"

    def process_input(self, args: ProcessInputArgs) -> None:
        records = args.request_context.get(JUDGE_USAGE_KEY) or []
        records.append(JudgeRecord(self.id, "scripted", "judge-model", Usage(input_tokens=1)))
        args.request_context.set(JUDGE_USAGE_KEY, records)


async def test_guard_judge_calls_count_towards_the_budget() -> None:
    """Usage that LLM-backed guards record for their judge calls is priced and added to the spend."""
    prices = {**DOLLAR_PER_TOKEN, "judge-model": ModelPrice(input=1_000_000, output=0)}
    guard = CostGuardProcessor(max_cost=4, scope="resource", prices=prices, warn_at_percent=None)
    model = one_dollar_steps()
    agent = Agent(id="a", model=model, input_processors=[FakeJudge(), guard])
    results = [await agent.generate("Hi", request_context=user("u")) for _ in range(3)]
    assert [r.tripwire is None for r in results] == [True, True, False]  # $2 per request: judge + answer
    assert model.calls == 2
