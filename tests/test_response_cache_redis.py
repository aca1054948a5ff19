"""ResponseCache on a real Redis: hits across cache objects, PX expiry, and an outage that fails nothing."""

from __future__ import annotations

from pathlib import Path

import anyio
from services import start_redis

from procflow import Agent, RequestContext
from procflow.cache import RedisCache
from procflow.memory import RESOURCE_ID_KEY
from procflow.processors import ResponseCache
from procflow.testing import ScriptedModel


def agent_on(cache: RedisCache, model: ScriptedModel, **options: object) -> Agent:
    return Agent(id="a", model=model, input_processors=[ResponseCache(cache=cache, **options)])  # type: ignore[arg-type]


async def test_hit_and_miss_across_app_instances(redis_url: str) -> None:
    """An answer stored by one instance is replayed by another sharing the Redis server."""
    model = ScriptedModel(["nine o'clock", "other"])
    one, two = RedisCache(redis_url), RedisCache(redis_url)
    try:
        await agent_on(one, model).generate("When do you open?")
        hit = await agent_on(two, model).generate("When do you open?")
        miss = await agent_on(two, model).generate("When do you close?")
        assert (hit.text, miss.text, model.calls) == ("nine o'clock", "other", 2)
        assert hit.steps[0].from_cache
    finally:
        await one.aclose()
        await two.aclose()


async def test_entries_expire_with_redis_ttl(redis_url: str) -> None:
    """With a short TTL the entry is gone after it, and the model answers again."""
    model = ScriptedModel(["old", "new"])
    cache = RedisCache(redis_url)
    try:
        agent = agent_on(cache, model, ttl=0.05)
        await agent.generate("Hi")
        await anyio.sleep(0.1)
        assert (await agent.generate("Hi")).text == "new"
    finally:
        await cache.aclose()


async def test_resources_are_isolated_on_redis(redis_url: str) -> None:
    """Two resources never read each other's entries on a shared server."""
    model = ScriptedModel(["alice's", "bob's"])
    cache = RedisCache(redis_url)
    try:
        agent = agent_on(cache, model)
        await agent.generate("Hi", request_context=RequestContext({RESOURCE_ID_KEY: "alice"}))
        bob = await agent.generate("Hi", request_context=RequestContext({RESOURCE_ID_KEY: "bob"}))
        assert (bob.text, model.calls) == ("bob's", 2)
    finally:
        await cache.aclose()


async def test_redis_stopped_mid_test_fails_no_request(tmp_path: Path) -> None:
    """With the server gone, reads are misses and writes are dropped; every request still answers."""
    server = start_redis(tmp_path / "redis")
    model = ScriptedModel(["first", "second", "third"])
    cache = RedisCache(server.url, timeout=0.5)
    try:
        agent = agent_on(cache, model)
        await agent.generate("Hi")
        assert (await agent.generate("Hi")).text == "first"
        server.stop()
        assert (await agent.generate("Hi")).text == "second"
        assert (await agent.generate("Hi")).text == "third"
        assert model.calls == 3
    finally:
        server.stop()
        await cache.aclose()
