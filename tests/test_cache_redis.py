"""RedisCache against a real redis-server: values, PX expiry, prefixes, and outages as typed errors."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import redis.asyncio
from services import start_redis

from procflow.cache import RedisCache, RedisCounterStore, ServerCache
from procflow.errors import CacheBackendError, CacheValueError, ConfigurationError


async def test_set_get_delete_round_trip(redis_url: str) -> None:
    """Values round-trip through Redis as JSON; delete removes them."""
    cache = RedisCache(redis_url)
    try:
        assert isinstance(cache, ServerCache)
        await cache.set("k", {"text": "héllo", "n": [1, 2.5, None]})
        assert await cache.get("k") == {"text": "héllo", "n": [1, 2.5, None]}
        await cache.delete("k")
        assert await cache.get("k") is None
    finally:
        await cache.aclose()


async def test_ttl_is_a_redis_px_expiry(redis_url: str) -> None:
    """The TTL becomes Redis's millisecond expiry; the entry is gone once it passed."""
    cache = RedisCache(redis_url)
    try:
        await cache.set("short", "v", ttl=0.05)
        pttl = await cache.client.pttl("procflow:cache:short")
        assert 0 < pttl <= 50
        await anyio.sleep(0.1)
        assert await cache.get("short") is None
    finally:
        await cache.aclose()


async def test_prefixes_keep_caches_apart_and_clear_only_its_own(redis_url: str) -> None:
    """Two prefixes in one database never see each other; clear() removes only its prefix."""
    client = redis.asyncio.Redis.from_url(redis_url)
    one, two = RedisCache(client=client, prefix="one:"), RedisCache(client=client, prefix="two:")
    try:
        await one.set("k", 1)
        await two.set("k", 2)
        assert (await one.get("k"), await two.get("k")) == (1, 2)
        await one.clear()
        assert (await one.get("k"), await two.get("k")) == (None, 2)
    finally:
        await client.aclose()


async def test_msgpack_values(redis_url: str) -> None:
    """``serializer='msgpack'`` stores msgpack bytes and reads them back."""
    cache = RedisCache(redis_url, serializer="msgpack", prefix="mp:")
    try:
        await cache.set("k", {"a": [1, "b"]})
        assert await cache.get("k") == {"a": [1, "b"]}
        raw = await cache.client.get("mp:k")
        assert raw is not None and not raw.startswith(b"{")
    finally:
        await cache.aclose()


async def test_unsafe_values_are_refused(redis_url: str) -> None:
    """A value that is not plain data raises CacheValueError; nothing is pickled."""
    cache = RedisCache(redis_url)
    try:
        with pytest.raises(CacheValueError):
            await cache.set("k", {1, 2})
    finally:
        await cache.aclose()


async def test_a_stopped_server_is_a_typed_error(tmp_path: Path) -> None:
    """Once the server is gone every operation raises CacheBackendError, quickly."""
    server = start_redis(tmp_path / "redis")
    cache = RedisCache(server.url, timeout=0.5)
    try:
        await cache.set("k", "v")
        server.stop()
        with pytest.raises(CacheBackendError, match="redis cache get failed") as caught:
            await cache.get("k")
        assert caught.value.operation == "get"
        with pytest.raises(CacheBackendError):
            await cache.set("k", "v")
    finally:
        server.stop()
        await cache.aclose()


async def test_url_or_client_exactly_one() -> None:
    """RedisCache needs a URL or a client, not both and not neither."""
    with pytest.raises(ConfigurationError, match="exactly one"):
        RedisCache()


def test_one_cache_serves_several_event_loops(redis_url: str) -> None:
    """A cache made from a URL keeps working when a script runs a new event loop per call."""
    cache = RedisCache(redis_url)

    async def write() -> None:
        async with cache:
            await cache.set("k", "v")

    async def read() -> object:
        async with cache:
            return await cache.get("k")

    anyio.run(write)
    assert anyio.run(read) == "v"


def test_one_counter_store_serves_several_event_loops(redis_url: str) -> None:
    """The counter store's client and script follow the running event loop too."""
    store = RedisCounterStore(redis_url)

    async def add() -> int:
        async with store:
            return await store.add("k", 2, window=60)

    assert [anyio.run(add), anyio.run(add)] == [2, 4]
