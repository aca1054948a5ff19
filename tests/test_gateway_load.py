"""The gateway under concurrent load: idle connections outlive the clients', upstream calls never queue."""

from __future__ import annotations

import select
import socket
from collections.abc import Iterator

import anyio
import httpx
import pytest

from procflow.models import ModelRequest, OpenAICompatibleModel, PromptMessage, PromptText
from procflow.server import GatewayConfig, create_app
from procflow.server import serve_in_background as serving
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

    async with FakeProviderServer([FakeReply(text="Hello there")] * streams) as server:
        async with OpenAICompatibleModel("m", base_url=server.base_url) as model:
            with anyio.fail_after(30):
                async with anyio.create_task_group() as group:
                    for _ in range(streams):
                        group.start_soon(one, model)
        assert server.connections == streams
    assert texts == ["Hello there"] * streams
