"""The gateway under concurrent load: idle connections outlive the clients', upstream calls never queue,
and the upstream's connections are spread over small pools."""

from __future__ import annotations

import select
import socket
import ssl
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest

from procflow.models import ModelRequest, OpenAICompatibleModel, PromptMessage, PromptText
from procflow.server import GatewayConfig, create_app, resolve_upstream
from procflow.server import serve_in_background as serving
from procflow.server._upstream import ShardedTransport
from procflow.testing import FakeProviderServer, FakeReply

CLIENT_KEEP_ALIVE = httpx.Limits().keepalive_expiry or 5.0
"""How long httpx (and so the ``openai`` client) keeps an idle connection before dropping it."""


@pytest.fixture(scope="module")
def gateway_url() -> Iterator[str]:
    with FakeProviderServer() as upstream:
        model = OpenAICompatibleModel("fake-model", base_url=upstream.base_url)
        with serving(create_app(GatewayConfig(upstream=model))) as url:
            yield url


def _get_health(sock: socket.socket) -> bytes:
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: gateway\r\n\r\n")
    answer = b""
    while b"\r\n\r\n" not in answer or not answer.endswith(b"}"):
        piece = sock.recv(4096)
        if not piece:
            break
        answer += piece
    return answer


def test_an_idle_connection_outlives_the_clients_keep_alive(gateway_url: str) -> None:
    """Idle longer than a client keeps a connection, it is still open: the client, not the server, closes it.

    With both at 5 s (uvicorn's default) a client reusing its connection at that moment races the
    server's close and gets a connection reset: the errors the load bench saw under 50 streams.
    """
    url = httpx.URL(gateway_url)
    with socket.create_connection((url.host, url.port or 80), timeout=10) as sock:
        assert _get_health(sock).startswith(b"HTTP/1.1 200")
        closed, _, _ = select.select([sock], [], [], CLIENT_KEEP_ALIVE + 1.0)
        assert closed == []  # the server sent nothing and did not close the connection
        assert _get_health(sock).startswith(b"HTTP/1.1 200")


async def test_one_model_holds_more_streams_open_than_httpx_pools_by_default() -> None:
    """150 streams open at once on one model's own client all start: none waits for a pool slot.

    A gateway forwards every client stream to the one upstream model; with httpx's default pool of 100
    connections the 101st stream would wait until another one ended (here: forever).
    """
    streams = 150
    async with FakeProviderServer([FakeReply(text="Hello there")] * streams) as server:
        async with OpenAICompatibleModel("m", base_url=server.base_url) as model:
            texts = await _hold_streams_open(model, streams)
        assert server.connections == streams
    assert texts == ["Hello there"] * streams


async def _hold_streams_open(model: OpenAICompatibleModel, streams: int) -> list[str]:
    """Open ``streams`` streams on ``model`` at once, each held until all have started; their texts."""
    request = ModelRequest(prompt=[PromptMessage(role="user", content=[PromptText(text="Hi")])])
    started = 0
    all_started = anyio.Event()
    texts: list[str] = []

    async def one(model: OpenAICompatibleModel) -> None:
        nonlocal started
        parts: list[str] = []
        chunks = model.stream(request)
        try:
            async for chunk in chunks:
                if chunk.type == "text-delta":
                    if not parts:
                        started += 1
                        if started == streams:
                            all_started.set()
                        await all_started.wait()  # keeps this stream's connection checked out
                    parts.append(chunk.payload["text"])
        finally:
            await chunks.aclose()
        texts.append("".join(parts))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            for _ in range(streams):
                group.start_soon(one, model)
    return texts


async def test_the_gateways_upstream_spreads_concurrent_streams_over_small_pools() -> None:
    """150 streams open at once on the upstream model `procflow serve` builds all start, in pools of 16.

    httpcore's pool does work for every connection it holds on each request (and part of it for every
    pair of idle ones), which at 200 concurrent streams was most of the gateway's CPU time.
    """
    streams = 150
    async with FakeProviderServer([FakeReply(text="Hello there")] * (streams + 3)) as server:
        model = resolve_upstream(server.base_url, model="m")
        assert isinstance(model, OpenAICompatibleModel)
        async with model:
            texts = await _hold_streams_open(model, streams)
            assert server.connections == streams
            for _ in range(3):  # one at a time: the first pool's idle connection is reused each time
                assert await _hold_streams_open(model, 1) == ["Hello there"]
        assert server.connections == streams
    assert texts == ["Hello there"] * streams


async def _in_flight_while_open(transport: ShardedTransport, streams: int) -> tuple[list[int], list[int]]:
    """Open ``streams`` streamed requests at once through ``transport``, then read and close them:
    its requests in flight per pool while they are open, and after."""
    async with (
        FakeProviderServer([FakeReply(text="Hi")] * streams) as server,
        httpx.AsyncClient(transport=transport) as client,
    ):
        url = server.base_url + "/chat/completions"
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "Hi"}]}
        responses = [
            await client.send(client.build_request("POST", url, json=body), stream=True)
            for _ in range(streams)
        ]
        open_ = transport.in_flight
        for response in responses:
            assert b"[DONE]" in await response.aread()
            await response.aclose()
        return open_, transport.in_flight


async def test_a_sharded_transport_keeps_each_pool_within_its_size() -> None:
    """Requests in flight never exceed a pool's size; closed responses free their slot."""
    assert await _in_flight_while_open(ShardedTransport(shard_connections=4), 10) == ([4, 4, 2], [0, 0, 0])


async def test_new_pools_reuse_the_transports_tls_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pools made while streams arrive load no certificate store (58 ms each, on the event loop)."""
    transport = ShardedTransport(shard_connections=2)
    made: list[ssl.SSLContext] = []
    real = ssl.create_default_context

    def counted(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(ssl, "create_default_context", counted)
    assert await _in_flight_while_open(transport, 6) == ([2, 2, 2], [0, 0, 0])
    assert made == []
