"""The gateway's connections to its upstream: many small connection pools instead of one large one.

httpcore's connection pool does work for every connection it holds on every request and every response
close (each idle connection's socket is polled for a server-side close, and for each idle one the whole
list is counted again): with 200 idle connections in one pool a request cost 13.6 ms of CPU, against
4.3 ms with small pools (measured in one process). :class:`ShardedTransport` spreads requests over
pools of at most :data:`SHARD_CONNECTIONS` connections each, making a new pool when every one is full,
so the work per request stays that of a small pool however many streams are open. Sequential
requests keep using the first pool, and so their one connection.

The pools share one TLS context, made with the transport: each context loads the certificate store
(58 ms here), and a pool made while streams are arriving would hold up the event loop, and every
stream on it, for that long (13 pools for 200 streams: 0.75 s, and three times that under load).
"""

from __future__ import annotations

import os
import ssl
from collections.abc import AsyncIterator
from types import TracebackType

import httpx

__all__ = ["SHARD_CONNECTIONS", "ShardedTransport", "upstream_transport"]

SHARD_CONNECTIONS = 16
"""Connections per pool: small enough that a pool's per-request bookkeeping is cheap, large enough that
a burst of requests needs few pools."""

_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


class _Shard:
    """One pool and how many of its requests are in flight."""

    __slots__ = ("busy", "transport")

    def __init__(self, limits: httpx.Limits, tls: ssl.SSLContext) -> None:
        self.transport = httpx.AsyncHTTPTransport(verify=tls, limits=limits)
        self.busy = 0


class _Released(httpx.AsyncByteStream):
    """A response body that frees its pool's slot when it is closed (once)."""

    __slots__ = ("_shard", "_stream")

    def __init__(self, stream: httpx.AsyncByteStream, shard: _Shard) -> None:
        self._stream: httpx.AsyncByteStream = stream
        self._shard: _Shard | None = shard

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._stream.__aiter__()  # no extra hop per piece of the body

    async def aclose(self) -> None:
        shard, self._shard = self._shard, None
        try:
            await self._stream.aclose()
        finally:
            if shard is not None:
                shard.busy -= 1


class ShardedTransport(httpx.AsyncBaseTransport):
    """An ``httpx`` transport sending each request through the least busy of several small pools.

    Args:
        shard_connections: Connections per pool; a request arriving while every pool has that many
            requests in flight gets a new pool, so requests never wait for a connection.
        tls: The TLS context every pool uses; by default httpx's (the ``certifi`` store, or
            ``SSL_CERT_FILE``/``SSL_CERT_DIR`` when set), made once here.
    """

    def __init__(
        self, *, shard_connections: int = SHARD_CONNECTIONS, tls: ssl.SSLContext | None = None
    ) -> None:
        self._size = shard_connections
        self._tls = tls if tls is not None else httpx.create_ssl_context()
        self._limits = httpx.Limits(
            max_connections=shard_connections, max_keepalive_connections=shard_connections
        )
        self._shards: list[_Shard] = []

    @property
    def in_flight(self) -> list[int]:
        """Requests in flight (sent, their response not yet closed) per pool."""
        return [shard.busy for shard in self._shards]

    def _acquire(self) -> _Shard:
        shard = min(self._shards, key=_busy) if self._shards else None
        if shard is None or shard.busy >= self._size:
            shard = _Shard(self._limits, self._tls)
            self._shards.append(shard)
        shard.busy += 1
        return shard

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through the least busy pool; its slot is freed when the response closes."""
        shard = self._acquire()
        try:
            response = await shard.transport.handle_async_request(request)
        except BaseException:
            shard.busy -= 1
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _Released(response.stream, shard)
        return response

    async def aclose(self) -> None:
        """Close every pool's connections (the transport stays usable: later requests open new ones)."""
        shards, self._shards = self._shards, []
        for shard in shards:
            await shard.transport.aclose()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc: BaseException | None = None,
        tb: TracebackType | None = None,
    ) -> None:
        await self.aclose()


def _busy(shard: _Shard) -> int:
    return shard.busy


def upstream_transport() -> ShardedTransport | None:
    """The transport for a gateway's upstream model; ``None`` (httpx's own) when a proxy variable is set,
    since httpx only honours those for the transport it makes itself."""
    if any(os.environ.get(name) for name in _PROXY_VARIABLES):
        return None
    return ShardedTransport()
