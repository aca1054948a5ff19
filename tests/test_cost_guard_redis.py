"""CostGuardProcessor on a real Redis: one budget for every instance and process, atomic increments."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
from log_support import captured_logs
from services import start_redis

from procflow import Agent, RequestContext, Usage
from procflow.cache import RedisCounterStore
from procflow.memory import RESOURCE_ID_KEY
from procflow.processors import CostGuardProcessor, ModelPrice
from procflow.testing import ScriptedModel, ScriptedStep

ROOT = Path(__file__).resolve().parent.parent
DOLLAR_PER_TOKEN = {"scripted-model": ModelPrice(input=1_000_000, output=1_000_000)}


def guard_on(store: RedisCounterStore, **options: object) -> CostGuardProcessor:
    return CostGuardProcessor(
        max_cost=3, scope="resource", window="1h", store=store, prices=DOLLAR_PER_TOKEN, **options
    )  # type: ignore[arg-type]


def one_dollar_agent(guard: CostGuardProcessor) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel([ScriptedStep(text="ok", usage=Usage(input_tokens=1))], repeat_last=True)
    return Agent(id="a", model=model, input_processors=[guard]), model


USER = RequestContext({RESOURCE_ID_KEY: "u-1"})


async def test_block_across_requests_and_instances(redis_url: str) -> None:
    """Two guards (two app instances) on one Redis share the user's budget."""
    one, two = RedisCounterStore(redis_url), RedisCounterStore(redis_url)
    try:
        first, _ = one_dollar_agent(guard_on(one))
        second, _ = one_dollar_agent(guard_on(two))
        outcomes = []
        for agent in (first, second, first, second):
            outcomes.append((await agent.generate("Hi", request_context=USER)).tripwire is None)
        assert outcomes == [True, True, True, False]
    finally:
        await one.aclose()
        await two.aclose()


async def test_warn_on_redis(redis_url: str) -> None:
    """``strategy='warn'`` keeps answering on Redis and reports the spend."""
    store = RedisCounterStore(redis_url)
    try:
        guard = guard_on(store, strategy="warn")
        seen: list[float] = []
        guard.on_violation = lambda v: seen.append(v.detail["spent"])
        agent, model = one_dollar_agent(guard)
        for _ in range(4):
            assert (await agent.generate("Hi", request_context=USER)).tripwire is None
        assert model.calls == 4 and seen[-1] == 3
    finally:
        await store.aclose()


async def test_concurrent_increments_are_atomic(redis_url: str) -> None:
    """Many concurrent adds from several clients sum exactly."""
    stores = [RedisCounterStore(redis_url, timeout=10) for _ in range(4)]
    try:
        async with anyio.create_task_group() as tg:
            for store in stores:
                for _ in range(25):
                    tg.start_soon(lambda s=store: s.add("k", 7, window=3600))
        assert await stores[0].total("k", window=3600) == 700
    finally:
        for store in stores:
            await store.aclose()


CHILD = """
import sys, anyio
from procflow import Agent, RequestContext
from procflow.cache import RedisCounterStore
from procflow.memory import RESOURCE_ID_KEY
from procflow import Usage
from procflow.processors import CostGuardProcessor, ModelPrice
from procflow.testing import ScriptedModel, ScriptedStep

async def main():
    store = RedisCounterStore(sys.argv[1], timeout=2)
    guard = CostGuardProcessor(max_cost=3, scope="resource", window="1h", store=store,
                               prices={"scripted-model": ModelPrice(input=1_000_000, output=0)})
    model = ScriptedModel([ScriptedStep(text="ok", usage=Usage(input_tokens=1))], repeat_last=True)
    agent = Agent(id="a", model=model, input_processors=[guard])
    answered = 0
    for _ in range(int(sys.argv[2])):
        result = await agent.generate("Hi", request_context=RequestContext({RESOURCE_ID_KEY: "u-1"}))
        answered += result.tripwire is None
    await store.aclose()
    print(answered)

anyio.run(main)
"""


def test_two_processes_sharing_redis_see_one_budget(redis_url: str) -> None:
    """A second process is blocked by what the first one spent."""

    def child(requests: int) -> int:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, redis_url, str(requests)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return int(out.stdout.strip().splitlines()[-1])

    assert child(2) == 2
    assert child(3) == 1


async def test_a_stopped_store_never_fails_the_request(tmp_path: Path) -> None:
    """With Redis gone the guard logs and lets calls through rather than failing them."""
    server = start_redis(tmp_path / "redis")
    store = RedisCounterStore(server.url, timeout=0.5)
    try:
        agent, model = one_dollar_agent(guard_on(store))
        assert (await agent.generate("Hi", request_context=USER)).tripwire is None
        server.stop()
        with captured_logs() as logs:
            assert (await agent.generate("Hi", request_context=USER)).tripwire is None
        assert model.calls == 2
        assert any(e["event"] == "cost_guard_store_unavailable" for e in logs)
    finally:
        server.stop()
        await store.aclose()
