"""The gateway's upstream pools: a request's CPU time with many idle connections, one pool vs small ones.

The closed-loop levels of the gateway bench leave few upstream connections idle (each finished stream
is followed at once by the next request), but real clients pause between requests, and the gateway's
upstream client then holds many idle connections (for httpx's 5 s keep-alive). httpcore's pool does
work per connection it holds, and per pair of idle ones, on every request; this row measures that in
one process, interleaved: sequential streams to the fake provider after ``idle`` streams at once left
that many connections idle, through one pool (the model's default client) and through
:class:`~procflow.server._upstream.ShardedTransport` (what ``procflow serve`` uses).
"""

from __future__ import annotations

import statistics
import time

import httpx

from bench._harness import Row
from procflow.models._client import LIMITS
from procflow.server._upstream import ShardedTransport
from procflow.testing import FakeProviderServer, FakeReply

__all__ = ["pool_rows"]

SIZES = {"full": (200, 200, 5), "tiny": (20, 20, 1)}
"""Idle connections, sequential requests timed, repetitions (each: one pool, then small pools)."""


async def _per_request(transport: httpx.AsyncBaseTransport, url: str, idle: int, requests: int) -> float:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "Hi"}]}
    async with httpx.AsyncClient(transport=transport) as client:
        held = [
            await client.send(client.build_request("POST", url, json=body), stream=True) for _ in range(idle)
        ]
        for response in held:
            await response.aread()
            await response.aclose()
        started = time.process_time()
        for _ in range(requests):
            async with client.stream("POST", url, json=body) as response:
                await response.aread()
        return (time.process_time() - started) / requests


async def pool_rows(size: str) -> list[Row]:
    """One row: CPU per request with ``idle`` idle connections, small pools vs one pool."""
    idle, requests, repeat = SIZES[size]
    one: list[float] = []
    small: list[float] = []
    replies = [FakeReply(text="Hi there")] * ((idle + requests) * 2 * repeat)
    async with FakeProviderServer(replies) as server:
        url = server.base_url + "/chat/completions"
        for _ in range(repeat):
            one.append(await _per_request(httpx.AsyncHTTPTransport(limits=LIMITS), url, idle, requests))
            small.append(await _per_request(ShardedTransport(), url, idle, requests))
    base, value = statistics.median(one), statistics.median(small)
    return [
        Row(
            group="gateway",
            name=f"upstream client: CPU per stream request with {idle} idle connections, small pools",
            value=value * 1000,
            unit="ms",
            baseline=base * 1000,
            baseline_name="one pool (httpx's, as a model's own client)",
            ratio=value / base,
            spread=(max(small) - min(small)) / value,
            note=(
                "process CPU (client and the in-process fake provider) per sequential request, medians "
                f"of {repeat}, interleaved"
            ),
        )
    ]
