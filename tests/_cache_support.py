"""The ``backend`` fixture: response-cache tests run on the in-memory cache and on a real Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from procflow.cache import InMemoryServerCache, RedisCache, ServerCache


@pytest.fixture(params=["memory", "redis"], name="backend")
async def backend_fixture(request: pytest.FixtureRequest) -> AsyncIterator[Callable[[], ServerCache]]:
    """Makes fresh, empty caches on one backend: in memory, or on the session's real Redis."""
    if request.param == "memory":
        yield InMemoryServerCache
        return
    url = request.getfixturevalue("redis_url")
    made: list[RedisCache] = []

    def make() -> ServerCache:
        made.append(RedisCache(url, prefix=f"t{len(made)}:", timeout=2))
        return made[-1]

    yield make
    for cache in made:
        await cache.aclose()
