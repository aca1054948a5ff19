"""InMemoryServerCache: TTL on an injected clock, LRU eviction, copies, safe values only."""

from __future__ import annotations

import pytest

from procflow.cache import InMemoryServerCache, ServerCache
from procflow.errors import CacheValueError, ConfigurationError


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_get_returns_what_set_stored() -> None:
    """A stored value comes back equal; a missing key is None."""
    cache = InMemoryServerCache()
    await cache.set("k", {"a": [1, 2, "three"], "b": None})
    assert await cache.get("k") == {"a": [1, 2, "three"], "b": None}
    assert await cache.get("other") is None
    assert isinstance(cache, ServerCache)


async def test_entries_expire_after_their_ttl() -> None:
    """An entry is live until its TTL has passed on the cache's clock, then gone."""
    clock = Clock()
    cache = InMemoryServerCache(clock=clock)
    await cache.set("k", "v", ttl=10)
    clock.now += 9.99
    assert await cache.get("k") == "v"
    clock.now += 0.01
    assert await cache.get("k") is None
    assert len(cache) == 0


async def test_default_ttl_applies_when_set_gives_none() -> None:
    """``default_ttl`` is used when ``set`` has no TTL of its own."""
    clock = Clock()
    cache = InMemoryServerCache(clock=clock, default_ttl=5)
    await cache.set("k", 1)
    clock.now += 5
    assert await cache.get("k") is None


async def test_least_recently_used_entry_is_evicted() -> None:
    """Beyond ``max_entries`` the entry read or written longest ago goes first."""
    cache = InMemoryServerCache(max_entries=2)
    await cache.set("a", 1)
    await cache.set("b", 2)
    assert await cache.get("a") == 1  # "b" is now the least recently used
    await cache.set("c", 3)
    assert [await cache.get(k) for k in ("a", "b", "c")] == [1, None, 3]


async def test_readers_get_copies() -> None:
    """Mutating a returned value (or the stored one) never changes the cache."""
    cache = InMemoryServerCache()
    original = {"items": [1]}
    await cache.set("k", original)
    original["items"].append(2)
    got = await cache.get("k")
    got["items"].append(3)
    assert await cache.get("k") == {"items": [1]}


async def test_delete_and_clear() -> None:
    """``delete`` removes one key, ``clear`` every key."""
    cache = InMemoryServerCache()
    for key in "abc":
        await cache.set(key, key)
    await cache.delete("a")
    assert await cache.get("a") is None
    await cache.clear()
    assert [await cache.get(k) for k in "bc"] == [None, None]


async def test_values_that_are_not_plain_data_are_refused() -> None:
    """Objects that would need pickle raise CacheValueError instead of being stored."""
    cache = InMemoryServerCache()
    with pytest.raises(CacheValueError, match="plain json data"):
        await cache.set("k", object())
    assert await cache.get("k") is None


async def test_msgpack_serializer_round_trips() -> None:
    """``serializer='msgpack'`` stores and returns the same data."""
    cache = InMemoryServerCache(serializer="msgpack")
    await cache.set("k", {"text": "héllo", "n": [1, 2.5]})
    assert await cache.get("k") == {"text": "héllo", "n": [1, 2.5]}


def test_bad_arguments_say_what_to_change() -> None:
    """Invalid sizes, TTLs and serializers raise ConfigurationError."""
    with pytest.raises(ConfigurationError, match="max_entries"):
        InMemoryServerCache(max_entries=0)
    with pytest.raises(ConfigurationError, match="ttl"):
        InMemoryServerCache(default_ttl=-1)
    with pytest.raises(ConfigurationError, match="serializer"):
        InMemoryServerCache(serializer="pickle")  # type: ignore[arg-type]
