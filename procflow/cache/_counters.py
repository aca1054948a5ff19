"""Windowed counters: atomic increments summed over a sliding window (the spend ``CostGuardProcessor`` keeps).

A window is split into :data:`BUCKETS` buckets; an increment lands in the current bucket and a total sums
the buckets still inside the window, so old spend drops out gradually without any timer task.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, Self, runtime_checkable

from procflow.cache._redis import DEFAULT_REDIS_TIMEOUT, RedisConnection, guarded
from procflow.errors import ConfigurationError

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["BUCKETS", "CounterStore", "InMemoryCounterStore", "RedisCounterStore"]

BUCKETS = 60
"""Buckets per window: a total is exact to within one sixtieth of the window's age boundary."""

Clock = Callable[[], float]


def _bucket_span(window: float) -> float:
    if not isinstance(window, int | float) or window <= 0:
        raise ConfigurationError(f"window must be a positive number of seconds, got {window!r}")
    return max(1.0, window / BUCKETS)


@runtime_checkable
class CounterStore(Protocol):
    """Integer counters per key with windowed sums; increments are atomic across callers."""

    async def add(self, key: str, amount: int, *, window: float) -> int:
        """Add ``amount`` to ``key`` now; return the key's total over the last ``window`` seconds."""
        ...

    async def total(self, key: str, *, window: float) -> int:
        """Return the key's total over the last ``window`` seconds."""
        ...


class InMemoryCounterStore:
    """A :class:`CounterStore` in this process (one app instance).

    Args:
        clock: Wall-clock seconds (default :func:`time.time`); tests inject their own.
    """

    __slots__ = ("_buckets", "_clock")

    def __init__(self, *, clock: Clock = time.time) -> None:
        self._clock = clock
        self._buckets: dict[str, dict[int, int]] = {}

    async def add(self, key: str, amount: int, *, window: float) -> int:
        """Add ``amount`` now and return the windowed total (old buckets are pruned here)."""
        span = _bucket_span(window)
        now = math.floor(self._clock() / span)
        buckets = self._buckets.setdefault(key, {})
        for index in [i for i in buckets if i <= now - BUCKETS]:
            del buckets[index]
        buckets[now] = buckets.get(now, 0) + int(amount)
        return sum(buckets.values())

    async def total(self, key: str, *, window: float) -> int:
        """The windowed total of ``key``."""
        span = _bucket_span(window)
        now = math.floor(self._clock() / span)
        buckets = self._buckets.get(key, {})
        return sum(v for i, v in buckets.items() if i > now - BUCKETS)


# One round trip, atomic: add to the current bucket (kept a little longer than the window) and sum
# the buckets still inside the window.
_ADD_AND_SUM = """
local now = tonumber(ARGV[1])
local amount = tonumber(ARGV[2])
local buckets = tonumber(ARGV[3])
if amount ~= 0 then
  local bucket = KEYS[1] .. ':' .. now
  redis.call('INCRBY', bucket, amount)
  redis.call('PEXPIRE', bucket, tonumber(ARGV[4]))
end
local total = 0
for i = now - buckets + 1, now do
  local value = redis.call('GET', KEYS[1] .. ':' .. i)
  if value then total = total + tonumber(value) end
end
return total
"""


class RedisCounterStore:
    """A :class:`CounterStore` on Redis, so many app instances share one budget.

    Each add is one atomic Lua script (increment the current bucket, sum the window). Use a single
    Redis server or a hash tag in ``prefix`` on a cluster: the script touches one key's buckets.

    Args:
        url: A ``redis://`` URL; or pass ``client``.
        client: An existing ``redis.asyncio.Redis``.
        prefix: Prepended to every counter key.
        timeout: Seconds per operation before it raises :class:`~procflow.errors.CacheBackendError`.
        clock: Wall-clock seconds (default :func:`time.time`); instances must agree on the time.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        client: Redis | None = None,
        prefix: str = "procflow:spend:",
        timeout: float = DEFAULT_REDIS_TIMEOUT,
        clock: Clock = time.time,
    ) -> None:
        self.prefix = prefix
        self.timeout = float(timeout)
        self._clock = clock
        self._connection = RedisConnection(url, client, timeout=self.timeout, what="RedisCounterStore")
        self._scripts: tuple[Any, Any] | None = None

    @property
    def client(self) -> Redis:
        """The redis-py client in use (for the running event loop)."""
        return self._connection.client

    async def add(self, key: str, amount: int, *, window: float) -> int:
        """Atomically add ``amount`` now and return the windowed total."""
        return await self._run("incr", key, int(amount), window)

    async def total(self, key: str, *, window: float) -> int:
        """The windowed total of ``key``."""
        return await self._run("total", key, 0, window)

    async def aclose(self) -> None:
        """Close the client when this store created it."""
        await self._connection.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _run(self, operation: str, key: str, amount: int, window: float) -> int:
        span = _bucket_span(window)
        now = math.floor(self._clock() / span)
        keep_ms = math.ceil((window + span) * 1000)

        async def call() -> Any:
            client = self.client
            if self._scripts is None or self._scripts[0] is not client:
                self._scripts = (client, client.register_script(_ADD_AND_SUM))
            return await self._scripts[1](keys=[self.prefix + key], args=[now, amount, BUCKETS, keep_ms])

        return int(await guarded("redis", operation, self.timeout, call))
