"""The one ``httpx.AsyncClient`` a provider model keeps, so calls reuse their connections.

The client is made on first use inside an event loop and bound to that loop: its connections belong to
it. Used from another loop (a second ``anyio.run``), the model makes a new client instead of touching
one whose loop is gone. A client also closes itself when its loop shuts down: a parked async generator
(the *closer*) holds it, and both asyncio and trio finalize the async generators still alive when a run
ends, so no socket outlives its loop and nothing warns about unclosed transports. ``await model.aclose()``
(or leaving ``async with model:``) closes it at once. A client the user injected is never closed here.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import httpx

__all__ = ["ClientSlot"]

LIMITS = httpx.Limits(max_connections=1000, max_keepalive_connections=1000)
"""The own client's connection pool. With httpx's defaults (100 connections, 20 kept alive) the 101st
concurrent call waits for a free slot (a gateway serving 200 streams: its latency doubles and, with a
short ``timeout``, it fails with a pool timeout), and once the pool holds more than 20 connections,
httpcore 1.0 closes every connection that goes idle (it counts all connections against the keep-alive
limit, encode/httpcore#1035), so each call past 20 at once opens a new one. Idle connections still
close after httpx's 5 s keep-alive expiry."""


def _current_loop() -> object:
    """An object identifying the running event loop (asyncio's loop, or trio's run token)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        import trio  # only reached under trio, so trio is installed

        return trio.lowlevel.current_trio_token()


async def _close_when_the_loop_ends(client: httpx.AsyncClient) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        await client.aclose()


class ClientSlot:
    """Holds a model's own client (or the injected one) and hands it to each call."""

    __slots__ = ("_client", "_closer", "_injected", "_loop", "_timeout", "_transport")

    def __init__(
        self,
        *,
        client: httpx.AsyncClient | None,
        transport: httpx.AsyncBaseTransport | None,
        timeout: httpx.Timeout | float | None,
    ) -> None:
        self._injected = client
        self._transport = transport
        self._timeout = timeout
        self._client: httpx.AsyncClient | None = None
        self._closer: AsyncGenerator[None, None] | None = None
        self._loop: object = None

    async def get(self) -> httpx.AsyncClient:
        """The client for a call in the running event loop, made on first use in this loop."""
        if self._injected is not None:
            return self._injected
        loop = _current_loop()
        client = self._client
        if client is not None and self._loop is loop and not client.is_closed:
            return client
        # None yet, closed, or bound to another (usually finished) loop: that loop closes its own.
        client = httpx.AsyncClient(transport=self._transport, timeout=self._timeout, limits=LIMITS)
        closer = _close_when_the_loop_ends(client)
        await closer.asend(None)
        self._client, self._closer, self._loop = client, closer, loop
        return client

    async def aclose(self) -> None:
        """Close the model's own client now (when it belongs to the running loop); idempotent."""
        closer, loop = self._closer, self._loop
        self._client = self._closer = self._loop = None
        if closer is not None and loop is _current_loop():
            await closer.aclose()
