"""``RedisCache``: a :class:`ServerCache` on Redis through redis-py's asyncio client."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Self, TypeVar

import anyio

from procflow.cache._codec import Codec, Serializer
from procflow.errors import CacheBackendError, ConfigurationError

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["DEFAULT_REDIS_TIMEOUT", "RedisCache", "RedisConnection", "guarded", "redis_client"]

DEFAULT_REDIS_TIMEOUT = 0.25
"""Seconds a cache operation may take before it counts as failed: a cache must never slow a request."""

T = TypeVar("T")


def redis_client(url: str, *, timeout: float) -> Redis:
    """A redis-py asyncio client for ``url`` with short timeouts and no retry loop of its own."""
    try:
        from redis.asyncio import Redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry
    except ImportError as exc:
        raise ConfigurationError("RedisCache needs redis-py: pip install 'redis>=5'") from exc
    return Redis.from_url(
        url,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
        health_check_interval=0,
    )


class RedisConnection:
    """The client a Redis-backed store uses, remade when it is used from another event loop.

    redis-py's asyncio connections belong to the loop that opened them; a script calling
    ``generate_sync`` twice runs two loops. A client this object created for a URL is replaced in a
    new loop (the old one cannot be closed from there); a client passed in is used as it is.
    """

    __slots__ = ("_client", "_loop", "_timeout", "_url", "owned")

    def __init__(self, url: str | None, client: Redis | None, *, timeout: float, what: str) -> None:
        if (url is None) == (client is None):
            raise ConfigurationError(f"{what} needs exactly one of url='redis://…' or client=Redis(...)")
        self._url = url
        self._timeout = timeout
        self.owned = client is None
        self._client: Redis = client if client is not None else redis_client(str(url), timeout=timeout)
        self._loop: weakref.ref[Any] | None = None

    @property
    def client(self) -> Redis:
        """The client for the running event loop."""
        if self.owned:
            loop = asyncio.get_running_loop()
            if self._loop is not None and self._loop() is not loop:
                self._client = redis_client(str(self._url), timeout=self._timeout)
            self._loop = weakref.ref(loop)
        return self._client

    async def aclose(self) -> None:
        """Close the client when this object created it."""
        if self.owned:
            await self._client.aclose()


async def guarded(backend: str, operation: str, limit: float, call: Callable[[], Awaitable[T]]) -> T:
    """Run one Redis call within ``limit`` seconds; map every failure to :class:`CacheBackendError`."""
    try:
        with anyio.fail_after(limit):
            return await call()
    except TimeoutError as exc:
        raise CacheBackendError(backend, operation, f"no answer within {limit}s") from exc
    except (OSError, RuntimeError) as exc:
        raise CacheBackendError(backend, operation, type(exc).__name__) from exc
    except Exception as exc:
        if type(exc).__module__.startswith("redis"):
            raise CacheBackendError(backend, operation, type(exc).__name__) from exc
        raise


class RedisCache:
    """A :class:`ServerCache` on Redis (redis-py asyncio), shared by every app instance.

    Entries live under ``prefix`` with Redis's own expiry (``PX``), so nothing here needs a timer.
    Values are JSON (default) or msgpack; never pickle. Every call is bounded by ``timeout``; a failure
    raises :class:`~procflow.errors.CacheBackendError`, which ``ResponseCache`` logs and treats as a miss.
    redis-py's asyncio client needs the asyncio event loop (under trio every call fails that way).

    Args:
        url: A ``redis://`` URL (a client is created with short timeouts); or pass ``client``.
        client: An existing ``redis.asyncio.Redis`` (its own timeouts apply, bounded by ``timeout``;
            leave ``decode_responses`` off, values are bytes).
        prefix: Prepended to every key, so one Redis database can hold several caches.
        serializer: ``"json"`` or ``"msgpack"``.
        timeout: Seconds per operation before it counts as failed.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        client: Redis | None = None,
        prefix: str = "procflow:cache:",
        serializer: Serializer = "json",
        timeout: float = DEFAULT_REDIS_TIMEOUT,
    ) -> None:
        if not isinstance(timeout, int | float) or timeout <= 0:
            raise ConfigurationError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.prefix = prefix
        self.timeout = float(timeout)
        self._codec = Codec(serializer)
        self._connection = RedisConnection(url, client, timeout=self.timeout, what="RedisCache")

    @property
    def client(self) -> Redis:
        """The redis-py client in use (for the running event loop)."""
        return self._connection.client

    async def get(self, key: str) -> Any | None:
        """Return the value under ``key``, or ``None``."""
        data = await self._call("get", lambda: self.client.get(self.prefix + key))
        return None if data is None else self._codec.decode(data)

    async def set(self, key: str, value: Any, ttl: float | None = None) -> None:
        """Store ``value`` under ``key``, expiring after ``ttl`` seconds (millisecond precision)."""
        data = self._codec.encode(value)
        px = None if ttl is None else max(1, round(ttl * 1000))
        await self._call("set", lambda: self.client.set(self.prefix + key, data, px=px))

    async def delete(self, key: str) -> None:
        """Remove ``key``."""
        await self._call("delete", lambda: self.client.delete(self.prefix + key))

    async def clear(self) -> None:
        """Remove every key under ``prefix`` (SCAN + DEL; never FLUSHDB)."""
        await self._call("clear", self._clear)

    async def aclose(self) -> None:
        """Close the client when this cache created it."""
        await self._connection.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _clear(self) -> None:
        batch: list[Any] = []
        async for key in self.client.scan_iter(match=_glob_escape(self.prefix) + "*", count=500):
            batch.append(key)
            if len(batch) >= 500:
                await self.client.delete(*batch)
                batch = []
        if batch:
            await self.client.delete(*batch)

    async def _call(self, operation: str, call: Callable[[], Awaitable[T]]) -> T:
        return await guarded("redis", operation, self.timeout, call)


def _glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)
