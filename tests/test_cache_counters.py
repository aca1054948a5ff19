"""Windowed counter stores: sums slide with the clock, in memory and on a real Redis."""

from __future__ import annotations

import pytest

from procflow.cache import CounterStore, InMemoryCounterStore, RedisCounterStore
from procflow.errors import ConfigurationError


class Clock:
    def __init__(self) -> None:
        self.now = 3_600_000.0

    def __call__(self) -> float:
        return self.now


async def check_window(store: CounterStore, clock: Clock) -> None:
    """Adds inside the window sum; an add ages out once the window has passed it."""
    assert await store.add("k", 5, window=3600) == 5
    clock.now += 1800
    assert await store.add("k", 2, window=3600) == 7
    assert await store.total("other", window=3600) == 0
    clock.now += 1860  # the first add is now more than an hour old
    assert await store.total("k", window=3600) == 2
    clock.now += 3600
    assert await store.total("k", window=3600) == 0


async def test_in_memory_window_slides() -> None:
    """The in-memory store forgets spend older than the window."""
    clock = Clock()
    await check_window(InMemoryCounterStore(clock=clock), clock)


async def test_redis_window_slides(redis_url: str) -> None:
    """The Redis store sums only the buckets still inside the window."""
    clock = Clock()
    store = RedisCounterStore(redis_url, clock=clock)
    try:
        await check_window(store, clock)
    finally:
        await store.aclose()


async def test_redis_buckets_expire_on_their_own(redis_url: str) -> None:
    """Each bucket carries a Redis expiry a little beyond the window, so nothing needs cleaning up."""
    store = RedisCounterStore(redis_url, prefix="spend:")
    try:
        await store.add("k", 1, window=3600)
        (key,) = [k async for k in store.client.scan_iter(match="spend:k:*")]
        assert 3_600_000 < await store.client.pttl(key) <= 3_660_000
    finally:
        await store.aclose()


async def test_windows_must_be_positive() -> None:
    """A zero window is a configuration error."""
    with pytest.raises(ConfigurationError, match="window"):
        await InMemoryCounterStore().add("k", 1, window=0)
